"""A fractional GPU request kept as a share (``--fractional-gpus keep``, docs/traces.md "Fractional GPUs and GPU
sharing"): loading, packing by share under the GPU-sharing policies, the pair rule beside whole-GPU jobs, the note
under other policies, accounting, determinism, and the per-GPU capacity as a property."""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddlsched.cli import cli
from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.engine import SimConfig, run_simulation
from ddlsched.engine.decisions import Start
from ddlsched.engine.model import Requirements, share_fits
from ddlsched.errors import InputError, SimulationError
from ddlsched.policies import make_policy
from ddlsched.policies.base import Policy
from ddlsched.policies.sharing import share_check
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.loaders import load_trace
from ddlsched.workload.loaders.generic_csv import load_generic_csv
from ddlsched.workload.loaders.kubernetes import load_kubernetes

ROOT = Path(__file__).resolve().parents[1]
SHARING = ("sjf-bsbf", "sjf-bsbf-consolidated", "sjf-ffs")


def const(xi: float) -> dict:
    return {"source": "none", "default": "constant", "xi_default": xi}


def gpus(n: int = 1, mem: float = 32768) -> Cluster:
    return Cluster.build(f"g{n}", [[ServerSpec(n, "V100", 10.0)]], {"V100": GPUType("V100", mem)})


def job(jid: str, share: float | None, *, arrival: float = 0.0, duration: float = 100.0, keep: bool = True,
        model: str = "resnet50") -> JobSpec:
    return JobSpec(jid, arrival, 1, model, duration_s=duration, gpu_request=share,
                   gpu_share=share if keep and share is not None else None)


def run(jobs: Sequence[JobSpec], policy: str, cluster: Cluster | None = None, xi: float = 1.3) -> dict[str, dict]:
    params = {"interference": const(xi)} if policy in SHARING else {}
    cfg = (SimConfig(perf_model="sharing", perf_params={"interference": const(xi)}) if policy in SHARING
           else SimConfig())
    res = run_simulation(cluster or gpus(), list(jobs), make_policy(policy, params), cfg)
    assert len(res.records) + len(res.rejected) + len(res.unfinished) == len(jobs)  # every job accounted for
    return {r["job_id"]: r for r in res.records}


