"""Offered load over time (``load.csv``): is the measured stretch of the trace steady, or a burst?

The arrival span is cut into buckets of one hour (one day, then one week, when that would give more than
``MAX_BUCKETS`` rows). Per bucket: the jobs that arrived in it, their offered load Σ GPUs × ideal run time ÷
(cluster GPUs × bucket length) — the summary's ``offered_load`` restricted to the bucket's arrivals — and the
busy share, the time-average of busy GPUs ÷ cluster GPUs over the bucket (from the time series). A steady
window has roughly constant offered load; a busy share far above it means jobs run slower than ideal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ddlsched.engine.result import Records
from ddlsched.metrics.summary import busy_share

BUCKETS_S = (3600.0, 86400.0, 7 * 86400.0, 28 * 86400.0)
MAX_BUCKETS = 400
COLUMNS = ("start_s", "end_s", "jobs_arrived", "offered_load", "busy_share")


def bucket_s(span: float) -> float:
    """The shortest bucket giving at most MAX_BUCKETS rows over ``span`` seconds."""
    for b in BUCKETS_S:
        if span / b <= MAX_BUCKETS:
            return b
    return math.ceil(span / MAX_BUCKETS)


def load_over_time(records: Sequence[dict[str, Any]], timeseries: dict[str, list[float]], num_gpus: int
                   ) -> list[dict[str, float]]:
    """Rows of ``load.csv`` (empty without completed jobs)."""
    if not records:
        return []
    recs = Records.of(records)
    arrivals = recs.column("arrival_s")
    first, last = min(arrivals), max(arrivals)
    b = bucket_s(last - first)
    n = int((last - first) // b) + 1
    jobs = [0] * n
    work = [0.0] * n
    for a, g, ideal in zip(arrivals, recs.column("num_gpus"), recs.column("ideal_run_s"), strict=True):
        i = min(n - 1, int((a - first) // b))
        jobs[i] += 1
        work[i] += g * ideal
    rows = []
    for i in range(n):
        lo, hi = first + i * b, first + (i + 1) * b
        rows.append({"start_s": lo, "end_s": hi, "jobs_arrived": jobs[i], "offered_load": work[i] / (num_gpus * b),
                     "busy_share": busy_share(timeseries, lo, hi, num_gpus)})
    return rows


__all__ = ["COLUMNS", "bucket_s", "load_over_time"]
