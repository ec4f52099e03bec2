"""Weighted max-min fairness across tenants, LAS inside a tenant (Gavel's LAS policy on a homogeneous cluster;
docs/policies/fairness.md §3).

Every round (``round_s``, Gavel's 6 minutes by default): demand(t) = GPUs asked by tenant t's running and queued
jobs; budget(t) = the weighted max-min fair split of the cluster's GPUs over the demands (water-filling: no tenant
gets more than it asks, the rest is shared in proportion to the weights). Inside a tenant, jobs go by
least-attained-service class (Tiresias' two queues at 3600 GPU-s), running jobs before queued ones of the same class,
then arrival. Jobs are taken while their tenant's budget allows, then while GPUs are left (work conservation).
The heterogeneity-aware variant (an LP over job × GPU-type throughputs) is not implemented; see the doc.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ddlsched.cluster.tenants import TenantSet
from ddlsched.engine.jobview import JobView
from ddlsched.engine.state import JobStatus
from ddlsched.engine.view import SchedulerView
from ddlsched.metrics.fairness import water_fill
from ddlsched.policies.fair_rounds import RoundPolicy
from ddlsched.policies.registry import register
from ddlsched.policies.tenancy import LAS_THRESHOLD_GPU_S


@register
class FairMaxMin(RoundPolicy):
    name = "fair-maxmin"
    description = ("weighted max-min fair GPU shares across tenants each round, least attained service inside a "
                   "tenant (Gavel LAS, homogeneous)")
    family = "fairness"

    def __init__(self, round_s: float = 360.0,
                 placement: Literal["consolidated", "pack", "first_fit"] = "consolidated") -> None:
        super().__init__(round_s, placement)

    def rank(self, view: SchedulerView, ts: TenantSet, jobs: list[JobView]) -> list[JobView]:
        return sorted(jobs, key=lambda j: (int(j.attained_gpu_s >= LAS_THRESHOLD_GPU_S),
                                           0 if j.status is JobStatus.RUNNING else 1, j.seq))

    def budgets(self, view: SchedulerView, ts: TenantSet, jobs: list[JobView]) -> dict[str, float]:
        names = ts.names
        demand = dict.fromkeys(names, 0.0)
        for j in jobs:
            demand[self._tenant(ts, j)] += j.num_gpus
        share = water_fill(view.cluster.num_gpus, np.array([demand[n] for n in names]),
                           np.array([ts.tenants[n].weight for n in names]))
        return {n: float(x) for n, x in zip(names, share, strict=True)}
