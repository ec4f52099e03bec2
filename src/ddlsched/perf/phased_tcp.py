"""Phases, overlap and TCP-biased sharing in one trace-level model (``phased_tcp``; docs/physics.md §15).

The testbed's best model, ``phased[exact,fairness=tcp]``, replays every phase of every iteration; a trace of
80,000 jobs cannot afford that. This model is the fluid ``phased`` (docs/physics.md §11: duty cycles, random
relative phases, fixed point ``d → r̄ → τ → d``, overlap ω) with the links shared by the TCP rule of §12 instead
of equally:

* the ring weights W_j are the TCP rule's (``tcp_share.tcp_allocation``: W_j = max(1, n_j)^−γ, n_j the contended
  queues on j's worst hop plus κ per own slow queue) for the component with **every ring sending**: which queues
  are contended is decided once per component, not per combination of senders (assumption B1);
* while j sends with the contenders X sending, its per-hop rate on link l is its weighted share
  ``C_l · W_j / (m_jl·W_j + Σ_k m_kl·W_k·X_k)``; the bytes are the time integral of the rate, so

      r̄_j = min over binding links l of  C_l · W_j · E[1 / (m_jl·W_j + Σ_{k≠j} m_kl·W_k·X_k)],   X_k ~ Bernoulli(d_k)

  With equal weights on a link this is ``phased``'s expectation exactly (integer loads m_kl); with unequal ones on
  up to ``EXACT_MAX`` rings it is computed exactly (:func:`weighted_leave_one_out`); beyond, the loads
  a_k = m_kl·W_k are put on an integer grid (:func:`weighted_loads`) and ``phased``'s O(n·W) expectation runs over
  it, the numerator using the rounded load. Either way the mean load of every link,
  Σ_j m_jl·d_j·r̄_j = C_l·P(some ring sends on l), stays within the capacity exactly;
* floor (A2 of §11 with the TCP rule): r̄_j is lifted towards j's rate under the TCP rule with every ring of the
  component sending at once, as far as every link's mean load Σ_j m_jl·V_j/T_j stays within its capacity
  (``phased`` lifts all the way, which can overload a link's mean by up to 17 % on random cases: the
  expectation counts the other rings at their equal share while the floor gives j max-min's redistribution).

With γ = 0 every weight is 1 and the model is ``phased`` wherever ``phased``'s mean loads are feasible (the
same floats: the floor is then the same max-min filling). TCP's uneven split (§14, ``split_noise`` σ) acts only in
the phase lock's replay (:mod:`ddlsched.perf.phase_lock`): in the fluid model phases are already independent and
random, which is where the split's drift leads.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

from ddlsched.cluster.topology import Cluster
from ddlsched.perf.base import IterationTime
from ddlsched.perf.duty_kernel import EXACT_SETS_MAX, DutyBatches, leave_one_out
from ddlsched.perf.phase_lock import (
    DEFAULT_SPLIT,
    LOCK_ITERATIONS,
    LOCK_MAX,
    equal_periods,
    locked_iterations,
    rate_for_iteration,
)
from ddlsched.perf.phased import PhasedContention, duty_fixed_point
from ddlsched.perf.phased_exact import PhasedJob
from ddlsched.perf.tcp_share import DEFAULT_EXPONENT, DEFAULT_OWN_QUEUE, check_params, tcp_allocation

GRID = 32  # grid steps in the smallest weighted load of a link (unequal weights, many rings)
GRID_PER_HOP = 4  # at most this many grid steps per ring hop on the link, on average (the grid's cost)
EXACT_MAX = EXACT_SETS_MAX  # up to this many rings on a link with unequal weights: the exact weighted expectation
_BISECT = 50  # halvings of a link's lift factor (2^-50: the float resolution of a rate)


def weighted_loads(ms: list[int], ws: list[float]) -> list[int]:
    """The loads m_k·W_k on an integer grid whose step is the smallest load / :data:`GRID` (≥ 1 step each), the
    step raised so that the grid's total stays within :data:`GRID_PER_HOP` × the hops on the link (its O(n·W)
    expectation then costs at most that many times ``phased``'s; used beyond :data:`EXACT_MAX` rings)."""
    loads = [m * w for m, w in zip(ms, ws, strict=True)]
    step = max(min(loads) / GRID, sum(loads) / (GRID_PER_HOP * sum(ms)))
    return [max(1, round(x / step)) for x in loads]


