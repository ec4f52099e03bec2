"""Quota scheduling with borrowing and reclaim (capacity scheduler / Kueue style; docs/policies/fairness.md §2).

A pass, with usage(t) = GPUs held by tenant t's running jobs:

1. **Guaranteed.** Tenants, least used first (usage ÷ quota), start their queued jobs (inner order) whose GPUs fit
   inside their quota. When such a job finds too few free GPUs, it reclaims: running jobs of *borrowing* tenants
   (usage > quota) are preempted — the tenant furthest over its quota first, its most recently started job first
   (ties: the latest to arrive) — until the job fits; ``reclaim`` says from whom (``never``; ``cohort``: tenants
   of the same root cohort; ``always``). If the freed GPUs still do not place it, nothing is preempted for it.
2. **Borrowing.** The remaining queued jobs, tenants in order of usage ÷ weight, start on free GPUs while their
   tenant stays within quota + borrow_limit. Borrowing never preempts.

Quotas count GPUs in total (a per-type quota counts as its sum here; the per-type figures are validated and
reported). Without tenants the cluster is one tenant's quota (the inner order alone). A tenant asking for its
quota back gets it in the same pass that sees its jobs arrive (tested by hand in ``tests/test_tenants_policies.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from ddlsched.engine.decisions import Decision, Preempt, Start
from ddlsched.engine.jobview import JobView
from ddlsched.engine.model import Requirements
from ddlsched.engine.view import SchedulerView
from ddlsched.policies.base import Policy
from ddlsched.policies.placement import PLACEMENTS
from ddlsched.policies.registry import register
from ddlsched.policies.tenancy import InnerOrder, TenantOf, inner_key, tenants_or_one


@register
class QuotaPolicy(Policy):
    name = "quota"
    description = ("tenant quotas first, idle quota borrowed, borrowed GPUs reclaimed by preemption "
                   "(never / cohort / always); without tenants: one tenant, the inner order")
    family = "fairness"
    requirements = Requirements(model="fluid", preemptive=True)

    def __init__(self, order: InnerOrder = "fifo", reclaim: Literal["never", "cohort", "always"] = "always",
                 placement: Literal["consolidated", "pack", "first_fit"] = "consolidated") -> None:
        self.order = order
        # sjf inside a tenant reads the jobs' ideal run times: clairvoyant (fifo and las are not)
        self.requirements = Requirements(model="fluid", preemptive=True, clairvoyant=order == "sjf")
        self.reclaim = reclaim
        self.placement = PLACEMENTS[placement]()
        self._key = inner_key(order)
        self._tenant = TenantOf()
        self._counts = {"reclaim_preemptions": 0, "borrowed_starts": 0}

    def reset(self) -> None:
        self._tenant.clear()
        self._counts = dict.fromkeys(self._counts, 0)

    def mechanisms(self) -> dict[str, float]:
        return dict(self._counts)

    def schedule(self, view: SchedulerView) -> Sequence[Decision]:
        if not view.pending:
            return []
        ts = tenants_or_one(view)
        tenant_of = self._tenant
        usage = dict.fromkeys(ts.tenants, 0)
        running: dict[str, list[JobView]] = {t: [] for t in ts.tenants}
        for j in view.running:
            t = tenant_of(ts, j)
            usage[t] += j.num_gpus
            running[t].append(j)
        queues: dict[str, list[JobView]] = {t: [] for t in ts.tenants}
        for j in view.pending:
            queues[tenant_of(ts, j)].append(j)
        for q in queues.values():
            q.sort(key=self._key)
        alloc = view.allocation()
        out: list[Decision] = []
        started: set[str] = set()
        preempted: set[str] = set()

        def quota(t: str) -> int:
            return ts.tenants[t].quota

        def may_take_from(claimant: str, victim: str) -> bool:
            if victim == claimant or usage[victim] <= quota(victim):
                return False
            if self.reclaim == "always":
                return True
            root = ts.tenants[claimant].root_cohort
            return root is not None and root == ts.tenants[victim].root_cohort

        def reclaim_for(t: str, job: JobView) -> list[int] | None:
            need = job.num_gpus - alloc.num_free
            chosen: list[JobView] = []
            freed_by: dict[str, int] = {}
            owners = sorted((v for v in ts.tenants if may_take_from(t, v)),
                            key=lambda v: (-(usage[v] - quota(v)), v))
            for v in owners:
                for r in sorted(running[v], key=lambda r: (-(r.last_start or 0.0), -r.seq)):
                    if need <= 0 or r.job_id in preempted:
                        continue
                    if usage[v] - freed_by.get(v, 0) <= quota(v):
                        break  # v is back within its quota: nothing of it is borrowed any more
                    chosen.append(r)
                    freed_by[v] = freed_by.get(v, 0) + r.num_gpus
                    need -= r.num_gpus
            if need > 0:
                return None
            for r in chosen:
                alloc.release(r.gpus)
            gpus = self.placement.place(job, alloc.for_mem(job.mem_mb), view)
            if gpus is None:  # fragmentation: undo, evict nobody for nothing
                for r in chosen:
                    alloc.take(r.gpus)
                return None
            for r in chosen:
                out.append(Preempt(r.job_id))
                preempted.add(r.job_id)
                usage[tenant_of(ts, r)] -= r.num_gpus
                self._counts["reclaim_preemptions"] += 1
            return gpus

        def start(t: str, job: JobView, gpus: list[int]) -> None:
            alloc.take(gpus)
            out.append(Start(job.job_id, tuple(gpus)))
            started.add(job.job_id)
            usage[t] += job.num_gpus

        # 1. guaranteed: within quota, reclaiming borrowed GPUs
        for t in sorted(ts.tenants, key=lambda t: (usage[t] / quota(t) if quota(t) else math.inf, t)):
            for job in queues[t]:
                if usage[t] + job.num_gpus > quota(t):
                    continue
                gpus = self.placement.place(job, alloc.for_mem(job.mem_mb), view) \
                    if job.num_gpus <= alloc.num_free else None
                if gpus is None and self.reclaim != "never":
                    gpus = reclaim_for(t, job)
                if gpus is not None:
                    start(t, job, gpus)
        # 2. borrowing idle GPUs, least used (per weight) first
        for t in sorted(ts.tenants, key=lambda t: (usage[t] / ts.tenants[t].weight, t)):
            limit = ts.tenants[t].borrow_limit
            cap = math.inf if limit is None else quota(t) + limit
            for job in queues[t]:
                if alloc.num_free == 0:
                    break
                if job.job_id in started or usage[t] + job.num_gpus > cap or job.num_gpus > alloc.num_free:
                    continue
                gpus = self.placement.place(job, alloc.for_mem(job.mem_mb), view)
                if gpus is not None:
                    if usage[t] + job.num_gpus > quota(t):
                        self._counts["borrowed_starts"] += 1
                    start(t, job, gpus)
        return out
