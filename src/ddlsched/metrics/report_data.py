"""The numbers behind ``ddlsched report``: per-run metrics over the measurement window, size classes, smoothed
time series, offered load over time and the analyst's warnings, grouped scenario → policy (docs/outputs.md).

Per-job metrics are taken over the jobs that arrived inside the run's measurement window (``summary.json``:
``window_start_s``, ``window_end_s``; all jobs when absent), as the summary's are; makespan is the whole run's.
Time series are shown for the lowest seed of each policy, as rolling time-averages of the step series over
``SMOOTH_SHARE`` of the active period (first arrival to last finish), on hours since the first arrival.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from ddlsched.metrics.results_dir import Run, read_csv
from ddlsched.metrics.stats import mean_ci95
from ddlsched.metrics.warnings import load_warnings, run_warnings

H = 3600.0
SMOOTH_SHARE = 0.01  # rolling-average width as a share of the active period
GRID_POINTS = 400  # smoothed series are sampled at this many evenly spaced times
SIZE_CLASSES: tuple[tuple[str, int, float], ...] = (("1 GPU", 1, 1), ("2–4 GPUs", 2, 4), ("5–8 GPUs", 5, 8),
                                                    (">8 GPUs", 9, math.inf))
AGG_KEYS = ("avg_jct_s", "median_jct_s", "p95_jct_s", "p99_jct_s", "makespan_s", "avg_queueing_s",
            "comm_overhead_pct", "preemptions", "jobs_measured", "gpu_utilization", "gpu_utilization_window",
            "offered_load")


def size_class(num_gpus: float) -> str:
    """The job-size class label ("1 GPU", "2–4 GPUs", "5–8 GPUs", ">8 GPUs") of a job asking for ``num_gpus``."""
    for label, lo, hi in SIZE_CLASSES:
        if lo <= num_gpus <= hi:
            return label
    return SIZE_CLASSES[0][0]  # fractional requests below one GPU


def slowdown(rec: dict[str, Any]) -> float:
    """run_s ÷ ideal_run_s (1 when the ideal run time is 0), as the summary's ``median_slowdown``."""
    ideal = float(rec["ideal_run_s"])
    return float(rec["run_s"]) / ideal if ideal > 0 else 1.0


def measured(run: Run) -> list[dict[str, Any]]:
    """The run's records that arrived inside its measurement window (all of them without one)."""
    recs = run.records()
    lo, hi = run.summary.get("window_start_s"), run.summary.get("window_end_s")
    if not isinstance(lo, (int, float)) or not isinstance(hi, (int, float)):
        return recs
    return [r for r in recs if lo <= float(r["arrival_s"]) <= hi]


def _pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.array(xs, dtype=float), q)) if xs else math.nan


def run_metrics(run: Run) -> dict[str, Any]:
    """Per-run metrics recomputed from records.csv (per-job ones over the measurement window)."""
    allrecs, recs = run.records(), measured(run)
    s = run.summary
    out: dict[str, Any] = {k: _num(s.get(k)) for k in ("gpu_utilization", "gpu_utilization_window", "offered_load")}
    out["jobs_measured"] = float(len(recs))
    if not recs:
        out.update({k: math.nan for k in AGG_KEYS if k not in out})
        out["by_size"] = {}
        return out
    jct = [float(r["jct_s"]) for r in recs]
    run_s = sum(float(r["run_s"]) for r in recs)
    ovh = sum(float(r["comm_overhead_s"]) for r in recs)
    out.update({
        "avg_jct_s": sum(jct) / len(jct),
        "median_jct_s": statistics.median(jct),
        "p95_jct_s": _pct(jct, 95),
        "p99_jct_s": _pct(jct, 99),
        "makespan_s": max(float(r["finish_s"]) for r in allrecs) - min(float(r["arrival_s"]) for r in allrecs),
        "avg_queueing_s": sum(float(r["queue_s"]) for r in recs) / len(recs),
        "comm_overhead_pct": 100.0 * ovh / run_s if run_s > 0 else 0.0,
        "preemptions": float(sum(int(r.get("preemptions") or 0) for r in recs)),
    })
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in recs:
        groups[size_class(float(r["num_gpus"]))].append(r)
    out["by_size"] = {c: {"jobs": len(g), "avg_jct_s": sum(float(r["jct_s"]) for r in g) / len(g),
                          "avg_slowdown": sum(slowdown(r) for r in g) / len(g)}
                      for c, *_ in SIZE_CLASSES if (g := groups.get(c))}
    return out


def _num(v: Any) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan


def stat(values: list[float]) -> dict[str, Any]:
    """{"mean", "ci95" (NaN with < 2 values), "n", "values"} over seeds (NaNs ignored)."""
    vals = [float(v) for v in values if not math.isnan(float(v))]
    m, hw, n = mean_ci95(vals)
    return {"mean": m, "ci95": hw, "n": n, "values": vals}


