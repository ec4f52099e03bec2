"""Workload transforms: load scaling of arrivals (ARCHITECTURE.md "Load decides ...")."""

from __future__ import annotations

from collections.abc import Sequence

from ddlsched.errors import InputError
from ddlsched.workload.jobspec import JobSpec


def scale_arrivals(jobs: Sequence[JobSpec], factor: float) -> list[JobSpec]:
    """Compress (factor > 1) or stretch (factor < 1) arrival times around the first arrival.

    Offered load scales by ``factor``; job sizes and order are unchanged.
    """
    if not factor > 0:
        raise InputError(f"load scale must be > 0, got {factor}", field="load_scale")
    if not jobs:
        return []
    t0 = min(j.arrival_s for j in jobs)
    return [j.with_(arrival_s=t0 + (j.arrival_s - t0) / factor) for j in jobs]
