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
small groups it is used for (:data:`LOCK_MAX` rings, :data:`ITERATIONS` iterations each).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ddlsched.perf.phased_exact import PhaseClock, PhasedJob

LOCK_ITERATIONS = 6.0
"""Iterations for which a component's rings keep the offsets they had when it formed (``phased_tcp``'s
``lock_iterations``): measured on the emulated cluster, two equal 4-rings started aligned and opposite, two runs
each, kept their start offset within 0.1 of a period for 2, 6, 6 and 8 iterations, median 6
(``benchmarks/offset_persistence_testbed.py --reuse``, docs/physics.md §15); afterwards random phases."""
LOCK_MAX = 4  # at most this many rings in a component replayed as a locked group (else the fluid expectation)
PERIOD_TOL = 1e-6  # alone periods within this relative difference count as equal
WARMUP = 2  # iterations of each ring left out of the mean (the group settles into its steady state)
ITERATIONS = 6  # iterations of each ring replayed in all (the mean is over ITERATIONS − WARMUP)


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
                      tcp_exponent: float, tcp_own_queue: float) -> dict[str, float]:
    """Mean iteration of every job over its iterations ``WARMUP+1 … ITERATIONS`` when job k begins its next
    iteration ``waits[k]`` seconds from now and the senders of the moment share links by the TCP rule."""
    clock = PhaseClock(cap, tcp_exponent, tcp_own_queue)
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
