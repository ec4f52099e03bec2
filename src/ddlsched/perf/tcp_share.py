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
   step-synchronous, so its slowest hop sets its pace; γ = ``exponent``, 1.5 for RTT ∝ queues and loss ∝ queues
   under Reno);
4. repeat from 1 with the new weights until the contended set stops changing (at most ``max_rounds`` times; the
   last allocation is returned, so the result is deterministic either way);
5. with κ (``own_queue``) > 0: an *own slow link* of a hop — one that no other ring crosses and that is strictly
   slower than every other link of the hop — is an **own slow queue** when the ring's own load fills it in the
   allocation of step 4 (m_jl · r_j ≥ C_l · (1 − ε), the saturation test of step 2): the hop's packets then reach
   (or leave for) it faster than it drains, and TCP keeps a queue there. Each adds κ to its hop's n_h, and steps
   1–4 continue from step 4's state with these counts fixed. A slow link that another link holds the ring below
   (e.g. a 4 Gb/s NIC behind a shared 7 Gb/s uplink giving the ring a third of it) holds no queue and adds
   nothing.

Assumptions: every contended queue adds the same delay and the same loss; base RTT is negligible against
queueing; an own slow queue counts κ of a contended one (κ = 0: it adds nothing, the default; κ = 1: as much);
one weight per ring, taken from its worst hop, everywhere it crosses. Which own slow links hold a queue is decided
once, on the allocation without them, not re-tested every round: counting one can push its ring below the link's
rate (the intended TCP effect, e.g. `cal-own`), and re-testing would then drop it again and oscillate. γ and κ are
defaults here; ``ddlsched testbed calibrate`` fits both on its own scenarios (docs/validation.md). With all
weights 1 (γ = 0) this is exactly per-ring max-min.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

DEFAULT_EXPONENT = 1.5
DEFAULT_OWN_QUEUE = 0.0
MAX_ROUNDS = 8
_SATURATED = 1e-6  # relative slack under which a link counts as full


class Filling:
    """Weighted max-min filling over fixed rings (``use``: ring → link → hops), for any weights: the rings and
    links are indexed once, so a caller that refills with new weights pays for the structure once."""

    def __init__(self, use: Mapping[str, Mapping[int, int]], cap: Sequence[float]) -> None:
        self.rings = sorted(use)
        index: dict[int, int] = {}
        link_rings: list[list[int]] = []
        self.links: list[np.ndarray] = []  # per ring: the indexes of its links
        self.hops: list[np.ndarray] = []  # per ring: its hops on each of them
        for r, j in enumerate(self.rings):
            for lid in use[j]:
                if lid not in index:
                    index[lid] = len(index)
                    link_rings.append([])
                link_rings[index[lid]].append(r)
            self.links.append(np.array([index[lid] for lid in use[j]], dtype=np.int64))
            self.hops.append(np.array(list(use[j].values()), dtype=float))
        self.link_rings = link_rings
        self.cap = np.array([float(cap[lid]) for lid in index])

    def fill(self, weights: Mapping[str, float]) -> dict[str, float]:
        """r_j = W_j · level when the first link ring j crosses is full (progressive filling)."""
        w = [weights[j] for j in self.rings]
        weight = np.zeros(len(self.cap))
        for r, wr in enumerate(w):  # ring by ring: each link's sum in ring order
            weight[self.links[r]] += self.hops[r] * wr
        remaining = self.cap
        live = np.ones(len(self.cap), dtype=bool)
        active = set(range(len(self.rings)))
        rates: dict[str, float] = {}
        level = 0.0
        while active:
            with np.errstate(divide="ignore", invalid="ignore"):
                share = np.where(live, remaining / weight, np.inf)
            best = float(share.min())
            tight = np.flatnonzero(share <= best * (1 + 1e-12))
            delta = max(best, 0.0)
            level += delta
            remaining = np.where(live, remaining - weight * delta, remaining)
            for r in sorted({r for t in tight.tolist() for r in self.link_rings[t] if r in active}):
                rates[self.rings[r]] = w[r] * level
                active.discard(r)
                idx = self.links[r]
                weight[idx] -= self.hops[r] * w[r]
                live[idx] &= weight[idx] > 1e-12
        return rates


