"""The summary of one run: every key defined in ``ddlsched.vocabulary.SUMMARY_FIELDS``, computed here only."""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import islice
from typing import Any

import numpy as np

from ddlsched.engine.result import Records, SimResult
from ddlsched.errors import InputError, SimulationError
from ddlsched.metrics.window import Window
from ddlsched.vocabulary import CAUSES, SUMMARY_FIELDS


def _pcts(values: np.ndarray, qs: Sequence[float]) -> list[float]:
    """The ``qs`` percentiles of ``values`` (linear interpolation), one partition for all of them."""
    return [float(x) for x in np.percentile(values, qs)] if values.size else [math.nan] * len(qs)


def running_sum(values: np.ndarray) -> float:
    """Σ values added one at a time in their order (not numpy's pairwise sum): the order a definition reads.
    Equal, bit for bit, to Python 3.11's ``sum`` over the same floats, and the same on every Python version."""
    return float(np.cumsum(values)[-1]) if values.size else 0.0


def _work(gpus: np.ndarray, ideal_run_s: np.ndarray) -> np.ndarray:
    """A job's work, the unit of offered load: GPUs × ideal run time."""
    return gpus * ideal_run_s


def _work_and_arrivals(records: Sequence[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """Per record: its work (:func:`_work`), and the arrival instant."""
    if not records:
        return np.zeros(0), np.zeros(0)
    gpus, ideal, arrivals = _columns(records, ("num_gpus", "ideal_run_s", "arrival_s"))
    return _work(gpus, ideal), arrivals


def _columns(records: Sequence[dict[str, Any]], names: Sequence[str]) -> list[np.ndarray]:
    """The records' values under ``names`` as float columns (contiguous copies)."""
    return Records.of(records).float_columns(names)


def offered_load(records: Sequence[dict[str, Any]], num_gpus: int) -> float:
    """Σ GPUs × ideal run time ÷ (cluster GPUs × arrival span) over the given records."""
    return _offered(*_work_and_arrivals(records), num_gpus)


def _offered(work: np.ndarray, arrivals: np.ndarray, num_gpus: int) -> float:
    if not work.size:
        return math.nan
    span = float(arrivals.max() - arrivals.min())
    total = running_sum(work)  # in record order, as the definition reads
    return total / (num_gpus * span) if span > 0 else math.inf


def busy_share(ts: dict[str, list[float]], start: float, end: float, num_gpus: int) -> float:
    """Time-average of busy GPUs over [start, end] from the (step) time series, ÷ cluster GPUs."""
    times, busy = ts.get("time_s") or [], ts.get("busy_gpus") or []
    if not times or not end > start:
        return math.nan
    first = max(0, bisect_right(times, start) - 1)  # the step that holds `start`
    last = bisect_left(times, end, lo=first)  # steps from here on begin at or after `end`
    n = last - first
    t = np.fromiter(islice(times, first, last + 1), dtype=float, count=min(n + 1, len(times) - first))
    ends = np.append(t[1:], math.inf)[:n]  # the last step lasts forever
    lo, hi = np.maximum(t[:n], start), np.minimum(ends, end)
    width = hi - lo
    terms = np.fromiter(islice(busy, first, last), dtype=float, count=n) * width
    return running_sum(terms[width > 0]) / (num_gpus * (end - start))  # in step order


def quarter_loads(records: Sequence[dict[str, Any]], num_gpus: int) -> list[float]:
    """Offered load of the jobs arriving in each quarter of the records' arrival span (empty if the span is 0)."""
    return _quarters(*_work_and_arrivals(records), num_gpus)


def _quarters(work: np.ndarray, arrivals: np.ndarray, num_gpus: int) -> list[float]:
    if not work.size:
        return []
    lo, hi = float(arrivals.min()), float(arrivals.max())
    if not hi > lo:
        return []
    quarter = np.minimum(3, (4 * (arrivals - lo) / (hi - lo)).astype(np.int64))
    return [running_sum(work[quarter == q]) / (num_gpus * (hi - lo) / 4) for q in range(4)]


def total_weighted_jct(records: Sequence[dict[str, Any]], weights: dict[str, float]) -> float:
    """``total_weighted_jct_s`` (``ddlsched.vocabulary.REPRODUCTION_METRICS``): Σ weight × jct_s over ``records``;
    ``weights`` maps job id to weight (a job missing from it weighs 1)."""
    return float(sum(weights.get(r["job_id"], 1.0) * r["jct_s"] for r in records))


def summarize(result: SimResult, window: Window | None = None) -> dict[str, Any]:
    """The summary.json dict of one run (deterministic: no wall-clock figures). Fails if a job is unaccounted.
    Per-job metrics are taken over the jobs that arrived inside ``window`` (``ddlsched.metrics.window``)."""
    window = window or Window()
    all_recs = Records.of(result.records)
    names = ("jct_s", "queue_s", "run_s", "comm_s", "comm_overhead_s", "ideal_run_s", *CAUSES,
             "num_gpus", "arrival_s", "finish_s", "preemptions")
    col = dict(zip(names, _columns(all_recs, names), strict=True))  # one pass over the records
    all_arrivals, all_finish = col["arrival_s"], col["finish_s"]
    start, end = window.bounds(all_arrivals)
    if not window.empty:  # the jobs that arrived inside the window
        inside = (all_arrivals >= start) & (all_arrivals <= end)
        col = {k: v[inside] for k, v in col.items()}
    measured = len(col["jct_s"])
    if all_recs and not measured:
        raise InputError(f"the measurement window [{start:g}, {end:g}] s holds no completed job "
                         "(shorten --warmup/--cooldown)", field="--warmup")
    out: dict[str, Any] = {
        "policy": result.policy,
        "execution_model": result.execution_model,
        "cluster": result.cluster.name,
        "cluster_gpus": result.cluster.num_gpus,
        "perf_model": result.perf_model,
        "seed": result.seed,
        "jobs": result.jobs,
        "jobs_completed": len(all_recs),
        "jobs_rejected": len(result.rejected),
        "jobs_unfinished": len(result.unfinished),
        "jobs_skipped": result.skipped,
    }
    if out["jobs"] != out["jobs_completed"] + out["jobs_rejected"] + out["jobs_unfinished"] + out["jobs_skipped"]:
        raise SimulationError("job accounting does not close")
    out["window_start_s"], out["window_end_s"], out["jobs_measured"] = start, end, measured
    out["gpu_utilization_window"] = busy_share(result.timeseries, start, end, result.cluster.num_gpus)
    keys = [k for k in SUMMARY_FIELDS if k not in out and k != "mechanisms"]
    out["mechanisms"] = dict(result.mechanisms)
    if not measured:
        out.update({k: math.nan for k in keys})
        out["preemptions"] = 0
        return out
    jct = col["jct_s"]
    makespan = float(all_finish.max()) - float(all_arrivals.min())  # the whole run's, whatever the window
    run = float(col["run_s"].sum())

    def share(key: str) -> float:
        return 100.0 * float(col[key].sum()) / run if run > 0 else 0.0

    work, arrivals = _work(col["num_gpus"], col["ideal_run_s"]), col["arrival_s"]
    quarters = _quarters(work, arrivals, result.cluster.num_gpus)
    ideal = col["ideal_run_s"]
    slowdown = np.divide(col["run_s"], ideal, out=np.ones_like(ideal), where=ideal > 0)
    jct_pcts, slow_pcts = _pcts(jct, (50, 95, 99)), _pcts(slowdown, (50, 95))
    out.update({
        "avg_jct_s": float(jct.mean()),
        "median_jct_s": jct_pcts[0],
        "p95_jct_s": jct_pcts[1],
        "p99_jct_s": jct_pcts[2],
        "makespan_s": makespan,
        "avg_queueing_s": float(col["queue_s"].mean()),
        "avg_run_s": float(col["run_s"].mean()),
        "avg_comm_s": float(col["comm_s"].mean()),
        "comm_overhead_s": float(col["comm_overhead_s"].mean()),
        "comm_overhead_pct": share("comm_overhead_s"),
        **{k[:-2] + "_pct": share(k) for k in CAUSES},
        "median_slowdown": slow_pcts[0],
        "p95_slowdown": slow_pcts[1],
        "gpu_utilization": result.busy_gpu_s / (result.cluster.num_gpus * makespan) if makespan > 0 else math.nan,
        "offered_load": _offered(work, arrivals, result.cluster.num_gpus),
        "offered_load_min_quarter": min(quarters, default=math.nan),
        "offered_load_max_quarter": max(quarters, default=math.nan),
        "preemptions": int(col["preemptions"].sum()),
    })
    missing = set(SUMMARY_FIELDS) - set(out)
    if missing:  # the vocabulary and this function must agree
        raise SimulationError(f"summary lacks {sorted(missing)}")
    tenants = getattr(result.cluster, "tenants", None)
    if tenants is not None:  # FAIRNESS_FIELDS (ddlsched.metrics.fairness)
        from ddlsched.metrics.fairness import fairness

        mask = None if window.empty else (all_arrivals >= start) & (all_arrivals <= end)
        out.update(fairness(all_recs, tenants, result.cluster.num_gpus, mask)[0])
    return out
