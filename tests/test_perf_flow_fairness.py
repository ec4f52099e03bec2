"""Per-flow max-min (``maxmin`` with ``fairness=flow``, issue 14 item 2) against per-ring max-min, hand-computed."""

import pytest

from ddlsched.cluster.topology import GBIT, Cluster, GPUType, ServerSpec
from ddlsched.perf import make_perf_model
from ddlsched.perf.base import Placement, ring_bytes_per_hop
from ddlsched.workload.profiles import ModelProfile

PROF = ModelProfile("m", grad_mb=100.0, compute_ms=50.0, batch_size=32, mem_mb=1000)
C = 10 * GBIT


def four_by_four() -> Cluster:
    return Cluster.build("t", [[ServerSpec(4, "V100", 10.0) for _ in range(4)]], {"V100": GPUType("V100", 32768)})


def jobs(c: Cluster) -> list[Placement]:
    g = c.server_gpus
    return [Placement("a", (g[0][0], g[1][0]), PROF),  # 2-ring on servers 0, 1
            Placement("b", (g[0][1], g[1][1], g[2][1], g[3][1]), PROF),  # 4-ring on servers 0..3
            Placement("c", (g[2][0], g[3][0]), PROF),  # two 2-rings on servers 2, 3: hold b back there
            Placement("d", (g[2][2], g[3][2]), PROF)]


def rates(fairness: str, placements: list[Placement]) -> dict[str, float]:
    pm = make_perf_model("maxmin", four_by_four(), fairness=fairness)
    for p in placements:
        pm.add(p)
    return {p.job_id: pm.rate(p.job_id) for p in placements}


def test_two_ring_and_four_ring_alone_on_shared_nics_agree():
    # servers 0 and 1 carry one hop of each ring each way: C/2 for both, per ring or per flow
    two = jobs(four_by_four())[:2]
    for fairness in ("ring", "flow"):
        r = rates(fairness, two)
        assert r["a"] == pytest.approx(C / 2)
        assert r["b"] == pytest.approx(C / 2)


def test_per_flow_share_differs_when_the_four_ring_is_held_back_elsewhere():
    # b has 3 flows on server 2's and 3's NICs (with c and d): C/3 for b, c, d under both rules.
    # Per ring: b is frozen at C/3 on all its hops, so a gets the rest of servers 0/1's NICs: C − C/3 = 2C/3.
    # Per flow: b's hop 0→1 is a greedy flow; on server 0's tx (and 1's rx) it and a's hop 0→1 rise together to
    # C/2; b's ring cannot use its extra C/6, a's ring is paced by that hop: a = C/2.
    ring = rates("ring", jobs(four_by_four()))
    flow = rates("flow", jobs(four_by_four()))
    for j in "bcd":
        assert ring[j] == pytest.approx(C / 3)
        assert flow[j] == pytest.approx(C / 3)
    assert ring["a"] == pytest.approx(2 * C / 3)
    assert flow["a"] == pytest.approx(C / 2)


def test_flow_mode_is_incremental_and_isolated_matches():
    c = four_by_four()
    pm = make_perf_model("maxmin", c, fairness="flow")
    ps = jobs(c)
    for p in ps:
        pm.add(p)
    back = pm.remove("c")
    pm.remove("d")
    assert "b" in back
    assert pm.rate("a") == pytest.approx(C / 2)
    assert pm.current("a").comm_s == pytest.approx(ring_bytes_per_hop(100e6, 2) / (C / 2))
    assert pm.isolated(ps[1]).comm_s == pytest.approx(ring_bytes_per_hop(100e6, 4) / C)
    with pytest.raises(Exception, match="fairness"):
        make_perf_model("maxmin", c, fairness="job")


def test_rtt_biased_flows_favour_the_shorter_path():
    # two racks of two servers; a: 2-ring across racks (4-link hops, weight ½), b: 2-ring inside rack 0 (weight 1).
    # They share server 0's NIC both ways: ½·L + L = C → a gets C/3, b 2C/3 (C/2 each per ring or per flow).
    c = Cluster.build("r", [[ServerSpec(4, "V100", 10.0) for _ in range(2)] for _ in range(2)],
                      {"V100": GPUType("V100", 32768)})
    g = c.server_gpus
    ps = [Placement("a", (g[0][0], g[2][0]), PROF), Placement("b", (g[0][1], g[1][1]), PROF)]
    for fairness, ra, rb in (("ring", C / 2, C / 2), ("flow", C / 2, C / 2), ("flow-rtt", C / 3, 2 * C / 3)):
        pm = make_perf_model("maxmin", c, fairness=fairness)
        for p in ps:
            pm.add(p)
        assert pm.rate("a") == pytest.approx(ra)
        assert pm.rate("b") == pytest.approx(rb)
