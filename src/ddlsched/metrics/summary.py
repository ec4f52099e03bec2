"""The summary of one run: every key defined in ``ddlsched.vocabulary.SUMMARY_FIELDS``, computed here only."""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Any

import numpy as np

from ddlsched.engine.result import Records, SimResult
from ddlsched.errors import InputError, SimulationError
from ddlsched.metrics.window import Window
from ddlsched.vocabulary import CAUSES, SUMMARY_FIELDS


def _pct(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q)) if values.size else math.nan


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
    total = sum(work.tolist())  # in record order, as the definition reads
    return total / (num_gpus * span) if span > 0 else math.inf


def busy_share(ts: dict[str, list[float]], start: float, end: float, num_gpus: int) -> float:
    """Time-average of busy GPUs over [start, end] from the (step) time series, ÷ cluster GPUs."""
    times, busy = ts.get("time_s") or [], ts.get("busy_gpus") or []
    if not times or not end > start:
        return math.nan
    first = max(0, bisect_right(times, start) - 1)  # the step that holds `start`
    last = bisect_left(times, end, lo=first)  # steps from here on begin at or after `end`
    n = last - first
    t = np.array(times[first:last + 1], dtype=float)
    ends = np.append(t[1:], math.inf)[:n]  # the last step lasts forever
    lo, hi = np.maximum(t[:n], start), np.minimum(ends, end)
    width = hi - lo
    terms = np.array(busy[first:last], dtype=float) * width
    return sum(terms[width > 0].tolist()) / (num_gpus * (end - start))  # step order, as a running sum


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
    return [sum(work[quarter == q].tolist()) / (num_gpus * (hi - lo) / 4) for q in range(4)]


def total_weighted_jct(records: Sequence[dict[str, Any]], weights: dict[str, float]) -> float:
    """``total_weighted_jct_s`` (``ddlsched.vocabulary.REPRODUCTION_METRICS``): Σ weight × jct_s over ``records``;
    ``weights`` maps job id to weight (a job missing from it weighs 1)."""
    return float(sum(weights.get(r["job_id"], 1.0) * r["jct_s"] for r in records))


def summarize(result: SimResult, window: Window | None = None) -> dict[str, Any]:
    """The summary.json dict of one run (deterministic: no wall-clock figures). Fails if a job is unaccounted.
    Per-job metrics are taken over the jobs that arrived inside ``window`` (``ddlsched.metrics.window``)."""
    window = window or Window()
    all_recs = Records.of(result.records)
    all_arrivals = all_recs.column("arrival_s")
    start, end = window.bounds(all_arrivals)
    recs = all_recs if window.empty else all_recs.subset([start <= a <= end for a in all_arrivals])
    if all_recs and not recs:
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
    out["window_start_s"], out["window_end_s"], out["jobs_measured"] = start, end, len(recs)
    out["gpu_utilization_window"] = busy_share(result.timeseries, start, end, result.cluster.num_gpus)
    keys = [k for k in SUMMARY_FIELDS if k not in out and k != "mechanisms"]
    out["mechanisms"] = dict(result.mechanisms)
    if not recs:
        out.update({k: math.nan for k in keys})
        out["preemptions"] = 0
        return out
    names = ("jct_s", "queue_s", "run_s", "comm_s", "comm_overhead_s", "ideal_run_s", *CAUSES,
             "num_gpus", "arrival_s", "finish_s", "preemptions")
    col = dict(zip(names, _columns(recs, names), strict=True))  # one pass over the records
    jct = col["jct_s"]
    if recs is all_recs:  # the makespan is the whole run's
        makespan = float(col["finish_s"].max()) - float(col["arrival_s"].min())
    else:
        makespan = max(all_recs.column("finish_s")) - min(all_arrivals)
    run = float(col["run_s"].sum())

    def share(key: str) -> float:
        return 100.0 * float(col[key].sum()) / run if run > 0 else 0.0

    work, arrivals = _work(col["num_gpus"], col["ideal_run_s"]), col["arrival_s"]
    quarters = _quarters(work, arrivals, result.cluster.num_gpus)
    ideal = col["ideal_run_s"]
    slowdown = np.divide(col["run_s"], ideal, out=np.ones_like(ideal), where=ideal > 0)
    out.update({
        "avg_jct_s": float(jct.mean()),
        "median_jct_s": _pct(jct, 50),
        "p95_jct_s": _pct(jct, 95),
        "p99_jct_s": _pct(jct, 99),
        "makespan_s": makespan,
        "avg_queueing_s": float(col["queue_s"].mean()),
        "avg_run_s": float(col["run_s"].mean()),
        "avg_comm_s": float(col["comm_s"].mean()),
        "comm_overhead_s": float(col["comm_overhead_s"].mean()),
        "comm_overhead_pct": share("comm_overhead_s"),
        **{k[:-2] + "_pct": share(k) for k in CAUSES},
        "median_slowdown": _pct(slowdown, 50),
        "p95_slowdown": _pct(slowdown, 95),
        "gpu_utilization": result.busy_gpu_s / (result.cluster.num_gpus * makespan) if makespan > 0 else math.nan,
        "offered_load": _offered(work, arrivals, result.cluster.num_gpus),
        "offered_load_min_quarter": min(quarters, default=math.nan),
        "offered_load_max_quarter": max(quarters, default=math.nan),
        "preemptions": int(col["preemptions"].sum()),
    })
    missing = set(SUMMARY_FIELDS) - set(out)
    if missing:  # the vocabulary and this function must agree
        raise SimulationError(f"summary lacks {sorted(missing)}")
    return out
