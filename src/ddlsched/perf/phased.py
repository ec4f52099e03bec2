"""Phase-aware contention: jobs contend on a link only while their communication phases overlap
(docs/physics.md §11).

Each job iterates a compute phase and a communication phase (``ddlsched.perf.phased_exact`` simulates this
exactly for small cases). This module is the *fluid approximation* the engine uses, with the incremental
interface of ``maxmin``. For job j:

* ``c`` compute, ``h = min(ω·m0, c)`` the backward tail that hides a share ω of the all-reduce (profile
  ``overlap``, else the model's ``overlap`` parameter, default 0), ``V`` bytes per hop, ``L = 2(w−1)·α``;
* ``τ_j = V / r̄_j`` the time its ring is sending, ``T_j = c − h + max(h, τ_j + L)`` its iteration, and
  ``d_j = τ_j / T_j`` its duty cycle: the share of time it loads its links;
* while j sends, another job k on a shared link sends with probability d_k, independently (random relative
  phases); the rate j gets on link l with contenders in state X (X_k ∈ {0, 1}) is its fair share
  ``C_l / (m_jl + Σ_k m_kl X_k)``; the bytes it moves are the time integral of that rate, so

      r̄_j = min over binding links l of  C_l · E[1 / (m_jl + Σ_{k≠j} m_kl X_k)],   X_k ~ Bernoulli(d_k)

  (exact expectation over the contenders' states, :func:`leave_one_out_inverse`);
* d depends on r̄ and r̄ on d: the model iterates ``d → r̄ → τ → d`` from the alone duty cycles. Each step can
  only raise every d (more contention, longer τ, larger d), so the sequence increases, is bounded by 1 and
  converges; it stops at a relative change below 1e-9 or after 200 rounds;
* floor: r̄_j is never below j's rate under ``maxmin`` with every job of the component sending at once.
  Phases only take senders away, and the expectation above splits each link equally among the senders on it,
  so it misses max-min's redistribution (a contender held back by another link leaves its share to j); the
  always-sending max-min rate bounds that error (exactly a bound where removing senders never lowers a rate,
  the usual case but not a theorem of max-min fairness).

Only the component of a changed job is solved again: jobs coupled through links that can bind (the alone rates
of their jobs together exceed the link's capacity), as in ``maxmin``. Reported: ``compute_s = c`` and
``comm_s = max(h, τ + L) − h`` (the exposed communication), so ``total_s = T``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from ddlsched.cluster.topology import Cluster
from ddlsched.perf.base import IterationTime, PerfModel, Placement
from ddlsched.perf.duty_kernel import DutyBatches, leave_one_out
from ddlsched.perf.phased_exact import PhasedJob, Route, maxmin_rates, phased_job

_REL_TOL = 1e-9
_MAX_ROUNDS = 200


def expected_inverse(own: float, others: Sequence[tuple[float, float]]) -> float:
    """E[1 / (own + Σ m_k X_k)] with independent X_k ~ Bernoulli(d_k); ``others`` = [(m_k, d_k)] (reference
    implementation: the distribution of the sum, built term by term)."""
    dist: dict[float, float] = {0.0: 1.0}
    for m, d in others:
        if d <= 0.0:
            continue
        nxt: dict[float, float] = {}
        for w, p in dist.items():
            nxt[w] = nxt.get(w, 0.0) + p * (1.0 - d)
            nxt[w + m] = nxt.get(w + m, 0.0) + p * d
        dist = nxt
    return sum(p / (own + w) for w, p in dist.items())


def leave_one_out_inverse(ms: Sequence[int], ds: Sequence[float]) -> list[float]:
    """For every k: E[1 / (m_k + Σ_{i≠k} m_i X_i)], X_i ~ Bernoulli(d_i), integer loads m_i ≥ 1 (exact
    Gauss–Legendre quadrature of its integral form, :mod:`ddlsched.perf.duty_kernel`)."""
    return leave_one_out(ms, ds)


def duty_fixed_point(jobs: Sequence[PhasedJob], batches: DutyBatches) -> np.ndarray:
    """The rates r̄ of ``jobs`` (in order) at the fixed point ``d → r̄ → τ → d``, from the alone rates: each round
    every ring's duty cycle ``d = τ / T`` at its current rate, then its rate the smallest share over its links
    (never above alone); stops at a relative change of at most 1e-9 or after 200 rounds."""
    v = np.array([j.bytes_per_hop for j in jobs])
    c = np.array([j.compute_s for j in jobs])
    h = np.array([j.hidden_s for j in jobs])
    lat = np.array([j.latency_s for j in jobs])
    alone = np.array([j.alone_rate for j in jobs])
    rate = alone
    for _ in range(_MAX_ROUNDS):
        tau = v / rate
        duty = tau / (c - h + np.maximum(h, tau + lat))
        new = np.minimum(alone, batches.shares(duty))
        moved = float(np.max(np.abs(new - rate) / rate))
        rate = new
        if moved <= _REL_TOL:
            break
    return rate


class PhasedContention(PerfModel):
    name = "phased"
    description = ("jobs contend on a link only while their communication phases overlap: duty-cycle fluid "
                   "approximation (fixed point) of per-phase max-min sharing; profile overlap hides part of it")
    # the constructor's keyword parameters, for ``perf.constructor_params`` when this module is compiled
    init_params: ClassVar[Mapping[str, str]] = {"efficiency": "float", "overlap": "float"}

    def __init__(self, cluster: Cluster, efficiency: float = 1.0, overlap: float = 0.0) -> None:
        super().__init__(cluster)
        if not 0 < efficiency <= 1:
            raise ValueError("efficiency must be in (0, 1]")
        if not 0 <= overlap < 1:
            raise ValueError("overlap must be in [0, 1)")
        self.efficiency = efficiency
        self.overlap = overlap
        self._cap = [link.capacity_Bps * efficiency for link in cluster.links]
        self._jobs: dict[str, PhasedJob] = {}
        self._link_jobs: dict[int, set[str]] = {}
        self._demand: dict[int, float] = {}
        self._rate: dict[str, float] = {}
        self._routes: dict[tuple[int, ...], Route] = {}  # GPU set → its ring's links and alone rate (memo)

    def params(self) -> dict[str, Any]:
        return {"efficiency": self.efficiency, "overlap": self.overlap}

    @staticmethod
    def _time(j: PhasedJob, rate: float) -> IterationTime:
        if not j.use:
            return IterationTime(j.compute_s, 0.0)
        comm = j.bytes_per_hop / rate + j.latency_s
        return IterationTime(j.compute_s, max(j.hidden_s, comm) - j.hidden_s)

    def isolated(self, placement: Placement) -> IterationTime:
        j = phased_job(self.cluster, placement, self._cap, self.overlap)
        return self._time(j, j.alone_rate)

    def alone(self, job_id: str) -> IterationTime:
        """As :meth:`PerfModel.alone`, from the job's own record when its placement has nothing ``alone`` drops
        (no gradient accumulation, a whole GPU): the same floats as :meth:`isolated`, without rebuilding it."""
        p = self._placements[job_id]
        if p.accum_steps == 1 and p.share == 0.0:
            j = self._jobs[job_id]
            return self._time(j, j.alone_rate)
        return super().alone(job_id)

    # ------------------------------------------------------------------ protocol
    def add(self, placement: Placement) -> Mapping[str, IterationTime]:
        jid = placement.job_id
        if jid in self._placements:
            raise ValueError(f"job {jid} is already placed")
        self._placements[jid] = placement
        j = phased_job(self.cluster, placement, self._cap, self.overlap, self._routes)
        self._jobs[jid] = j
        if not j.use:
            t = self._time(j, 0.0)
            self._times[jid] = t
            return {jid: t}
        for lid, m in j.use.items():
            self._link_jobs.setdefault(lid, set()).add(jid)
            self._demand[lid] = self._demand.get(lid, 0.0) + m * j.alone_rate
        changed = self._recompute(self._component(jid))
        changed[jid] = self._times[jid]
        return changed

    def remove(self, job_id: str) -> Mapping[str, IterationTime]:
        self._placements.pop(job_id)
        self._times.pop(job_id)
        self._rate.pop(job_id, None)
        j = self._jobs.pop(job_id)
        neighbours: set[str] = set()
        for lid, m in j.use.items():
            jobs = self._link_jobs[lid]
            jobs.discard(job_id)
            if jobs:
                neighbours |= jobs
                self._demand[lid] -= m * j.alone_rate
            else:
                del self._link_jobs[lid]
                del self._demand[lid]
        changed: dict[str, IterationTime] = {}
        seen: set[str] = set()
        for k in sorted(neighbours):
            if k not in seen:
                comp = self._component(k)
                seen |= comp
                changed.update(self._recompute(comp))
        return changed

    # ------------------------------------------------------------------ internals
    def _binding(self, lid: int) -> bool:
        return len(self._link_jobs[lid]) > 1 and self._demand[lid] > self._cap[lid] * (1 + 1e-9)

    def _component(self, start: str) -> set[str]:
        """The jobs coupled to ``start`` through binding links; each link is expanded once (a later visit could
        add no job, so the set and its insertion order are unchanged)."""
        comp = {start}
        stack = [start]
        expanded: set[int] = set()
        while stack:
            k = stack.pop()
            for lid in self._jobs[k].use:
                if lid in expanded:
                    continue
                expanded.add(lid)
                if not self._binding(lid):
                    continue
                for o in self._link_jobs[lid]:
                    if o not in comp:
                        comp.add(o)
                        stack.append(o)
        return comp

    def solve(self, comp: set[str]) -> dict[str, float]:
        """Fixed point of the duty cycles over one component; returns r̄_j (bytes/s per hop)."""
        jobs = {k: self._jobs[k] for k in sorted(comp)}
        links = sorted({lid for j in jobs.values() for lid in j.use if self._binding(lid)})
        if not links:
            return {k: j.alone_rate for k, j in jobs.items()}
        pos = {k: i for i, k in enumerate(jobs)}
        per_link = []
        for lid in links:
            on = sorted(self._link_jobs[lid])
            per_link.append(([pos[k] for k in on], [jobs[k].use[lid] for k in on], [self._cap[lid]] * len(on), False))
        rate = duty_fixed_point(list(jobs.values()), DutyBatches(len(jobs), per_link))
        floor = maxmin_rates(list(jobs.values()), self._cap)
        return {k: max(float(r), floor[k]) for k, r in zip(jobs, rate, strict=True)}

    def _recompute(self, comp: set[str]) -> dict[str, IterationTime]:
        rates = self.solve(comp)
        changed: dict[str, IterationTime] = {}
        for k in sorted(comp):
            r = rates[k]
            old = self._rate.get(k)
            if old is not None and abs(old - r) <= _REL_TOL * r and k in self._times:
                continue
            self._rate[k] = r
            t = self._time(self._jobs[k], r)
            self._times[k] = t
            changed[k] = t
        return changed
