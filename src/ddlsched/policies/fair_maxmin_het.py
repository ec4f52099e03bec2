"""Heterogeneity-aware weighted max-min fairness across tenants (Gavel; docs/policies/fairness.md §3b).

Every round, an LP over job × GPU-type fractions (HiGHS, as ``hare-alg1`` uses):

    variables x[j,k] ∈ [0, 1] (share of the round job j spends on type k), z
    Σ_k x[j,k] ≤ 1                        every job
    Σ_j n_j x[j,k] ≤ N_k                  every GPU type
    Σ_{j∈t} n_j Σ_k s[j,k] x[j,k] ≥ z · budget(t)     every tenant with a budget
    maximise z + ε Σ_j n_j Σ_k s[j,k] x[j,k]

s[j,k] = the job's compute speed on type k ÷ its speed on its fastest type of the cluster (profile speed-ups, else
the type's speed); budget(t) = the weighted max-min split of the GPUs over the tenants' demands (as in
``fair-maxmin``). The fractions are rounded to whole placements by Gavel's priority: x[j,k] ÷ the share of the
job's rounds it has run on type k so far (never run: x[j,k] ÷ 0.01), best first, each job on one type while the
type has room; GPUs left over go to the other jobs in arrival order (work conservation). A running job assigned
its current type keeps its GPUs. With nothing queued and every running job on its fastest type, a pass does nothing
(no round, no LP).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from ddlsched.cluster.tenants import TenantSet
from ddlsched.engine.decisions import Decision, Preempt, Start
from ddlsched.engine.jobview import JobView
from ddlsched.engine.state import JobStatus
from ddlsched.engine.view import SchedulerView
from ddlsched.metrics.fairness import water_fill
from ddlsched.policies.fair_rounds import RoundPolicy
from ddlsched.policies.hare_lp import _quiet_highs, highs_available
from ddlsched.policies.registry import register

EPS_THROUGHPUT = 1e-4
MIN_RECEIVED = 0.01


def speeds(job: JobView, cluster: Any, types: list[str]) -> np.ndarray:
    """s[k]: the job's compute speed on each type ÷ its speed on the fastest type of the cluster."""
    raw = np.array([job.profile.speed_on(k, cluster.gpu_types[k].speed) for k in types])
    return raw / raw.max()


def solve(n: np.ndarray, s: np.ndarray, cap: np.ndarray, owner: np.ndarray, budget: np.ndarray) -> np.ndarray | None:
    """x[j,k] of the LP in the module docstring (``owner[j]`` = tenant index; ``budget[t]`` GPUs), or None."""
    import highspy

    J, K = s.shape
    nx = J * K
    h = _quiet_highs(highspy)
    h.setOptionValue("threads", 1)
    inf = highspy.kHighsInf
    h.addVars(nx + 1, np.zeros(nx + 1), np.append(np.ones(nx), inf))
    cost = np.append(-(EPS_THROUGHPUT * n[:, None] * s).ravel(), -1.0)  # HiGHS minimises
    h.changeColsCost(nx + 1, np.arange(nx + 1, dtype=np.int32), cost)
    lo, hi, starts, index, value = [], [], [], [], []

    def row(a: float, b: float, cols: list[int], vals: list[float]) -> None:
        starts.append(len(index))
        index.extend(cols)
        value.extend(vals)
        lo.append(a)
        hi.append(b)

    for j in range(J):
        row(-inf, 1.0, [j * K + k for k in range(K)], [1.0] * K)
    for k in range(K):
        row(-inf, float(cap[k]), [j * K + k for j in range(J)], [float(n[j]) for j in range(J)])
    for t in range(len(budget)):
        members = np.flatnonzero(owner == t)
        if budget[t] <= 0 or not members.size:
            continue
        cols = [int(j) * K + k for j in members for k in range(K)] + [nx]
        vals = [float(n[j] * s[j, k]) for j in members for k in range(K)] + [-float(budget[t])]
        row(0.0, inf, cols, vals)
    h.addRows(len(lo), np.array(lo), np.array(hi), len(index), np.array(starts, dtype=np.int32),
              np.array(index, dtype=np.int32), np.array(value))
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return np.clip(np.array(h.getSolution().col_value)[:nx], 0.0, 1.0).reshape(J, K)


