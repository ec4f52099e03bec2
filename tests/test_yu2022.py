"""yu2022 reproduction (docs/reproductions.md, docs/policies/sjf-bco.md §7): gradient-sizing rule, realised extra
time, κ-curve shape, quick mode."""

import csv

import pytest

from ddlsched.cluster.presets import yu2022 as yu_cluster
from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.engine import SimConfig, run_simulation
from ddlsched.errors import ConfigError
from ddlsched.experiments import yu2022 as yu
from ddlsched.perf.base import Placement
from ddlsched.perf.sjf_bco import SjfBcoContention
from ddlsched.policies.sjf_bco import planned_policy
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import ModelProfile, default_catalog

B_E = 10e9 / 8  # 10 GbE in bytes/s


def test_grad_bytes_by_hand():
    # τ⁰ = 20 ms, 2 workers, k = 1: M = 0.075·0.02·1.25e9·2/(2·1·1) = 1.875 MB; its ring exchange
    # (M/2)·2/b_e = 1.5 ms = 7.5 % of τ⁰
    m = yu.grad_bytes(0.02, 2, B_E, 1)
    assert m == pytest.approx(1.875e6)
    assert (m / 2) * 2 / B_E == pytest.approx(0.075 * 0.02)
    # worst_k at k = 32: f(0.1, 32) = 32 + 0.1·31 = 35.1, so a 35.1× smaller gradient
    assert yu.grad_bytes(0.02, 2, B_E, 32) == pytest.approx(1.875e6 / 35.1)
    assert yu.grad_bytes(0.02, 1, B_E, 1) == 0.0


def test_sizing_names():
    assert yu.DEFAULT_SIZING == "k1" and yu.SIZINGS[0] == "k1" and "worst_k" in yu.SIZINGS
    assert yu.sizing_degree("k1", 32) == 1 and yu.sizing_degree("k3", 32) == 3
    assert yu.sizing_degree("worst_k", 16) == 16
    for bad in ("k0", "worst", "kx", ""):
        with pytest.raises(ConfigError, match="sizing"):
            yu.sizing_degree(bad, 32)


def test_k1_job_alone_on_two_servers_pays_7_5_percent_ring():
    """End to end through the engine: one 4-GPU job on 2 × 2 GPUs must span both servers with no contender
    (k = 1); with ξ2 = 0 its communication per iteration is the ring exchange (7.5 % of τ⁰) + the reduction."""
    cl = Cluster.build("two", [[ServerSpec(2, "V100", 10.0), ServerSpec(2, "V100", 10.0)]],
                       {"V100": GPUType("V100", 32768)})
    tau0, iters, w = 0.03, 2000, 4
    m = yu.grad_bytes(tau0, w, B_E, yu.sizing_degree("k1", 2))
    prof = ModelProfile("yu-one", m / 1e6, tau0 * 1000.0, 1, 1000.0)
    job = JobSpec(job_id="j0", arrival_s=0.0, num_gpus=w, model="yu-one", iterations=float(iters))
    params = {"xi1": yu.XI1, "xi2_s": 0.0, "alpha": yu.ALPHA}
    res = run_simulation(cl, [job], planned_policy("sjf-bco", **params),
                         SimConfig(perf_model="sjf_bco", perf_params=params, seed=0, record_timeseries=False),
                         catalog=default_catalog().with_profiles([prof]))
    (rec,) = res.records
    assert int(rec["servers"]) == 2 and float(rec["contention_s"]) == pytest.approx(0.0, abs=1e-9)
    reduce_s = (m / w) * (w - 1) / 100e9
    assert float(rec["comm_s"]) == pytest.approx(iters * (0.075 * tau0 + reduce_s), rel=1e-9)
    assert float(rec["run_s"]) == pytest.approx(iters * (1.075 * tau0 + reduce_s), rel=1e-9)
    r = yu.realised(res.records, 0.0)
    assert r["extra_pct"] == pytest.approx(100 * (0.075 * tau0 + reduce_s) / (1.075 * tau0 + reduce_s))
    assert r["contention_pct"] == pytest.approx(0.0, abs=1e-9) and r["multi_server_jobs"] == 1
    assert r["contended_jobs"] == 0


