"""Exact phase-level simulation of jobs that alternate compute and communication (docs/physics.md §11).

For validation and tests of the fluid ``phased`` model on small cases, not for traces. Every job repeats:

* a **compute-only** phase of ``c − h`` seconds (no network), then
* a **communication** phase: its ring sends ``V`` bytes over every hop; the first ``h`` seconds of it still
  compute (the backward tail under which a share ω of the all-reduce hides, ``h = min(ω·m0, c)`` with m0 the
  all-reduce alone). The phase ends when the bytes are sent, the ring's step latency ``2(w−1)·α`` has passed
  after them, and the hidden compute is done.

At every instant the jobs that are sending share the links by the same weighted max-min fair rule as ``maxmin``
(:func:`maxmin_rates`): only jobs sending *at the same time* contend. Events are phase ends; between events
rates are constant, so the simulation is exact up to float rounding.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ddlsched.cluster.topology import Cluster
from ddlsched.perf.base import Placement, compute_time, ring_bytes_per_hop
from ddlsched.perf.tcp_share import check_params, tcp_rates, weighted_fill

_TINY = 1e-12


@dataclass(slots=True, init=False)
class PhasedJob:
    """One job as the phase physics sees it. Made per start: a slotted dataclass with its ``__init__`` written
    out, a native class in the compiled build (docs/engine.md "Compiled build"); nothing changes one once made."""

    job_id: str
    compute_s: float  # c: compute per iteration (slowest worker)
    hidden_s: float  # h: the tail of c during which communication already runs
    bytes_per_hop: float  # V
    latency_s: float  # 2(w−1)·α, after the bytes
    use: Mapping[int, int]  # link id → hops of the ring crossing it (empty: no communication)
    alone_rate: float  # bytes/s per hop alone: min over links of C_l / m_jl (0 when no communication)
    hops: tuple[tuple[int, ...], ...]  # the links of every ring hop in path order (TCP-biased sharing)

    def __init__(self, job_id: str, compute_s: float, hidden_s: float, bytes_per_hop: float, latency_s: float,
                 use: Mapping[int, int], alone_rate: float, hops: tuple[tuple[int, ...], ...] = ()) -> None:
        self.job_id = job_id
        self.compute_s = compute_s
        self.hidden_s = hidden_s
        self.bytes_per_hop = bytes_per_hop
        self.latency_s = latency_s
        self.use = use
        self.alone_rate = alone_rate
        self.hops = hops

    @property
    def alone_comm_s(self) -> float:
        return self.bytes_per_hop / self.alone_rate + self.latency_s if self.use else 0.0

    def iteration(self, comm_s: float) -> float:
        """Iteration time when the communication phase (bytes + latency) lasts ``comm_s``."""
        return self.compute_s - self.hidden_s + max(self.hidden_s, comm_s)


Route = tuple[dict[int, int], float, tuple[tuple[int, ...], ...]]  # link → hops on it, alone rate, hops
_NO_ROUTE: Route = ({}, 0.0, ())  # read-only
ROUTES_MAX = 1 << 16  # a route cache is cleared when it reaches this many GPU sets


def ring_route(cluster: Cluster, gpus: tuple[int, ...], cap: Sequence[float]) -> Route:
    """The links a ring over ``gpus`` crosses (with its hops on each), its per-hop rate alone and its hops."""
    hops = cluster.ring_hops(gpus) if len(gpus) > 1 else []
    if not hops:
        return _NO_ROUTE
    use = dict(Counter(lid for hop in hops for lid in hop))
    alone = min(cap[lid] / m for lid, m in use.items())
    return use, alone, tuple(tuple(hop) for hop in hops)


def phased_job(cluster: Cluster, placement: Placement, cap: Sequence[float], overlap: float,
               routes: dict[tuple[int, ...], Route] | None = None) -> PhasedJob:
    """Build a :class:`PhasedJob`; ``overlap`` is used when the profile does not set its own. ``routes``, if
    given, memoises :func:`ring_route` per GPU set (consolidated placements repeat the same sets; read-only)."""
    c = compute_time(cluster, placement)
    gpus = tuple(placement.gpus)
    if routes is None:
        route = ring_route(cluster, gpus, cap)
    else:
        got = routes.get(gpus)
        if got is None:
            if len(routes) >= ROUTES_MAX:
                routes.clear()
            got = routes[gpus] = ring_route(cluster, gpus, cap)
        route = got
    use, alone, hops = route
    if not hops:
        return PhasedJob(placement.job_id, c, 0.0, 0.0, 0.0, {}, 0.0)
    n = placement.num_gpus
    v = ring_bytes_per_hop(placement.profile.grad_bytes, n)
    lat = 2 * (n - 1) * cluster.hop_latency_s
    w = placement.profile.overlap if placement.profile.overlap is not None else overlap
    h = min(w * (v / alone + lat), c)
    return PhasedJob(placement.job_id, c, h, v, lat, use, alone, hops)


def maxmin_rates(active: Sequence[PhasedJob], cap: Sequence[float]) -> dict[str, float]:
    """Weighted max-min fair per-hop rates of the jobs sending now (progressive filling, as ``maxmin``)."""
    return weighted_fill({j.job_id: j.use for j in active}, dict.fromkeys((j.job_id for j in active), 1.0), cap)


class PhaseClock:
    """The phase state of the jobs running now, stepped from event to event (shared by :func:`simulate_phases`
    and the testbed's schedule replay, ``ddlsched.testbed.phase_replay``).

    A job is either in its compute-only phase (``c − h`` left, plus any initial wait) or communicating (bytes,
    then latency, left; hidden compute left). :meth:`step` moves every job on by the time to the next phase end
    (or ``limit``) under the max-min rates of the jobs sending then, and returns the jobs that finished an
    iteration — they have already begun the next one's compute. With ``tcp_exponent`` set, the jobs sending share
    the links by the TCP-biased rule (``ddlsched.perf.tcp_share``, docs/physics.md §12; ``tcp_own_queue`` its κ)
    instead of max-min."""

    def __init__(self, cap: Sequence[float], tcp_exponent: float | None = None, tcp_own_queue: float = 0.0,
                 split_noise: float = 0.0, rng: random.Random | None = None) -> None:
        if tcp_exponent is not None:
            check_params(tcp_exponent, tcp_own_queue)
        if not (math.isfinite(split_noise) and split_noise >= 0):
            raise ValueError(f"split_noise must be a finite number >= 0, not {split_noise!r}")
        if split_noise and rng is None:
            raise ValueError("split_noise > 0 needs a seeded rng")
        self.cap = cap
        self.tcp_exponent = tcp_exponent
        self.tcp_own_queue = tcp_own_queue
        # the uneven split (docs/physics.md §14): each communication phase of each job draws a weight exp(σ·z),
        # z standard normal, that multiplies its share for that phase; σ = 0 leaves the rule exactly as it is
        self.split_noise = split_noise
        self.rng = rng
        self.bias: dict[str, float] = {}
        self.jobs: dict[str, PhasedJob] = {}
        self.phase: dict[str, int] = {}  # 0 = compute only, 1 = communicating
        self.t_left: dict[str, float] = {}
        self.bytes_left: dict[str, float] = {}
        self.lat_left: dict[str, float] = {}
        self.hide_left: dict[str, float] = {}
        # rates of each set of senders seen since the jobs last changed (the sharing rules are pure functions of
        # the senders; a replay revisits the same few sets thousands of times). Unused with the uneven split.
        self._rates_memo: dict[tuple[str, ...], dict[str, float]] = {}
        self.met = False  # whether two jobs ever sent at once (until then the shares, and the split, change nothing)

    def add(self, j: PhasedJob, wait: float = 0.0) -> None:
        """Start ``j``: ``wait`` seconds, then its first compute phase."""
        self.jobs[j.job_id] = j
        self._rates_memo.clear()
        self.phase[j.job_id], self.t_left[j.job_id] = 0, wait + j.compute_s - j.hidden_s
        self.bytes_left[j.job_id] = self.lat_left[j.job_id] = self.hide_left[j.job_id] = 0.0

    def remove(self, k: str) -> None:
        for d in (self.jobs, self.phase, self.t_left, self.bytes_left, self.lat_left, self.hide_left):
            del d[k]
        self.bias.pop(k, None)
        self._rates_memo.clear()

    def step(self, limit: float = math.inf) -> tuple[float, list[str]]:
        """Advance to the next phase end, or by ``limit`` if that comes first; (time advanced, the jobs that
        completed an iteration). ``inf`` and nothing when no job has anything left to do within ``limit``."""
        sending = [self.jobs[k] for k in sorted(self.jobs) if self.phase[k] == 1 and self.bytes_left[k] > 0]
        bias = self.bias if self.split_noise else None
        key = tuple(j.job_id for j in sending)
        if len(sending) > 1:
            self.met = True
        memo = self._rates_memo.get(key) if bias is None else None
        if memo is not None:
            rates = memo
        elif not sending:
            rates = {}
        elif self.tcp_exponent is None:
            rates = (maxmin_rates(sending, self.cap) if bias is None else
                     weighted_fill({j.job_id: j.use for j in sending}, {j.job_id: bias[j.job_id] for j in sending},
                                   self.cap))
        else:
            rates = tcp_rates({j.job_id: j.hops for j in sending if j.use}, self.cap, self.tcp_exponent,
                              own_queue=self.tcp_own_queue, bias=bias)
        if bias is None:
            self._rates_memo[key] = rates
        dt = limit
        for k in self.jobs:
            if self.phase[k] == 0:
                dt = min(dt, self.t_left[k])
                continue
            if self.bytes_left[k] > 0:
                dt = min(dt, self.bytes_left[k] / rates[k])
            elif self.lat_left[k] > 0:
                dt = min(dt, self.lat_left[k])
            if self.hide_left[k] > 0:
                dt = min(dt, self.hide_left[k])
        if dt == math.inf:
            return dt, []
        dt = max(dt, 0.0)
        done: list[str] = []
        for k in sorted(self.jobs):
            j = self.jobs[k]
            if self.phase[k] == 0:
                self.t_left[k] -= dt
                if self.t_left[k] <= _TINY:
                    self.phase[k] = 1
                    self.bytes_left[k], self.lat_left[k], self.hide_left[k] = j.bytes_per_hop, j.latency_s, j.hidden_s
                    if self.split_noise:
                        assert self.rng is not None
                        self.bias[k] = math.exp(self.split_noise * self.rng.gauss(0.0, 1.0))
            else:
                if self.bytes_left[k] > 0:
                    self.bytes_left[k] -= rates[k] * dt
                    if self.bytes_left[k] <= 1e-9 * max(j.bytes_per_hop, 1.0):
                        self.bytes_left[k] = 0.0
                elif self.lat_left[k] > 0:
                    self.lat_left[k] = self.lat_left[k] - dt if self.lat_left[k] - dt > _TINY else 0.0
                if self.hide_left[k] > 0:
                    self.hide_left[k] = self.hide_left[k] - dt if self.hide_left[k] - dt > _TINY else 0.0
            if self.phase[k] == 1 and self.bytes_left[k] == 0 and self.lat_left[k] == 0 and self.hide_left[k] == 0:
                done.append(k)
                self.phase[k], self.t_left[k] = 0, j.compute_s - j.hidden_s
        return dt, done


def simulate_phases(jobs: Sequence[PhasedJob], cap: Sequence[float], offsets: Mapping[str, float] | None = None,
                    iterations: int = 60, warmup: int = 10) -> dict[str, float]:
    """Mean iteration time of every job over iterations ``warmup+1 … iterations`` (steady state).

    Job j waits ``offsets[j]`` seconds (default 0) before its first compute phase: the relative phase of the
    jobs. All jobs run until every one has finished ``iterations``; the mean is taken over each job's own
    iterations after its ``warmup``-th."""
    if not 1 <= warmup < iterations:
        raise ValueError("need 1 <= warmup < iterations")
    offsets = offsets or {}
    clock = PhaseClock(cap)
    for j in jobs:
        clock.add(j, offsets.get(j.job_id, 0.0))
    done = {j.job_id: 0 for j in jobs}
    mark: dict[str, float] = {}
    last: dict[str, float] = {}
    now = 0.0
    guard = 0
    while min(done.values()) < iterations:
        guard += 1
        if guard > 10_000_000:
            raise RuntimeError("phase simulation did not finish")
        dt, finished = clock.step()
        now += dt
        for k in finished:
            done[k] += 1
            if done[k] == warmup:
                mark[k] = now
            if done[k] <= iterations:
                last[k] = now
    return {j.job_id: (last[j.job_id] - mark[j.job_id]) / (iterations - warmup) for j in jobs}
