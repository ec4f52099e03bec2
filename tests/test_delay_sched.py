"""Network-sensitive scheduling (docs/policies/delay-sched.md): sensitivity, delay timers, preemption, tuners, CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ddlsched.cli import cli
from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.engine import SimConfig, run_simulation
from ddlsched.policies import make_policy
from ddlsched.policies.autotune import AnalyticTuner
from ddlsched.policies.delay import DelayScheduling
from ddlsched.policies.locality import L0, L1, L2, best_level, placement_level, worst_gpus
from ddlsched.workload.jobspec import JobSpec

ROOT = Path(__file__).resolve().parents[1]


def two_servers() -> Cluster:
    return Cluster.build("t", [[ServerSpec(4, "V100", 10.0), ServerSpec(4, "V100", 10.0)]],
                         {"V100": GPUType("V100", 32768)})


def run(jobs: list[JobSpec], policy, cluster: Cluster | None = None, **perf) -> dict[str, dict]:
    res = run_simulation(cluster or two_servers(), jobs, policy, SimConfig(perf_model="sharing", perf_params=perf))
    assert not res.unfinished
    return {r["job_id"]: r for r in res.records}


def test_levels_and_worst_placement() -> None:
    c = Cluster.build("r", [[ServerSpec(4, "V100", 10.0)] * 2, [ServerSpec(4, "V100", 10.0)] * 2],
                      {"V100": GPUType("V100", 32768)})
    assert best_level(c, 4) == L0 and best_level(c, 8) == L1 and best_level(c, 12) == L2
    w = worst_gpus(c, 4)
    assert len(set(c.servers_of(w))) == 4 and placement_level(c, w) == L2
    assert placement_level(c, [0, 1]) == L0 and placement_level(c, [0, 4]) == L1


def _sim_view(cluster: Cluster, perf: dict):
    """The fluid model's view and two pending jobs' views (the model prepared, nothing run). The model is built for a
    clairvoyant policy (sjf), as delay scheduling's timers and tuners read remaining work."""
    from ddlsched.engine.core import Core
    from ddlsched.engine.run import build_model, default_catalog

    model = build_model(cluster, make_policy("sjf"), SimConfig(perf_model="sharing", perf_params=perf),
                        default_catalog())
    Core([JobSpec("v", 0.0, 2, "vgg16", iterations=1.0), JobSpec("r", 0.0, 2, "resnet18", iterations=1.0)],
         make_policy("sjf"), model)
    return model.view(), model.states["v"].view, model.states["r"].view


def test_sensitivity_from_physics() -> None:
    view, v, r = _sim_view(two_servers(), {})
    pol = DelayScheduling()
    # vgg16 (553.4 MB gradient, 107 ms compute), 2 workers: ring bytes/hop = M; worst = 10 Gb/s NIC,
    # consolidated = 1200 Gb/s intra-server link → σ ≈ 3.97; resnet18: σ ≈ 0.05
    worst, best = 0.107 + 553.4e6 / 1.25e9, 0.107 + 553.4e6 / 150e9
    assert pol.sens.sigma(v, view) == pytest.approx(worst / best - 1, rel=1e-6)
    assert pol.sens.cls(v, view) == "high"
    assert pol.sens.cls(r, view) == "low"
    view2, _, r2 = _sim_view(two_servers(), {"congestion": 4.0})
    cw, cb = 46.8e6 / 1.25e9, 46.8e6 / 150e9  # congestion multiplies the multi-server ring only
    assert DelayScheduling().sens.sigma(r2, view2) == pytest.approx((0.779 + 4 * cw) / (0.779 + cb) - 1, rel=1e-6)


def test_level_relaxes_exactly_when_timer_expires() -> None:
    jobs = [JobSpec("x1", 0.0, 3, "resnet18", iterations=10000.0),
            JobSpec("x2", 0.0, 3, "resnet18", iterations=10000.0),
            JobSpec("j", 10.0, 2, "vgg16", iterations=100.0)]
    recs = run(jobs, DelayScheduling(timer_high=100.0, timer_medium=50.0, preemption=False))
    assert recs["j"]["first_start_s"] == pytest.approx(110.0, abs=1e-6)
    assert recs["j"]["servers"] == 2
    # a low-sensitivity job (timer 0) is placed across servers at once
    jobs[2] = JobSpec("j", 10.0, 2, "resnet18", iterations=100.0)
    recs = run(jobs, DelayScheduling(timer_high=100.0, timer_medium=50.0, preemption=False))
    assert recs["j"]["first_start_s"] == pytest.approx(10.0)


