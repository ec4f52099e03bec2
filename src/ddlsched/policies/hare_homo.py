"""``sched-homo``: the HPDC'22 paper's Sched_Homo baseline on the rounds model (docs/policies/hare.md §10).

A weighted-JCT scheduler with inter- and intra-job parallelism that assumes homogeneous GPUs (after Zhang et al.,
MobiHoc'20, as the Hare paper describes it) [I]: jobs in Smith's rule order w_j / (R_j · n_j · p_ref) with the
reference-GPU task time p_ref for every GPU; no job preemption — a job that has started stays ahead of every job
that has not; relaxed synchronisation like Hare (a round's tasks on any idle GPUs, several on one GPU), idle GPUs
taken blind to their type: the one idle longest first (``gpu_order="idle"``, the same type-blind rule as step 3 of
``hare-alg1``), or in index order (``gpu_order="index"``: on a cluster whose fast servers come first this is
accidentally fastest-first). ``spread=True`` (a sensitivity): a homogeneous planner divides a round evenly, one
task per GPU, so a job never runs two tasks of one round on the same GPU and a slow GPU paces the round.
"""

from __future__ import annotations

from bisect import insort
from typing import Any, Literal

from ddlsched.engine.decisions import RunTask
from ddlsched.engine.model import Requirements
from ddlsched.engine.rounds import RoundsView
from ddlsched.errors import ConfigError
from ddlsched.policies.base import Policy
from ddlsched.policies.registry import register


@register
class SchedHomo(Policy):
    """Smith's rule on homogeneous sizes, started jobs first, tasks to idle GPUs in index order."""

    name = "sched-homo"
    paper_scale_jobs = 2_000
    family = "chen2024"
    description = "Sched_Homo (Hare's baseline): weighted Smith's rule assuming identical GPUs, relaxed sync"
    requirements = Requirements(model="rounds", preemptive=True, gang=False)

    def reset(self) -> None:
        self._started: set[str] = set()
        self._idle_since: dict[int, float] = {}
        self._order: list[tuple[float, int]] = []  # (idle since, GPU) of every idle GPU, ascending
        self._mark: int | None = None  # position in the model's log of freed GPUs (None: before the first pass)
        self._used: dict[str, tuple[int, set[int]]] = {}
        self._all: range = range(0)  # job -> (round, GPUs given a task of it in that round)

    def __init__(self, gpu_order: Literal["idle", "index"] = "idle", spread: bool = False) -> None:
        self.spread = bool(spread)
        if gpu_order not in ("idle", "index"):
            raise ConfigError("gpu_order must be 'idle' or 'index'", field="gpu_order")
        self.gpu_order = gpu_order
        self.reset()

    def schedule(self, view: RoundsView) -> list[Any]:
        since, order = self._idle_since, self._order
        n_idle = view.idle_count()
        if len(since) != n_idle:
            # GPUs that became idle since the last pass get the time now, the latest yet, so they join the end of
            # the (idle since, GPU) order; only this policy's tasks make a GPU busy, so every key of since is idle,
            # and an idle GPU missing from it was freed after the last pass (in the model's log past the mark)
            now = view.now
            if self._mark is None:
                new = sorted(set(view.idle_gpus()).difference(since))
                _, self._mark = view.freed_since(0)
            else:
                freed, self._mark = view.freed_since(self._mark)
                new = sorted({g for g in freed if g not in since and view.running_on(g) is None
                              and view.leased_by(g) is None})
            for g in new:
                since[g] = now
            if not order or order[-1][0] < now:
                order.extend((now, g) for g in new)
            else:
                for g in new:
                    insort(order, (now, g))
        if not n_idle:
            return []
        ready = view.ready_jobs
        if not ready:
            return []
        ready.sort(key=lambda j: (j.job_id not in self._started, -j.weight / (j.rounds * j.n * j.ref_task_s),
                                  j.seq))
        if self.spread:
            self._all = range(view.cluster.num_gpus)
            idle = [g for _, g in order] if self.gpu_order == "idle" else view.idle_gpus()
            out = self._spread(idle, ready)
        else:
            tasks = sum(j.ready for j in ready)  # GPUs taken: the first min(tasks, idle) of the order
            idle = [g for _, g in order[:tasks]] if self.gpu_order == "idle" else view.idle_gpus()[:tasks]
            out = []
            k = 0
            left = {j.job_id: j.ready for j in ready}
            for g in idle:
                while k < len(ready) and left[ready[k].job_id] == 0:
                    k += 1
                if k == len(ready):
                    break
                j = ready[k]
                out.append(RunTask(j.job_id, g))
                self._started.add(j.job_id)
                del since[g]
                left[j.job_id] -= 1
            if self.gpu_order == "idle":
                del order[:len(out)]
                return out
        order[:] = [x for x in order if x[1] in since]
        return out

    def _spread(self, idle: list[int], ready: list[Any]) -> list[Any]:
        free = list(idle)
        out: list[Any] = []
        for j in ready:
            rnd, used = self._used.get(j.job_id, (-1, set()))
            if rnd != j.round:
                used = set()
                self._used[j.job_id] = (j.round, used)
            n = j.ready
            everywhere = len(used) >= len(self._all)  # a round wider than the cluster may reuse GPUs
            for g in [g for g in free if everywhere or g not in used][:n]:
                out.append(RunTask(j.job_id, g))
                used.add(g)
                free.remove(g)
                self._started.add(j.job_id)
                del self._idle_since[g]
            if not free:
                break
        return out
