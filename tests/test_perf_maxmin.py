"""Hand-computed physics cases for the link-level max-min model (issue: simulator core, 'Done when')."""

import pytest

from ddlsched.cluster.topology import GBIT, Cluster, GPUType, ServerSpec
from ddlsched.perf import make_perf_model
from ddlsched.perf.base import Placement
from ddlsched.workload.profiles import ModelProfile

M_MB = 100.0
PROF = ModelProfile("m", grad_mb=M_MB, compute_ms=50.0, batch_size=32, mem_mb=1000)
B = 10 * GBIT  # 10 Gb/s NIC in bytes/s


def four_by_four() -> Cluster:
    return Cluster.build("t", [[ServerSpec(4, "V100", 10.0) for _ in range(4)]], {"V100": GPUType("V100", 32768)})


def spread(c: Cluster, offset: int) -> tuple[int, ...]:
    return tuple(c.server_gpus[s][offset] for s in range(4))


def test_single_spread_job_takes_ring_time():
    c = four_by_four()
    pm = make_perf_model("maxmin", c)
    t = pm.add(Placement("a", spread(c, 0), PROF))["a"]
    assert t.comm_s == pytest.approx(2 * 3 / 4 * M_MB * 1e6 / B)
    assert t.compute_s == pytest.approx(0.05)


def test_two_jobs_on_same_servers_take_twice_each_and_recover():
    c = four_by_four()
    pm = make_perf_model("maxmin", c)
    pm.add(Placement("a", spread(c, 0), PROF))
    changed = pm.add(Placement("b", spread(c, 1), PROF))
    alone = 2 * 3 / 4 * M_MB * 1e6 / B
    assert set(changed) == {"a", "b"}
    assert changed["a"].comm_s == pytest.approx(2 * alone)
    assert changed["b"].comm_s == pytest.approx(2 * alone)
    back = pm.remove("b")
    assert back["a"].comm_s == pytest.approx(alone)


def test_packed_job_never_touches_a_nic():
    c = four_by_four()
    pm = make_perf_model("maxmin", c)
    pm.add(Placement("a", spread(c, 0), PROF))
    changed = pm.add(Placement("packed", c.server_gpus[0][1:4], PROF))
    assert set(changed) == {"packed"}  # the spread job is not slowed
    intra = c.links[c.gpu_tx_link(1)].capacity_Bps
    assert changed["packed"].comm_s == pytest.approx(2 * 2 / 3 * M_MB * 1e6 / intra)


def test_ring_aware_sharing_gives_leftover_to_others():
    # Job a spans servers 0,1 ; job b spans 0,1,2,3. They share NICs of servers 0 and 1 only.
    c = four_by_four()
    pm = make_perf_model("maxmin", c)
    pm.add(Placement("a", (0, 4), PROF))
    t = pm.add(Placement("b", spread(c, 1), PROF))
    # server0 tx carries one hop of a and one hop of b → both limited to B/2
    assert t["a"].comm_s == pytest.approx(2 * 1 / 2 * M_MB * 1e6 / (B / 2))
    assert t["b"].comm_s == pytest.approx(2 * 3 / 4 * M_MB * 1e6 / (B / 2))


def test_multiplicity_counts_hops_over_a_link():
    # two racks, oversubscribed uplink: a 4-server ring alternating racks crosses each uplink twice
    racks = [[ServerSpec(1, "V100", 10.0) for _ in range(2)] for _ in range(2)]
    c = Cluster.build("t", racks, {"V100": GPUType("V100", 32768)}, oversubscription=4.0)
    up = c.links[c.rack_up_link(0)].capacity_Bps
    assert up == pytest.approx(2 * B / 4)
    pm = make_perf_model("maxmin", c)
    t = pm.add(Placement("a", (0, 1, 2, 3), PROF))["a"]
    # ring order groups by rack: 0,1 | 2,3 → uplink of each rack crossed once; bottleneck = B/2
    assert t.comm_s == pytest.approx(2 * 3 / 4 * M_MB * 1e6 / (B / 2))


def test_no_contention_model_ignores_other_jobs():
    c = four_by_four()
    pm = make_perf_model("none", c)
    pm.add(Placement("a", spread(c, 0), PROF))
    t = pm.add(Placement("b", spread(c, 1), PROF))
    assert set(t) == {"b"}
    assert t["b"].comm_s == pytest.approx(2 * 3 / 4 * M_MB * 1e6 / B)


def test_isolated_does_not_change_state():
    c = four_by_four()
    pm = make_perf_model("maxmin", c)
    pm.add(Placement("a", spread(c, 0), PROF))
    iso = pm.isolated(Placement("b", spread(c, 1), PROF))
    assert iso.comm_s == pytest.approx(2 * 3 / 4 * M_MB * 1e6 / B)
    assert set(pm.running()) == {"a"}


def _two_racks(oversub: float) -> Cluster:
    racks = [[ServerSpec(1, "V100", 10.0) for _ in range(2)] for _ in range(2)]
    return Cluster.build("t", racks, {"V100": GPUType("V100", 32768)}, oversubscription=oversub)


def test_link_that_cannot_saturate_couples_nothing():
    # uplinks carry 2 NICs' worth (1:1); two cross-rack rings at NIC rate cannot saturate them
    c = _two_racks(1.0)
    pm = make_perf_model("maxmin", c)
    pm.add(Placement("a", (0, 2), PROF))
    changed = pm.add(Placement("b", (1, 3), PROF))
    assert set(changed) == {"b"}
    assert changed["b"].comm_s == pytest.approx(2 * 1 / 2 * M_MB * 1e6 / B)


def test_link_that_can_saturate_couples_and_shares():
    # 4:1 uplinks (B/2 each): the two rings share them → B/4 each, and the first job is re-timed
    c = _two_racks(4.0)
    pm = make_perf_model("maxmin", c)
    pm.add(Placement("a", (0, 2), PROF))
    changed = pm.add(Placement("b", (1, 3), PROF))
    assert set(changed) == {"a", "b"}
    assert changed["a"].comm_s == pytest.approx(2 * 1 / 2 * M_MB * 1e6 / (B / 4))
    back = pm.remove("b")
    assert back["a"].comm_s == pytest.approx(2 * 1 / 2 * M_MB * 1e6 / (B / 2))


def test_compute_time_is_each_profiles_own_however_often_asked():
    """The per-profile compute memo (one GPU type) returns each profile's own time, for one- and multi-worker
    placements, and a profile equal in name but not in timing is not mistaken for another."""
    c = four_by_four()
    pm = make_perf_model("maxmin", c)
    slow = ModelProfile("m", grad_mb=M_MB, compute_ms=80.0, batch_size=32, mem_mb=1000)  # same name as PROF
    assert pm.add(Placement("a", (0,), PROF))["a"].compute_s == pytest.approx(0.05)
    assert pm.add(Placement("b", (1,), slow))["b"].compute_s == pytest.approx(0.08)
    assert pm.add(Placement("c", spread(c, 2), PROF))["c"].compute_s == pytest.approx(0.05)
    assert pm.add(Placement("d", spread(c, 3), slow))["d"].compute_s == pytest.approx(0.08)
    assert pm.add(Placement("e", (4,), PROF))["e"] == pm.alone("e") and pm.alone("e").comm_s == 0.0
