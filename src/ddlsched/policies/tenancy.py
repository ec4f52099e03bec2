"""What the tenant-aware policies share (quota, fair-maxmin, ftf; docs/policies/fairness.md): the run's tenants,
each job's tenant, the orderings used inside a tenant, and placing a list of chosen jobs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from ddlsched.cluster.tenants import Tenant, TenantSet
from ddlsched.engine.jobview import JobView
from ddlsched.engine.view import SchedulerView

InnerOrder = Literal["fifo", "sjf", "las"]
LAS_THRESHOLD_GPU_S = 3600.0
"""``las`` inside a tenant: Tiresias' two queues, split at this much attained GPU-time (its default threshold)."""


def tenants_or_one(view: SchedulerView) -> TenantSet:
    """The run's tenants; without any (no ``tenants:`` section, no ``--tenants``) one tenant owns the cluster (its
    quota is every GPU)."""
    ts: TenantSet | None = getattr(view.cluster, "tenants", None)
    if ts is not None:
        return ts
    n = view.cluster.num_gpus
    return TenantSet({"default": Tenant("default", 1.0, n, {}, None, None, None)}, "default")


def inner_key(order: InnerOrder) -> Callable[[JobView], Any]:
    """The order of a tenant's own jobs (smaller first; ties by arrival)."""
    if order == "fifo":
        return lambda j: (0, j.seq)
    if order == "sjf":  # clairvoyant: reads the job's ideal run time
        return lambda j: (j.ideal_run_s, j.seq)
    return lambda j: (int(j.attained_gpu_s >= LAS_THRESHOLD_GPU_S), j.seq)


class TenantOf:
    """Job → tenant name, memoised per job id (a job's user does not change)."""

    def __init__(self) -> None:
        self._memo: dict[str, str] = {}

    def __call__(self, ts: TenantSet, job: JobView) -> str:
        t = self._memo.get(job.job_id)
        if t is None:
            t = self._memo[job.job_id] = ts.of(job.user)
        return t

    def clear(self) -> None:
        self._memo.clear()
