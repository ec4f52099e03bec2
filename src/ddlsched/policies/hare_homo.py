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

from typing import Any, Literal

from ddlsched.engine.decisions import RunTask
from ddlsched.engine.model import Requirements
from ddlsched.engine.rounds import RoundsView
from ddlsched.errors import ConfigError
from ddlsched.policies.base import Policy
from ddlsched.policies.idle_order import IdleOrder, deal_tasks
from ddlsched.policies.registry import register


@register
class SchedHomo(Policy):
    """Smith's rule on homogeneous sizes, started jobs first, tasks to idle GPUs in index order."""

    name = "sched-homo"
    family = "chen2024"
    description = "Sched_Homo (Hare's baseline): weighted Smith's rule assuming identical GPUs, relaxed sync"
    paper_scale_jobs = 1_800  # measured (issue 30): jobs done in the first minute, docs/policies/README.md
    requirements = Requirements(model="rounds", preemptive=True, gang=False, clairvoyant=True)

    def reset(self) -> None:
        self._started: set[str] = set()
        self._idle = IdleOrder()
        self._used: dict[str, tuple[int, set[int]]] = {}
        self._all: range = range(0)  # job -> (round, GPUs given a task of it in that round)

    def __init__(self, gpu_order: Literal["idle", "index"] = "idle", spread: bool = False) -> None:
        self.spread = bool(spread)
        if gpu_order not in ("idle", "index"):
            raise ConfigError("gpu_order must be 'idle' or 'index'", field="gpu_order")
        self.gpu_order = gpu_order
        self.reset()

    def schedule(self, view: RoundsView) -> list[Any]:
        n_idle = self._idle.update(view)
        since = self._idle.since
        if not n_idle:
            return []
        ready = view.ready_jobs
        if not ready:
            return []
        ready.sort(key=lambda j: (j.job_id not in self._started, -j.weight / (j.rounds * j.n * j.ref_task_s),
                                  j.seq))
        if self.spread:
            self._all = range(view.cluster.num_gpus)
            idle = self._idle.first() if self.gpu_order == "idle" else view.idle_gpus()
            out = self._spread(idle, ready)
        else:
            tasks = sum(j.ready for j in ready)  # GPUs taken: the first min(tasks, idle) of the order
            idle = self._idle.first(tasks) if self.gpu_order == "idle" else view.idle_gpus()[:tasks]
            out = deal_tasks(ready, idle, since)
            self._started.update(t.job_id for t in out)
            if self.gpu_order == "idle":
                self._idle.taken(prefix=len(out))
                return out
        self._idle.taken()
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
                del self._idle.since[g]
            if not free:
                break
        return out
