"""``allox``: the HPDC'22 paper's Sched_Allox baseline (AlloX, EuroSys'20) on the rounds model
(docs/policies/hare.md §10).

AlloX matches jobs to processors by a min-cost bipartite matching and has no intra-job parallelism: here a job runs
on **one GPU**, its n_j tasks of a round back to back (no synchronisation on one GPU). On each arrival the waiting
jobs (the ``window`` that arrived first) are matched to slots (GPU g, position k), k = 1 for the last job g runs:
job i in slot (g, k) costs k · P_{i,g} + r_g, where P_{i,g} = its remaining tasks × its task time on g's type and
r_g the time g needs to finish its current job. A job in slot (g, k) adds its time to the k jobs that end with it
on g, so the total cost is the sum of completion times (AlloX minimises average JCT; weights are not used). An
idle GPU starts the job matched to it with the largest k; a started job keeps its GPU to the end.
The matching is solved exactly by :func:`hungarian` (hand-written, numpy).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import PositiveInt

from ddlsched.engine.decisions import RunTask
from ddlsched.engine.model import Requirements
from ddlsched.engine.rounds import RoundJobView, RoundsView
from ddlsched.policies.base import Policy
from ddlsched.policies.registry import register


def hungarian(cost: np.ndarray) -> list[int]:
    """Min-cost assignment of every row to a distinct column (rows ≤ columns): column index per row."""
    n, m = cost.shape
    if n > m:
        raise ValueError("hungarian: more rows than columns")
    a = np.zeros((n + 1, m + 1))
    a[1:, 1:] = cost
    u, v = np.zeros(n + 1), np.zeros(m + 1)
    p = np.zeros(m + 1, dtype=np.int64)  # row matched to each column (0 = none)
    way = np.zeros(m + 1, dtype=np.int64)
    for i in range(1, n + 1):
        p[0] = i
        j0 = 0
        minv = np.full(m + 1, math.inf)
        used = np.zeros(m + 1, dtype=bool)
        while True:
            used[j0] = True
            i0 = p[j0]
            free = ~used
            cur = a[i0] - u[i0] - v
            upd = free & (cur < minv)
            minv[upd] = cur[upd]
            way[upd] = j0
            masked = np.where(free, minv, math.inf)
            j1 = int(np.argmin(masked))
            delta = masked[j1]
            u[p[used]] += delta
            v[used] -= delta
            minv[free] -= delta
            j0 = j1
            if p[j0] == 0:
                break
        while j0:
            j1 = int(way[j0])
            p[j0] = p[j1]
            j0 = j1
    out = [0] * n
    for j in range(1, m + 1):
        if p[j]:
            out[p[j] - 1] = j - 1
    return out


@register
class Allox(Policy):
    """Min-cost matching of waiting jobs to (GPU, position) slots; one GPU per job (no intra-job parallelism)."""

    name = "allox"
    paper_scale_jobs = 7_500
    family = "chen2024"
    description = "Sched_Allox (Hare's baseline): min-cost job-to-GPU matching, one GPU per job"
    requirements = Requirements(model="rounds", preemptive=True, gang=False, clairvoyant=True)

    def __init__(self, window: PositiveInt = 32) -> None:
        self.window = int(window)
        self.reset()

    def reset(self) -> None:
        self._owner: dict[int, str] = {}   # GPU -> job running on it (kept to the job's end)
        self._gpu_of: dict[str, int] = {}
        self._queue: dict[int, list[tuple[int, str]]] = {}  # GPU -> [(position k, job)] from the last matching
        self._seen: tuple[Any, ...] = ()
        self._view_of: dict[str, RoundJobView] = {}  # placed jobs
        self._rank: dict[str, int] = {}  # placed jobs: order of placement
        self._done: set[str] = set()  # placed jobs that have finished
        self._finished_seen = 0
        self._types_of: object = None
        self._types: list[str] = []
        self._type_idx = np.zeros(0, dtype=np.int64)
        self._mech = {"matchings": 0}

    def mechanisms(self) -> dict[str, float]:
        return dict(self._mech)

    @staticmethod
    def _work(view: RoundsView, j: RoundJobView, g: int) -> float:
        tasks = j.remaining_rounds * j.n - j.done_in_round - j.running
        return tasks * view.task_time(j, g)

    def _match(self, view: RoundsView, waiting: list[RoundJobView]) -> None:
        self._mech["matchings"] += 1
        G = view.cluster.num_gpus
        c = view.cluster
        if self._types_of is not c:  # per GPU, the index of its type (fixed for the cluster)
            self._types_of, self._types = c, list(c.gpu_types)
            self._type_idx = np.array([self._types.index(c.gpu_type[g]) for g in range(G)], dtype=np.int64)
        rest = np.zeros(G)
        for g, jid in self._owner.items():
            rest[g] = self._work(view, self._view_of[jid], g) + max(0.0, view.free_at(g) - view.now)
        rows = waiting[: self.window]
        K = max(1, math.ceil(len(rows) / G))
        K = min(len(rows), K + 1)
        cost = np.empty((len(rows), G * K))
        for i, j in enumerate(rows):
            tasks = j.remaining_rounds * j.n - j.done_in_round - j.running
            P = (tasks * np.array([j.task_s[t] for t in self._types]))[self._type_idx]  # = _work per GPU
            for k in range(K):
                cost[i, k * G:(k + 1) * G] = (k + 1) * P + rest
        cols = hungarian(cost)
        self._queue = {}
        for i, c in enumerate(cols):
            self._queue.setdefault(c % G, []).append((c // G + 1, rows[i].job_id))
        for q in self._queue.values():
            q.sort(reverse=True)

    def schedule(self, view: RoundsView) -> list[Any]:
        owner, gpu_of = self._owner, self._gpu_of
        if view.finished_count != self._finished_seen:  # a placed job finished: free its GPU
            self._finished_seen = view.finished_count
            for g, jid in list(owner.items()):
                if self._view_of[jid].finished:
                    del owner[g], gpu_of[jid], self._view_of[jid], self._rank[jid]
                    self._done.add(jid)
        out: list[Any] = []
        ready = view.ready_jobs
        # jobs already placed: run their next task on their GPU (in the order they were placed)
        running_on, rank = view.running_on, self._rank
        placed = [j for j in ready if j.job_id in gpu_of and running_on(gpu_of[j.job_id]) is None]
        if placed:
            placed.sort(key=lambda j: rank[j.job_id])
            out.extend(RunTask(j.job_id, gpu_of[j.job_id]) for j in placed)
        waiting = [j for j in ready if j.job_id not in gpu_of]  # never started, so all of them are ready
        if not waiting:
            return out
        idle = [g for g in view.idle_gpus() if g not in owner]
        if not idle:
            return out
        key = (len(waiting), max(j.seq for j in waiting), tuple(idle))
        if key != self._seen:  # re-match when the waiting jobs or the idle GPUs change
            self._seen = key
            self._match(view, waiting)
        views = {j.job_id: j for j in waiting}
        for g in idle:
            q = self._queue.get(g)
            while q:
                _, jid = q.pop(0)
                if jid not in self._done and jid not in gpu_of:
                    owner[g], gpu_of[jid] = jid, g
                    self._view_of[jid], self._rank[jid] = views[jid], len(self._rank) + len(self._done)
                    out.append(RunTask(jid, g))
                    break
        return out
