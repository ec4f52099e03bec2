"""TCP-biased sharing (``maxmin`` with ``fairness=tcp``, docs/physics.md §12): hand-computed cases."""

import pytest

from ddlsched.cluster.topology import GBIT, Cluster, GPUType, ServerSpec
from ddlsched.errors import ConfigError
from ddlsched.perf import make_perf_model
from ddlsched.perf.base import Placement
from ddlsched.perf.phased_exact import PhaseClock, phased_job
from ddlsched.perf.tcp_share import contended, tcp_rates
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