def weighted_fill(use: Mapping[str, Mapping[int, int]], weights: Mapping[str, float],
                  cap: Sequence[float]) -> dict[str, float]:
    """Weighted max-min fair per-hop rates by progressive filling: ring j loads link l with m_jl · W_j · level
    until a link it crosses is full; returns r_j = W_j · level at that moment (:class:`Filling`)."""
    return Filling(use, cap).fill(weights)


def queue_candidates(hops: Mapping[str, Sequence[tuple[int, ...]]],
                     cap: Sequence[float]) -> list[tuple[int, list[str]]]:
    """The links whose queue could build (crossed by two rings or more, not shadowed: fed by more than one
    upstream link, or by one faster than itself), each with the rings it carries, once per hop crossing it, in
    the order :func:`contended` adds their rates. Structural: rings and capacities only."""
    order: dict[int, list[str]] = {}
    rings: dict[int, set[str]] = {}
    upstream: dict[int, set[int | None]] = {}
    for j in sorted(hops):
        for hop in hops[j]:
            for i, lid in enumerate(hop):
                order.setdefault(lid, []).append(j)
                rings.setdefault(lid, set()).add(j)
                upstream.setdefault(lid, set()).add(hop[i - 1] if i else None)
    out = []
    for lid, js in order.items():
        if len(rings[lid]) < 2:
            continue
        (u, *rest) = upstream[lid]
        if not rest and u is not None and cap[u] <= cap[lid] * (1 + 1e-9):
            continue  # shadowed: fed by one upstream link no faster than itself
        out.append((lid, js))
    return out


def contended(hops: Mapping[str, Sequence[tuple[int, ...]]], rates: Mapping[str, float],
              cap: Sequence[float], candidates: list[tuple[int, list[str]]] | None = None) -> frozenset[int]:
    """The links whose queue builds under ``rates``: saturated, crossed by two rings or more, not shadowed
    (``candidates``: :func:`queue_candidates` of these hops, computed once by a caller that asks repeatedly)."""
    out = set()
    for lid, js in queue_candidates(hops, cap) if candidates is None else candidates:
        x = 0.0
        for j in js:
            x += rates[j]
        if x >= cap[lid] * (1 - _SATURATED):
            out.add(lid)
    return frozenset(out)


def own_slow_links(hops: Mapping[str, Sequence[tuple[int, ...]]],
                   cap: Sequence[float]) -> dict[str, list[tuple[int, ...]]]:
    """Per ring, per hop: the hop's *own slow links* — crossed by no other ring and strictly slower than every
    other link of the hop (a hop of one link has none). Structural: capacities and rings only."""
    rings: dict[int, set[str]] = {}
    for j, hs in hops.items():
        for hop in hs:
            for lid in hop:
                rings.setdefault(lid, set()).add(j)
    out: dict[str, list[tuple[int, ...]]] = {}
    for j, hs in hops.items():
        per_hop = []
        for hop in hs:
            slow = []
            for i, lid in enumerate(hop):
                others = [cap[o] for n, o in enumerate(hop) if n != i]
                if others and len(rings[lid]) == 1 and cap[lid] < min(others) * (1 - 1e-9):
                    slow.append(lid)
            per_hop.append(tuple(slow))
        out[j] = per_hop
    return out


def own_slow_queues(hops: Mapping[str, Sequence[tuple[int, ...]]], cap: Sequence[float],
                    rates: Mapping[str, float] | None = None) -> dict[str, list[int]]:
    """Per ring, per hop: how many of the hop's own slow links (``own_slow_links``) hold a queue. With ``rates``,
    only those the ring's own load fills (m_jl · r_j ≥ C_l · (1 − ε), as for a contended queue); without, all
    of them (the structural candidates)."""
    links = own_slow_links(hops, cap)
    out: dict[str, list[int]] = {}
    for j, per_hop in links.items():
        if rates is None:
            out[j] = [len(slow) for slow in per_hop]
            continue
        m = Counter(lid for hop in hops[j] for lid in hop)
        out[j] = [sum(1 for lid in slow if m[lid] * rates[j] >= cap[lid] * (1 - _SATURATED)) for slow in per_hop]
    return out


