"""TCP-biased sharing (``maxmin`` with ``fairness=tcp``, docs/physics.md §12): hand-computed cases."""

import pytest

from ddlsched.cluster.topology import GBIT, Cluster, GPUType, ServerSpec
from ddlsched.errors import ConfigError
from ddlsched.perf import make_perf_model
from ddlsched.perf.base import Placement
from ddlsched.perf.phased_exact import PhaseClock, phased_job
from ddlsched.perf.tcp_share import contended, own_slow_links, own_slow_queues, tcp_rates
from ddlsched.workload.profiles import ModelProfile

PROF = ModelProfile("m", grad_mb=100.0, compute_ms=50.0, batch_size=32, mem_mb=1000)
C = 10 * GBIT
W2 = 2 ** -1.5  # a ring whose worst hop crosses two contended queues


def four_by_four() -> Cluster:
    return Cluster.build("t", [[ServerSpec(4, "V100", 10.0) for _ in range(4)]], {"V100": GPUType("V100", 32768)})


def rates(placements: list[Placement], **params) -> dict[str, float]:
    pm = make_perf_model("maxmin", four_by_four(), fairness="tcp", **params)
    for p in placements:
        pm.add(p)
    return {p.job_id: pm.rate(p.job_id) for p in placements}


def parking_lot(c: Cluster) -> list[Placement]:
    """a: 2-ring on servers 0, 1; b: 4-ring on servers 0..3 (the testbed's ``ringsize``)."""
    g = c.server_gpus
    return [Placement("a", (g[0][0], g[1][0]), PROF), Placement("b", (g[0][1], g[1][1], g[2][1], g[3][1]), PROF)]


def test_parking_lot_two_ring_gets_its_reno_share():
    # both rings' hops 0→1 leave server 0's tx queue (contended); server 1's rx is fed by that queue alone
    # (shadowed). a's hop 1→0 meets b's 1→2 at server 1's tx and b's 3→0 at server 0's rx: two contended queues.
    # b's worst hop crosses one. W_a = 2^−1.5, W_b = 1; the shared tx queues fill: W_a·L + L = C.
    r = rates(parking_lot(four_by_four()))
    assert r["a"] == pytest.approx(C * W2 / (1 + W2))  # 0.261 C (max-min: C/2)
    assert r["b"] == pytest.approx(C / (1 + W2))
    assert r["a"] + r["b"] == pytest.approx(C)


def test_which_queues_are_contended():
    c = four_by_four()
    hops = {p.job_id: [tuple(h) for h in c.ring_hops(p.gpus)] for p in parking_lot(c)}
    r = tcp_rates(hops, [link.capacity_Bps for link in c.links])
    names = {c.links[lid].name for lid in contended(hops, r, [link.capacity_Bps for link in c.links])}
    assert names == {"server0.nic.tx", "server1.nic.tx", "server0.nic.rx"}


def test_symmetric_rings_and_exponent_zero_are_max_min():
    c = four_by_four()
    g = c.server_gpus
    same = [Placement(k, (g[0][i], g[1][i], g[2][i]), PROF) for i, k in enumerate("xyz")]  # 3 rings, same 3 NICs
    for j, x in rates(same).items():
        assert x == pytest.approx(C / 3), j
    for j, x in rates(parking_lot(c), tcp_exponent=0.0).items():
        assert x == pytest.approx(C / 2), j  # γ = 0: per-ring max-min


def test_incremental_matches_fresh_and_bad_parameters_are_refused():
    c = four_by_four()
    pm = make_perf_model("maxmin", c, fairness="tcp")
    for p in parking_lot(c):
        pm.add(p)
    pm.remove("b")
    assert pm.rate("a") == pytest.approx(C)  # alone again
    for bad in ({"tcp_exponent": -1.0}, {"tcp_exponent": float("nan")}):
        with pytest.raises(ConfigError, match="tcp_exponent"):
            make_perf_model("maxmin", c, fairness="tcp", **bad)
    with pytest.raises(ConfigError, match="fairness='tcp' only"):
        make_perf_model("maxmin", c, tcp_exponent=2.0)
    assert make_perf_model("maxmin", c, fairness="tcp").params() == {"efficiency": 1.0, "fairness": "tcp",
                                                                    "tcp_exponent": 1.5}


