"""GPU sharing (docs/policies/gpu-sharing.md): share test, sub-batch search, sharing physics, memory, policies, CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ddlsched.cli import cli
from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.engine import SimConfig, run_simulation
from ddlsched.perf import make_perf_model
from ddlsched.perf.base import Placement
from ddlsched.perf.interference import Interference, accum_mem, accum_slowdown
from ddlsched.policies import make_policy
from ddlsched.policies.sharing import best_sub_batch, share_check
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import default_catalog

ROOT = Path(__file__).resolve().parents[1]


def const(xi: float) -> dict:
    return {"source": "none", "default": "constant", "xi_default": xi}


@pytest.mark.parametrize(("xi", "share"), [(1.4, True), (1.49, True), (1.51, False), (1.6, False)])
def test_symmetric_closed_form_partner_finishes_first(xi: float, share: bool) -> None:
    d = share_check(100.0, 10.0, xi, xi)  # Ê_a ≥ Ê_b: b finishes first
    assert d.share is share
    assert d.t_seq == pytest.approx(10.0 + 50.0)
    assert d.t_con == pytest.approx(50.0 + (1 - 1 / (2 * xi)) * xi * 10.0)


def test_new_job_finishes_first() -> None:
    d = share_check(10.0, 100.0, 1.2, 1.3)  # Ê_a = 12 < Ê_b = 130
    assert d.t_con == pytest.approx(50.0 + (1 - 1 / 2.6) * 12.0)
    assert d.share is ((1 - 1 / 2.6) * 1.2 * 10.0 < (10.0 + 100.0) / 2)


def test_sub_batch_search_fits_memory() -> None:
    # 10 GB job next to 5 GB free: s=1 (10 GB) and s=2 (6.5 GB) do not fit, s=4 (4.75 GB) does
    assert accum_mem(10000, 4) == pytest.approx(3000 + 1750)
    d = best_sub_batch(100.0, 10.0, 1.2, 1.2, 10000.0, 5000.0)
    assert d is not None and d.steps == 4
    assert d.t_con == pytest.approx(share_check(100.0 * accum_slowdown(4), 10.0, 1.2, 1.2).t_con)
    assert best_sub_batch(100.0, 10.0, 1.2, 1.2, 100000.0, 5000.0) is None


def one_gpu(mem: float = 32768) -> Cluster:
    return Cluster.build("g1", [[ServerSpec(1, "V100", 10.0)]], {"V100": GPUType("V100", mem)})


def test_sharing_perf_slows_both_and_restores() -> None:
    cat = default_catalog()
    m = make_perf_model("sharing", one_gpu(), interference=const(1.7))
    a = m.add(Placement("a", (0,), cat["resnet18"]))["a"]
    changed = m.add(Placement("b", (0,), cat["vgg16"], accum_steps=2))
    assert set(changed) == {"a", "b"}
    assert changed["a"].total_s == pytest.approx(1.7 * a.total_s)
    assert changed["b"].total_s == pytest.approx(1.7 * 1.1 * 0.107)
    assert m.remove("b")["a"].total_s == pytest.approx(a.total_s)


def test_interference_table_and_default() -> None:
    it = Interference()
    assert it.xi("resnet18", "resnet18") == pytest.approx(1.2797)  # Gavel v100 ResNet-18 bs128 pair
    v = it.xi("vgg16", "vgg19")  # no data: seeded draw in [1.1, 1.9], stable
    assert 1.1 <= v <= 1.9 and Interference().xi("vgg16", "vgg19") == v


def _bsbf(xi: float) -> dict[str, dict]:
    jobs = [JobSpec("b", 0.0, 1, "resnet18", iterations=1000.0), JobSpec("a", 10.0, 1, "resnet18", iterations=5000.0)]
    pol = make_policy("sjf-bsbf", {"interference": const(xi)})
    res = run_simulation(one_gpu(), jobs, pol, SimConfig(perf_model="sharing", perf_params={"interference": const(xi)}))
    return {r["job_id"]: r for r in res.records}


def test_bsbf_shares_iff_closed_form_says() -> None:
    recs = _bsbf(1.4)
    assert recs["a"]["first_start_s"] == pytest.approx(10.0)
    assert recs["b"]["finish_s"] > 10.0 + 1.4 * (1000 * 0.779 - 10) - 1e-6  # b was slowed by ξ while shared
    recs = _bsbf(1.6)
    assert recs["a"]["first_start_s"] == pytest.approx(recs["b"]["finish_s"])


def test_memory_limit_respected() -> None:
    def run(mem: float) -> dict[str, dict]:
        jobs = [JobSpec("b", 0.0, 1, "resnet18", iterations=1000.0, gpu_mem_mb=mem),
                JobSpec("a", 10.0, 1, "resnet18", iterations=1000.0, gpu_mem_mb=mem)]
        res = run_simulation(one_gpu(), jobs, make_policy("sjf-ffs"),
                        SimConfig(perf_model="sharing", audit=True))
        return {r["job_id"]: r for r in res.records}

    big = run(30000)  # even s=8 (11.6 GB) does not fit next to 30 GB on a 32 GB GPU
    assert big["a"]["first_start_s"] == pytest.approx(big["b"]["finish_s"])
    small = run(8000)
    assert small["a"]["first_start_s"] == pytest.approx(10.0)


def test_preemptive_baselines_spare_nearly_done_jobs() -> None:
    c = one_gpu()
    jobs = [JobSpec("long", 0.0, 1, "resnet18", iterations=2000.0), JobSpec("short", 5.0, 1, "resnet18",
                                                                            iterations=50.0)]
    res = run_simulation(c, jobs, make_policy("sjf-preempt"), SimConfig())
    recs = {r["job_id"]: r for r in res.records}
    assert recs["long"]["preemptions"] == 1 and recs["short"]["first_start_s"] == pytest.approx(5.0)
    res = run_simulation(c, jobs, make_policy("sjf-preempt", {"min_remaining_iters": 5000}), SimConfig())
    assert all(r["preemptions"] == 0 for r in res.records)


@pytest.mark.parametrize("policy", ["sjf-bsbf", "sjf-bsbf-consolidated", "sjf-ffs", "sjf-preempt", "tiresias-700"])
def test_cli_simulate(policy: str, tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["simulate", "--trace", str(ROOT / "data/traces/muri/trace1.csv"), "--max-jobs",
                                 "15", "--cluster", "n8g8", "--policy", policy, "--out", str(tmp_path), "--quiet"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "summary.json").exists()


def test_reproduce_luo_quick(luo2024_quick: Path) -> None:  # the run is conftest.py's, shared with test_luo2024
    for f in ("runs.csv", "summary.csv", "summary.md", "per_seed.csv", "headline.csv", "avg_jct.png", "p99_jct.png"):
        assert (luo2024_quick / f).stat().st_size > 0