@pytest.mark.parametrize("sizing", ["k1", "worst_k"])
def test_workload_sizing_rule(sizing):
    """Every multi-GPU job's ring exchange at the rule's degree is 7.5 % of τ⁰; sizes, τ⁰ and F do not depend on
    the rule; worst_k keeps the former property (≤ 15 % extra in the model's worst case)."""
    cl = yu_cluster(seed=3)
    jobs, profiles, xi2 = yu.workload(3, cl, sizing=sizing)
    base_jobs, base_prof, _ = yu.workload(3, cl, sizing="k1")
    assert jobs == base_jobs and [p.compute_ms for p in profiles] == [p.compute_ms for p in base_prof]
    kmax = max(len(g) for g in cl.server_gpus)
    k = 1 if sizing == "k1" else kmax
    model = SjfBcoContention(cl, xi1=yu.XI1, xi2_s=0.0, alpha=yu.ALPHA, reduce_Bps=1e300)
    a, b = sorted(range(cl.num_servers), key=lambda s: -len(cl.server_gpus[s]))[:2]  # the two largest servers
    n_checked = 0
    for j, p in zip(jobs, profiles, strict=True):
        half = j.num_gpus // 2
        if j.num_gpus < 2 or half > len(cl.server_gpus[a]) or j.num_gpus - half > len(cl.server_gpus[b]):
            continue
        gpus = (*cl.server_gpus[a][:half], *cl.server_gpus[b][: j.num_gpus - half])
        ring = model.iteration_time(Placement(j.job_id, gpus, p), k).comm_s
        assert ring == pytest.approx(0.075 * p.compute_ms / 1000, rel=1e-9), j.job_id
        n_checked += 1
    assert n_checked > 20
    a = yu.analytic_extra(cl, profiles, jobs, xi2)
    if sizing == "worst_k":
        assert a["worst_pct"] <= 15.0
    else:
        assert 7.5 < a["k1_2srv_pct"] < 7.5 + 100 * 2 * xi2 / 0.01 + 1e-9 and a["worst_pct"] > 100


def test_realised_by_hand():
    recs = [{"run_s": 110.0, "comm_s": 10.0, "contention_s": 4.0, "servers": 2, "iterations": 1000.0},
            {"run_s": 90.0, "comm_s": 0.0, "contention_s": 0.0, "servers": 1, "iterations": 0.0}]
    r = yu.realised(recs, 0.001)  # γ = 0.001·2·1000 = 2 s
    assert r["extra_pct"] == pytest.approx(5.0) and r["contention_pct"] == pytest.approx(2.0)
    assert r["overhead_pct"] == pytest.approx(1.0) and r["ring_pct"] == pytest.approx(2.0)
    assert r["multi_server_jobs"] == 1 and r["contended_jobs"] == 1


def test_curve_shape():
    # the audit's seed-3 curve quoted in the issue: up, down, up, down, down → drop, rise, dip; best κ interior;
    # not the strict paper shape (its first step rises)
    assert yu.curve_shape([550, 575, 512, 756, 734, 676]) == {"signs": "+-+--", "drop": True, "rise": True,
                                                              "dip": True, "interior": True, "paper": False}
    assert yu.curve_shape([500, 480, 520, 600, 590, 560])["paper"] is True  # drop, rise, slight dip
    assert yu.curve_shape([500, 480, 520, 600, 590, 470])["paper"] is False  # the dip is the best: not slight
    assert yu.curve_shape([500, 480, 520, 600, 590, 600])["paper"] is False  # no dip at the largest κ
    assert yu.curve_shape([5, 4, 3, 2]) == {"signs": "---", "drop": True, "rise": False, "dip": False,
                                            "interior": False, "paper": False}
    assert yu.curve_shape([5, 4, 6, 7])["signs"] == "-++"
    assert yu.curve_shape([1, 2, 2])["drop"] is False and yu.curve_shape([1, 2, 2])["signs"] == "+="


