"""Summary figures of a loaded trace."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ddlsched.workload.trace import Trace


def trace_info(trace: Trace) -> dict[str, Any]:
    """Job count, GPU-size histogram, arrival span, format, GPU-seconds (when every job has a duration),
    model histogram, the field mapping, fractional/typed GPU requests, groups, skipped rows and the notes."""
    jobs = trace.jobs
    arrivals = [j.arrival_s for j in jobs]
    with_dur = [j for j in jobs if j.duration_s is not None]
    gpu_s = sum(j.duration_s * j.num_gpus for j in with_dur)  # type: ignore[operator]
    return {
        "path": trace.path,
        "format": trace.format,
        "jobs": len(jobs),
        "rows": trace.rows,
        "mapping": dict(trace.mapping),
        "epoch": trace.epoch.isoformat() if trace.epoch is not None else None,
        "gpu_histogram": dict(sorted(Counter(j.num_gpus for j in jobs).items())),
        "model_histogram": dict(sorted(Counter(j.model for j in jobs).items())),
        "gpu_type_histogram": dict(sorted(Counter(j.gpu_type for j in jobs if j.gpu_type is not None).items())),
        "fractional_gpu_jobs": sum(j.gpu_request is not None for j in jobs),
        "gpu_share_jobs": sum(j.gpu_share is not None for j in jobs),
        "groups": dict(sorted(Counter(j.group for j in jobs if j.group is not None).items())),
        "first_arrival_s": min(arrivals) if arrivals else None,
        "last_arrival_s": max(arrivals) if arrivals else None,
        "span_s": (max(arrivals) - min(arrivals)) if arrivals else None,
        "total_gpus_requested": sum(j.num_gpus for j in jobs),
        "jobs_with_duration": len(with_dur),
        "total_gpu_seconds": gpu_s if jobs and len(with_dur) == len(jobs) else None,
        "skipped": trace.skipped,
        "filtered": dict(trace.filtered),
        "skipped_reasons": list(trace.skipped_reasons),
        "notes": list(trace.notes),
    }
