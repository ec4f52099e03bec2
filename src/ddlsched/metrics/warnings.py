"""Warnings a careful analyst would give about one run's numbers (docs/metrics.md, "Warnings").

Each check reads the run's summary (``SUMMARY_FIELDS``) and, where it needs them, its per-job records; it
returns one sentence per finding. The CLI prints them after the table and the report shows them beside it.
Thresholds are module constants so a reader can see (and a caller can change) what "too" means.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from typing import Any

from ddlsched.engine.result import Records

LOW_LOAD = 0.3  # offered load below this: the cluster is mostly idle, policies barely differ
HIGH_LOAD = 1.2  # above this: more work arrives than the cluster can do, the queue grows without bound
LOAD_SWING = 2.0  # max ÷ min quarter load above this: the window mixes a burst with a lull
REALISED_OVER_OFFERED = 1.5  # GPUs busy this much longer than the ideal work needs: a slowdown spiral
MEDIAN_SLOWDOWN = 2.0  # median run ÷ ideal run above this: most jobs run at half speed or worse
LAST_JOB_SHARE = 0.10  # the last job finishes this share of the makespan after every other: it decides makespan


def _f(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def load_warnings(summary: Mapping[str, Any]) -> list[str]:
    """Offered load out of the useful range, or swinging over the window (the same for every policy)."""
    out: list[str] = []
    load = _f(summary.get("offered_load"))
    if math.isfinite(load) and load < LOW_LOAD:
        out.append(f"offered load {load:.2f} < {LOW_LOAD}: the cluster is mostly idle and policies barely differ; "
                   "raise --load-scale or use a busier --window")
    elif load > HIGH_LOAD:
        out.append(f"offered load {load:.2f} > {HIGH_LOAD}: more work arrives than the cluster can do, so waits "
                   "grow with the length of the trace; averages depend on where the trace is cut")
    lo, hi = _f(summary.get("offered_load_min_quarter")), _f(summary.get("offered_load_max_quarter"))
    if math.isfinite(lo) and math.isfinite(hi) and hi > LOAD_SWING * lo:
        out.append(f"the offered load varies more than {LOAD_SWING:g}× over the arrival window ({lo:.2f}–{hi:.2f} "
                   "by quarter): the averages mix a burst with a lull; see load.csv, or pick a steady --window")
    return out


def outcome_warnings(summary: Mapping[str, Any]) -> list[str]:
    """A run whose GPUs are busy far longer than its jobs' ideal work needs, or whose median job crawls."""
    out: list[str] = []
    load = _f(summary.get("offered_load"))
    busy = _f(summary.get("gpu_utilization_window"))
    if math.isfinite(load) and load > 0 and busy > REALISED_OVER_OFFERED * load:
        out.append(f"realised load {busy:.2f} (GPUs busy over the window) is {busy / load:.1f}× the offered load "
                   f"{load:.2f}: jobs hold GPUs far longer than their ideal run time (a slowdown spiral: contention, "
                   "spread or sharing)")
    slow = _f(summary.get("median_slowdown"))
    if slow > MEDIAN_SLOWDOWN:
        out.append(f"median run time is {slow:.1f}× the ideal run time: most jobs run at half speed or worse")
    return out


def queue_warnings(timeseries: Mapping[str, Sequence[float]], start: float, end: float) -> list[str]:
    """A queue that never empties over the second half of the arrival window [start, end] (from the time series
    of pending jobs): the cluster is saturated under this policy, and waits grow with the length of the trace."""
    times, pending = list(timeseries.get("time_s") or []), list(timeseries.get("pending") or [])
    if not times or not end > start:
        return []
    mid = start + (end - start) / 2
    first = max(0, bisect_right(times, mid) - 1)  # the step that holds `mid`
    last = max(first + 1, bisect_left(times, end, lo=first))
    least = min(pending[first:last])
    if least <= 0:
        return []
    return [f"the queue never empties over the second half of the arrival window (at least {least:g} job(s) wait "
            "throughout): the cluster is saturated under this policy, so waits grow with the length of the trace"]


def record_warnings(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """A makespan decided by one job (named)."""
    if len(records) < 2:
        return []
    recs = Records.of(records)
    lo = min(map(_f, recs.column("arrival_s")))
    ends = sorted(zip(map(_f, recs.column("finish_s")), map(str, recs.column("job_id")), strict=True), reverse=True)
    makespan = ends[0][0] - lo
    gap = ends[0][0] - ends[1][0]
    if makespan > 0 and gap > LAST_JOB_SHARE * makespan:
        return [f"the makespan is decided by one job: {ends[0][1]} finishes {gap / 3600:.1f} h after every other "
                f"job ({100 * gap / makespan:.0f} % of the makespan)"]
    return []


def run_warnings(summary: Mapping[str, Any], records: Sequence[Mapping[str, Any]],
                 timeseries: Mapping[str, Sequence[float]] | None = None) -> list[str]:
    """Every warning about one run: load, outcome, queue (when the time series is given), then records."""
    queue = queue_warnings(timeseries, _f(summary.get("window_start_s")), _f(summary.get("window_end_s"))) \
        if timeseries else []
    return load_warnings(summary) + outcome_warnings(summary) + queue + record_warnings(records)


def seeds_warning(n_seeds: int) -> str | None:
    """A confidence interval over fewer than 3 seeds says little (over 1 there is none)."""
    if n_seeds >= 3:
        return None
    if n_seeds <= 1:
        return "one seed per point: no confidence interval can be given; run ≥ 3 seeds"
    return f"{n_seeds} seeds per point: the 95 % interval is very wide (t = 12.7); run ≥ 3 seeds"
