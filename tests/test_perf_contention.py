"""Hand-computed checks of the sjf_bco (Yu 2022 eq. 8) and abe (Wang 2020 docs/policies/adadual.md §2) physics."""

import json
from importlib import resources

import pytest

from ddlsched.cluster.topology import GBIT, Cluster, GPUType, ServerSpec
from ddlsched.perf import make_perf_model
from ddlsched.perf.abe_fit import fit_beta_eta
from ddlsched.perf.base import Placement
from ddlsched.workload.profiles import ModelProfile

PROF = ModelProfile("m", grad_mb=100.0, compute_ms=50.0, batch_size=16, mem_mb=1000.0)


def two_servers(n: int = 4, servers: int = 2) -> Cluster:
    return Cluster.build("t", [[ServerSpec(n, "V100", 10.0) for _ in range(servers)]],
                         {"V100": GPUType("V100", 32768)})


def test_abe_k_way_time_and_release():
    c = two_servers()
    m = make_perf_model("abe", c)
    beta, eta = 0.856, 0.235
    for i in range(3):
        m.add(Placement(f"j{i}", (i, 4 + i), PROF))
    for i in range(3):
        assert m.current(f"j{i}").comm_s == pytest.approx(100 * (3 * beta + 2 * eta) / 1000)
        assert m.current(f"j{i}").compute_s == pytest.approx(0.05)
    changed = m.remove("j2")
    assert set(changed) == {"j0", "j1"}
    assert changed["j0"].comm_s == pytest.approx(100 * (2 * beta + eta) / 1000)
    # a job inside one server neither communicates over the NIC nor changes k
    assert m.add(Placement("local", (3,), PROF))["local"].comm_s == 0.0
    assert m.current("j0").comm_s == pytest.approx(100 * (2 * beta + eta) / 1000)


def test_abe_fit_profile_matches_fit_and_is_used():
    prof = json.loads(resources.files("ddlsched").joinpath("data", "profiles", "abe_fit.json").read_text())
    fit = fit_beta_eta()
    assert prof["beta_ms_per_mb"] == fit["beta_ms_per_mb"] and prof["eta_ms_per_mb"] == fit["eta_ms_per_mb"]
    assert len(prof["residuals_ms"]) == 18 and prof["eta_ms_per_mb"] >= 0
    assert prof["unconstrained_eta_ms_per_mb"] < 0  # the reported finding
    m = make_perf_model("abe", two_servers(), profile="abe_fit")
    t = m.add(Placement("a", (0, 4), PROF))["a"]
    assert t.comm_s == pytest.approx(100 * prof["beta_ms_per_mb"] / 1000)


def test_sjf_bco_tau_hand_computed():
    c = two_servers()
    m = make_perf_model("sjf_bco", c, xi1=1.0, xi2_s=0.002, alpha=0.1, reduce_Bps=50e9)
    m.add(Placement("b", (2, 6), PROF))
    t = m.add(Placement("a", (0, 1, 4, 5), PROF))["a"]
    # p_a = 2 multi-server jobs on each server -> k = 2, f = 2 + 0.1 = 2.1, B = 10 Gb/s / 2.1
    b = 10 * GBIT / 2.1
    expect = (100e6 / 4) * 2 * 3 / b + (100e6 / 4) * 3 / 50e9 + 0.002 * 2
    assert t.comm_s == pytest.approx(expect)
    assert m.current("b").comm_s == pytest.approx((100e6 / 2) * 2 / b + (100e6 / 2) / 50e9 + 0.004)
    # single-server job: intra-server bandwidth, one server of overhead, no contention
    single = m.add(Placement("s", (3,), PROF))
    assert single["s"].comm_s == pytest.approx(0.002)
    # removal restores the alone time of b: k = 1
    assert m.remove("a")["b"].comm_s == pytest.approx((100e6 / 2) * 2 / (10 * GBIT) + (100e6 / 2) / 50e9 + 0.004)


def test_sjf_bco_xi1_clamps_k_to_one():
    c = two_servers()
    m = make_perf_model("sjf_bco", c, xi1=0.4, alpha=0.5)
    m.add(Placement("b", (2, 6), PROF))
    t = m.add(Placement("a", (0, 4), PROF))["a"]
    assert t.comm_s == pytest.approx((100e6 / 2) * 2 / (10 * GBIT) + (100e6 / 2) / 100e9)  # k = max(1, 0.8)