# ------------------------------------------------------------------ loading
@pytest.mark.parametrize("fast", ["off", "always"])  # the row loop and the column-wise path
def test_keep_loads_a_share_below_one_gpu_and_rounds_up_above(fast: str, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DDLSCHED_FAST_CSV", fast)
    f = tmp_path / "t.csv"
    f.write_text("job_id,arrival,num_gpus,duration\na,0,0.5,10\nb,0,1.5,10\nc,0,2,10\nd,0,0.25,10\n")
    t = load_generic_csv(f, fractional_gpus="keep")
    jobs = {j.job_id: j for j in t.jobs}
    assert (jobs["a"].num_gpus, jobs["a"].gpu_request, jobs["a"].gpu_share) == (1, 0.5, 0.5)
    assert (jobs["b"].num_gpus, jobs["b"].gpu_request, jobs["b"].gpu_share) == (2, 1.5, None)
    assert (jobs["c"].num_gpus, jobs["c"].gpu_request, jobs["c"].gpu_share) == (2, None, None)
    assert jobs["d"].gpu_share == 0.25
    assert any(n.startswith("1 jobs asked for a fractional number of GPUs: rounded up") for n in t.notes)
    assert any(n.startswith("2 jobs asked for a share of one GPU: kept as a share") for n in t.notes)
    ceil = {j.job_id: j for j in load_generic_csv(f).jobs}
    assert ceil["a"].gpu_share is None and ceil["a"].gpu_request == 0.5 and ceil["a"].num_gpus == 1


def test_keep_in_the_kubernetes_loader_and_the_cli() -> None:
    pods = ROOT / "data" / "examples" / "pods_gpu.csv"
    t = load_kubernetes(pods, fractional_gpus="keep")
    shares = sorted(j.gpu_share for j in t.jobs if j.gpu_share is not None)
    assert shares == [0.5, 0.5]
    assert all(j.gpu_share is None for j in load_kubernetes(pods).jobs)
    assert load_trace(pods, fractional_gpus="keep").jobs == t.jobs
    out = CliRunner().invoke(cli, ["traces", "info", str(pods), "--fractional-gpus", "keep"])
    assert out.exit_code == 0, out.output
    assert "2 kept as shares" in out.output


def test_bad_rule_and_bad_share_are_refused() -> None:
    with pytest.raises(InputError, match="fractional_gpus must be one of ceil, error, keep"):
        load_generic_csv(ROOT / "data" / "examples" / "pods_gpu.csv", fractional_gpus="truncate")
    for share, n in ((1.0, 1), (0.0, 1), (0.5, 2)):
        with pytest.raises(ValueError, match="gpu_share"):
            JobSpec("x", 0.0, n, "resnet50", duration_s=1.0, gpu_share=share)


# ------------------------------------------------------------------ the rule
def test_share_fits_rule() -> None:
    assert share_fits(0.5, [], 2) and share_fits(0.0, [], 1)
    assert share_fits(0.5, [0.5], 2) and not share_fits(0.6, [0.5], 2)
    assert share_fits(0.3, [0.3, 0.3], 2)  # share jobs: by capacity, not by count
    assert not share_fits(0.4, [0.4, 0.4], 2)
    assert share_fits(0.5, [0.0], 2) and share_fits(0.0, [0.5], 2)  # a whole-GPU job on either side: pair rule
    assert not share_fits(0.3, [0.0, 0.3], 3 - 1) and not share_fits(0.0, [0.5, 0.5], 2)


# ------------------------------------------------------------------ simulation
@pytest.mark.parametrize("policy", SHARING)
def test_two_halves_share_one_gpu_at_their_trace_speed(policy: str) -> None:
    recs = run([job("a", 0.5), job("b", 0.5, arrival=5.0)], policy)
    assert recs["a"]["first_start_s"] == 0.0 and recs["b"]["first_start_s"] == 5.0
    assert recs["a"]["run_s"] == pytest.approx(100.0) and recs["b"]["run_s"] == pytest.approx(100.0)
    assert recs["a"]["sharing_s"] == pytest.approx(0.0) and recs["b"]["sharing_s"] == pytest.approx(0.0)
    # rounded up (ceil) they are whole-GPU jobs; xi = 1.6 fails the benefit test, so they run one after the other
    seq = run([job("a", 0.5, keep=False), job("b", 0.5, arrival=5.0, keep=False)], "sjf-bsbf", xi=1.6)
    assert seq["b"]["first_start_s"] == pytest.approx(100.0) and seq["b"]["finish_s"] == pytest.approx(200.0)


def test_three_forties_never_stack_on_one_gpu() -> None:
    recs = run([job("a", 0.4), job("b", 0.4), job("c", 0.4)], "sjf-bsbf")
    starts = sorted(r["first_start_s"] for r in recs.values())
    assert starts == [0.0, 0.0, pytest.approx(100.0)]
    assert all(r["run_s"] == pytest.approx(100.0) for r in recs.values())


def test_three_thirds_stack_beyond_the_pair_limit() -> None:
    res = run_simulation(gpus(), [job(x, 0.3) for x in "abc"], make_policy("sjf-bsbf"), SimConfig())
    assert all(r["first_start_s"] == 0.0 and r["run_s"] == pytest.approx(100.0) for r in res.records)
    m = res.mechanisms
    assert (m["share_starts"], m["packed_starts"], m["peak_jobs_per_gpu"], m["shared_starts"]) == (3, 2, 3, 2)


def test_packing_prefers_a_gpu_already_holding_shares() -> None:
    recs = run([job("a", 0.5), job("b", 0.25, arrival=1.0), job("c", 0.25, arrival=2.0)], "sjf-bsbf", gpus(2))
    assert {r["last_gpus"] for r in recs.values()} == {"0"}  # GPU 1 stays idle for a whole-GPU job


@pytest.mark.parametrize(("xi", "dur"), [(1.2, 50.0), (1.6, 50.0), (1.6, 600.0)])
def test_a_share_job_and_a_whole_job_follow_the_pair_rule(xi: float, dur: float) -> None:
    # beside a whole-GPU job a share job is a 1-GPU job: same benefit test, same xi slowdown, same records
    whole = JobSpec("w", 0.0, 1, "resnet50", duration_s=300.0)
    kept = run([whole, job("s", 0.5, arrival=10.0, duration=dur)], "sjf-bsbf", xi=xi)
    ceil = run([whole, job("s", 0.5, arrival=10.0, duration=dur, keep=False)], "sjf-bsbf", xi=xi)
    assert kept == ceil
    shares = share_check(dur, 290.0, xi, xi).share  # the authors' test, w's remaining exclusive time 290 s
    assert (kept["s"]["first_start_s"] == 10.0) is shares
    assert (kept["s"]["sharing_s"] > 0.0) is shares and (kept["w"]["sharing_s"] > 0.0) is shares


def test_a_whole_job_cannot_join_two_packed_shares() -> None:
    jobs = [job("a", 0.5), job("b", 0.5), JobSpec("w", 1.0, 1, "resnet50", duration_s=10.0)]
    recs = run(jobs, "sjf-ffs")
    assert recs["w"]["first_start_s"] == pytest.approx(100.0)


@pytest.mark.parametrize("policy", ["fifo", "sjf", "tiresias-700"])
def test_a_policy_that_does_not_share_runs_shares_on_whole_gpus_with_a_note(policy: str) -> None:
    jobs = [job("a", 0.5), job("b", 0.5)]
    res = run_simulation(gpus(), jobs, make_policy(policy), SimConfig())
    assert [n for n in res.notes if "share jobs run on whole GPUs" in n] == [
        f"2 share jobs run on whole GPUs: policy {res.policy} does not share GPUs (shares are packed only by the "
        "GPU-sharing policies, e.g. sjf-bsbf)"]
    ceil = run_simulation(gpus(), [job("a", 0.5, keep=False), job("b", 0.5, keep=False)], make_policy(policy),
                          SimConfig())
    assert list(res.records) == list(ceil.records) and "share_starts" not in res.mechanisms
    assert not ceil.notes or all("share" not in n for n in ceil.notes)


def test_engine_refuses_a_start_over_capacity() -> None:
    class Stack(Policy):
        name = "stack-test"
        requirements = Requirements(jobs_per_gpu=2)

        def schedule(self, view):  # type: ignore[no-untyped-def]
            return [Start(j.job_id, (0,), share=True) for j in view.pending]

    with pytest.raises(SimulationError, match="shares summing to <= 1"):
        run_simulation(gpus(), [job(x, 0.4) for x in "abc"], Stack(), SimConfig())


def test_the_same_inputs_give_identical_records() -> None:
    jobs = [job(f"j{i}", [0.2, 0.5, 0.3, None][i % 4], arrival=7.0 * i, duration=50.0 + 13 * i) for i in range(24)]
    a = run_simulation(gpus(2), jobs, make_policy("sjf-bsbf"), SimConfig(seed=3))
    b = run_simulation(gpus(2), jobs, make_policy("sjf-bsbf"), SimConfig(seed=3))
    assert list(a.records) == list(b.records) and a.mechanisms == b.mechanisms
    assert len(a.records) == len(jobs)


# ------------------------------------------------------------------ property: capacity per GPU
SHARES = st.one_of(st.none(), st.sampled_from([0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.75, 0.9]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=st.lists(st.tuples(SHARES, st.integers(0, 50), st.integers(5, 80)), min_size=1, max_size=14),
       policy=st.sampled_from(SHARING))
def test_resident_shares_never_exceed_one_gpu(spec: list[tuple[float | None, int, int]], policy: str) -> None:
    jobs = [job(f"j{i}", s, arrival=float(a), duration=float(d)) for i, (s, a, d) in enumerate(spec)]
    share = {j.job_id: j.gpu_share for j in jobs}
    recs = run(jobs, policy, gpus(2), xi=1.2)
    assert len(recs) == len(jobs)
    spans = [(r["first_start_s"], r["finish_s"], int(r["last_gpus"]), r["job_id"]) for r in recs.values()]
    assert all(r["preemptions"] == 0 for r in recs.values())
    for t, _, g, _ in spans:  # residents just after every start
        here = [k for s, f, gg, k in spans if gg == g and s <= t < f]
        held = [share[k] or 0.0 for k in here]
        if all(share[k] is not None for k in here):
            assert sum(held) <= 1.0 + 1e-9, (t, g, here)
        else:
            assert len(here) <= 2, (t, g, here)
    if all(s is not None for s, _, _ in spec):  # only share jobs: nobody is slowed by sharing
        assert all(r["run_s"] == pytest.approx(r["ideal_run_s"]) for r in recs.values())


def test_the_worked_example_figures_of_docs_traces(tmp_path: Path) -> None:
    """docs/traces.md "Fractional GPUs and GPU sharing": the two 0.5-GPU pods of pods_gpu.csv pack on one GPU."""
    out = tmp_path / "keep"
    r = CliRunner().invoke(cli, ["simulate", "--trace", str(ROOT / "data" / "examples" / "pods_gpu.csv"),
                                 "--fractional-gpus", "keep", "--cluster", "rack256", "--policy", "sjf-bsbf",
                                 "--out", str(out), "--quiet"])
    assert r.exit_code == 0, r.output
    mech = json.loads((out / "summary.json").read_text())["mechanisms"]
    assert (mech["share_starts"], mech["packed_starts"], mech["peak_jobs_per_gpu"]) == (2, 1, 2)
    with (out / "records.csv").open() as f:
        recs = {row["job_id"]: row for row in csv.DictReader(f)}
    a, b = recs["infer-llm-55c1b"], recs["dl-rec-0b7e3"]
    assert a["last_gpus"] == b["last_gpus"] == "16"
    assert float(a["run_s"]) == pytest.approx(3600.0) and float(b["run_s"]) == pytest.approx(4.5 * 3600)
    assert float(a["sharing_s"]) == float(b["sharing_s"]) == 0.0