def test_phase_clock_shares_by_the_same_rule():
    c = four_by_four()
    cap = [link.capacity_Bps for link in c.links]
    jobs = [phased_job(c, p, cap, 0.0) for p in parking_lot(c)]
    clock = PhaseClock(cap, tcp_exponent=1.5)
    for j in jobs:
        clock.add(j)  # same compute, so both start sending together
    dt, _ = clock.step()  # the compute phase
    assert dt == pytest.approx(jobs[0].compute_s)
    a, b = jobs
    dt, _ = clock.step()  # the first ring to finish its bytes at the TCP-biased rates
    assert dt == pytest.approx(min(a.bytes_per_hop / (C * W2 / (1 + W2)), b.bytes_per_hop / (C / (1 + W2))))


def slow_pair() -> tuple[Cluster, list[Placement]]:
    """Servers 0, 1 at 10 Gb/s, 2, 3 at 4 Gb/s. a: 2-ring on servers 1, 3 (its 4 Gb/s NIC is its own slow
    queue on both hops); b: 2-ring on servers 0, 1 (shares server 1's NIC with a)."""
    fast, slow = ServerSpec(4, "V100", 10.0), ServerSpec(4, "V100", 4.0)
    c = Cluster.build("t", [[fast, fast, slow, slow]], {"V100": GPUType("V100", 32768)})
    g = c.server_gpus
    return c, [Placement("a", (g[1][0], g[3][0]), PROF), Placement("b", (g[0][1], g[1][1]), PROF)]


def test_own_slow_queues_are_structural():
    c, ps = slow_pair()
    cap = [link.capacity_Bps for link in c.links]
    hops = {p.job_id: [tuple(h) for h in c.ring_hops(p.gpus)] for p in ps}
    assert own_slow_queues(hops, cap) == {"a": [1, 1], "b": [0, 0]}  # server 3's rx (hop 1→3), tx (hop 3→1)
    assert own_slow_queues({"a": hops["a"]}, cap) == {"a": [1, 1]}  # alone too: W = max(1, κ)^−γ = 1
    assert own_slow_links(hops, cap) == {"a": [(c.nic_rx_link(3),), (c.nic_tx_link(3),)], "b": [(), ()]}


@pytest.mark.parametrize("kappa,gamma,expected_a", [
    (0.0, 1.5, 0.4),  # today's rule: a at its alone rate (its 4 Gb/s NIC), b takes the rest of server 1's NIC
    (1.0, 1.5, 2 ** -1.5 / (1 + 2 ** -1.5)),  # n_a = 2: W_a = 0.354 → a = 0.261 C
    (0.5, 1.5, 1.5 ** -1.5 / (1 + 1.5 ** -1.5)),  # n_a = 1.5: W_a = 0.544 → a = 0.352 C
    (0.2, 1.5, 0.4),  # W_a = 1.2^−1.5 = 0.761: its weighted share 0.432 C exceeds its alone rate 0.4 C
])
def test_own_slow_queue_weight_by_hand(kappa: float, gamma: float, expected_a: float):
    """Server 1's tx (a's hop 1→3, b's 1→0) and rx (a's 3→1, b's 0→1; fed by two NICs) are contended; each hop
    of a also crosses its own slow queue: n_a = 1 + κ, n_b = 1. On server 1's queues W_a·L + L = C, a = W_a·L
    unless that exceeds a's alone rate 0.4 C."""
    c, ps = slow_pair()
    pm = make_perf_model("maxmin", c, fairness="tcp", tcp_exponent=gamma, tcp_own_queue=kappa)
    for p in ps:
        pm.add(p)
    assert pm.rate("a") == pytest.approx(expected_a * C)
    assert pm.rate("b") == pytest.approx((1 - expected_a) * C)


