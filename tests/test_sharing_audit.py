"""Audit of SJF-BSBF (docs/policies/gpu-sharing.md §3–§4): hand-computed engine timing of a shared pair and placement
rules."""

from __future__ import annotations

import pytest

from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.engine import SimConfig, run_simulation
from ddlsched.policies import make_policy
from ddlsched.policies.sharing import share_check
from ddlsched.workload.jobspec import JobSpec


def const(xi: float) -> dict:
    return {"source": "none", "default": "constant", "xi_default": xi}


def run(cluster: Cluster, jobs: list[JobSpec], policy: str, xi: float) -> dict[str, dict]:
    pol = make_policy(policy, {"interference": const(xi)})
    cfg = SimConfig(perf_model="sharing", perf_params={"interference": const(xi)})
    return {r["job_id"]: r for r in run_simulation(cluster, jobs, pol, cfg).records}


def test_shared_pair_times_match_t_con() -> None:
    # one V100 (speed 1), resnet18 alone: 0.779 s/iteration (no communication on one GPU)
    c = Cluster.build("g1", [[ServerSpec(1, "V100", 10.0)]], {"V100": GPUType("V100", 32768)})
    jobs = [JobSpec("b", 0.0, 1, "resnet18", iterations=1000.0), JobSpec("a", 10.0, 1, "resnet18", iterations=200.0)]
    recs = run(c, jobs, "sjf-bsbf", 1.3)
    e_b = 1000 * 0.779 - 10.0  # b's remaining exclusive time when a arrives
    e_a = 200 * 0.779
    # a (Ê_a = 202.54) finishes first at 10 + 1.3·E_a; b then runs alone: it did E_a·1.3/1.3 = E_a of its work
    assert recs["a"]["first_start_s"] == pytest.approx(10.0)
    assert recs["a"]["finish_s"] == pytest.approx(10.0 + 1.3 * e_a)
    assert recs["b"]["finish_s"] == pytest.approx(10.0 + 1.3 * e_a + (e_b - e_a))
    d = share_check(e_a, e_b, 1.3, 1.3)
    mean = (recs["a"]["finish_s"] - 10.0 + recs["b"]["finish_s"] - 10.0) / 2
    assert d.share and mean == pytest.approx(d.t_con)


def test_consolidated_prefers_server_with_idle_gpus_over_sharing() -> None:
    # 2 servers × 2 GPUs. b0 (2 GPUs) fills server 0, b1 (1 GPU) takes GPU 2; a (1 GPU, short, ξ = 1.05 so
    # sharing with b0 passes the test) must take idle GPU 3: the authors' key ranks servers by idle GPUs
    # (free − need if free ≥ need else GPUs/server, −free, #jobs), so server 1 (key (0, −1, 1)) comes before
    # server 0 (key (2, 0, 1)). Ranking by shareable+idle GPUs (the old key) tied them and shared on server 0.
    c = Cluster.build("t", [[ServerSpec(2, "V100", 10.0), ServerSpec(2, "V100", 10.0)]],
                      {"V100": GPUType("V100", 32768)})
    jobs = [JobSpec("b0", 0.0, 2, "resnet18", iterations=10000.0),
            JobSpec("b1", 1.0, 1, "resnet18", iterations=10000.0),
            JobSpec("a", 2.0, 1, "resnet18", iterations=10.0)]
    recs = run(c, jobs, "sjf-bsbf-consolidated", 1.05)
    assert recs["b0"]["last_gpus"] == "0 1" and recs["b1"]["last_gpus"] == "2"
    assert recs["a"]["last_gpus"] == "3"
    assert recs["a"]["finish_s"] == pytest.approx(2.0 + 10 * 0.779)  # alone: not slowed
