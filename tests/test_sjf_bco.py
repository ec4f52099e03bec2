"""SJF-BCO planner (Yu 2022 docs/policies/sjf-bco.md §4–§6): packing rules, bisection feasibility, failed κ-runs,
CLI, reproduce."""

from pathlib import Path

from click.testing import CliRunner

from ddlsched.cli import cli
from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.perf.sjf_bco import SjfBcoContention
from ddlsched.policies import list_policies
from ddlsched.policies.sjf_bco import PlanJob, _run_trial, kappa_classes, plan
from ddlsched.workload.profiles import ModelProfile

PROF = ModelProfile("m", grad_mb=10.0, compute_ms=100.0, batch_size=1, mem_mb=100.0)


def _cluster(*gpus: int) -> Cluster:
    return Cluster.build("t", [[ServerSpec(n, "V100", 10.0) for n in gpus]], {"V100": GPUType("V100", 32768)})


def _job(i: int, g: int, iters: float = 100.0) -> PlanJob:
    return PlanJob(f"j{i}", g, iters, iters * 0.1, PROF, seq=i)


def _check_schedule(p, jobs, cluster):
    assert {e.job_id for e in p.entries} == {j.job_id for j in jobs}
    for a in p.entries:
        assert len(set(a.gpus)) == len(a.gpus) and all(0 <= g < cluster.num_gpus for g in a.gpus)
        for b in p.entries:
            if a is not b and set(a.gpus) & set(b.gpus):
                assert a.end <= b.start + 1e-9 or b.end <= a.start + 1e-9, (a, b)


def test_kappa_classes():
    assert kappa_classes([1, 2, 4, 8, 16, 32], 32) == [1, 2, 4, 8, 16, 32]
    assert kappa_classes([1, 1, 4], 8) == [1, 4]


def test_fa_ffp_packs_small_jobs_and_lbsgf_opens_least_busy_servers():
    c = _cluster(4, 4, 4)
    jobs = [_job(0, 1), _job(1, 1), _job(2, 4)]
    p = plan(c, jobs, algorithm="sjf-bco", kappa=1, horizon=1000)
    gpus = {e.job_id: e.gpus for e in p.entries}
    # both 1-GPU jobs on server 0 (ties prefer a server already running work); 4-GPU job on an empty server
    assert gpus["j0"] == (0,) and gpus["j1"] == (1,)
    assert {c.gpu_server[g] for g in gpus["j2"]} == {1}
    assert all(e.start == 0.0 for e in p.entries)


def test_bisection_returns_feasible_schedule_under_cap():
    c = _cluster(4, 8, 4)
    jobs = [_job(i, g, 50 + 37 * i % 200) for i, g in enumerate([1, 1, 2, 4, 8, 1, 2, 16, 4, 1])]
    for algo in ("sjf-bco", "ff", "ls", "rand"):
        p = plan(c, jobs, algorithm=algo, horizon=2000)
        assert p.feasible and p.makespan < 2000
        _check_schedule(p, jobs, c)
        if p.theta is not None:  # every GPU's accumulated ρ̂/u stays within the returned cap
            u = [0.0] * c.num_gpus
            rho = {j.job_id: j.rho_hat for j in jobs}
            for e in p.entries:
                for g in e.gpus:
                    u[g] += rho[e.job_id] / 1.15
            assert max(u) <= p.theta + 1e-6


def test_failed_kappa_run_is_never_accepted():
    c = _cluster(4, 4)
    model = SjfBcoContention(c)
    jobs = [_job(0, 1, 10), _job(1, 16)]  # the 16-GPU job can never be placed
    m, partial = _run_trial(c, model, jobs, "sjf-bco", 1000, 1, 1.0, 1.15, [0.0] * 8, 0.0, 500.0, None)
    assert partial and max(e.end for e in partial) < 500.0  # the partial schedule looks short …
    assert m == 500.0  # … but the run counts as failed (makespan = T)
    p = plan(c, jobs, algorithm="sjf-bco", horizon=500)
    assert not p.feasible and p.entries == []