def weighted_leave_one_out(loads: list[float], ds: list[float]) -> list[float]:
    """For every k: E[1 / (a_k + Σ_{i≠k} a_i X_i)], X_i ~ Bernoulli(d_i), real loads on at most
    :data:`EXACT_MAX` rings, exactly (the sum over the sets of other senders, :mod:`ddlsched.perf.duty_kernel`)."""
    return leave_one_out(loads, ds, exact=True)


class PhasedTcpContention(PhasedContention):
    name = "phased_tcp"
    description = ("phased (duty-cycle fluid approximation of per-phase sharing, profile overlap) with links "
                   "shared by the TCP-biased rule (fairness=tcp): the testbed-validated physics for full traces")
    # the constructor's keyword parameters, for ``perf.constructor_params`` when this module is compiled
    init_params: ClassVar[Mapping[str, str]] = {
        "efficiency": "float", "overlap": "float", "tcp_exponent": "float", "tcp_own_queue": "float",
        "phase_lock": "bool", "lock_iterations": "float", "split_noise": "float"}

    def __init__(self, cluster: Cluster, efficiency: float = 1.0, overlap: float = 0.0,
                 tcp_exponent: float = DEFAULT_EXPONENT, tcp_own_queue: float = DEFAULT_OWN_QUEUE,
                 phase_lock: bool = True, lock_iterations: float = LOCK_ITERATIONS,
                 split_noise: float = DEFAULT_SPLIT) -> None:
        super().__init__(cluster, efficiency, overlap)
        check_params(tcp_exponent, tcp_own_queue)
        if not isinstance(phase_lock, bool):
            raise ValueError(f"phase_lock must be true or false, not {phase_lock!r}")
        if isinstance(lock_iterations, bool) or not isinstance(lock_iterations, (int, float)) \
                or not lock_iterations > 0:
            raise ValueError(f"lock_iterations must be a number > 0 (a large one locks for the component's "
                             f"whole life), not {lock_iterations!r}")
        if isinstance(split_noise, bool) or not isinstance(split_noise, (int, float)) \
                or not (math.isfinite(split_noise) and split_noise >= 0):
            raise ValueError(f"split_noise must be a finite number >= 0 (0: no uneven split), not {split_noise!r}")
        self.tcp_exponent = tcp_exponent
        self.tcp_own_queue = tcp_own_queue
        self.phase_lock = phase_lock
        self.lock_iterations = float(lock_iterations)
        self.split_noise = float(split_noise)
        self._now: float | None = None  # the caller's clock, once it calls advance (phase locking needs it)
        self._ref: dict[str, tuple[float, float]] = {}  # job → (time, iterations done then) under its current pace
        self._lock_end: dict[frozenset[str], float] = {}  # locked component → when its lock ends
        self._unlocked: set[frozenset[str]] = set()  # components whose lock ended: random phases until they change
        self._lock_of: dict[str, frozenset[str]] = {}  # job → the locked or unlocked component it belongs to
        self._next_end = math.inf  # min(self._lock_end.values())

    def params(self) -> dict[str, Any]:
        return {**super().params(), "tcp_exponent": self.tcp_exponent, "tcp_own_queue": self.tcp_own_queue,
                "phase_lock": self.phase_lock, "lock_iterations": self.lock_iterations,
                "split_noise": self.split_noise}

    # ------------------------------------------------------------------ phase locking (the caller's clock)
    def advance(self, now: float) -> Mapping[str, IterationTime]:
        """Tell the model the time of the next ``add``/``remove`` (seconds, never decreasing), and end the locks
        due by then. A caller that does so before every call and at :meth:`next_change` lets the model follow
        each job's progress through its iterations, and so replay a component of rings with equal periods from
        their actual offsets for its first ``lock_iterations`` iterations (:mod:`ddlsched.perf.phase_lock`);
        without it every component is solved with random phases. Returns the jobs whose time changed: those of
        components whose lock ended (solved with random phases from then on)."""
        if self._now is not None and now < self._now:
            raise ValueError(f"phased_tcp: time went back from {self._now} to {now}")
        self._now = now
        if now < self._next_end:
            return {}
        changed: dict[str, IterationTime] = {}
        for key in sorted((k for k, t in self._lock_end.items() if t <= now), key=sorted):
            del self._lock_end[key]
            comp = set(key)
            if self._component(min(key)) != comp:  # no longer a component as it was (cannot lock again as it)
                self._forget(key)
                continue
            self._unlocked.add(key)
            changed.update(self._recompute(comp))
        self._next_end = min(self._lock_end.values(), default=math.inf)
        return changed

    def next_change(self) -> float:
        """When the earliest phase lock ends (``math.inf``: none holds)."""
        return self._next_end

    def _forget(self, key: frozenset[str]) -> None:
        """Drop a (formerly) locked component that no longer exists as it was."""
        for k in key:
            if self._lock_of.get(k) == key:
                del self._lock_of[k]
        self._unlocked.discard(key)
        if self._lock_end.pop(key, None) is not None:
            self._next_end = min(self._lock_end.values(), default=math.inf)

    def _progress(self, k: str, now: float) -> float:
        t0, p0 = self._ref[k]
        total = self._times[k].total_s
        return p0 + (now - t0) / total if total > 0 else p0

    def _recompute(self, comp: set[str]) -> dict[str, IterationTime]:
        now = self._now
        if now is not None:
            key = frozenset(comp)
            for k in comp:  # rebase every job of the component on its pace so far
                self._ref[k] = (now, self._progress(k, now)) if k in self._times else (now, 0.0)
                old = self._lock_of.get(k)
                if old is not None and old != key:  # its component changed: a new lock, if any
                    self._forget(old)
        return super()._recompute(comp)

    def remove(self, job_id: str) -> Mapping[str, IterationTime]:
        self._ref.pop(job_id, None)
        old = self._lock_of.get(job_id)
        if old is not None:
            self._forget(old)
        return super().remove(job_id)

    def _locked(self, jobs: dict[str, PhasedJob]) -> dict[str, float] | None:
        """The rates of a component of 2 … LOCK_MAX rings of equal alone period, replayed from their current
        offsets, until its rings have run ``lock_iterations`` iterations in it; None when the component is not
        one, its lock has ended, or the clock is unknown."""
        now = self._now
        if not self.phase_lock or now is None or not 2 <= len(jobs) <= LOCK_MAX:
            return None
        key = frozenset(jobs)
        if key in self._unlocked or not equal_periods(list(jobs.values())):
            return None
        waits = {}
        for k in jobs:
            if k in self._times:  # until its next iteration starts, at its pace so far
                p = self._progress(k, now)
                waits[k] = (math.ceil(p) - p) * self._times[k].total_s
            else:
                waits[k] = 0.0  # starting now
        periods = locked_iterations(list(jobs.values()), self._cap, waits, self.tcp_exponent, self.tcp_own_queue,
                                    self.split_noise)
        if key not in self._lock_end:
            # the lock ends when the first of its rings has run lock_iterations iterations in it
            end = now + min(waits[k] + self.lock_iterations * periods[k] for k in jobs)
            self._lock_end[key] = end
            self._next_end = min(self._next_end, end)
        for k in jobs:
            self._lock_of[k] = key
        return {k: rate_for_iteration(j, periods[k]) for k, j in jobs.items()}

    def solve(self, comp: set[str]) -> dict[str, float]:
        """Fixed point of the duty cycles over one component with TCP weights; returns r̄_j (bytes/s per hop).
        A component of a few rings of equal period is replayed from its offsets instead (:meth:`_locked`)."""
        jobs: dict[str, PhasedJob] = {k: self._jobs[k] for k in sorted(comp)}
        links = sorted({lid for j in jobs.values() for lid in j.use if self._binding(lid)})
        rate = {k: j.alone_rate for k, j in jobs.items()}
        if not links:
            return rate
        locked = self._locked(jobs)
        if locked is not None:
            return locked
        weights, floor = tcp_allocation({k: j.hops for k, j in jobs.items()}, self._cap, self.tcp_exponent,
                                        own_queue=self.tcp_own_queue)
        # links with the same rings, loads and scales have the same expectation: keep the smallest capacity of
        # each such group (a server's NIC in and out carry the same ring hops; the shares are byte-identical)
        groups: dict[tuple[tuple[str, ...], tuple[float, ...], tuple[float, ...], bool], float] = {}
        for lid in links:
            on = sorted(self._link_jobs[lid])
            ms = [jobs[k].use[lid] for k in on]
            ws = [weights[k] for k in on]
            key: tuple[tuple[str, ...], tuple[float, ...], tuple[float, ...], bool]  # loads: int or float
            if all(w == ws[0] for w in ws):
                key = (tuple(on), tuple(ms), (1.0,) * len(on), False)  # phased's expectation exactly
            elif len(on) <= EXACT_MAX:
                key = (tuple(on), tuple(m * w for m, w in zip(ms, ws, strict=True)), tuple(ws), True)
            else:
                loads = weighted_loads(ms, ws)
                key = (tuple(on), tuple(loads), tuple(a / m for a, m in zip(loads, ms, strict=True)), False)
            cap = self._cap[lid]
            if cap < groups.get(key, math.inf):
                groups[key] = cap
        pos = {k: i for i, k in enumerate(jobs)}
        per_link = [([pos[k] for k in on], loads, [cap * sc for sc in scale], exact)
                    for (on, loads, scale, exact), cap in groups.items()]
        fixed = duty_fixed_point(list(jobs.values()), DutyBatches(len(jobs), per_link))
        rate = {k: float(r) for k, r in zip(jobs, fixed, strict=True)}
        return self._feasible(jobs, links, rate, floor)

    def _feasible(self, jobs: dict[str, PhasedJob], links: list[int], fluid: dict[str, float],
                  floor: dict[str, float]) -> dict[str, float]:
        """r_j = fluid_j + f_j · (floor_j − fluid_j)⁺ with the largest lift f_j ≤ 1 that keeps every link's mean
        load Σ_j m_jl·V_j/T_j within its capacity. The fluid rates alone are feasible (their mean load on a link
        is C_l·P(some ring sends there)); the all-sending floor can overload a link whose other rings the
        expectation counted at their equal share (up to +35 % on random cases without this step). One pass over
        the links in id order: lowering a lift lowers every load, so a link once within capacity stays so."""
        lift = {k: max(0.0, floor[k] - r) for k, r in fluid.items()}
        f = dict.fromkeys(jobs, 1.0)

        def load(lid: int, on: list[str], g: float) -> float:
            x = 0.0
            for k in on:
                j = jobs[k]
                r = fluid[k] + min(f[k], g) * lift[k]
                x += j.use[lid] * j.bytes_per_hop / j.iteration(j.bytes_per_hop / r + j.latency_s)
            return x

        for lid in links:
            on = [k for k in sorted(self._link_jobs[lid]) if lift[k] > 0.0]
            if not on or load(lid, sorted(self._link_jobs[lid]), 1.0) <= self._cap[lid]:
                continue
            lo, hi = 0.0, 1.0
            everyone = sorted(self._link_jobs[lid])
            for _ in range(_BISECT):
                mid = (lo + hi) / 2
                if load(lid, everyone, mid) <= self._cap[lid]:
                    lo = mid
                else:
                    hi = mid
            for k in on:
                f[k] = min(f[k], lo)
        return {k: fluid[k] + f[k] * lift[k] for k in fluid}