def test_own_slow_queue_counts_when_the_ring_fills_it():
    """slow_pair: with no own queues counted (κ-free stage), a runs at its 4 Gb/s NIC's rate, so both of its own
    slow links are full and hold a queue; counting them (κ = 1) then pushes a below that rate (0.261 C < 0.4 C).
    They stay counted: the decision is taken once, so the result does not depend on the number of rounds."""
    c, ps = slow_pair()
    cap = [link.capacity_Bps for link in c.links]
    hops = {p.job_id: [tuple(h) for h in c.ring_hops(p.gpus)] for p in ps}
    free = tcp_rates(hops, cap, 1.5, own_queue=0.0)
    assert free["a"] == pytest.approx(0.4 * C)
    assert own_slow_queues(hops, cap, free) == {"a": [1, 1], "b": [0, 0]}
    counted = tcp_rates(hops, cap, 1.5, own_queue=1.0)
    assert counted["a"] == pytest.approx(W2 / (1 + W2) * C)
    assert own_slow_queues(hops, cap, counted) == {"a": [0, 0], "b": [0, 0]}  # below the NIC's rate now
    for rounds in (1, 2, 3, 8, 9):
        assert tcp_rates(hops, cap, 1.5, rounds, own_queue=1.0) == counted


def uplink_trio() -> tuple[Cluster, list[Placement]]:
    """The testbed's ``uplink``: rack 0 = servers 0–3 (10 Gb/s), rack 1 = servers 4, 5 (10 Gb/s), 6, 7 (4 Gb/s);
    uplinks 10 and 7 Gb/s (4:1). Three 2-rings across the racks on servers 0/4, 1/5, 2/6."""
    fast, slow = ServerSpec(4, "V100", 10.0), ServerSpec(4, "V100", 4.0)
    c = Cluster.build("t", [[fast] * 4, [fast, fast, slow, slow]], {"V100": GPUType("V100", 32768)},
                      oversubscription=4.0)
    g = c.server_gpus
    return c, [Placement(k, (g[s][0], g[s + 4][0]), PROF) for s, k in enumerate("abc")]


@pytest.mark.parametrize("kappa", [0.0, 1.0])
def test_own_slow_link_held_below_its_rate_holds_no_queue(kappa: float):
    """Rack 1's 7 Gb/s up- and downlink are contended (three rings, full; the downlink's rings come from rack 0's
    10 Gb/s uplink, faster than it, so it is not shadowed): every hop crosses one, W = 1 for all, 7/3 Gb/s each.
    c's 4 Gb/s NIC is an own slow link of both its hops (slower than 10, 10, 7 Gb/s), but the uplink holds c at
    7/3 < 4 Gb/s: no queue, κ changes nothing. (Counted from topology alone, n_c = 2 would give c 1.05 Gb/s.)"""
    c, ps = uplink_trio()
    cap = [link.capacity_Bps for link in c.links]
    hops = {p.job_id: [tuple(h) for h in c.ring_hops(p.gpus)] for p in ps}
    assert own_slow_queues(hops, cap) == {"a": [0, 0], "b": [0, 0], "c": [1, 1]}  # the structural candidates
    r = tcp_rates(hops, cap, 1.5, own_queue=kappa)
    assert own_slow_queues(hops, cap, r) == {"a": [0, 0], "b": [0, 0], "c": [0, 0]}
    for j in "abc":
        assert r[j] == pytest.approx(7 * GBIT / 3), j
    pm = make_perf_model("maxmin", c, fairness="tcp", tcp_exponent=1.5, tcp_own_queue=kappa)
    for p in ps:
        pm.add(p)
    assert {p.job_id: pm.rate(p.job_id) for p in ps} == pytest.approx(r)


def test_own_queue_parameter_is_checked_and_reported():
    c = four_by_four()
    for bad in (-0.1, 1.5, float("nan"), float("inf")):
        with pytest.raises(ConfigError, match="tcp_own_queue"):
            make_perf_model("maxmin", c, fairness="tcp", tcp_own_queue=bad)
    with pytest.raises(ConfigError, match="fairness='tcp' only"):
        make_perf_model("maxmin", c, tcp_own_queue=0.5)
    assert make_perf_model("maxmin", c, fairness="tcp", tcp_own_queue=0.5).params()["tcp_own_queue"] == 0.5
    with pytest.raises(ValueError, match="tcp_own_queue"):
        PhaseClock([1.0], tcp_exponent=1.5, tcp_own_queue=2.0)
