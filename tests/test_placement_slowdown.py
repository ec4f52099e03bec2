"""benchmarks/placement_slowdown.py on hand-computed cases (docs/physics.md §13)."""

from __future__ import annotations

import pytest

from benchmark_module import load
from ddlsched.cluster.presets import GPU_TYPES
from ddlsched.cluster.topology import Cluster, ServerSpec
from ddlsched.perf import make_perf_model
from ddlsched.workload.profiles import ModelProfile

ps = load("placement_slowdown")

M = 100e6          # gradient bytes
C = 10e9 / 8       # NIC, bytes/s (10 Gb/s)
INTRA = 1200e9 / 8  # intra-server link (Cluster.build default)
UP1 = 10e9 / 8 / 4  # rack 1's uplink: one 10 Gb/s server, 4:1 oversubscription
ALPHA = 1e-3       # per-step latency
COMPUTE = 0.1


def _cluster() -> Cluster:
    """Rack 0: two 2-GPU servers (GPUs 0–3); rack 1: one 2-GPU server (GPUs 4–5); 10 Gb/s NICs, 4:1 uplinks."""
    v = GPU_TYPES["V100"]
    return Cluster.build("t", [[ServerSpec(2, "V100", 10.0), ServerSpec(2, "V100", 10.0)],
                               [ServerSpec(2, "V100", 10.0)]], {"V100": v}, oversubscription=4.0,
                         hop_latency_s=ALPHA)


PROFILE = ModelProfile("m", grad_mb=M / 1e6, compute_ms=COMPUTE * 1e3, batch_size=1, mem_mb=1.0)


def test_placements_of_the_hand_cluster() -> None:
    c = _cluster()
    assert ps.placements(c, 2) == {"1 server": (0, 1), "2 servers": (0, 2), "2 racks": (0, 4)}
    assert ps.placements(c, 4) == {"1 server": None, "2 servers": (0, 1, 2, 3), "2 racks": (0, 1, 4, 5)}
    assert ps.placements(c, 3) == {"1 server": None, "2 servers": None, "2 racks": None}


@pytest.mark.parametrize("model", ["none", "maxmin", "phased"])
def test_two_gpus_over_two_servers_and_two_racks(model: str) -> None:
    """w = 2: comm = 2·(1/2)·M / B + 2(w−1)·α, B = the ring's slowest link alone."""
    row = ps.slowdowns(make_perf_model(model, _cluster()), PROFILE, 2)
    one = COMPUTE + M / INTRA + 2 * ALPHA
    two_servers = COMPUTE + M / C + 2 * ALPHA          # 0.182 s
    two_racks = COMPUTE + M / UP1 + 2 * ALPHA          # rack 1's uplink binds: 0.422 s
    assert row.reference == "1 server"
    assert row.iteration_s["1 server"] == pytest.approx(one, rel=1e-12)
    assert row.iteration_s["2 servers"] == pytest.approx(two_servers, rel=1e-12)
    assert row.iteration_s["2 racks"] == pytest.approx(two_racks, rel=1e-12)
    assert row.slowdown["2 servers"] == pytest.approx(two_servers / one, rel=1e-12)
    assert row.slowdown["2 racks"] == pytest.approx(two_racks / one, rel=1e-12)


def test_overlap_hides_half_the_all_reduce() -> None:
    """phased, ω = 0.5: h = min(ω·m0, c) of the all-reduce runs under compute; iteration = c + m0 − h."""
    row = ps.slowdowns(make_perf_model("phased", _cluster(), overlap=0.5), PROFILE, 2)
    m_one, m_two = M / INTRA + 2 * ALPHA, M / C + 2 * ALPHA
    assert row.iteration_s["1 server"] == pytest.approx(COMPUTE + m_one / 2, rel=1e-12)
    assert row.iteration_s["2 servers"] == pytest.approx(COMPUTE + m_two / 2, rel=1e-12)
    assert row.slowdown["2 servers"] == pytest.approx((COMPUTE + m_two / 2) / (COMPUTE + m_one / 2), rel=1e-12)


def test_reference_is_two_servers_when_one_server_is_too_small() -> None:
    """w = 4 on 2-GPU servers: V = 2·3/4·M per hop, 6 latency steps; 2 racks is relative to 2 servers."""
    row = ps.slowdowns(make_perf_model("none", _cluster()), PROFILE, 4)
    v = 1.5 * M
    two_servers = COMPUTE + v / C + 6 * ALPHA
    two_racks = COMPUTE + v / UP1 + 6 * ALPHA
    assert row.reference == "2 servers"
    assert row.iteration_s["1 server"] is None and row.slowdown["1 server"] is None
    assert row.slowdown["2 servers"] == pytest.approx(1.0)
    assert row.slowdown["2 racks"] == pytest.approx(two_racks / two_servers, rel=1e-12)


def test_table_checks_maxmin_equals_none_and_prints() -> None:
    c = _cluster()
    rows = ps.table(c, [PROFILE], [2, 4])
    assert {r.model for r in rows} == {m for m, _, _ in ps.MODELS}
    text = ps.compact_markdown(c, rows, [2, 4])
    # 2 racks (0.422 s) differs from 2 servers (0.182 s) here, so the compact table shows both
    assert "‖" in text.splitlines()[2]
    assert "| m |" in ps.markdown(c, rows)