def test_policies_listed():
    names = {n for n, _ in list_policies()}
    assert {"sjf-bco", "bco-ff", "bco-ls", "bco-rand"} <= names


def _trace(tmp_path: Path) -> Path:
    p = tmp_path / "t.csv"
    rows = ["job_id,arrival_s,num_gpus,model,iterations,duration_s"]
    for i, (g, m) in enumerate([(1, "resnet50"), (8, "vgg16_wang"), (4, "lstm"), (2, "inception3"), (16, "resnet50"),
                                (1, "lstm")]):
        rows.append(f"j{i},{i * 20.0},{g},{m},{200 + 50 * i},")
    p.write_text("\n".join(rows) + "\n")
    return p


def test_cli_simulate_and_compare(tmp_path):
    trace = _trace(tmp_path)
    r = CliRunner().invoke(cli, ["simulate", "--trace", str(trace), "--cluster", "wang2020", "--policy", "sjf-bco",
                                 "--perf-model", "sjf_bco", "--out", str(tmp_path / "s"), "--quiet"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "s" / "summary.json").exists()
    r = CliRunner().invoke(cli, ["compare", "--trace", str(trace), "--cluster", "rack256", "--policies",
                                 "sjf-bco,bco-ff,bco-ls,bco-rand", "--out", str(tmp_path / "c"), "--quiet"])
    assert r.exit_code == 0, r.output
    text = (tmp_path / "c" / "comparison.csv").read_text()
    assert all(n in text for n in ("sjf-bco", "bco-ff", "bco-ls", "bco-rand"))


def test_reproduce_quick(tmp_path):
    r = CliRunner().invoke(cli, ["reproduce", "yu2022", "--quick", "--seeds", "0", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    for f in ("fig4_makespan_jct.csv", "fig4_makespan_jct.md", "fig5_makespan_vs_kappa.csv",
              "fig6_makespan_vs_servers.csv", "fig7_makespan_vs_lambda.csv", "fig4_makespan.png",
              "fig5_makespan_vs_kappa.png", "summary.md"):
        assert (tmp_path / f).stat().st_size > 0


def test_yu2022_job_times_follow_section_2_7():
    """docs/policies/sjf-bco.md §7: τ_j ∈ [0.01, 0.05], F_j ∈ [1000, 6000], ρ̂_j = τ_j·F_j ∈ [50, 300]; under the
    ``worst_k`` sizing rule extra time ≤ 15 % at worst (the default ``k1`` rule: tests/test_yu2022.py)."""
    from ddlsched.cluster.presets import yu2022 as yu_cluster
    from ddlsched.experiments.yu2022 import ALPHA, XI1, workload
    from ddlsched.perf.base import Placement

    for seed in (0, 3):
        cl = yu_cluster(seed=seed)
        jobs, profiles, xi2 = workload(seed, cl, sizing="worst_k")
        assert len(jobs) == 160 and jobs == workload(seed, cl)[0]  # seeded, sizes independent of the sizing rule
        tau = [p.compute_ms / 1000 for p in profiles]
        iters = [j.iterations for j in jobs]
        rho = [t * f for t, f in zip(tau, iters, strict=True)]
        assert all(0.01 <= t <= 0.05 for t in tau)
        assert all(1000 <= f <= 6000 and f == int(f) for f in iters)
        assert all(50.0 <= r <= 300.0 for r in rho)
        assert min(rho) < 60 and max(rho) > 240  # the whole band is used, not a corner of it
        model = SjfBcoContention(cl, xi1=XI1, xi2_s=xi2, alpha=ALPHA)
        kmax = max(len(g) for g in cl.server_gpus)
        by_round = sorted(range(cl.num_gpus), key=lambda g: (g - cl.server_gpus[cl.gpu_server[g]][0], g))
        for j, p, t in zip(jobs, profiles, tau, strict=True):
            spread = Placement(j.job_id, tuple(by_round[: j.num_gpus]), p)  # as many servers as possible
            worst = model.iteration_time(spread, kmax).total_s
            assert t <= worst <= 1.15 * t + 1e-12, (j.job_id, worst / t)
