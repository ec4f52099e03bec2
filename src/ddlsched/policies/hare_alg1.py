"""``hare-alg1``: Hare's offline Algorithm 1 (HPDC'22) on the rounds execution model (docs/policies/hare.md §9).

1. Relaxation (:mod:`ddlsched.policies.hare_lp`): once, at the first pass, over every job of the run (offline:
   arrivals and sizes known) → x̂ for every round of every job; HiGHS LP if ``highspy`` is installed, else the
   greedy Smith's-rule fill (``solver`` parameter; the mechanism counters say which ran).
2. Each task's middle completion time H = x̂ + (its slowest GPU type's task time) / 2; all tasks of a round share
   their round's H.
3. List scheduling in H order, event by event: each idle GPU — the one idle longest first, i.e. the GPU that became
   available earliest, not the fastest — takes a released task with the smallest H. Release: the job's arrival for
   round 0, the end of the previous round's synchronisation after that (the engine's round barrier).
   ``gpu_choice="fastest"`` (a sensitivity, not the paper's rule): the task with the smallest H takes, among the idle
   GPUs, the one fastest for it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import PositiveInt

from ddlsched.engine.decisions import RunTask
from ddlsched.engine.model import Requirements
from ddlsched.engine.rounds import RoundsView
from ddlsched.errors import ConfigError
from ddlsched.policies.base import Policy
from ddlsched.policies.hare_lp import RelaxJob, relax
from ddlsched.policies.idle_order import IdleOrder, deal_tasks
from ddlsched.policies.registry import register


@register
class HareAlg1(Policy):
    """Relaxation → H order → earliest-available GPU (docs/policies/hare.md §9)."""

    name = "hare-alg1"
    family = "chen2024"
    description = "Hare offline Algorithm 1: LP relaxation (HiGHS, greedy fallback) -> H order -> earliest-free GPU"
    requirements = Requirements(model="rounds", preemptive=True, gang=False, clairvoyant=True)

    def __init__(self, solver: Literal["auto", "highs", "greedy"] = "auto", intervals: PositiveInt = 40,
                 gpu_choice: Literal["earliest", "fastest"] = "earliest") -> None:
        if gpu_choice not in ("earliest", "fastest"):
            raise ConfigError("gpu_choice must be 'earliest' or 'fastest'", field="gpu_choice")
        self.gpu_choice = gpu_choice
        self.solver = solver
        self.intervals = int(intervals)
        self.reset()

    def reset(self) -> None:
        self._h: dict[str, list[float]] = {}
        self._idle = IdleOrder()
        self._mech = {"relaxation_lp": 0, "relaxation_greedy": 0}

    def mechanisms(self) -> dict[str, float]:
        return dict(self._mech)

    def _plan(self, view: RoundsView) -> None:
        c = view.cluster
        counts: dict[str, int] = {}
        for g in range(c.num_gpus):
            counts[c.gpu_type[g]] = counts.get(c.gpu_type[g], 0) + 1
        jobs = [RelaxJob(j.job_id, j.arrival_s, j.weight, j.n, j.rounds, dict(j.task_s), j.sync_s)
                for j in view.all_jobs if j.job_id not in self._h]
        xs, method = relax(jobs, counts, self.intervals, self.solver)
        if method in ("lp", "greedy"):
            self._mech[f"relaxation_{method}"] += 1
        for j in jobs:
            half = max(j.task_s.values()) / 2
            self._h[j.job_id] = [x + half for x in xs[j.job_id]]

    def schedule(self, view: RoundsView) -> list[Any]:
        if not self._idle.update(view):
            return []
        ready = view.ready_jobs
        if not ready:
            return []
        if any(j.job_id not in self._h for j in ready):
            self._plan(view)
        ready.sort(key=lambda j: (self._h[j.job_id][j.round], j.seq))
        left = {j.job_id: j.ready for j in ready}
        out: list[Any] = []
        if self.gpu_choice == "fastest":
            out = self._fastest(view, view.idle_gpus(), ready, left)
            self._idle.taken()
            return out
        # GPUs by (idle since, index), as many as there are tasks
        out = deal_tasks(ready, self._idle.first(sum(left.values())), self._idle.since)
        self._idle.taken(prefix=len(out))
        return out

    def _fastest(self, view: RoundsView, idle: list[int], ready: list[Any], left: dict[str, int]) -> list[Any]:
        free = set(idle)
        out: list[Any] = []
        for j in ready:
            while left[j.job_id] > 0 and free:
                g = min(free, key=lambda g: (view.task_time(j, g), self._idle.since[g], g))
                out.append(RunTask(j.job_id, g))
                left[j.job_id] -= 1
                free.discard(g)
                del self._idle.since[g]
            if not free:
                break
        return out
