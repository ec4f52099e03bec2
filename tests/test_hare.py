"""Hand-computed cases for the rounds execution model (Hare) and its policies (docs/policies/hare.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ddlsched.cli import cli
from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.engine import Requirements, RunTask
from ddlsched.engine.core import Core
from ddlsched.engine.run import SimConfig, build_model
from ddlsched.metrics.summary import summarize
from ddlsched.perf import DEFAULT_PERF_MODEL
from ddlsched.policies import make_policy
from ddlsched.policies.hare import Hlas
from ddlsched.workload.gpu_speeds import catalog_with_gpu_speeds, gpu_speedups
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import ModelCatalog, ModelProfile

# a model with 1 s per task on V100, 3 s on K80 (speed 1/3), no gradient (sync 0)
PROF = ModelProfile("m", grad_mb=0.0, compute_ms=1000.0, batch_size=1, mem_mb=1.0, speedup={"V100": 1.0, "K80": 1 / 3})
CAT = ModelCatalog([PROF])
TYPES = {"V100": GPUType("V100", 32768, 1.0), "K80": GPUType("K80", 12288, 1 / 3)}


def _cluster(n_fast: int, n_slow: int) -> Cluster:
    servers = []
    if n_fast:
        servers.append(ServerSpec(n_fast, "V100", 10.0))
    if n_slow:
        servers.append(ServerSpec(n_slow, "K80", 10.0))
    return Cluster.build("t", [servers], {t: TYPES[t] for t in TYPES if any(s.gpu_type == t for s in servers)})


def _job(jid: str, n: int, rounds: int, arrival: float = 0.0) -> JobSpec:
    return JobSpec(jid, arrival, n, "m", iterations=rounds)


def _run(cluster: Cluster, jobs: list[JobSpec], policy, catalog=CAT, **model_params):  # type: ignore[no-untyped-def]
    """Run through the core, keeping the execution model to inspect its per-job state."""
    model_params.setdefault("switch_frac", 0.0)
    model = build_model(cluster, policy, SimConfig(model_params=model_params), catalog)
    policy.reset()
    return model, Core(jobs, policy, model).run()


def _by_id(res):  # type: ignore[no-untyped-def]
    return {r["job_id"]: r for r in res.records}


def test_profiles_give_per_type_speeds() -> None:
    sp = gpu_speedups()
    assert sp["resnet50"]["V100"] == 1.0
    # Gavel ResNet-50 bs16: K80 2.3005 / V100 11.396 steps/s
    assert sp["resnet50"]["K80"] == pytest.approx(2.3005199880283542 / 11.396, rel=1e-3)
    assert 0.2 < sp["resnet50"]["T4"] < 0.6
    cat = catalog_with_gpu_speeds()
    assert cat["resnet50"].speed_on("K80", 0.25) == pytest.approx(sp["resnet50"]["K80"])
    assert cat["resnet50"].speed_on("A100", 2.0) == 2.0  # no entry → GPU type default


def test_relaxed_sync_fast_gpu_runs_several_tasks_back_to_back() -> None:
    # 1 V100 (1 s/task) + 1 K80 (3 s/task), one job of 1 round × 4 tasks. Balanced makespan: V100 runs 3 tasks
    # back to back (0-3 s) and K80 one (0-3 s) → round time 3 s (gang would need 4 GPUs; V100 alone takes 4 s).
    sim, res = _run(_cluster(1, 1), [_job("a", 4, 1)], make_policy("hlas"))
    assert _by_id(res)["a"]["jct_s"] == pytest.approx(3.0)
    assert sim.jobs["a"].tasks_done == 4


def test_guard_leaves_task_for_faster_gpu_when_waiting_is_quicker() -> None:
    # One V100 + one K80; job b (1 task, 2 rounds) arrives at t=0.5 while the V100 runs job a's task until t=1.
    # For b's task: K80 now finishes at 0.5 + 3 = 3.5; waiting for the V100 finishes at 1 + 1 = 2 → wait.
    jobs = [_job("a", 1, 1), _job("b", 1, 1, arrival=0.5)]
    _, res = _run(_cluster(1, 1), jobs, make_policy("hlas"))
    r = _by_id(res)
    assert r["b"]["first_start_s"] == pytest.approx(1.0)
    assert r["b"]["jct_s"] == pytest.approx(1.5)
    assert r["b"]["last_gpus"] == "0"


def test_guard_takes_slow_gpu_when_it_finishes_sooner() -> None:
    # Job a (model "long": 4 s on V100, 12 s on K80) holds the V100 from 0 to 4 s. Job b (1 s / 3 s) arrives at 0.5:
    # K80 now → 0.5 + 3 = 3.5 < waiting for the V100 → 4 + 1 = 5, so b takes the K80 at once.
    long = ModelProfile("long", grad_mb=0.0, compute_ms=4000.0, batch_size=1, mem_mb=1.0,
                        speedup={"V100": 1.0, "K80": 1 / 3})
    cat = ModelCatalog([PROF, long])
    jobs = [JobSpec("a", 0.0, 1, "long", iterations=1), _job("b", 1, 1, arrival=0.5)]
    _, res = _run(_cluster(1, 1), jobs, make_policy("hlas"), catalog=cat)
    r = _by_id(res)
    assert r["a"]["last_gpus"] == "0" and r["a"]["jct_s"] == pytest.approx(4.0)
    assert r["b"]["first_start_s"] == pytest.approx(0.5)
    assert r["b"]["jct_s"] == pytest.approx(3.0)
    assert r["b"]["last_gpus"] == "1"
def test_guard_with_several_tasks_of_one_round() -> None:
    # a 2-task round on 1 V100 + 1 K80 at t=0: the second task on the K80 ends at 3 > V100 back-to-back 2 → the
    # guard keeps both tasks on the V100 (round time 2 s), the K80 stays idle.
    _, res = _run(_cluster(1, 1), [_job("c", 2, 1)], make_policy("hlas"))
    assert _by_id(res)["c"]["jct_s"] == pytest.approx(2.0)
    # 3 tasks: V100 alone would end at 3; the K80's task ends at 3 too (≤) → it takes one; round = max(2, 3) = 3.
    _, res = _run(_cluster(1, 1), [_job("d", 3, 1)], make_policy("hlas"))
    assert _by_id(res)["d"]["jct_s"] == pytest.approx(3.0)
    assert _by_id(res)["d"]["placements"] == 2


def test_hlas_picks_least_attained_job() -> None:
    # 1 GPU. Job a (2 rounds of 1 task) starts at 0; job b arrives at 0.5. Thresholds [0.5] s: after a's first task
    # (A_a = 1 s) a is in Q1, b (A_b = 0) in Q0 → at t=1 the GPU goes to b although a arrived first.
    jobs = [_job("a", 1, 2), _job("b", 1, 1, arrival=0.5)]
    _, res = _run(_cluster(1, 0), jobs, Hlas(thresholds=[0.5], starvation_factor=0))
    r = _by_id(res)
    assert r["b"]["first_start_s"] == pytest.approx(1.0)
    assert r["b"]["finish_s"] == pytest.approx(2.0)
    assert r["a"]["finish_s"] == pytest.approx(3.0)
    # FIFO inside one queue (huge threshold): a keeps the GPU
    _, res = _run(_cluster(1, 0), jobs, Hlas(thresholds=[1e9], starvation_factor=0))
    assert _by_id(res)["a"]["finish_s"] == pytest.approx(2.0)


def test_switching_overhead_only_when_job_changes() -> None:
    # 1 GPU, switch 0.5 s. a: 2 rounds; b arrives at 0.5 (FIFO queue). a: 0.5 + 1 (switch from nothing) then
    # same job → no switch: 1.5-2.5. b: switch + 1 → 2.5-4.0.
    jobs = [_job("a", 1, 2), _job("b", 1, 1, arrival=0.5)]
    sim, res = _run(_cluster(1, 0), jobs, Hlas(thresholds=[1e9]), switch_s=0.5)
    r = _by_id(res)
    assert r["a"]["finish_s"] == pytest.approx(2.5)
    assert r["b"]["finish_s"] == pytest.approx(4.0)
    assert sim.jobs["a"].switches == 1 and sim.jobs["b"].switches == 1
    assert r["a"]["switch_s"] == pytest.approx(0.5)
    assert r["b"]["switch_s"] == pytest.approx(0.5)


def test_sync_time_between_rounds_comes_from_the_network() -> None:
    # Two servers × 1 V100, 1 Gb/s NICs. A 2-task round on both GPUs synchronises with a 2-GPU ring over the NICs:
    # 2·(1/2)·125 MB at 125 MB/s = 1 s per round; 2 rounds × (1 s compute + 1 s sync) = 4 s. Alone, one GPU doing both
    # tasks (2 s, no sync) is as fast, so the ideal is 4 s too.
    prof = ModelProfile("g", grad_mb=125.0, compute_ms=1000.0, batch_size=1, mem_mb=1.0)
    cat = ModelCatalog([prof])
    two = Cluster.build("t2", [[ServerSpec(1, "V100", 1.0), ServerSpec(1, "V100", 1.0)]], {"V100": TYPES["V100"]})
    _, res = _run(two, [JobSpec("a", 0.0, 2, "g", iterations=2)], make_policy("hlas"), catalog=cat)
    r = res.records[0]
    assert r["jct_s"] == pytest.approx(4.0)
    assert r["comm_s"] == pytest.approx(2.0)
    assert r["ideal_run_s"] == pytest.approx(4.0)
    # a 1-GPU job never synchronises, whatever its gradient size
    _, res = _run(two, [JobSpec("b", 0.0, 1, "g", iterations=2)], make_policy("hlas"), catalog=cat)
    assert res.records[0]["jct_s"] == pytest.approx(2.0) and res.records[0]["comm_s"] == 0.0


def test_work_conservation_and_same_record_keys() -> None:
    jobs = [_job(f"j{i}", 1 + i % 3, 3 + i % 4, arrival=0.3 * i) for i in range(12)]
    for name in ("hlas", "hare-offline", "hare-gang", "gavel-het", "tiresias-het", "srtf-het", "hare-naive-switch"):
        sim, res = _run(_cluster(2, 2), jobs, make_policy(name))
        assert not res.unfinished, name
        for j in sim.jobs.values():
            assert j.tasks_done == j.rounds * j.n, name
        s = summarize(res)
        assert s["jobs_completed"] == 12
        assert {"job_id", "jct_s", "queue_s", "run_s", "ideal_run_s", "last_gpus"} <= set(res.records[0])


def test_gang_round_paced_by_slowest_gpu() -> None:
    # hare-gang on 1 V100 + 1 K80, one 2-task round: both start at 0, round lasts max(1, 3) = 3 s.
    _, res = _run(_cluster(1, 1), [_job("a", 2, 1)], make_policy("hare-gang"))
    assert _by_id(res)["a"]["jct_s"] == pytest.approx(3.0)


def test_engine_rejects_invalid_decision() -> None:
    from ddlsched.policies.base import Policy

    class Bad(Policy):
        name = "bad"
        requirements = Requirements(model="rounds", gang=False)

        def schedule(self, view):  # type: ignore[no-untyped-def]
            return [RunTask(j.job_id, 0) for j in view.jobs for _ in range(2)]

    from ddlsched.errors import SimulationError

    with pytest.raises(SimulationError):
        _run(_cluster(1, 0), [_job("a", 2, 1)], Bad())


def test_reproduce_quick_writes_files(tmp_path: Path) -> None:
    from ddlsched.experiments.registry import run_reproduction

    text = run_reproduction("chen2024", tmp_path, [0], True, progress=lambda m: None)
    assert "hlas" in text and "hare-alg1" in text
    for f in ("runs.csv", "summary.csv", "summary.md", "avg_jct.png"):
        assert (tmp_path / "tcc" / f).stat().st_size > 0
    for f in ("runs.csv", "summary.csv", "summary.md", "ratio_testbed.png"):
        assert (tmp_path / "hpdc" / f).stat().st_size > 0
    import csv
    rows = list(csv.DictReader((tmp_path / "hpdc" / "runs.csv").open()))
    assert {r["policy"] for r in rows} == {"hare-alg1", "allox", "sched-homo", "srtf-het", "gavel-fifo"}
    assert all(r["unfinished"] == "0" for r in rows)
    # the relaxation that ran is reported; relaxed rounds are counted (allox runs every round on one GPU)
    assert {r["solver"] for r in rows if r["policy"] == "hare-alg1"} <= {"lp", "greedy"}
    assert int(next(r for r in rows if r["policy"] == "allox")["relaxed_rounds"]) > 0


def test_cli_simulate_routes_to_task_engine(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,arrival,duration,num_gpus,model\na,0,600,2,resnet50\nb,10,1200,1,vgg16\n"
                     "c,20,300,4,transformer\n")
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["simulate", "--trace", str(trace), "--format", "generic_csv", "--cluster", "hetero",
                                 "--policy", "hlas", "--out", str(out), "--quiet"])
    assert r.exit_code == 0, r.output
    import json

    s = json.loads((out / "summary.json").read_text())
    assert s["jobs_completed"] == 3 and s["execution_model"] == "rounds" and s["perf_model"] == DEFAULT_PERF_MODEL
