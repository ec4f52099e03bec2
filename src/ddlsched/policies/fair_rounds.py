"""Round-based re-allocation shared by ``fair-maxmin`` and ``ftf`` (docs/policies/fairness.md §3–§4).

Every ``round_s`` seconds the policy chooses, from the running and queued jobs together, which jobs hold GPUs for
the next round: a subclass ranks the jobs and may give each tenant a budget of GPUs. Jobs are taken best first
while their tenant's budget allows, then (work conservation) while any GPUs are left; running jobs not chosen are
preempted and chosen queued jobs started. Between round boundaries a pass only starts queued jobs on free GPUs in
the same order (no preemption), so a round's decisions are not undone by every arrival.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ddlsched.cluster.tenants import TenantSet
from ddlsched.engine.decisions import Decision, Preempt, Start, WakeAt
from ddlsched.engine.jobview import JobView
from ddlsched.engine.model import Requirements
from ddlsched.engine.state import JobStatus
from ddlsched.engine.view import SchedulerView
from ddlsched.policies.base import Policy
from ddlsched.policies.placement import PLACEMENTS
from ddlsched.policies.tenancy import TenantOf, tenants_or_one

_EPS = 1e-9


class RoundPolicy(Policy):
    """Re-decide every ``round_s``; subclasses give :meth:`rank` and optionally :meth:`budgets`."""

    requirements = Requirements(model="fluid", preemptive=True)
    idle_when_nothing_queued = True
    """Whether a pass with an empty queue can leave everything as it is (no round needed then)."""

    def __init__(self, round_s: float = 360.0, placement: str = "consolidated") -> None:
        if not (math.isfinite(round_s) and round_s > 0):
            raise ValueError(f"round_s must be a finite number > 0, got {round_s}")
        self.round_s = round_s
        self.placement = PLACEMENTS[placement]()
        self._tenant = TenantOf()
        self._next_round = 0.0
        self._rounds = 0

    def reset(self) -> None:
        self._tenant.clear()
        self._next_round = 0.0
        self._rounds = 0

    def mechanisms(self) -> dict[str, float]:
        return {"fair_rounds": self._rounds}

    # ------------------------------------------------------------------ subclass hooks
    def observe(self, view: SchedulerView) -> None:
        """Called at the start of every pass (bookkeeping over time)."""

    def rank(self, view: SchedulerView, ts: TenantSet, jobs: list[JobView]) -> list[JobView]:
        """``jobs`` (running and queued) best first."""
        raise NotImplementedError

    def budgets(self, view: SchedulerView, ts: TenantSet, jobs: list[JobView]) -> dict[str, float] | None:
        """GPUs per tenant for the first walk (None: no per-tenant budget, one walk in rank order)."""
        return None

    # ------------------------------------------------------------------ the pass
    def schedule(self, view: SchedulerView) -> Sequence[Decision]:
        self.observe(view)
        if not view.pending and (self.idle_when_nothing_queued or not view.running):
            return []
        ts = tenants_or_one(view)
        now = view.now
        if now + _EPS >= self._next_round:
            self._next_round = now + self.round_s
            self._rounds += 1
            out = self._reallocate(view, ts)
        elif view.num_free == 0:
            out = []  # between rounds a pass only fills free GPUs: none
        else:
            out = self._fill(view, ts)
        out.append(WakeAt(self._next_round))
        return out

    def _choose(self, view: SchedulerView, ts: TenantSet, jobs: list[JobView], free: int) -> list[JobView]:
        """The jobs to hold GPUs, best first, within ``free`` GPUs and (first walk) the tenants' budgets."""
        ranked = self.rank(view, ts, jobs)
        budget = self.budgets(view, ts, jobs)
        chosen: list[JobView] = []
        taken: set[str] = set()
        if budget is not None:
            used = dict.fromkeys(budget, 0.0)
            for j in ranked:
                t = self._tenant(ts, j)
                if j.num_gpus <= free and used[t] + j.num_gpus <= budget[t] + _EPS:
                    chosen.append(j)
                    taken.add(j.job_id)
                    used[t] += j.num_gpus
                    free -= j.num_gpus
        for j in ranked:  # work conservation: what the budgets left idle
            if j.job_id not in taken and j.num_gpus <= free:
                chosen.append(j)
                free -= j.num_gpus
        return chosen

    def _reallocate(self, view: SchedulerView, ts: TenantSet) -> list[Decision]:
        running = list(view.running)
        jobs = running + list(view.pending)
        chosen = self._choose(view, ts, jobs, view.cluster.num_gpus)
        keep = {j.job_id for j in chosen}
        alloc = view.allocation()
        out: list[Decision] = []
        for j in running:
            if j.job_id not in keep:
                alloc.release(j.gpus)
                out.append(Preempt(j.job_id))
        self._place(view, alloc, [j for j in chosen if j.status is not JobStatus.RUNNING], out)
        return out

    def _fill(self, view: SchedulerView, ts: TenantSet) -> list[Decision]:
        alloc = view.allocation()
        running = list(view.running)
        jobs = running + list(view.pending)
        chosen = self._choose(view, ts, jobs, view.cluster.num_gpus)
        out: list[Decision] = []
        self._place(view, alloc, [j for j in chosen if j.status is not JobStatus.RUNNING], out)
        return out

    def _place(self, view: SchedulerView, alloc: Any, jobs: list[JobView], out: list[Decision]) -> None:
        for j in jobs:
            if j.num_gpus > alloc.num_free:
                continue
            gpus = self.placement.place(j, alloc.for_mem(j.mem_mb), view)
            if gpus is not None:
                alloc.take(gpus)
                out.append(Start(j.job_id, tuple(gpus)))