def test_run_one_counters_quick():
    r = yu.run_one(0, "sjf-bco", horizon=1200, n_jobs=20)
    assert r["fa_ffp_jobs"] + r["lbsgf_jobs"] == 20 and r["kappa"] is not None and r["plans"] == 1
    sizes = [j.num_gpus for j in yu.workload(0, yu_cluster(seed=0), 20)[0]]
    assert r["fa_ffp_jobs"] == sum(1 for g in sizes if g <= r["kappa"])  # the policy's counter, checked by size
    assert r["multi_server_starts"] == r["multi_server_jobs"]  # planner counter = executed records
    parts = r["ring_pct"] + r["contention_pct"] + r["overhead_pct"]
    assert r["extra_pct"] == pytest.approx(parts) and 0 < r["extra_pct"] < 100
    assert 0 <= r["contended_jobs"] <= r["multi_server_jobs"] <= 20
    w = yu.run_one(0, "sjf-bco", horizon=1200, n_jobs=20, sizing="worst_k")
    assert w["k1_2srv_pct"] < r["k1_2srv_pct"]  # smaller gradients under the worst-case rule


def test_reproduce_quick_files(tmp_path):
    out = tmp_path / "yu"
    text = yu.run(out_dir=out, seeds=[0, 1], quick=True, progress=lambda s: None)
    assert "sizing 'k1'" in text or "sizing k1" in text
    with (out / "sizing_sensitivity.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["sizing"] for r in rows] == list(yu.SIZINGS)
    assert all(0 <= int(r["paper_shape_seeds"]) <= int(r["drop_rise_dip_seeds"]) <= 2 for r in rows)
    with (out / "realised_overhead.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["sizing"], r["seed"]) for r in rows] == [(z, s) for z in yu.SIZINGS for s in ("0", "1")]
    assert all(float(r["realised_extra_pct_of_run"]) >= float(r["contention_pct"]) >= 0 for r in rows)
    with (out / "kappa_choice.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 * len(yu.SIZINGS) and all(r["kappa_chosen"] for r in rows)
    for f in ("fig4_makespan_jct.csv", "fig4_makespan_jct_worst_k.csv", "fig4_per_seed.csv",
              "fig5_makespan_vs_kappa.png", "fig4_makespan.png", "fig6_makespan_vs_servers.csv",
              "fig6_makespan_vs_servers_worst_k.csv", "fig7_makespan_vs_lambda_worst_k.csv",
              "fig7_makespan_vs_lambda.png", "summary.md"):
        assert (out / f).stat().st_size > 0


def test_planner_mechanism_counters():
    """A 4-GPU job on 2 × 2 GPUs must span both servers; with κ = 1 it goes through LBSGF, the 1-GPU job
    through FA-FFP. Baselines count plans and multi-server starts only."""
    cl = Cluster.build("two", [[ServerSpec(2, "V100", 10.0), ServerSpec(2, "V100", 10.0)]],
                       {"V100": GPUType("V100", 32768)})
    prof = ModelProfile("yu-m", 1.0, 20.0, 1, 1000.0)
    jobs = [JobSpec(job_id="big", arrival_s=0.0, num_gpus=4, model="yu-m", iterations=100.0),
            JobSpec(job_id="small", arrival_s=0.0, num_gpus=1, model="yu-m", iterations=100.0)]
    cfg = SimConfig(perf_model="sjf_bco", seed=0, record_timeseries=False)
    cat = default_catalog().with_profiles([prof])
    res = run_simulation(cl, jobs, planned_policy("sjf-bco", kappa=1), cfg, catalog=cat)
    m = res.mechanisms
    assert (m["plans"], m["fa_ffp_starts"], m["lbsgf_starts"], m["multi_server_starts"]) == (1, 1, 1, 1)
    res = run_simulation(cl, jobs, planned_policy("ff"), cfg, catalog=cat)
    assert res.mechanisms["multi_server_starts"] == 1 and "fa_ffp_starts" not in res.mechanisms