@register
class FairMaxMinHet(RoundPolicy):
    name = "fair-maxmin-het"
    description = ("heterogeneity-aware weighted max-min fairness across tenants: an LP over job x GPU-type "
                   "shares each round (Gavel), rounded by priority")
    family = "fairness"
    idle_when_nothing_queued = False  # a round may move running jobs between GPU types

    def __init__(self, round_s: float = 360.0,
                 placement: Literal["consolidated", "pack", "first_fit"] = "consolidated") -> None:
        super().__init__(round_s, placement)
        self._assigned: dict[str, str] = {}
        self._ran: dict[tuple[str, str], int] = defaultdict(int)
        self._present: dict[str, int] = defaultdict(int)
        self._lp = {"lp_rounds": 0, "lp_fallbacks": 0}
        self._best: dict[str, frozenset[str]] = {}  # job → its fastest GPU types

    def reset(self) -> None:
        super().reset()
        self._assigned.clear()
        self._ran.clear()
        self._present.clear()
        self._best.clear()
        self._lp = dict.fromkeys(self._lp, 0)

    def mechanisms(self) -> dict[str, float]:
        return {**super().mechanisms(), **self._lp}

    def schedule(self, view: SchedulerView) -> Sequence[Decision]:
        if not view.pending and all(self._on_fastest(view.cluster, j) for j in view.running):
            self.observe(view)
            return []  # nothing queued and every job on its fastest type: no round can improve anything
        return super().schedule(view)

    def _on_fastest(self, cluster: Any, job: JobView) -> bool:
        best = self._best.get(job.job_id)
        if best is None:
            types = sorted(cluster.gpu_types)
            s = speeds(job, cluster, types)
            best = self._best[job.job_id] = frozenset(k for k, x in zip(types, s, strict=True) if x >= 1.0)
        return all(cluster.gpu_type[g] in best for g in job.gpus)

    def rank(self, view: SchedulerView, ts: TenantSet, jobs: list[JobView]) -> list[JobView]:
        return sorted(jobs, key=lambda j: (j.job_id not in self._assigned, j.seq))

    def _reallocate(self, view: SchedulerView, ts: TenantSet) -> list[Decision]:
        cluster = view.cluster
        types = sorted(cluster.gpu_types)
        cap = np.array([sum(1 for g in cluster.gpu_type if g == k) for k in types], dtype=float)
        running = list(view.running)
        jobs = running + list(view.pending)
        names = ts.names
        owner = np.array([names.index(self._tenant(ts, j)) for j in jobs])
        n = np.array([j.num_gpus for j in jobs], dtype=float)
        demand = np.zeros(len(names))
        np.add.at(demand, owner, n)
        budget = water_fill(cluster.num_gpus, demand, np.array([ts.tenants[t].weight for t in names]))
        s = np.stack([speeds(j, cluster, types) for j in jobs])
        x = solve(n, s, cap, owner, budget) if highs_available() else None
        if x is None:  # no solver or no optimum: every job's share on its fastest types, as the budgets allow
            self._lp["lp_fallbacks"] += 1
            x = np.zeros_like(s)
        else:
            self._lp["lp_rounds"] += 1
        free = dict(zip(types, cap.astype(int).tolist(), strict=True))
        pairs = []
        for i, j in enumerate(jobs):
            self._present[j.job_id] += 1
            for k_i, k in enumerate(types):
                if x[i, k_i] > 1e-6:
                    got = self._ran[(j.job_id, k)] / self._present[j.job_id]
                    pairs.append((-(x[i, k_i] / max(got, MIN_RECEIVED)), j.seq, k_i, i))
        assigned: dict[str, str] = {}
        for _, _, k_i, i in sorted(pairs):
            j, k = jobs[i], types[k_i]
            if j.job_id not in assigned and free[k] >= j.num_gpus:
                assigned[j.job_id] = k
                free[k] -= j.num_gpus
        for i in sorted(range(len(jobs)), key=lambda i: jobs[i].seq):  # work conservation, fastest type first
            j = jobs[i]
            if j.job_id in assigned:
                continue
            for k_i in np.argsort(-s[i], kind="stable"):
                k = types[int(k_i)]
                if free[k] >= j.num_gpus:
                    assigned[j.job_id] = k
                    free[k] -= j.num_gpus
                    break
        self._assigned = assigned
        for j_id, k in assigned.items():
            self._ran[(j_id, k)] += 1
        alloc = view.allocation()
        out: list[Decision] = []
        moved: set[str] = set()
        for j in running:
            here = {cluster.gpu_type[g] for g in j.gpus}
            if assigned.get(j.job_id) not in here or len(here) > 1:
                alloc.release(j.gpus)
                out.append(Preempt(j.job_id))
                moved.add(j.job_id)
        # a preempted job assigned another type restarts there in the same pass (preemptions apply before starts)
        self._place(view, alloc, [j for j in jobs if j.job_id in assigned
                                  and (j.status is not JobStatus.RUNNING or j.job_id in moved)], out)
        return out

    def _place(self, view: SchedulerView, alloc: Any, jobs: list[JobView], out: list[Decision]) -> None:
        """Place each job on GPUs of its assigned type (best-fit server, else the servers with most free); a job
        that arrived since the round goes on the fastest type with room."""
        cluster = view.cluster
        types = sorted(cluster.gpu_types)
        for j in jobs:
            if j.num_gpus > alloc.num_free:
                continue
            k = self._assigned.get(j.job_id)
            order = [k] if k is not None else [types[int(i)] for i in np.argsort(-speeds(j, cluster, types),
                                                                                  kind="stable")]
            for kind in order:
                gpus = self._on_type(cluster, alloc.for_mem(j.mem_mb), kind, j.num_gpus)
                if gpus is not None:
                    alloc.take(gpus)
                    out.append(Start(j.job_id, tuple(gpus)))
                    break

    @staticmethod
    def _on_type(cluster: Any, free: Any, kind: str, n: int) -> list[int] | None:
        servers = [(free.free_count(sv), sv) for sv in free.servers_with_free()
                   if cluster.gpu_type[cluster.server_gpus[sv][0]] == kind]
        fits = sorted((c, sv) for c, sv in servers if c >= n)
        order = [fits[0][1]] if fits else [sv for _, sv in sorted(servers, key=lambda p: (-p[0], p[1]))]
        gpus: list[int] = []
        for sv in order:
            gpus += free.free_gpus(sv)[: n - len(gpus)]
            if len(gpus) == n:
                return gpus
        return None