def test_strict_consolidation_waits_for_one_server() -> None:
    jobs = [JobSpec("x1", 0.0, 3, "resnet18", iterations=1000.0),
            JobSpec("x2", 0.0, 3, "resnet18", iterations=2000.0),
            JobSpec("j", 10.0, 2, "resnet18", iterations=100.0)]
    recs = run(jobs, make_policy("strict-consolidation"))
    assert recs["j"]["first_start_s"] == pytest.approx(recs["x1"]["finish_s"])
    assert recs["j"]["servers"] == 1


def test_preemption_evicts_low_but_never_high() -> None:
    def jobs(other: str) -> list[JobSpec]:
        return [JobSpec("a", 0.0, 4, "vgg16", iterations=20000.0), JobSpec("b", 0.0, 4, other, iterations=20000.0),
                JobSpec("c", 10.0, 2, "vgg16", iterations=100.0)]

    pol = dict(timer_high=1e6, timer_medium=1e6, preempt_wait=50.0)
    recs = run(jobs("vgg16"), DelayScheduling(**pol))  # every running job is high: nobody is evicted
    assert all(r["preemptions"] == 0 for r in recs.values())
    assert recs["c"]["first_start_s"] == pytest.approx(min(recs["a"]["finish_s"], recs["b"]["finish_s"]))
    recs = run(jobs("resnet18"), DelayScheduling(**pol))  # the low job is evicted after the wait
    assert recs["b"]["preemptions"] == 1 and recs["a"]["preemptions"] == 0
    assert recs["c"]["first_start_s"] == pytest.approx(60.0) and recs["c"]["servers"] == 1
    recs = run(jobs("resnet18"), DelayScheduling(max_preemptions=0, **pol))  # per-job cap
    assert recs["b"]["preemptions"] == 0


def test_analytic_timer_formula() -> None:
    view, v, _ = _sim_view(two_servers(), {})
    pol = DelayScheduling(autotune="A", tuner_params={"omega": 0.5, "max_timer": 1e9})
    cls, sigma, d = pol.timer(v, view)
    assert d == pytest.approx(0.5 * v.remaining_ideal_s * sigma)
    assert AnalyticTuner(max_timer=0.1).timer(v, cls, sigma, pol) == 0.1


@pytest.mark.parametrize("tuner", ["search", "feedback"])
def test_tuners_adjust_timers(tuner: str) -> None:
    jobs = [JobSpec(f"j{i}", 100.0 * i, [1, 2, 4, 3][i % 4], ["vgg16", "resnet18"][i % 2], iterations=3000.0)
            for i in range(24)]
    params = {"window_s": 600.0, "grid": [0.0, 300.0]} if tuner == "search" else {"window_s": 600.0}
    pol = DelayScheduling(autotune=tuner, tuner_params=params)
    run(jobs, pol)
    assert pol.tuner.history
    if tuner == "search":
        assert pol.tuner.replays > 0
        assert all(h in (0.0, 300.0) and m in (0.0, 300.0) for _, h, m in pol.tuner.history)


@pytest.mark.parametrize("policy", ["delay-sched", "delay-sched-autotune", "tiresias-cc", "gandiva-pack",
                                    "strict-consolidation"])
