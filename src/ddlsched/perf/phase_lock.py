"""Phase-locked rings: the steady state of a few rings of equal period from their known offsets (docs/physics.md §15).

Under per-instant fair sharing, rings whose iterations last equally long keep the offset between their
iterations: two equal rings whose all-reduces start δ apart share the link until the first finishes, and the
second finishes exactly one alone all-reduce after the first began its next compute, so the next all-reduces
start δ apart again (§11, "The phase model"). Their contention is therefore fixed by the offset they started
with, not by random relative phases; a fluid model that averages over random phases is wrong for them by up to
±25 % (aligned: both share every all-reduce; opposite: they never meet).

:func:`locked_iterations` replays such a group phase by phase (``phased_exact.PhaseClock``, with the TCP rule of
§12) from the offsets of their next iteration starts, and returns each ring's mean iteration over a few
iterations after a short warm-up: the steady state the offset leads to. It is deterministic and cheap for the
small groups it is used for (:data:`LOCK_MAX` rings, :data:`ITERATIONS` iterations each). With TCP's uneven split
(``split_noise`` σ > 0, docs/physics.md §14) every communication phase draws a random weight on its share, so rings
that start aligned drift apart; the result is then the mean over :data:`SPLIT_DRAWS` replays with the seeded
streams ``split-0``, ``split-1``, … (deterministic).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

from ddlsched.perf.phased_exact import PhaseClock, PhasedJob

LOCK_ITERATIONS = 6.0
"""Iterations for which a component's rings keep the offsets they had when it formed (``phased_tcp``'s
``lock_iterations``): measured on the emulated cluster, two equal 4-rings started aligned and opposite, two runs
each, kept their start offset within 0.1 of a period for 2, 6, 6 and 8 iterations, median 6
(``benchmarks/offset_persistence_testbed.py --reuse``, docs/physics.md §15); afterwards random phases."""
DEFAULT_SPLIT = 0.125
"""TCP's uneven split σ (docs/physics.md §14) in the locked replay when no calibration gives one (``phased_tcp``'s
``split_noise``): the median of the eleven values fitted by ``ddlsched testbed calibrate`` in recorded sessions
(runs 16–24 and two long runs: 0.075, 0.1, 0.125 ×5, 0.15, 0.175, 0.225, 0.25; docs/validation.md)."""
LOCK_MAX = 4  # at most this many rings in a component replayed as a locked group (else the fluid expectation)
PERIOD_TOL = 1e-6  # alone periods within this relative difference count as equal
WARMUP = 2  # iterations of each ring left out of the mean (the group settles into its steady state)
ITERATIONS = 6  # iterations of each ring replayed in all (the mean is over ITERATIONS − WARMUP)
SPLIT_DRAWS = 32
"""Replays averaged when the uneven split is on: the cost of a lock grows with it (docs/validation.md, "Cost"); the
sampling error of the mean is measured in docs/physics.md §15."""


def alone_period(j: PhasedJob) -> float:
    """The iteration of ``j`` on its placement with no other ring sending."""
    return j.iteration(j.alone_comm_s)


def equal_periods(jobs: Sequence[PhasedJob]) -> bool:
    """Whether every job communicates and all alone periods agree within :data:`PERIOD_TOL`."""
    if not jobs or any(not j.use for j in jobs):
        return False
    ts = [alone_period(j) for j in jobs]
    return max(ts) - min(ts) <= PERIOD_TOL * max(ts)


def locked_iterations(jobs: Sequence[PhasedJob], cap: Sequence[float], waits: Mapping[str, float],
                      tcp_exponent: float, tcp_own_queue: float, split_noise: float = 0.0,
                      draws: int | None = None) -> dict[str, float]:
    """Mean iteration of every job over its iterations ``WARMUP+1 … ITERATIONS`` when job k begins its next
    iteration ``waits[k]`` seconds from now and the senders of the moment share links by the TCP rule; with
    ``split_noise`` σ > 0 the mean of that over ``draws`` (default :data:`SPLIT_DRAWS`) replays with the uneven
    split."""
    even = PhaseClock(cap, tcp_exponent, tcp_own_queue)
    periods = _replay(jobs, waits, even)
    if not split_noise or not even.met:
        return periods  # rings that never send at once never share a link: the split cannot move them
    draws = SPLIT_DRAWS if draws is None else draws
    total = dict.fromkeys(waits, 0.0)
    for i in range(draws):
        clock = PhaseClock(cap, tcp_exponent, tcp_own_queue, split_noise, random.Random(f"split-{i}"))
        for k, t in _replay(jobs, waits, clock).items():
            total[k] += t
    return within_capacity(jobs, {k: t / draws for k, t in total.items()}, cap)


def within_capacity(jobs: Sequence[PhasedJob], periods: Mapping[str, float], cap: Sequence[float]) -> dict[str, float]:
    """``periods`` stretched so that every link's mean load Σ_j m_jl·V_j/T_j stays within its capacity: each ring's
    period times the largest overload factor among its links (1 when none is overloaded). With the split, each
    ring's mean is taken over its own iterations (they end at different times once the rings drift apart), so the
    means can add up to more than the link carries: by up to 5–6 % on the validation suite's locks (15 of 56 in
    run 22 stretched); without the split the rings' windows agree and no link is overloaded."""
    load: dict[int, float] = {}
    for j in jobs:
        for lid, m in j.use.items():
            load[lid] = load.get(lid, 0.0) + m * j.bytes_per_hop / periods[j.job_id]
    return {j.job_id: periods[j.job_id] * max([1.0, *(load[lid] / cap[lid] for lid in j.use)]) for j in jobs}


def _replay(jobs: Sequence[PhasedJob], waits: Mapping[str, float], clock: PhaseClock) -> dict[str, float]:
    """One replay of :func:`locked_iterations` on ``clock``."""
    for j in jobs:
        clock.add(j, waits[j.job_id])
    done = dict.fromkeys(waits, 0)
    mark: dict[str, float] = {}
    last: dict[str, float] = {}
    now = 0.0
    for _ in range(100_000):
        if min(done.values()) >= ITERATIONS:
            break
        dt, finished = clock.step()
        if math.isinf(dt):
            raise RuntimeError("locked replay: no job has anything left to do")
        now += dt
        for k in finished:
            done[k] += 1
            if done[k] == WARMUP:
                mark[k] = now
            if done[k] <= ITERATIONS:
                last[k] = now
    else:
        raise RuntimeError("locked replay did not finish")
    return {k: (last[k] - mark[k]) / (ITERATIONS - WARMUP) for k in waits}


def rate_for_iteration(j: PhasedJob, period: float) -> float:
    """The per-hop rate r̄ whose iteration ``c − h + max(h, V/r̄ + L)`` is ``period`` (the alone rate when the
    communication stays hidden or the period is not longer than alone)."""
    tau = period - (j.compute_s - j.hidden_s) - j.latency_s
    if tau <= j.bytes_per_hop / j.alone_rate or period - (j.compute_s - j.hidden_s) <= j.hidden_s:
        return j.alone_rate
    return j.bytes_per_hop / tau
