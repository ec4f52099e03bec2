"""Workload transforms: load scaling of arrivals (offered load is what makes a comparison meaningful)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ddlsched.errors import InputError
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.limits import LOAD_SCALE_RANGE, MAX_ARRIVAL_S


def check_load_scale(factor: float) -> float:
    """``factor`` when it is a finite number in :data:`LOAD_SCALE_RANGE`, else an InputError naming the flag."""
    lo, hi = LOAD_SCALE_RANGE
    if isinstance(factor, bool) or not isinstance(factor, int | float) or not (
            math.isfinite(factor) and lo <= factor <= hi):
        raise InputError(f"--load-scale must be a finite number in [{lo:g}, {hi:g}], got {factor!r}",
                         field="load_scale")
    return float(factor)


def scale_arrivals(jobs: Sequence[JobSpec], factor: float) -> list[JobSpec]:
    """Compress (factor > 1) or stretch (factor < 1) arrival times around the first arrival.

    Offered load scales by ``factor``; job sizes and order are unchanged. A scaled arrival beyond
    :data:`~ddlsched.workload.limits.MAX_ARRIVAL_S` is an InputError naming the job's file and line."""
    factor = check_load_scale(factor)
    if not jobs:
        return []
    t0 = min(j.arrival_s for j in jobs)
    out = []
    for j in jobs:
        a = t0 + (j.arrival_s - t0) / factor
        if not a <= MAX_ARRIVAL_S:
            raise InputError(f"job {j.job_id} ({j.source}): arrival {a:g} s after --load-scale {factor:g} is beyond "
                             f"the limit of {MAX_ARRIVAL_S:g} s", field="load_scale")
        out.append(j.with_(arrival_s=a))
    return out
