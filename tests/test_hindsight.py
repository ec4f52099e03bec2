"""``hindsight`` (docs/policies/hindsight.md): property test (every job accounted for, no GPU held by two jobs,
runs identical), the predictor and Gittins index on hand-computed cases, bounded preemption, parameter
validation, and the notes for a trace without users or model names."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ddlsched
from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.engine import SimConfig, run_simulation
from ddlsched.engine.decisions import Decision, Preempt, Start
from ddlsched.engine.view import SchedulerView
from ddlsched.errors import ConfigError
from ddlsched.policies import make_policy
from ddlsched.policies.hindsight import Hindsight, _Group
from ddlsched.workload import JobSpec
from ddlsched.workload.profiles import default_catalog

MODELS = ["resnet50", "vgg16", "bert", "lstm"]


class _Checked(Hindsight):
    """Hindsight that checks, at every pass, that no GPU hosts two running jobs and that it starts jobs only on
    free GPUs."""

    name = "hindsight-checked"

    def schedule(self, view: SchedulerView) -> Sequence[Decision]:
        held: set[int] = set()
        for job in view.running:
            assert held.isdisjoint(job.gpus), f"GPU double-booked at t={view.now}"
            held.update(job.gpus)
        assert len(held) + view.num_free == view.cluster.num_gpus
        out = super().schedule(view)
        freed = {g for d in out if isinstance(d, Preempt) for g in view.job(d.job_id).gpus}
        for d in out:
            if isinstance(d, Start):
                assert not (set(d.gpus) & (held - freed)), "start on a busy GPU"
                held.update(d.gpus)
        return out


@st.composite
def workloads(draw: st.DrawFn) -> list[JobSpec]:
    n = draw(st.integers(1, 40))
    users = draw(st.sampled_from([None, ["a"], ["a", "b", "c"]]))
    jobs = []
    for i in range(n):
        gpus = draw(st.sampled_from([1, 1, 1, 2, 4, 8, 16]))
        secs = draw(st.sampled_from([5.0, 60.0, 600.0, 3600.0, 36000.0, 400000.0]))
        jobs.append(JobSpec(f"j{i}", draw(st.floats(0, 20000, allow_nan=False)), gpus,
                            draw(st.sampled_from(MODELS)), duration_s=secs * draw(st.floats(0.5, 2.0)),
                            user=None if users is None else draw(st.sampled_from(users))))
    return jobs


TYPES = {"V100": GPUType("V100", 32768, 1.0), "P100": GPUType("P100", 16384, 0.6),
         "K80": GPUType("K80", 12288, 0.25)}


def _hetero(types: Sequence[str]) -> Cluster:
    """One 8-GPU server per listed type, in one rack."""
    return Cluster.build("het", [[ServerSpec(8, t, 10.0) for t in types]], {t: TYPES[t] for t in set(types)})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=workloads(), servers=st.integers(1, 4), seed=st.integers(0, 3), hetero=st.booleans(),
       params=st.sampled_from([{}, {"hysteresis": 1, "max_preemptions": 1}, {"min_samples": 1, "window": 3},
                               {"oracle": True}, {"aging": True}, {"aging": True, "oracle": True},
                               {"reserve": True}, {"reserve": True, "starve_after_s": 0.0, "starvation_factor": 0.5},
                               {"reserve": True, "oracle": True, "starve_after_s": 0.0}]))
def test_every_job_accounted_no_gpu_double_booked_deterministic(jobs: list[JobSpec], servers: int, seed: int,
                                                               hetero: bool, params: dict) -> None:
    cluster = _hetero(["K80", "V100", "P100", "K80"][:servers]) if hetero else \
        ddlsched.build_cluster(racks=1, servers_per_rack=servers, gpus_per_server=8)
    cfg = SimConfig(audit=True, seed=seed)
    a = run_simulation(cluster, jobs, _Checked(**params), cfg, catalog=default_catalog())
    assert len(a.records) + len(a.rejected) + len(a.unfinished) == len(jobs)
    too_big = sum(j.num_gpus > cluster.num_gpus for j in jobs)
    assert len(a.rejected) == too_big and not a.unfinished
    b = run_simulation(cluster, jobs, _Checked(**params), cfg, catalog=default_catalog())
    assert a.records == b.records and a.timeseries == b.timeseries and a.mechanisms == b.mechanisms
    cap = params.get("max_preemptions")
    if cap is not None:
        assert all(r["preemptions"] <= cap for r in a.records)


def test_heterogeneous_cluster_fastest_type_first_and_service_in_fastest_type_gpu_seconds() -> None:
    """A K80 server listed before a V100 server: the first job goes to the V100 (its fastest type), the second,
    arriving while the V100s are busy, to the K80s; what the predictor learns from each is GPU-seconds on a V100
    (the K80 job held its GPUs 1 / speed times longer for the same work)."""
    cluster = _hetero(["K80", "V100"])
    jobs = [JobSpec("a", 0.0, 8, "resnet50", duration_s=1000.0), JobSpec("b", 1.0, 8, "resnet50", duration_s=1000.0)]
    pol = Hindsight()
    r = run_simulation(cluster, jobs, pol, SimConfig(), catalog=default_catalog())
    gpus = {rec["job_id"]: rec for rec in r.records}
    speed = default_catalog()["resnet50"].speed_on("K80", 0.25)
    assert gpus["a"]["jct_s"] == pytest.approx(1000.0, rel=0.05)  # on the V100s
    assert gpus["b"]["jct_s"] == pytest.approx(1000.0 / speed, rel=0.05)  # on the K80s
    learned = sorted(pol.predictor.groups[("all",)].recent)
    assert learned == pytest.approx([8000.0, 8000.0], rel=0.05)


def _stream_and_one_big_job() -> list[JobSpec]:
    """1-GPU jobs of 600 s every 100 s for 20,000 s (about six of eight GPUs busy at any time) and one 8-GPU job
    of 100 s arriving at 50 s, when a 1-GPU job already runs."""
    small = [JobSpec(f"s{i:03d}", 100.0 * i, 1, "resnet50", duration_s=600.0) for i in range(200)]
    return [*small, JobSpec("big", 50.0, 8, "resnet50", duration_s=100.0)]


@pytest.mark.parametrize("reserve", [True, False])
def test_a_starving_job_gets_a_reservation(reserve: bool) -> None:
    """Rule 4: the 8-GPU job waits behind the stream of 1-GPU jobs that backfill keeps starting on its one server,
    and may not evict them (a class apart, not two). Promoted after ``starve_after_s`` (1,000 s), with a
    reservation it starts once the jobs already running end (≤ 600 s later); without one it waits for the stream
    to end."""
    cluster = ddlsched.build_cluster(racks=1, servers_per_rack=1, gpus_per_server=8)
    pol = Hindsight(starve_after_s=1000.0, reserve=reserve)
    r = run_simulation(cluster, _stream_and_one_big_job(), pol, SimConfig(audit=True), catalog=default_catalog())
    big = next(rec for rec in r.records if rec["job_id"] == "big")
    assert len(r.records) == 201
    if reserve:
        assert 1050.0 <= big["first_start_s"] <= 1050.0 + 600.0 + 1e-6
        assert r.mechanisms["starvation_reservations"] >= 1
    else:
        assert big["first_start_s"] > 19_000.0
        assert r.mechanisms["starvation_reservations"] == 0


def test_gittins_index_hand_computed() -> None:
    g = _Group(window=10)
    for x in (1.0, 3.0, 10.0):
        g.add(x)
    # at a = 0: Δ=1 → (1/3) / ((1+1+1)/3) = 1/3; Δ=3 → (2/3) / ((1+3+3)/3) = 2/7; Δ=10 → 1 / (14/3) = 3/14
    idx, above = g.gittins(0, 0.0)
    assert above == 3 and idx == pytest.approx(1 / 3)
    # at a = 2 (samples 3, 10 above): Δ=1 → (1/2) / ((1+1)/2) = 1/2; Δ=8 → 1 / ((1+8)/2) = 2/9
    idx, above = g.gittins(1, 2.0)
    assert above == 2 and idx == pytest.approx(1 / 2)
    assert g.gittins(2, 10.0) == (0.0, 0)


def test_predictor_learns_and_its_error_is_reported() -> None:
    """Two users: u0 submits 10-minute jobs, u1 10-hour jobs, interleaved, on a cluster too small to run them all;
    after a few finish, u0's queued jobs rank first — fewer hours of JCT than least-attained service."""
    jobs = [JobSpec(f"j{i}", 60.0 * i, 4, "resnet50", duration_s=600.0 if i % 2 == 0 else 36000.0,
                    user=f"u{i % 2}") for i in range(60)]
    cluster = ddlsched.build_cluster(racks=1, servers_per_rack=2, gpus_per_server=8)
    h = ddlsched.simulate(jobs, cluster, "hindsight", policy_params={"min_samples": 2})
    t = ddlsched.simulate(jobs, cluster, "tiresias")
    assert h.summary["jobs_completed"] == 60
    mech = h.summary["mechanisms"]
    assert mech["predicted_jobs"] > 30 and 0 <= mech["predictor_median_rel_error"] < 1.0
    assert 0 <= mech["predictor_p10_p90_coverage"] <= 1 and math.isfinite(mech["predictor_median_log2_ratio"])
    assert h.summary["avg_jct_s"] < t.summary["avg_jct_s"]


