"""Metrics over a run's per-job records (ALGORITHMS.md §1.1, §4.6, §5.6).

| key               | definition                                                                     |
|-------------------|--------------------------------------------------------------------------------|
| avg/median/p95/p99_jct_s | JCT = finish − arrival over completed jobs                              |
| makespan_s        | max finish − min arrival (over completed jobs)                                 |
| avg_queueing_s    | mean total time spent pending (arrival → first start, plus time after preemptions) |
| comm_overhead_s   | mean over jobs of (run time − restart penalties − alone-and-consolidated run time) |
| comm_overhead_pct | Σ overhead / Σ run time × 100                                                  |
| avg_comm_s        | mean time per job spent communicating (fluid share of each iteration)          |
| gpu_utilization   | Σ (GPUs × run time) / (cluster GPUs × makespan)                                |
| offered_load      | Σ (GPUs × ideal run time) / (cluster GPUs × arrival span); > 1 means overload   |
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ddlsched.engine.fluid import SimResult


def _pct(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q)) if values.size else math.nan


def offered_load(records: Sequence[dict[str, Any]], num_gpus: int) -> float:
    if not records:
        return math.nan
    arrivals = [r["arrival_s"] for r in records]
    span = max(arrivals) - min(arrivals)
    work = sum(r["num_gpus"] * r["ideal_run_s"] for r in records)
    return work / (num_gpus * span) if span > 0 else math.inf


def summarize(result: SimResult) -> dict[str, Any]:
    """The summary.json dict of one run (deterministic: no wall-clock figures)."""
    recs = result.records
    jct = np.array([r["jct_s"] for r in recs], dtype=float)
    n_total = len(recs) + len(result.unfinished) + len(result.rejected)
    out: dict[str, Any] = {
        "policy": result.policy,
        "cluster": result.cluster.name,
        "cluster_gpus": result.cluster.num_gpus,
        "perf_model": result.config.perf_model,
        "seed": result.config.seed,
        "jobs": n_total,
        "jobs_completed": len(recs),
        "jobs_rejected": len(result.rejected),
        "jobs_unfinished": len(result.unfinished),
    }
    if recs:
        finish = max(r["finish_s"] for r in recs)
        start = min(r["arrival_s"] for r in recs)
        makespan = finish - start
        run = sum(r["run_s"] for r in recs)
        overhead = sum(r["comm_overhead_s"] for r in recs)
        gpu_s = sum(r["num_gpus"] * r["run_s"] for r in recs)
        out.update({
            "avg_jct_s": float(jct.mean()),
            "median_jct_s": _pct(jct, 50),
            "p95_jct_s": _pct(jct, 95),
            "p99_jct_s": _pct(jct, 99),
            "makespan_s": makespan,
            "avg_queueing_s": float(np.mean([r["queue_s"] for r in recs])),
            "comm_overhead_s": overhead / len(recs),
            "comm_overhead_pct": 100.0 * overhead / run if run > 0 else 0.0,
            "avg_comm_s": float(np.mean([r["comm_s"] for r in recs])),
            "gpu_utilization": gpu_s / (result.cluster.num_gpus * makespan) if makespan > 0 else math.nan,
            "offered_load": offered_load(recs, result.cluster.num_gpus),
            "preemptions": int(sum(r["preemptions"] for r in recs)),
        })
    else:
        for k in ("avg_jct_s", "median_jct_s", "p95_jct_s", "p99_jct_s", "makespan_s", "avg_queueing_s",
                  "comm_overhead_s", "comm_overhead_pct", "avg_comm_s", "gpu_utilization", "offered_load"):
            out[k] = math.nan
        out["preemptions"] = 0
    return out
