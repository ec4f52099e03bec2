"""Quota scheduling with borrowing and reclaim (capacity scheduler / Kueue style; docs/policies/fairness.md §2).

A pass, with usage(t) = GPUs held by tenant t's running jobs:

1. **Guaranteed.** Tenants, least used first (usage ÷ quota), start their queued jobs (inner order) whose GPUs fit
   inside their quota. When such a job finds too few free GPUs, it reclaims: running jobs of *borrowing* tenants
   (usage > quota) are preempted — the tenant furthest over its quota first, its most recently started job first
   (ties: the latest to arrive) — until the job fits; ``reclaim`` says from whom (``never``; ``cohort``: tenants
   of the same root cohort; ``always``). If the freed GPUs still do not place it, nothing is preempted for it.
2. **Borrowing.** The remaining queued jobs, tenants in order of usage ÷ weight, start on free GPUs while their
   tenant stays within quota + borrow_limit. Borrowing never preempts.

**Per-type quotas** (``quota: {V100: 4}``). usage(t, T) = GPUs of type T held by t's running jobs. In step 1 a
job of such a tenant is within quota on a type T it has a quota on when usage(t, T) + its GPUs ≤ quota(t, T); it
then runs on GPUs of type T only. The eligible types are tried most headroom (quota − usage) first, ties by name:
first on their free GPUs, then, in the same order, by reclaim on T — which preempts only jobs holding GPUs of type
T, of tenants *borrowing on T*: a per-type tenant with usage(v, T) > quota(v, T) (a type it has no quota on counts
0), or a total-quota tenant over its total (its quota is type-agnostic, so every GPU it holds beyond it is
borrowed, whatever the type). A tenant with a total quota claims as before: anywhere, from tenants over their
total (a per-type tenant's total is the sum of its per-type quotas). In step 2 a tenant's *borrowed* GPUs —
usage − quota for a total quota, Σ_T max(0, usage(t, T) − quota(t, T)) for a per-type one — may not exceed
``borrow_limit``; the job goes on any free GPUs. With ``borrow_limit: 0`` a per-type tenant therefore never holds
more than its quota on any type.

Tenants with a total quota behave exactly as without this rule. Without tenants the cluster is one tenant's quota
(the inner order alone). A tenant asking for its quota back gets it in the same pass that sees its jobs arrive
(tested by hand in ``tests/test_tenants_policies.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Literal

from ddlsched.engine.allocation import FreeIndex, MemoryFiltered
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
        self._hide: tuple[object, dict[str, dict[int, frozenset[int]]]] | None = None

    def reset(self) -> None:
        self._tenant.clear()
        self._hide = None
        self._counts = dict.fromkeys(self._counts, 0)

    def mechanisms(self) -> dict[str, float]:
        return dict(self._counts)

    def _of_type(self, view: SchedulerView, free: FreeIndex, gpu_type: str) -> FreeIndex:
        """``free`` without the GPUs of other types (a view: taking still goes through ``alloc``)."""
        cluster = view.cluster
        if self._hide is None or self._hide[0] is not cluster:
            by_type: dict[str, dict[int, set[int]]] = {k: {} for k in cluster.gpu_types}
            for g, k in enumerate(cluster.gpu_type):
                for other in by_type:
                    if other != k:
                        by_type[other].setdefault(cluster.gpu_server[g], set()).add(g)
            self._hide = (cluster, {k: {sv: frozenset(gs) for sv, gs in h.items()} for k, h in by_type.items()})
        hidden = self._hide[1].get(gpu_type)
        return free if not hidden else MemoryFiltered(free, hidden)

    def schedule(self, view: SchedulerView) -> Sequence[Decision]:
        if not view.pending:
            return []
        ts = tenants_or_one(view)
        tenant_of = self._tenant
        typed = {t for t, ten in ts.tenants.items() if ten.quota_by_type}
        gpu_type = view.cluster.gpu_type
        usage = dict.fromkeys(ts.tenants, 0)
        usage_on: dict[str, dict[str, int]] = {t: {} for t in ts.tenants}  # tenant → GPU type → GPUs held
        running: dict[str, list[JobView]] = {t: [] for t in ts.tenants}

        def book(t: str, gpus: Sequence[int], sign: int) -> None:
            usage[t] += sign * len(gpus)
            if typed:
                on = usage_on[t]
                for g in gpus:
                    on[gpu_type[g]] = on.get(gpu_type[g], 0) + sign

        for j in view.running:
            t = tenant_of(ts, j)
            book(t, j.gpus, 1)
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

        def over_on(v: str, k: str) -> int:
            """GPUs ``v`` borrows on type ``k``: beyond its quota on ``k``, or beyond its total if that is type-
            agnostic."""
            if v in typed:
                return usage_on[v].get(k, 0) - ts.tenants[v].quota_by_type.get(k, 0)
            return usage[v] - quota(v)

        def borrowed(t: str) -> int:
            if t in typed:
                q = ts.tenants[t].quota_by_type
                return sum(max(0, n - q.get(k, 0)) for k, n in usage_on[t].items())
            return usage[t] - quota(t)

        def may_take_from(claimant: str, victim: str, over: int | None = None) -> bool:
            if victim == claimant or (usage[victim] - quota(victim) if over is None else over) <= 0:
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
            return place_evicting(job, chosen, lambda: alloc.for_mem(job.mem_mb))

        def place_evicting(job: JobView, chosen: list[JobView], free: Callable[[], Any]) -> list[int] | None:
            """Place ``job`` on the GPUs ``free()`` offers once ``chosen`` are evicted; if it still does not fit
            (fragmentation), undo and evict nobody for nothing."""
            for r in chosen:
                alloc.release(r.gpus)
            gpus = self.placement.place(job, free(), view)
            if gpus is None:
                for r in chosen:
                    alloc.take(r.gpus)
                return None
            evict(chosen)
            return gpus

        def evict(chosen: list[JobView]) -> None:
            for r in chosen:
                out.append(Preempt(r.job_id))
                preempted.add(r.job_id)
                book(tenant_of(ts, r), r.gpus, -1)
                self._counts["reclaim_preemptions"] += 1

        def reclaim_on(t: str, job: JobView, k: str) -> list[int] | None:
            """``reclaim_for`` restricted to type ``k``: victims borrow on ``k`` and hold GPUs of ``k``."""
            need = job.num_gpus - self._of_type(view, alloc.for_mem(job.mem_mb), k).num_free
            chosen: list[JobView] = []
            freed_by: dict[str, int] = {}
            over = {v: over_on(v, k) for v in ts.tenants}
            owners = sorted((v for v in ts.tenants if may_take_from(t, v, over[v])), key=lambda v: (-over[v], v))
            for v in owners:
                for r in sorted(running[v], key=lambda r: (-(r.last_start or 0.0), -r.seq)):
                    on_k = sum(1 for g in r.gpus if gpu_type[g] == k)
                    if need <= 0 or r.job_id in preempted or on_k == 0:
                        continue
                    if over[v] - freed_by.get(v, 0) <= 0:
                        break  # v borrows nothing on k any more
                    chosen.append(r)
                    freed_by[v] = freed_by.get(v, 0) + (on_k if v in typed else r.num_gpus)
                    need -= on_k
            if need > 0:
                return None
            return place_evicting(job, chosen, lambda: self._of_type(view, alloc.for_mem(job.mem_mb), k))

        def guaranteed_typed(t: str, job: JobView) -> list[int] | None:
            """A within-quota placement of a per-type tenant's job on one type (most headroom first), or None."""
            on, q = usage_on[t], ts.tenants[t].quota_by_type
            kinds = sorted((k for k in q if on.get(k, 0) + job.num_gpus <= q[k]),
                           key=lambda k: (-(q[k] - on.get(k, 0)), k))
            for k in kinds:
                free = self._of_type(view, alloc.for_mem(job.mem_mb), k)
                gpus = self.placement.place(job, free, view) if job.num_gpus <= free.num_free else None
                if gpus is not None:
                    return gpus
            if self.reclaim != "never":
                for k in kinds:
                    gpus = reclaim_on(t, job, k)
                    if gpus is not None:
                        return gpus
            return None

        def start(t: str, job: JobView, gpus: list[int]) -> None:
            alloc.take(gpus)
            out.append(Start(job.job_id, tuple(gpus)))
            started.add(job.job_id)
            book(t, gpus, 1)

        # 1. guaranteed: within quota, reclaiming borrowed GPUs
        for t in sorted(ts.tenants, key=lambda t: (usage[t] / quota(t) if quota(t) else math.inf, t)):
            for job in queues[t]:
                if t in typed:
                    gpus = guaranteed_typed(t, job)
                    if gpus is not None:
                        start(t, job, gpus)
                    continue
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
                if job.job_id in started or job.num_gpus > alloc.num_free:
                    continue
                if t not in typed and usage[t] + job.num_gpus > cap:
                    continue
                gpus = self.placement.place(job, alloc.for_mem(job.mem_mb), view)
                if gpus is None:
                    continue
                if t in typed:  # what it would borrow depends on the types it lands on
                    before = borrowed(t)
                    book(t, gpus, 1)
                    after = borrowed(t)
                    book(t, gpus, -1)
                    if limit is not None and after > limit:
                        continue
                    if after > before:
                        self._counts["borrowed_starts"] += 1
                elif usage[t] + job.num_gpus > quota(t):
                    self._counts["borrowed_starts"] += 1
                start(t, job, gpus)
        return out