def test_a_trace_without_users_or_models_says_what_was_disabled() -> None:
    jobs = [JobSpec(f"j{i}", 10.0 * i, 1, "resnet50", duration_s=100.0) for i in range(5)]
    r = ddlsched.simulate(jobs, ddlsched.build_cluster(), "hindsight")
    assert r.summary["jobs_completed"] == 5
    assert any("no user" in n and "per-user groups were disabled" in n for n in r.notes)
    assert any("per-model groups were disabled" in n for n in r.notes)
    jobs = [JobSpec(f"j{i}", 10.0 * i, 1, MODELS[i % 2], duration_s=100.0, user=f"u{i}") for i in range(5)]
    assert not [n for n in ddlsched.simulate(jobs, ddlsched.build_cluster(), "hindsight").notes
                if n.startswith("hindsight")]


@pytest.mark.parametrize("params", [{"num_classes": 1}, {"hysteresis": 16}, {"base_gpu_s": 0},
                                    {"starve_after_s": -1}, {"window": 0}, {"base_gpu_s": math.inf},
                                    {"oracle": "yes"}, {"nonsense": 1}])
def test_bad_parameters_are_refused(params: dict) -> None:
    with pytest.raises(ConfigError, match="policy 'hindsight'"):
        make_policy("hindsight", params)


def test_oracle_is_clairvoyant_and_the_default_is_not() -> None:
    assert make_policy("hindsight").requirements.clairvoyant is False
    oracle = make_policy("hindsight", {"oracle": True})
    assert oracle.requirements.clairvoyant is True and oracle.name == "hindsight-oracle"
