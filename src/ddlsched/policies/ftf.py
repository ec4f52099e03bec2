"""Finish-time fairness (Themis ρ, Gavel FTF; docs/policies/fairness.md §4). **Clairvoyant**: it reads each job's
remaining work.

Every round the jobs with the largest estimated ρ hold the GPUs:

    ρ̂(j, now) = (now − arrival + remaining_ideal_s) ÷ (ideal_run_s × n̄(j, now))

the finish-time ratio the job would reach if it ran alone from now on, against its isolated 1/n share, n̄ the
average number of jobs in the system since it arrived (the policy integrates the count over time). Ties: arrival.
Between rounds, queued jobs start on free GPUs in the same order. Tenants play no part.
"""

from __future__ import annotations

from typing import Literal

from ddlsched.cluster.tenants import TenantSet
from ddlsched.engine.jobview import JobView
from ddlsched.engine.model import Requirements
from ddlsched.engine.view import SchedulerView
from ddlsched.policies.fair_rounds import RoundPolicy
from ddlsched.policies.registry import register


@register
class FinishTimeFairness(RoundPolicy):
    name = "ftf"
    description = "finish-time fairness: largest estimated rho (Themis) first, in rounds (clairvoyant)"
    family = "fairness"
    requirements = Requirements(model="fluid", preemptive=True, clairvoyant=True)  # reads remaining work

    def __init__(self, round_s: float = 360.0,
                 placement: Literal["consolidated", "pack", "first_fit"] = "consolidated") -> None:
        super().__init__(round_s, placement)
        self._area = 0.0  # ∫ jobs in the system dt since the start
        self._last_t = 0.0
        self._last_n = 0
        self._area_at: dict[str, float] = {}

    def reset(self) -> None:
        super().reset()
        self._area, self._last_t, self._last_n = 0.0, 0.0, 0
        self._area_at.clear()

    def observe(self, view: SchedulerView) -> None:
        now = view.now
        self._area += self._last_n * (now - self._last_t)
        self._last_t = now
        pending, running = view.pending, view.running
        self._last_n = len(pending) + len(running)
        for j in pending:
            if j.job_id not in self._area_at:  # first seen at its arrival: the area so far
                self._area_at[j.job_id] = self._area

    def rho_estimate(self, j: JobView, now: float) -> float:
        age = now - j.arrival_s
        n_avg = (self._area - self._area_at.get(j.job_id, self._area)) / age if age > 0 else self._last_n
        isolated = j.ideal_run_s * max(n_avg, 1.0)
        return (age + j.remaining_ideal_s) / isolated if isolated > 0 else 0.0

    def rank(self, view: SchedulerView, ts: TenantSet, jobs: list[JobView]) -> list[JobView]:
        now = view.now
        rho = {j.job_id: self.rho_estimate(j, now) for j in jobs}
        return sorted(jobs, key=lambda j: (-rho[j.job_id], j.seq))