def ring_weights(hops: Mapping[str, Sequence[tuple[int, ...]]], queues: frozenset[int], exponent: float,
                 own: Mapping[str, Sequence[int]] | None = None, own_queue: float = 0.0) -> dict[str, float]:
    """W_j = max(1, n on j's worst hop)^−exponent, n = contended queues + ``own_queue`` · own slow queues of the
    hop (1 for every ring when ``exponent`` is 0)."""
    out = {}
    for j, hs in hops.items():
        worst = 1.0
        for h, hop in enumerate(hs):
            n = sum(1 for lid in hop if lid in queues) + (own_queue * own[j][h] if own and own_queue else 0.0)
            worst = max(worst, n)
        out[j] = float(worst ** -exponent)
    return out


def check_params(exponent: float, own_queue: float) -> None:
    """Refuse a TCP-rule parameter outside its range (γ finite ≥ 0, κ in [0, 1]) with the parameter's name."""
    if not (math.isfinite(exponent) and exponent >= 0):
        raise ValueError(f"tcp_exponent must be a finite number >= 0, not {exponent!r}")
    if not (math.isfinite(own_queue) and 0 <= own_queue <= 1):
        raise ValueError(f"tcp_own_queue must be a number in [0, 1], not {own_queue!r}")


def _settle(hops: Mapping[str, Sequence[tuple[int, ...]]], use: Mapping[str, Mapping[int, int]],
            cap: Sequence[float], weights: dict[str, float], rates: dict[str, float], exponent: float,
            max_rounds: int, own: Mapping[str, Sequence[int]] | None,
            own_queue: float, bias: Mapping[str, float] | None = None,
            filling: Filling | None = None) -> tuple[dict[str, float], dict[str, float]]:
    """Iterate weights ← ``ring_weights`` (contended queues under the current rates, plus κ · ``own``; times
    ``bias``) and rates ← ``weighted_fill`` until the weights stop changing, at most ``max_rounds`` times;
    (weights, rates)."""
    candidates = queue_candidates(hops, cap)
    for _ in range(max_rounds):
        new = ring_weights(hops, contended(hops, rates, cap, candidates), exponent, own, own_queue)
        if bias is not None:
            new = {j: w * bias[j] for j, w in new.items()}
        if new == weights:
            break
        weights = new
        rates = (filling or Filling(use, cap)).fill(weights)
    return weights, rates


def tcp_rates(hops: Mapping[str, Sequence[tuple[int, ...]]], cap: Sequence[float],
              exponent: float = DEFAULT_EXPONENT, max_rounds: int = MAX_ROUNDS,
              own_queue: float = DEFAULT_OWN_QUEUE, bias: Mapping[str, float] | None = None) -> dict[str, float]:
    """Per-hop rates (bytes/s) of the rings ``hops`` (ring → path of each hop) under the contended-queue weights
    (``own_queue`` = κ, the weight of an own slow queue). Two stages: the fixed point over contended queues
    alone; then, if κ > 0 and a ring fills one of its own slow links there, the fixed point continued with those
    queues counted (decided once, so the κ term cannot oscillate). ``bias`` multiplies each ring's weight
    throughout (the uneven split of docs/physics.md §14; None: 1 for every ring)."""
    return tcp_allocation(hops, cap, exponent, max_rounds, own_queue, bias)[1]


def tcp_allocation(hops: Mapping[str, Sequence[tuple[int, ...]]], cap: Sequence[float],
                   exponent: float = DEFAULT_EXPONENT, max_rounds: int = MAX_ROUNDS,
                   own_queue: float = DEFAULT_OWN_QUEUE,
                   bias: Mapping[str, float] | None = None) -> tuple[dict[str, float], dict[str, float]]:
    """:func:`tcp_rates` with the ring weights W_j it settled on: (weights, rates)."""
    use = {j: Counter(lid for hop in hs for lid in hop) for j, hs in hops.items()}
    weights = {j: 1.0 for j in hops} if bias is None else {j: bias[j] for j in hops}
    filling = Filling(use, cap)
    weights, rates = _settle(hops, use, cap, weights, filling.fill(weights), exponent, max_rounds,
                             None, 0.0, bias, filling)
    if own_queue:
        own = own_slow_queues(hops, cap, rates)
        if any(any(n) for n in own.values()):
            weights, rates = _settle(hops, use, cap, weights, rates, exponent, max_rounds, own, own_queue, bias,
                                     filling)
    return weights, rates
