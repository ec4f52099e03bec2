"""Link-level max-min fair sharing of ring all-reduce traffic on the topology (ours; docs/physics.md §4, §12).

Each multi-worker job runs a ring over its GPUs (``Cluster.ring_hops``). One all-reduce sends
``V = 2(w−1)/w · M`` bytes over every hop; the ring is step-synchronous, so all hops of job j advance at one
common rate r_j and the all-reduce takes ``V / r_j + 2(w−1)·α``.

Job j loads link l with ``m_jl · r_j`` where m_jl = number of its hops that cross l. Rates are the
**weighted max-min fair** allocation found by progressive filling over jobs:

    λ ← 0; every job active
    repeat: for every link l with active jobs,
                share_l = (efficiency·C_l − Σ_{frozen j} m_jl r_j) / Σ_{active j} m_jl
            λ = min_l share_l ; jobs on the links attaining λ are frozen at r_j = λ
    until no job is active

A ring gets no more than its slowest hop allows, so capacity it cannot use is left to others — the
difference from per-flow max-min. Two 4-worker rings over the same 4 NICs get C/2 each; a job inside one
server only touches its GPUs' intra-server links.

Assumption (documented, checked by ``ddlsched testbed validate``): all running rings are treated as
communicating at once (no compute/communication phase interleaving), which is pessimistic for jobs whose
communication is a small part of an iteration.

``fairness="flow"`` (``--perf-param fairness=flow``) shares per *flow* instead: every ring hop is a greedy
flow, flows get the (unweighted) max-min fair allocation by progressive filling over flows, and a ring runs at
its slowest hop's flow rate. A hop's share on a link it does not bottleneck on is then held even though its ring
cannot use it (TCP connections do not know they belong to a ring), so a ring sharing NICs with a ring that is
held back elsewhere gets less than under per-ring sharing (docs/physics.md). Alone, both give the same rate.
``fairness="flow-rtt"`` biases that by round-trip time as TCP does (throughput ∝ 1/RTT): a flow's weight is
2 / (links on its path), so a hop inside a rack (NIC tx, rx) weighs 1, a hop across racks (4 links) ½ and a hop
inside a server 2; a flow gets weight × the common level. Path length standing for RTT is an assumption (it
ignores queueing delay, which the testbed shows inflates RTT on busy NICs).
``fairness="tcp"`` keeps per-ring sharing but weights each ring by the queues where rings compete that its worst
hop crosses, ``W_j = max(1, n)^−γ`` (``tcp_exponent`` γ, default 1.5: TCP Reno's throughput ∝ 1/(RTT·√loss) with
queueing delay and loss both ∝ contended queues), iterated to a fixed point (``ddlsched.perf.tcp_share``,
docs/physics.md §12); ``tcp_own_queue`` κ ∈ [0, 1] (default 0) counts a ring's own slow queue on a hop as κ of a
contended one.

Only the connected component of a changed job is recomputed: jobs linked through shared links that can
bind (Σ m_jl · alone_j > C_l, where alone_j is j's rate alone); a link that cannot saturate couples nothing.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from typing import Any, ClassVar

from ddlsched.cluster.topology import Cluster
from ddlsched.perf.base import IterationTime, PerfModel, Placement, compute_time, ring_bytes_per_hop
from ddlsched.perf.tcp_share import DEFAULT_EXPONENT, DEFAULT_OWN_QUEUE, check_params, tcp_rates
from ddlsched.workload.profiles import ModelProfile

_REL_TOL = 1e-9
_Route = tuple[list[tuple[int, ...]], Counter[int], float, float]  # hops, m_jl by link, alone rate, solo level
_NO_ROUTE: _Route = ([], Counter(), math.inf, math.inf)  # read-only
FAIRNESS = ("ring", "flow", "flow-rtt", "tcp")


class MaxMinLinkSharing(PerfModel):
    name = "maxmin"
    description = "ring all-reduce flows share every link they cross, weighted max-min fair (progressive filling)"
    # the constructor's keyword parameters, for ``perf.constructor_params`` when this module is compiled
    init_params: ClassVar[Mapping[str, str]] = {
        "efficiency": "float", "fairness": "str", "tcp_exponent": "float", "tcp_own_queue": "float"}

    def __init__(self, cluster: Cluster, efficiency: float = 1.0, fairness: str = "ring",
                 tcp_exponent: float = DEFAULT_EXPONENT, tcp_own_queue: float = DEFAULT_OWN_QUEUE) -> None:
        super().__init__(cluster)
        if not 0 < efficiency <= 1:
            raise ValueError("efficiency must be in (0, 1]")
        if fairness not in FAIRNESS:
            raise ValueError(f"fairness must be one of {', '.join(map(repr, FAIRNESS))}, not {fairness!r}")
        check_params(tcp_exponent, tcp_own_queue)
        if (tcp_exponent != DEFAULT_EXPONENT or tcp_own_queue != DEFAULT_OWN_QUEUE) and fairness != "tcp":
            raise ValueError("tcp_exponent and tcp_own_queue apply to fairness='tcp' only")
        self.efficiency = efficiency
        self.fairness = fairness
        self.tcp_exponent = tcp_exponent
        self.tcp_own_queue = tcp_own_queue
        self._hops: dict[str, list[tuple[tuple[int, ...], float]]] = {}  # flow mode: hop links, hop alone rate
        self._paths: dict[str, list[tuple[int, ...]]] = {}  # tcp mode: the links of every hop, in path order
        self._cap = [link.capacity_Bps * efficiency for link in cluster.links]
        self._link_jobs: dict[int, set[str]] = {}
        self._job_links: dict[str, Counter[int]] = {}
        self._rate: dict[str, float] = {}
        self._compute: dict[str, float] = {}
        self._alone: dict[str, float] = {}  # a job's rate if it were alone: min over its links of C_l / m_jl
        self._demand: dict[int, float] = {}  # Σ over jobs on the link of m_jl · alone_j
        self._solo: dict[str, float] = {}  # what `fill` gives a job that is a component by itself
        self._routes: dict[tuple[int, ...], _Route] = {}
        # per-iteration compute by profile (keyed by identity, the profile kept beside its value), when every GPU
        # is of one type: compute_time then depends on the profile alone
        self._one_type = len(cluster.gpu_types) == 1
        self._compute_of: dict[int, tuple[ModelProfile, float]] = {}

    def _compute_time(self, placement: Placement) -> float:
        """:func:`compute_time`, memoised per profile on a one-GPU-type cluster (it reads Python properties of the
        profile, which the start of every job paid for)."""
        if not self._one_type:
            return compute_time(self.cluster, placement)
        prof = placement.profile
        got = self._compute_of.get(id(prof))
        if got is None or got[0] is not prof:
            got = self._compute_of[id(prof)] = (prof, compute_time(self.cluster, placement))
        return got[1]

    def _route(self, gpus: tuple[int, ...]) -> _Route:
        """A placement's ring hops, the hops it puts on each link (m_jl), its rate alone and its solo level (the
        rate :meth:`fill` gives it when it is a component by itself: the first round's level, which takes the
        near-tie rule and link-id order of ``fill`` and so can differ from ``alone`` in the last bits); memoised
        per GPU set (consolidated placements repeat the same sets), read-only."""
        got = self._routes.get(gpus)
        if got is None:
            hops = self.cluster.ring_hops(gpus)
            use: Counter[int] = Counter(lid for hop in hops for lid in hop)
            alone = min((self._cap[lid] / m for lid, m in use.items()), default=math.inf)
            best = math.inf
            for lid in sorted(use):  # fill's first round over one job: weight m_jl, headroom C_l
                share = self._cap[lid] / (0.0 + use[lid])
                if share < best * (1 - 1e-12):
                    best = share
            if len(self._routes) >= 1 << 16:
                self._routes.clear()
            got = self._routes[gpus] = (hops, use, alone, 0.0 + max(best, 0.0))
        return got

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"efficiency": self.efficiency}
        if self.fairness != "ring":
            out["fairness"] = self.fairness
        if self.fairness == "tcp":
            out["tcp_exponent"] = self.tcp_exponent
            if self.tcp_own_queue:
                out["tcp_own_queue"] = self.tcp_own_queue
        return out

    def alone(self, job_id: str) -> IterationTime:
        rate = self._alone.get(job_id)
        if rate is None:
            return IterationTime(self._compute[job_id], 0.0)
        n = self._placements[job_id].num_gpus
        grad = self._placements[job_id].profile.grad_bytes
        return IterationTime(self._compute[job_id],
                             ring_bytes_per_hop(grad, n) / rate + 2 * (n - 1) * self.cluster.hop_latency_s)

    def isolated(self, placement: Placement) -> IterationTime:
        """Alone on the network: the ring runs at its tightest link's capacity ÷ the hops it puts there."""
        compute = self._compute_time(placement)
        hops, _, rate, _ = self._route(tuple(placement.gpus))
        if not hops:
            return IterationTime(compute, 0.0)
        n = placement.num_gpus
        comm = ring_bytes_per_hop(placement.profile.grad_bytes, n) / rate + 2 * (n - 1) * self.cluster.hop_latency_s
        return IterationTime(compute, comm)

    # ------------------------------------------------------------------ protocol
    def add(self, placement: Placement) -> Mapping[str, IterationTime]:
        jid = placement.job_id
        if jid in self._placements:
            raise ValueError(f"job {jid} is already placed")
        self._placements[jid] = placement
        compute = self._compute[jid] = self._compute_time(placement)
        gpus = tuple(placement.gpus)
        hops, use, alone, solo = self._route(gpus) if len(gpus) > 1 else _NO_ROUTE  # one worker: no ring, no link
        if not hops:
            t = IterationTime(compute, 0.0)
            self._times[jid] = t
            return {jid: t}
        self._job_links[jid] = use
        self._alone[jid] = alone
        self._solo[jid] = solo
        if self.fairness == "tcp":
            self._paths[jid] = [tuple(hop) for hop in hops]
        if self.fairness in ("flow", "flow-rtt"):
            # a greedy flow can reach its own path's bottleneck, not just its ring's rate
            flows = [(tuple(hop), min(self._cap[lid] for lid in hop)) for hop in hops]
            self._hops[jid] = flows
            for lid in use:
                self._link_jobs.setdefault(lid, set()).add(jid)
            for hop, bound in flows:
                for lid in hop:
                    self._demand[lid] = self._demand.get(lid, 0.0) + bound
        else:
            for lid, m in use.items():
                self._link_jobs.setdefault(lid, set()).add(jid)
                self._demand[lid] = self._demand.get(lid, 0.0) + m * alone
        changed = self._recompute(self._component(jid))
        changed[jid] = self._times[jid]
        return changed

    def remove(self, job_id: str) -> Mapping[str, IterationTime]:
        # `del` and `get`, not `pop`: a method call is a generic call from compiled code, these are native
        del self._placements[job_id]
        del self._times[job_id]
        del self._compute[job_id]
        if job_id in self._rate:
            del self._rate[job_id]
        use = self._job_links.get(job_id)
        if use is not None:
            del self._job_links[job_id]
        if not use:
            return {}
        alone = self._alone[job_id]
        del self._alone[job_id]
        del self._solo[job_id]
        flows = self._hops.get(job_id)
        if flows is not None:
            del self._hops[job_id]
        if job_id in self._paths:
            del self._paths[job_id]
        if flows is not None:
            for hop, bound in flows:
                for lid in hop:
                    self._demand[lid] -= bound
        neighbours: set[str] = set()
        for lid, m in use.items():
            jobs = self._link_jobs[lid]
            jobs.discard(job_id)
            if jobs:
                neighbours |= jobs
                if flows is None:
                    self._demand[lid] -= m * alone
            else:
                del self._link_jobs[lid]
                del self._demand[lid]
        changed: dict[str, IterationTime] = {}
        seen: set[str] = set()
        for j in sorted(neighbours):
            if j not in seen:
                comp = self._component(j)
                seen |= comp
                changed.update(self._recompute(comp))
        return changed

    # ------------------------------------------------------------------ internals
    def _binding(self, lid: int) -> bool:
        """Whether the link can ever constrain anyone: its jobs' alone rates together exceed its capacity.
        A non-binding link couples nothing, so the component search does not cross it (exact: no job on it
        can reach a rate that would saturate it)."""
        return self._demand[lid] > self._cap[lid] * (1 + 1e-9)

    def _component(self, start: str) -> set[str]:
        """The jobs coupled to ``start`` through binding links (depth-first). Each link is expanded once: its
        first visit adds all its jobs, so a later visit would add none (the same jobs, in the same order, as
        expanding it at every visit; that cost ∝ jobs per link² on a shared uplink)."""
        comp = {start}
        stack = [start]
        link_jobs = self._link_jobs
        demand, cap = self._demand, self._cap
        expanded: set[int] = set()
        while stack:
            j = stack.pop()
            for lid in self._job_links[j]:
                if lid in expanded:
                    continue
                expanded.add(lid)
                jobs = link_jobs[lid]
                if len(jobs) == 1 or not demand[lid] > cap[lid] * (1 + 1e-9):  # = self._binding(lid)
                    continue
                for k in jobs:
                    if k not in comp:
                        comp.add(k)
                        stack.append(k)
        return comp

    def _recompute(self, comp: set[str]) -> dict[str, IterationTime]:
        if self.fairness == "ring":
            rates = self.fill(comp)
        elif self.fairness == "tcp":
            rates = tcp_rates({j: self._paths[j] for j in comp}, self._cap, self.tcp_exponent,
                              own_queue=self.tcp_own_queue)
        else:
            rates = self.fill_flows(comp)
        changed: dict[str, IterationTime] = {}
        for j in sorted(comp):
            r = rates[j]
            old = self._rate.get(j)
            if old is not None and abs(old - r) <= _REL_TOL * r and j in self._times:
                continue
            self._rate[j] = r
            p = self._placements[j]
            n = p.num_gpus
            comm = ring_bytes_per_hop(p.profile.grad_bytes, n) / r + 2 * (n - 1) * self.cluster.hop_latency_s
            t = IterationTime(self._compute[j], comm)
            self._times[j] = t
            changed[j] = t
        return changed

    def fill(self, comp: set[str]) -> dict[str, float]:
        """Weighted progressive filling over the jobs of one component; returns r_j in bytes/s per hop.

        All unfrozen jobs share one rising level; each round raises it by the smallest headroom
        ``remaining_l / weight_l`` over links that still carry unfrozen jobs, then freezes the jobs on the
        links that hit it. Links whose jobs are all frozen leave the round set, so later rounds get cheaper.
        The component's links are numbered in ascending link id (a near-tie, 1e-12, is then resolved the same in
        every run) and their weights and headrooms kept in lists by that number: the same float operations in
        the same order as keeping them by link id, without a hash lookup per link per round.
        """
        if len(comp) == 1:  # one round, one job: its solo level (computed with its route, the same operations)
            for j in comp:
                return {j: self._solo[j]}
        job_links = self._job_links
        link_jobs = self._link_jobs
        cap = self._cap
        weight_of: dict[int, float] = {}
        for j in comp:
            for lid, m in job_links[j].items():
                weight_of[lid] = weight_of.get(lid, 0.0) + m
        links = sorted(weight_of)
        slot: dict[int, int] = {}
        weight: list[float] = []
        remaining: list[float] = []
        for i, lid in enumerate(links):
            slot[lid] = i
            weight.append(weight_of[lid])
            remaining.append(cap[lid])
        live = list(range(len(links)))  # links that still carry unfrozen jobs, in link-id order
        emptied = False
        active = set(comp)
        rates: dict[str, float] = {}
        level = 0.0
        while active:
            if emptied:  # a weight only falls, so "≤ 1e-12 now" is "fell to ≤ 1e-12 at some freeze"
                live = [i for i in live if weight[i] > 1e-12]
                emptied = False
            best = math.inf
            bottleneck: list[int] = []
            for i in live:
                share = remaining[i] / weight[i]
                if share < best * (1 - 1e-12):
                    best = share
                    bottleneck = [i]
                elif share <= best * (1 + 1e-12):
                    bottleneck.append(i)
            delta = max(best, 0.0)
            level += delta
            for i in live:
                remaining[i] -= weight[i] * delta
            frozen = sorted({j for i in bottleneck for j in link_jobs[links[i]] if j in active})
            for j in frozen:
                rates[j] = level
                active.discard(j)
                for lid, m in job_links[j].items():
                    i = slot[lid]
                    w = weight[i] - m
                    weight[i] = w
                    if w <= 1e-12:
                        emptied = True
        return rates

    def fill_flows(self, comp: set[str]) -> dict[str, float]:
        """Per-flow max-min: progressive filling over every hop of the component's rings as an independent flow
        (weight 1, or 2 / path length with ``flow-rtt``, on each link it crosses); a ring's rate is its slowest
        flow's."""
        flows = [(j, hop) for j in sorted(comp) for hop, _ in self._hops[j]]
        rtt = self.fairness == "flow-rtt"
        fw = [2.0 / len(hop) if rtt else 1.0 for _, hop in flows]
        weight: dict[int, float] = {}
        for i, (_, hop) in enumerate(flows):
            for lid in hop:
                weight[lid] = weight.get(lid, 0.0) + fw[i]
        remaining = {lid: self._cap[lid] for lid in weight}
        link_flows: dict[int, list[int]] = {}
        for i, (_, hop) in enumerate(flows):
            for lid in hop:
                link_flows.setdefault(lid, []).append(i)
        active = set(range(len(flows)))
        live = set(weight)
        rates: dict[str, float] = {}
        level = 0.0
        while active:
            best = min(remaining[lid] / weight[lid] for lid in live)
            bottleneck = [lid for lid in live if remaining[lid] / weight[lid] <= best * (1 + 1e-12)]
            delta = max(best, 0.0)
            level += delta
            for lid in live:
                remaining[lid] -= weight[lid] * delta
            for i in sorted({i for lid in bottleneck for i in link_flows[lid] if i in active}):
                active.discard(i)
                j, hop = flows[i]
                rates[j] = min(rates.get(j, math.inf), fw[i] * level)
                for lid in hop:
                    weight[lid] -= fw[i]
                    if weight[lid] <= 1e-12:
                        live.discard(lid)
        return rates

    def rate(self, job_id: str) -> float | None:
        """Current per-hop rate of a communicating job (bytes/s), ``None`` for a single worker."""
        return self._rate.get(job_id)