def test_cli_simulate(policy: str, tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["simulate", "--trace", str(ROOT / "data/traces/muri/trace1.csv"), "--max-jobs",
                                 "15", "--cluster", "rack256", "--perf-model", "sharing", "--perf-param",
                                 "congestion=2", "--policy", policy, "--out", str(tmp_path), "--quiet"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "summary.json").exists()


def test_reproduce_sharma_quick(tmp_path: Path) -> None:
    import csv

    r = CliRunner().invoke(cli, ["reproduce", "sharma2024", "--quick", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    for f in ("runs.csv", "summary.csv", "summary.md", "avg_jct.png", "makespan.png", "comm_overhead.png",
              "headline.md", "headline.csv", "headline_jct.png", "mechanisms.md", "mechanisms.csv", "load_sweep.md",
              "load_sweep.csv", "load_sweep.png"):
        assert (tmp_path / f).stat().st_size > 0, f
    head = list(csv.DictReader((tmp_path / "headline.csv").open()))
    assert {h["baseline"] for h in head} == {"fifo+consolidated", "strict-consolidation"}
    assert {float(h["paper_pct"]) for h in head} == {-69.0, -83.0, -98.0}
    assert "paper" in r.output and "fifo+consolidated" in r.output
    mech = {(m["setting"], m["policy"]): m for m in csv.DictReader((tmp_path / "mechanisms.csv").open())}
    for setting in ("nominal", "congested"):
        d = mech[(setting, "delay-sched")]
        assert float(d["best_level_placements"]) + float(d["relaxed_placements"]) == float(d["starts"])
        assert float(mech[(setting, "fifo+consolidated")]["timer_holds"]) == 0
    sweep = {(m["setting"], m["load"], m["policy"]): m for m in csv.DictReader((tmp_path / "load_sweep.csv").open())}
    # at load 3 the queue forms: the mechanisms fire and HOL blocking costs FIFO consolidation its JCT
    hot = sweep[("congested", "3", "delay-sched")]
    assert float(hot["network_preemptions"]) > 0 and float(hot["relaxed_placements"]) > 0
    assert float(sweep[("congested", "3", "strict-consolidation")]["timer_holds"]) > 0
    assert float(sweep[("congested", "3", "fifo+consolidated")]["avg_jct_s"]) > \
        float(sweep[("congested", "3", "strict-consolidation")]["avg_jct_s"])
    assert ("congested", "3", "delay-sched/no-preempt") in sweep


def test_fifo_consolidated_blocks_the_head_of_line_strict_consolidation_backfills() -> None:
    """The paper's baseline: FIFO consolidation waits in arrival order; a job behind a blocked one waits too.
    a, b hold 3 of 4 GPUs per server; c (2 GPUs) needs one server; d (1 GPU) arrives after c and fits now."""
    jobs = [JobSpec("a", 0.0, 3, "resnet18", iterations=2000.0), JobSpec("b", 0.0, 3, "resnet18", iterations=2000.0),
            JobSpec("c", 10.0, 2, "vgg16", iterations=2000.0), JobSpec("d", 20.0, 1, "resnet18", iterations=500.0)]
    hol = run(jobs, make_policy("fifo+consolidated"))
    assert hol["d"]["first_start_s"] >= hol["c"]["first_start_s"] > 1000.0  # d waited behind c until a server freed
    back = run(jobs, make_policy("strict-consolidation"))
    assert back["d"]["first_start_s"] == pytest.approx(20.0)  # backfilled past the blocked c
    assert back["c"]["first_start_s"] > 1000.0


def test_expired_timers_and_relaxed_classes_are_counted() -> None:
    # as below, but c's (high-sensitivity) timer is 100 s: it expires and c starts across the two servers
    jobs = [JobSpec("a", 0.0, 3, "resnet18", iterations=2000.0), JobSpec("b", 0.0, 3, "resnet18", iterations=2000.0),
            JobSpec("c", 10.0, 2, "vgg16", iterations=2000.0)]
    res = run_simulation(two_servers(), jobs, DelayScheduling(preemption=False, timer_high=100.0),
                         SimConfig(perf_model="sharing"))
    m = res.mechanisms
    assert (m["relaxed_high_placements"], m["expired_timer_placements"], m["relaxed_placements"]) == (1, 1, 1)
    assert {r["job_id"]: r for r in res.records}["c"]["first_start_s"] == pytest.approx(110.0)
    # a zero timer relaxes at once: a relaxed start, but no timer expired
    res = run_simulation(two_servers(), jobs, DelayScheduling(preemption=False, timer_high=0.0),
                         SimConfig(perf_model="sharing"))
    m = res.mechanisms
    assert (m["relaxed_high_placements"], m["expired_timer_placements"], m["relaxed_placements"]) == (1, 0, 1)


def test_sharma_headline_against_both_baselines() -> None:
    from ddlsched.experiments.sharma2024 import headline

    def row(setting: str, policy: str, seed: int, v: float) -> dict:
        return {"setting": setting, "policy": policy, "seed": seed, "makespan_s": v, "avg_jct_s": v,
                "comm_overhead_s": v}

    rows = [row(s, p, seed, v) for s in ("nominal", "congested") for seed in (0, 1)
            for p, v in (("delay-sched", 20.0), ("fifo+consolidated", 100.0), ("strict-consolidation", 25.0))]
    h = {(r["setting"], r["baseline"], r["metric"]): r for r in headline(rows)}
    hol = h[("congested", "fifo+consolidated", "avg_jct_s")]
    assert hol["mean_pct"] == pytest.approx(-80.0) and hol["within_25pct"] is True  # paper −83 %
    assert h[("congested", "strict-consolidation", "avg_jct_s")]["mean_pct"] == pytest.approx(-20.0)
    assert h[("congested", "strict-consolidation", "avg_jct_s")]["within_25pct"] is False
    assert h[("nominal", "fifo+consolidated", "makespan_s")]["within_25pct"] is None  # the paper's are congested


def test_search_tuner_keeps_its_timers_when_every_candidate_ties() -> None:
    """1-GPU jobs always get their best level, so every timer scores the same: the tuner used to break the tie
    towards the smallest grid point and drove both timers to 0."""
    from ddlsched.policies.autotune import SearchTuner

    assert SearchTuner().grid == (0.0, 60.0, 300.0, 900.0, 1800.0, 3600.0)
    jobs = [JobSpec(f"j{i}", 100.0 * i, 1, "vgg16", iterations=3000.0) for i in range(24)]
    pol = DelayScheduling(autotune="search", tuner_params={"window_s": 600.0})
    run(jobs, pol)
    assert pol.tuner.history and pol.tuner.replays > 0
    assert all((h, m) == (1800.0, 300.0) for _, h, m in pol.tuner.history)


def test_search_tuner_replays_from_the_current_occupancy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The replays start with the jobs running at the tuning instant on their GPUs (they used to replay the
    window on an empty cluster); the score counts the replayed jobs only."""
    import ddlsched.engine.run as engine_run

    seen: list[list[str]] = []
    real = engine_run.run_simulation

    def spy(cluster, specs, policy, cfg, **kw):  # type: ignore[no-untyped-def]
        seen.append([s.job_id for s in specs])
        return real(cluster, specs, policy, cfg, **kw)

    monkeypatch.setattr(engine_run, "run_simulation", spy)
    jobs = [JobSpec(f"j{i}", 100.0 * i, [1, 2, 4, 3][i % 4], ["vgg16", "resnet18"][i % 2], iterations=3000.0)
            for i in range(24)]
    pol = DelayScheduling(autotune="search", tuner_params={"window_s": 600.0, "grid": [0.0, 300.0]})
    run(jobs, pol)
    assert seen and any(any(j.startswith("running:") for j in ids) for ids in seen)
    off = DelayScheduling(autotune="search", tuner_params={"window_s": 600.0, "grid": [0.0, 300.0],
                                                           "occupancy": False})
    seen.clear()
    run(jobs, off)
    assert seen and not any(j.startswith("running:") for ids in seen for j in ids)


def test_preemption_waits_the_configured_timer_even_when_a_tuner_zeroes_it() -> None:
    pol = DelayScheduling(autotune="feedback")
    pol.timers["high"] = 0.0  # what a tuner may do
    assert pol._preempt_wait() == 1800.0
    assert DelayScheduling(preempt_wait=60.0)._preempt_wait() == 60.0


def test_delay_scheduling_counts_its_mechanisms() -> None:
    jobs = [JobSpec(f"j{i}", 50.0 * i, [1, 2, 4, 3][i % 4], ["vgg16", "resnet18"][i % 2], iterations=2000.0)
            for i in range(16)]
    pol = DelayScheduling()
    res = run_simulation(two_servers(), jobs, pol, SimConfig(perf_model="sharing"))
    mech = res.mechanisms
    assert mech["best_level_placements"] + mech["relaxed_placements"] == mech["starts"]
    assert mech["best_level_placements"] > 0
    assert "network_preemptions" in mech


def test_timer_holds_and_delayed_placements_count_the_delay_mechanism() -> None:
    # a, b take 3 of 4 GPUs on each server; c (2 GPUs) finds 1 + 1 free: an L2 placement exists but its timer
    # (1800 s) holds it back until a server frees up (a, b end at ≈ 1559 s) -> one hold, one delayed start at L0
    jobs = [JobSpec("a", 0.0, 3, "resnet18", iterations=2000.0), JobSpec("b", 0.0, 3, "resnet18", iterations=2000.0),
            JobSpec("c", 10.0, 2, "vgg16", iterations=2000.0)]
    res = run_simulation(two_servers(), jobs, DelayScheduling(preemption=False), SimConfig(perf_model="sharing"))
    m = res.mechanisms
    assert (m["timer_holds"], m["delayed_placements"], m["relaxed_placements"]) == (1, 1, 0)
    # with zero timers nothing is held: c starts at once, relaxed
    res = run_simulation(two_servers(), jobs, DelayScheduling(preemption=False, timer_high=0.0, timer_medium=0.0),
                         SimConfig(perf_model="sharing"))
    m = res.mechanisms
    assert (m["timer_holds"], m["delayed_placements"], m["relaxed_placements"]) == (0, 0, 1)
