"""TCP-biased sharing of links between rings: max-min weighted by contended queues (docs/physics.md §12).

Max-min fairness (``maxmin``) assumes every ring gets an equal share of a link whatever else it crosses. TCP over
drop-tail (FIFO) queues does not: a connection that crosses several queues where other traffic meets sees the
loss of all of them and waits in all of them, and Reno-style congestion control gives it a throughput
∝ 1 / (RTT · √loss). With queueing delay dominating the round trip (as on a busy NIC), a hop crossing n contended
queues gets about n^−1.5 the throughput of a hop crossing one: the "parking-lot" bias that slows a 2-ring sharing
NICs with a 4-ring (docs/validation.md, ``ringsize``).

The allocation, for a set of rings that can couple (one component of ``maxmin``):

1. rates ← weighted max-min by progressive filling, ring j on link l taking ``m_jl · W_j · level`` (W_j = 1 first);
2. a link's queue is **contended** when the link is saturated, at least two rings cross it, and it is not
   *shadowed*: a queue whose every hop arrives from one and the same upstream link u, with C_u ≤ C_l, cannot
   build (its input is already paced to at most C_l) — e.g. the receive side of a NIC pair that only one
   sender's transmit queue feeds;
3. hop h of ring j crosses n_h contended queues; W_j = min over its hops of max(1, n_h)^−γ (the ring is
   step-synchronous, so its slowest hop sets its pace; γ = ``exponent``, 1.5 for RTT ∝ queues and loss ∝
   queues under Reno);
4. repeat from 1 with the new weights until the contended set stops changing (at most ``max_rounds`` times; the
   last allocation is returned, so the result is deterministic either way).

Assumptions (stated, not fitted): every contended queue adds the same delay and the same loss; base RTT is
negligible against queueing; a ring's own bottleneck that no other ring crosses adds nothing (it is not where
rings compete); one weight per ring, taken from its worst hop, everywhere it crosses. With all weights 1 this is
exactly per-ring max-min.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

DEFAULT_EXPONENT = 1.5
MAX_ROUNDS = 8
_SATURATED = 1e-6  # relative slack under which a link counts as full


def weighted_fill(use: Mapping[str, Mapping[int, int]], weights: Mapping[str, float],
                  cap: Sequence[float]) -> dict[str, float]:
    """Weighted max-min fair per-hop rates by progressive filling: ring j loads link l with m_jl · W_j · level
    until a link it crosses is full; returns r_j = W_j · level at that moment."""
    weight: dict[int, float] = {}
    for j in sorted(use):
        for lid, m in use[j].items():
            weight[lid] = weight.get(lid, 0.0) + m * weights[j]
    remaining = {lid: cap[lid] for lid in weight}
    link_jobs: dict[int, list[str]] = {}
    for j in sorted(use):
        for lid in use[j]:
            link_jobs.setdefault(lid, []).append(j)
    active = set(use)
    live = set(weight)
    rates: dict[str, float] = {}
    level = 0.0
    while active:
        share = {lid: remaining[lid] / weight[lid] for lid in live}
        best = min(share.values())
        tight = [lid for lid, s in share.items() if s <= best * (1 + 1e-12)]
        delta = max(best, 0.0)
        level += delta
        for lid in live:
            remaining[lid] -= weight[lid] * delta
        for j in sorted({j for lid in tight for j in link_jobs[lid] if j in active}):
            rates[j] = weights[j] * level
            active.discard(j)
            for lid, m in use[j].items():
                weight[lid] -= m * weights[j]
                if weight[lid] <= 1e-12:
                    live.discard(lid)
    return rates


def contended(hops: Mapping[str, Sequence[tuple[int, ...]]], rates: Mapping[str, float],
              cap: Sequence[float]) -> frozenset[int]:
    """The links whose queue builds under ``rates``: saturated, crossed by two rings or more, not shadowed."""
    load: dict[int, float] = {}
    rings: dict[int, set[str]] = {}
    upstream: dict[int, set[int | None]] = {}
    for j in sorted(hops):
        for hop in hops[j]:
            for i, lid in enumerate(hop):
                load[lid] = load.get(lid, 0.0) + rates[j]
                rings.setdefault(lid, set()).add(j)
                upstream.setdefault(lid, set()).add(hop[i - 1] if i else None)
    out = set()
    for lid, x in load.items():
        if len(rings[lid]) < 2 or x < cap[lid] * (1 - _SATURATED):
            continue
        (u, *rest) = upstream[lid]
        if not rest and u is not None and cap[u] <= cap[lid] * (1 + 1e-9):
            continue  # shadowed: fed by one upstream link no faster than itself
        out.add(lid)
    return frozenset(out)


def ring_weights(hops: Mapping[str, Sequence[tuple[int, ...]]], queues: frozenset[int],
                 exponent: float) -> dict[str, float]:
    """W_j = max(1, contended queues on j's worst hop)^−exponent (1 for every ring when ``exponent`` is 0)."""
    return {j: float(max(1, *(sum(1 for lid in hop if lid in queues) for hop in hs)) ** -exponent)
            for j, hs in hops.items()}


def tcp_rates(hops: Mapping[str, Sequence[tuple[int, ...]]], cap: Sequence[float],
              exponent: float = DEFAULT_EXPONENT, max_rounds: int = MAX_ROUNDS) -> dict[str, float]:
    """Per-hop rates (bytes/s) of the rings ``hops`` (ring → path of each hop) under the contended-queue weights."""
    use = {j: Counter(lid for hop in hs for lid in hop) for j, hs in hops.items()}
    weights = {j: 1.0 for j in hops}
    rates = weighted_fill(use, weights, cap)
    queues = contended(hops, rates, cap)
    for _ in range(max_rounds):
        new = ring_weights(hops, queues, exponent)
        if new == weights:
            break
        weights = new
        rates = weighted_fill(use, weights, cap)
        queues = contended(hops, rates, cap)
    return rates

