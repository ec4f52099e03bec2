"""luo2024 reproduction pieces: raw arrivals by default, ξ scope, the sub-batch counter, quick mode's outputs."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.engine import SimConfig, run_simulation
from ddlsched.errors import ConfigError
from ddlsched.experiments import luo2024
from ddlsched.metrics import summarize
from ddlsched.perf import make_perf_model
from ddlsched.perf.base import Placement
from ddlsched.policies import make_policy
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import default_catalog


def const(xi: float) -> dict:
    return {"source": "none", "default": "constant", "xi_default": xi}


def test_workload_raw_by_default_and_stretch() -> None:
    raw = luo2024.workload(0, 20)
    stretched = luo2024.workload(0, 20, 0.5)
    assert luo2024.DEFAULT_LOAD_SCALE == 1.0
    assert [j.job_id for j in raw] == [j.job_id for j in stretched]
    t0 = raw[0].arrival_s
    assert raw[-1].arrival_s > t0
    assert stretched[-1].arrival_s - stretched[0].arrival_s == pytest.approx(2 * (raw[-1].arrival_s - t0))


@pytest.mark.parametrize("scope", ["compute", "iteration"])
def test_xi_scope(scope: str) -> None:
    cat = default_catalog()
    cl = Cluster.build("two", [[ServerSpec(1, "V100", 10.0), ServerSpec(1, "V100", 10.0)]],
                       {"V100": GPUType("V100", 32768)})
    m = make_perf_model("sharing", cl, interference=const(1.5), xi_scope=scope, network="none")
    alone = m.add(Placement("a", (0, 1), cat["vgg16"]))["a"]
    assert alone.comm_s > 0
    shared = m.add(Placement("b", (0, 1), cat["vgg16"]))["a"]
    assert shared.compute_s == pytest.approx(1.5 * alone.compute_s)
    assert shared.comm_s == pytest.approx((1.5 if scope == "iteration" else 1.0) * alone.comm_s)
    with pytest.raises(ConfigError, match="xi_scope"):
        make_perf_model("sharing", cl, xi_scope="comm")


def _mem_bound(steps: list[int]) -> dict:
    """Two 10 GB jobs on one 16 GB GPU: they fit together only with s ≥ 4 for the short newcomer (the sharing
    benefit test passes: a finishes first, ξ = 1.2)."""
    cl = Cluster.build("g1", [[ServerSpec(1, "V100", 10.0)]], {"V100": GPUType("V100", 16000)})
    jobs = [JobSpec("b", 0.0, 1, "resnet18", iterations=5000.0, gpu_mem_mb=10000),
            JobSpec("a", 10.0, 1, "resnet18", iterations=200.0, gpu_mem_mb=10000)]
    pol = make_policy("sjf-bsbf", {"interference": const(1.2), "steps": steps})
    res = run_simulation(cl, jobs, pol, SimConfig(perf_model="sharing", perf_params={"interference": const(1.2)}))
    return summarize(res)["mechanisms"]


def test_sub_batch_counter_in_summary() -> None:
    mech = _mem_bound([1, 2, 4, 8])
    assert mech["shared_starts"] == 1 and mech["accumulation_starts"] == 1
    mech = _mem_bound([1])  # no sub-batch search: the pair cannot share
    assert mech["shared_starts"] == 0 and mech["accumulation_starts"] == 0


def test_memory_bound_setting_shrinks_gpus() -> None:
    cl, params = luo2024.network_setting("flat", 12.0)
    assert cl.gpu_mem_mb(0) == pytest.approx(12 * 1024) and params == {"network": "none"}
    cl, params = luo2024.network_setting("maxmin", 16.0)
    assert cl.gpu_mem_mb(0) == pytest.approx(16 * 1024) and params == {"network": "maxmin"}
    assert cl.num_gpus == 64
    with pytest.raises(ValueError, match="unknown network"):
        luo2024.network_setting("fast")


def test_reproduce_quick_outputs_and_counters(luo2024_quick: Path) -> None:  # the run: conftest.py
    for f in ("runs.csv", "summary.csv", "summary.md", "per_seed.csv", "headline.csv", "avg_jct.png",
              "gain_vs_tiresias.png", "gain_vs_ffs.png"):
        assert (luo2024_quick / f).stat().st_size > 0
    rows = list(csv.DictReader((luo2024_quick / "runs.csv").open()))
    settings = {r["setting"] for r in rows}
    assert {"maxmin", "none", "flat", "flat/stretch x2", "flat/xi on comm too", "flat/12 GB",
            "flat/300 jobs", "flat/all xi 1.8"} <= settings
    for r in rows:
        assert int(r["shared_starts"]) <= int(r["starts"])
        if r["policy"] in ("sjf-preempt", "tiresias-700", "sjf+consolidated", "sjf-bsbf-s1"):
            assert int(r["accumulation_starts"]) == 0
    assert "Paper: SJF-BSBF" in (luo2024_quick / "summary.md").read_text()


def test_xi_level_reaches_the_share_test() -> None:
    """A constant ξ goes to the physics and to SJF-BSBF's share test: at ξ = 1.8 the test refuses most pairs that
    SJF-FFS shares blindly; at ξ = 1.2 both share alike (60 jobs of trace1)."""
    def shared(x: float) -> dict[str, int]:
        rows = luo2024.run_setting(luo2024.Setting("xi_level", f"all xi {x}", "flat", xi_const=x), [0], 60)
        return {r["policy"]: r["shared_starts"] for r in rows}

    low, high = shared(1.2), shared(1.8)
    assert low["sjf-bsbf"] == low["sjf-ffs"] > 0
    assert high["sjf-bsbf"] < high["sjf-ffs"] / 2
