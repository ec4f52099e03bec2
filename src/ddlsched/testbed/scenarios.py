"""The fixed validation and calibration scenario suites, on the ``tb32`` testbed cluster.

``tb32`` (real-scale description; the testbed runs it × ``scale``, default 10 Gb/s → 100 Mbit/s):

* rack 0: servers 0–3, 4 GPUs each, 10 Gb/s NICs;
* rack 1: servers 4–5 with 10 Gb/s and servers 6–7 with 4 Gb/s NICs (unequal links), 4 GPUs each;
* 4:1 uplink oversubscription: rack 0 uplink 10 Gb/s, rack 1 uplink 7 Gb/s.

Gradient sizes are given in emulated MB (already scaled) so one isolated all-reduce takes ~0.5–1.5 s.
At most 16 worker processes run at once (2-core host).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ddlsched.cluster.presets import GPU_TYPES
from ddlsched.cluster.topology import Cluster, ServerSpec
from ddlsched.testbed.predict import JobRun


def tb32() -> Cluster:
    fast, slow = ServerSpec(4, "V100", 10.0), ServerSpec(4, "V100", 4.0)
    return Cluster.build("tb32", [[fast] * 4, [fast, fast, slow, slow]], {"V100": GPU_TYPES["V100"]},
                         oversubscription=4.0)


def g(server: int, k: int = 0) -> int:
    """GPU id of the k-th GPU of ``server`` on tb32 (4 GPUs per server)."""
    return 4 * server + k


def ring(servers: list[int], k: int = 0) -> tuple[int, ...]:
    return tuple(g(s, k) for s in servers)


@dataclass(frozen=True)
class Scenario:
    name: str
    what: str
    jobs: tuple[JobRun, ...]


def J(jid: str, gpus: tuple[int, ...], grad_mb: float, iters: int, compute_ms: float = 20.0,
      start_s: float = 0.0, overlap: float = 0.0) -> JobRun:
    return JobRun(jid, gpus, grad_mb, iters, compute_ms, start_s, overlap)


# phase scenarios: two 4-rings on the same 4 NICs (servers 0-3), 4 MB gradient → all-reduce alone
# m0 = 2·3/4·4 MB / 12.5 MB/s = 0.48 s at line rate; compute c = ratio · m0; b starts `offset` periods after a
PHASE_GRAD_MB = 4.0
PHASE_M0_MS = 480.0


def phase_pair(name: str, what: str, ratio: float, offset: float, iters: int, overlap: float = 0.0) -> Scenario:
    """Two identical jobs on the same 4 NICs, compute/communication ``ratio``, b ``offset`` alone periods
    (c + (1 − ω)·m0) after a."""
    c = ratio * PHASE_M0_MS
    period_s = (c + (1 - overlap) * PHASE_M0_MS) / 1e3
    return Scenario(name, what, (
        J("a", ring([0, 1, 2, 3], 0), PHASE_GRAD_MB, iters, compute_ms=c, overlap=overlap),
        J("b", ring([0, 1, 2, 3], 1), PHASE_GRAD_MB, iters, compute_ms=c, start_s=round(offset * period_s, 3),
          overlap=overlap)))


# the extended suite (docs/validation.md): compute/communication ratio 0.25 → 4 with opposite phases, phase
# offset 0 → ½ at ratio 1, and overlapped communication (worker --hide-ms, the phased model's ω)
PHASES: tuple[Scenario, ...] = (
    phase_pair("ratio0.25", "compute/comm 0.25, b half a period after a", 0.25, 0.5, 6),
    phase_pair("ratio0.5", "compute/comm 0.5, b half a period after a", 0.5, 0.5, 5),
    phase_pair("ratio2", "compute/comm 2, b half a period after a", 2.0, 0.5, 4),
    phase_pair("ratio4", "compute/comm 4, b half a period after a", 4.0, 0.5, 3),
    phase_pair("offset0", "compute/comm 1, phases aligned", 1.0, 0.0, 5),
    phase_pair("offset0.25", "compute/comm 1, b a quarter period after a", 1.0, 0.25, 5),
    phase_pair("offset0.5", "compute/comm 1, b half a period after a (opposite phases)", 1.0, 0.5, 5),
    phase_pair("overlap0.3", "compute/comm 1, ω = 0.3 (all-reduce starts 0.3·m0 before compute ends), aligned",
               1.0, 0.0, 5, overlap=0.3),
    phase_pair("overlap0.6", "compute/comm 1, ω = 0.6, b a quarter period after a", 1.0, 0.25, 5, overlap=0.6),
)


VALIDATION: tuple[Scenario, ...] = (
    Scenario("nic1", "1 job, 4-ring over 4 NICs (no contention)", (J("a", ring([0, 1, 2, 3]), 8, 5),)),
    Scenario("nic2", "2 jobs share the same 4 NICs", (
        J("a", ring([0, 1, 2, 3], 0), 8, 4), J("b", ring([0, 1, 2, 3], 1), 8, 4))),
    Scenario("nic3", "3 jobs share the same 3 NICs", (
        J("a", ring([0, 1, 2], 0), 4, 4), J("b", ring([0, 1, 2], 1), 4, 4), J("c", ring([0, 1, 2], 2), 4, 4))),
    Scenario("nic4", "4 jobs share the same 2 NICs", (
        J("a", ring([0, 1], 0), 3, 4), J("b", ring([0, 1], 1), 3, 4),
        J("c", ring([0, 1], 2), 3, 4), J("d", ring([0, 1], 3), 3, 4))),
    Scenario("partial", "partial overlap, unequal links: a on 4,6,7 (4 Gb/s NICs) shares server 4 with b on 4,5", (
        J("a", ring([4, 6, 7]), 4, 4), J("b", ring([4, 5], 1), 6, 5))),
    Scenario("ringsize", "rings of different sizes: 2-ring and 4-ring share NICs 0,1; 8-ring (2 GPU/server) alone", (
        J("a", ring([0, 1], 0), 4, 5), J("b", ring([0, 1, 2, 3], 1), 8, 4),
        J("c", ring([4, 5, 6, 7], 0) + ring([4, 5, 6, 7], 1), 4, 4))),
    Scenario("uplink", "rack uplink bottleneck: 3 cross-rack 2-rings on disjoint servers", (
        J("a", (g(0), g(4)), 2, 4), J("b", (g(1), g(5)), 2, 4), J("c", (g(2), g(6)), 2, 4))),
    Scenario("staggered", "jobs start and finish at different times on shared NICs", (
        J("a", ring([0, 1, 2, 3], 0), 6, 8), J("b", ring([0, 1, 2, 3], 1), 6, 3, start_s=2.5),
        J("c", ring([2, 3], 2), 4, 4, start_s=5.0))),
    Scenario("compute", "2 jobs share 4 NICs, compute ≈ communication, b offset by one compute phase", (
        J("a", ring([0, 1, 2, 3], 0), 8, 5, compute_ms=900),
        J("b", ring([0, 1, 2, 3], 1), 8, 5, compute_ms=900, start_s=0.9))),
    *PHASES,
)

CALIBRATION: tuple[Scenario, ...] = (
    Scenario("cal-2ring", "isolated 2-ring", (J("a", ring([0, 1]), 6, 4),)),
    Scenario("cal-4ring", "isolated 4-ring, small gradient", (J("a", ring([4, 5, 0, 1]), 3, 5),)),
    Scenario("cal-6ring", "isolated 6-ring", (J("a", ring([0, 1, 2, 3, 4, 5]), 8, 3),)),
    Scenario("cal-lat", "isolated 6-ring, tiny gradient (latency-dominated: pins α)",
             (J("a", ring([0, 1, 2, 3], 0) + ring([0, 1], 1), 0.3, 10),)),
    Scenario("cal-slow", "isolated 2-ring on the 4 Gb/s NICs", (J("a", ring([6, 7]), 3, 4),)),
    Scenario("cal-share2", "two 2-rings sharing NICs 2,3", (
        J("a", ring([2, 3], 0), 4, 4), J("b", ring([2, 3], 1), 4, 4))),
    # for the TCP rule's γ and κ (docs/physics.md §12); cal-park and cal-own: shapes no validation scenario has
    Scenario("cal-park", "parking lot: 2-ring on servers 1, 2 inside a 3-ring on 0, 1, 2 (the 2-ring's hop 2→1 "
             "crosses two contended queues, every 3-ring hop one): pins γ", (
                 J("a", ring([1, 2], 0), 4, 5), J("b", ring([0, 1, 2], 1), 6, 5))),
    Scenario("cal-own", "2-ring on servers 5 (10 Gb/s) and 7 (4 Gb/s: its own slow queue) shares server 5's NIC "
             "with a 2-ring on 4, 5: pins κ", (
                 J("a", ring([5, 7], 0), 3, 5), J("b", ring([4, 5], 1), 5, 5))),
    # added 2026-11-26 after validation run 12 (docs/validation.md, "Runs 13, 14 and 15"): cal-park's 3-ring crosses a
    # contended queue on every hop, while a longer ring beside a 2-ring has hops that meet nobody. This is the
    # validation scenario `ringsize`'s topology turned by one server, with other gradient sizes, 8 GPUs in the long
    # ring and other servers, so `ringsize` is no longer a blind test of γ (the doc reports the fit without it too)
    Scenario("cal-long", "2-ring on servers 1, 2 beside an 8-GPU ring over servers 0–3 (2 GPUs each, one NIC hop "
             "per server): the 2-ring's hop 2→1 crosses two contended queues, the long ring's hops one, its hop "
             "3→0 none: pins γ", (
                 J("a", ring([1, 2], 0), 4, 5), J("b", ring([0, 1, 2, 3], 1) + ring([0, 1, 2, 3], 2), 6, 4))),
    # added 2026-11-26 for the uneven split σ (docs/physics.md §14; docs/CHANGELOG-validation.md, "Pooled over
    # runs 13–15"):
    # two equal rings with compute ≈ communication, in phase — the shape whose drift the model had no parameter
    # for. Other servers, ring size and gradient than the validation phase pairs (2-rings on servers 4, 5; 6 MB →
    # all-reduce alone 0.48 s, as the pairs' 4-rings on servers 0–3)
    Scenario("cal-sync", "two equal 2-rings on servers 4, 5, compute ≈ communication (480 ms), in phase: "
             "pins the uneven split σ", (
                 J("a", ring([4, 5], 2), 6, 5, compute_ms=PHASE_M0_MS),
                 J("b", ring([4, 5], 3), 6, 5, compute_ms=PHASE_M0_MS))),
)


# The TCP rule's scenarios are run CAL_REPEATS times by default (``--cal-repeats``) and γ, κ fitted on every
# repeat (docs/validation.md, "Calibration"): γ fitted on one run ranged 0.75 … 1.24 over 7 runs, the noise of a
# 5-iteration mean (cal-park's 2-ring: iterations 0.3 … 1.8 s within a run); pooling 4 runs narrowed it to
# 1.07 … 1.11 (benchmarks/tcp_cal_spread.py), for ≈ 50 s more testbed time.
TCP_RULE_SCENARIOS: tuple[str, ...] = ("cal-park", "cal-own", "cal-long", "cal-sync")
CAL_REPEATS = 4
REPEAT_SEP = ".r"


def repeat_name(name: str, k: int) -> str:
    """The saved name of the k-th run (1-based) of a calibration or validation scenario: the first keeps ``name``
    (so result directories saved before repeats existed still load), later ones are ``name.r<k>``."""
    if k < 1:
        raise ValueError(f"repeat {k} of {name}: repeats are numbered from 1")
    return name if k == 1 else f"{name}{REPEAT_SEP}{k}"


def base_name(name: str) -> str:
    """The scenario a (possibly repeated) run belongs to: ``cal-park.r3`` → ``cal-park``."""
    return name.rpartition(REPEAT_SEP)[0] if repeat_index(name) > 1 else name


def repeat_index(name: str) -> int:
    """Which run of its scenario ``name`` is (1 for the first, k for ``name.r<k>``)."""
    _, sep, tail = name.rpartition(REPEAT_SEP)
    return int(tail) if sep and tail.isdigit() else 1


def calibration_suite(repeats: int = CAL_REPEATS) -> tuple[Scenario, ...]:
    """:data:`CALIBRATION`, then repeats 2 … ``repeats`` of each :data:`TCP_RULE_SCENARIOS` scenario (same jobs,
    names from :func:`repeat_name`), interleaved (park, own, long, park, own, long, …) so a burst of host load does
    not hit every repeat of one scenario."""
    if repeats < 1:
        raise ValueError(f"--cal-repeats must be ≥ 1, got {repeats}")
    by_name = {s.name: s for s in CALIBRATION}
    extra = [Scenario(repeat_name(n, k), f"{by_name[n].what} (repeat {k} of {repeats})", by_name[n].jobs)
             for k in range(2, repeats + 1) for n in TCP_RULE_SCENARIOS]
    return (*CALIBRATION, *extra)


# Every validation scenario is run VAL_REPEATS times by default (``--val-repeats``) and scored against the per-job
# mean over its runs (docs/validation.md, "Measurement protocol"): the models are deterministic and predict the
# expected time, while TCP splits a shared link between equal rings differently from run to run.
VAL_REPEATS = 3


def validation_suite(repeats: int = VAL_REPEATS,
                     scenarios: tuple[Scenario, ...] | list[Scenario] = VALIDATION) -> tuple[Scenario, ...]:
    """``scenarios`` (default :data:`VALIDATION`) ``repeats`` times, interleaved — every scenario once, then every
    scenario again, … — so a slow drift of the host's load spreads over all scenarios instead of landing on the
    repeats of one; run k > 1 is named :func:`repeat_name` (``nic4.r2``), the first keeps its name."""
    if repeats < 1:
        raise ValueError(f"--val-repeats must be ≥ 1, got {repeats}")
    return tuple(s if k == 1 else Scenario(repeat_name(s.name, k), f"{s.what} (repeat {k} of {repeats})", s.jobs)
                 for k in range(1, repeats + 1) for s in scenarios)


def longer(scenarios: tuple[Scenario, ...] | list[Scenario], factor: int) -> list[Scenario]:
    """``scenarios`` with every job running ``factor`` times its iterations (same GPUs, sizes and start times):
    ``testbed validate --iterations-scale``, for the steady state that trace jobs of thousands of iterations live
    in rather than the suite's first few iterations (docs/physics.md §15: start offsets last ≈ 5–20 iterations)."""
    if factor < 1:
        raise ValueError(f"--iterations-scale must be ≥ 1, got {factor}")
    if factor == 1:
        return list(scenarios)
    return [Scenario(s.name, f"{s.what} (iterations ×{factor})", tuple(replace(j, iters=j.iters * factor)
                                                                        for j in s.jobs)) for s in scenarios]


def tb4() -> Cluster:
    """The CI smoke cluster: one rack of 4 servers × 2 GPUs, 10 Gb/s."""
    return Cluster.build("tb4", [[ServerSpec(2, "V100", 10.0)] * 4], {"V100": GPU_TYPES["V100"]})


SMOKE = Scenario("smoke", "2 jobs on 4 servers of tb4 (CI)", (
    J("a", (0, 2, 4, 6), 2.0, 3), J("b", (1, 3), 2.0, 3, start_s=0.5)))