# ------------------------------------------------------------------ time series
def step_integral(times: np.ndarray, values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """∫ from −∞ to ``at`` of the step function that is ``values[i]`` on [times[i], times[i+1]) (the last
    step lasts forever, 0 before the first)."""
    if not times.size:
        return np.zeros_like(at)
    cum = np.concatenate(([0.0], np.cumsum(values[:-1] * np.diff(times))))
    i = np.searchsorted(times, at, side="right") - 1
    j = np.clip(i, 0, None)
    return np.where(i < 0, 0.0, cum[j] + values[j] * (at - times[j]))


def smoothed(ts: dict[str, list[float]], column: str, start: float, end: float, scale: float = 1.0
             ) -> dict[str, Any]:
    """Rolling time-average of ``ts[column] / scale`` over windows of ``SMOOTH_SHARE · (end − start)`` centred on
    ``GRID_POINTS`` evenly spaced times in [start, end] (windows clipped to it). Times are seconds."""
    times = np.array(ts.get("time_s") or [], dtype=float)
    vals = np.array(ts.get(column) or [], dtype=float) / scale
    if not end > start or not times.size:
        return {"t_s": [], "value": [], "width_s": 0.0}
    width = SMOOTH_SHARE * (end - start)
    grid = np.linspace(start, end, GRID_POINTS)
    lo, hi = np.maximum(grid - width / 2, start), np.minimum(grid + width / 2, end)
    avg = (step_integral(times, vals, hi) - step_integral(times, vals, lo)) / (hi - lo)
    return {"t_s": grid.tolist(), "value": avg.tolist(), "width_s": width}


def load_rows(run: Run) -> list[dict[str, float]]:
    """The run's ``load.csv`` rows (empty when the file is absent, e.g. written by an older ddlsched)."""
    p = Path(run.path) / "load.csv"
    if not p.is_file():
        return []
    return [{k: float(v) for k, v in r.items() if v is not None} for r in read_csv(p)]


# ------------------------------------------------------------------ warnings
def scenario_warnings(runs: list[Run]) -> list[str]:
    """``run_warnings`` of every run, identical sentences merged; each prefixed by its policy (and seeds when the
    scenario has several). Load warnings concern the arrivals, not a policy, and are given once."""
    multi = len({r.seed for r in runs}) > 1
    merged: dict[tuple[str, str], list[int]] = {}
    for r in sorted(runs, key=lambda r: r.seed):
        load = set(load_warnings(r.summary))
        for w in run_warnings(r.summary, measured(r), r.timeseries()):
            seeds = merged.setdefault(("" if w in load else r.policy, w), [])
            if r.seed not in seeds:
                seeds.append(r.seed)
    out = []
    for (pol, w), seeds in merged.items():
        who = pol or "arrivals"
        if multi:
            who += f" (seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))})"
        out.append(f"{who}: {w}")
    return out


# ------------------------------------------------------------------ everything
def build_data(runs: list[Run]) -> dict[str, Any]:
    """scenario → {"policies": policy → everything its plots and tables show, "meta": the scenario's window, active
    period and warnings} (JSON-able)."""
    by: dict[str, dict[str, list[Run]]] = defaultdict(lambda: defaultdict(list))
    for r in runs:
        by[r.scenario][r.policy].append(r)
    return {scen: _scenario(by[scen]) for scen in by}


def _scenario(pols: dict[str, list[Run]]) -> dict[str, Any]:
    runs = {p: sorted(rs, key=lambda r: r.seed) for p, rs in pols.items()}
    shown = [rs[0] for rs in runs.values()]  # the lowest seed of each policy: its time series are drawn
    arrivals = [float(rec["arrival_s"]) for r in shown for rec in r.records()]
    finishes = [float(rec["finish_s"]) for r in shown for rec in r.records()]
    t0 = min(arrivals) if arrivals else 0.0
    t1 = max(finishes) if finishes else t0
    first = shown[0]
    s = first.summary
    meta: dict[str, Any] = {
        "active_start_s": t0, "active_end_s": t1, "seed_shown": first.seed,
        "window_start_s": _num(s.get("window_start_s")), "window_end_s": _num(s.get("window_end_s")),
        "jobs_measured": s.get("jobs_measured"), "jobs_completed": s.get("jobs_completed"),
        "warnings": scenario_warnings([r for rs in runs.values() for r in rs]),
        "min_seeds": min(len(rs) for rs in runs.values()),
        "load_policy": next(iter(runs)),
        "load": [{**row, "t_h": (row["start_s"] - t0) / H} for row in load_rows(first)],
    }
    out: dict[str, Any] = {}
    for p, rs in runs.items():
        per = [run_metrics(r) for r in rs]
        jct = sorted(float(rec["jct_s"]) for r in rs for rec in measured(r))
        low = rs[0]
        ts = low.timeseries()
        gpus = float(low.summary.get("cluster_gpus") or 1)
        entry: dict[str, Any] = {
            "seeds": [r.seed for r in rs],
            "runs": [str(r.path) for r in rs],
            "per_seed": per,
            "jct_cdf": {"x_h": [j / H for j in jct], "y": [(i + 1) / len(jct) for i in range(len(jct))]},
            "utilization": {"seed": low.seed, **smoothed(ts, "busy_gpus", t0, t1, gpus)},
            "queue": {"seed": low.seed, **smoothed(ts, "pending", t0, t1)},
            "by_size": {c: {"jobs": stat([pr["by_size"][c]["jobs"] for pr in per if c in pr["by_size"]]),
                            "avg_jct_s": stat([pr["by_size"][c]["avg_jct_s"] for pr in per if c in pr["by_size"]]),
                            "avg_slowdown": stat([pr["by_size"][c]["avg_slowdown"] for pr in per
                                                  if c in pr["by_size"]])}
                        for c, *_ in SIZE_CLASSES if any(c in pr["by_size"] for pr in per)},
        }
        for key in AGG_KEYS:
            entry[key] = stat([pr[key] for pr in per])
        out[p] = entry
    return {"policies": out, "meta": meta}


__all__ = [
    "AGG_KEYS",
    "SIZE_CLASSES",
    "H",
    "build_data",
    "load_rows",
    "measured",
    "run_metrics",
    "scenario_warnings",
    "size_class",
    "slowdown",
    "smoothed",
    "stat",
    "step_integral",
]
