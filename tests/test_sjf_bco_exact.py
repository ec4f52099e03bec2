"""The planner's exact shortcuts (issue 13): reusing a θ step's result inside the θ-interval it holds for, and
sharing the κ runs' common prefix, give the plan, log and trial count of running every trial from scratch."""

import itertools
import math
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.perf.sjf_bco import SjfBcoContention
from ddlsched.policies import sjf_bco
from ddlsched.policies.sjf_bco import Plan, PlanJob, _run_trial, kappa_classes, plan
from ddlsched.workload.profiles import ModelProfile

PROFILES = [ModelProfile("a", grad_mb=10.0, compute_ms=100.0, batch_size=1, mem_mb=100.0),
            ModelProfile("b", grad_mb=400.0, compute_ms=30.0, batch_size=1, mem_mb=100.0)]


def reference_plan(cluster: Cluster, jobs: list[PlanJob], *, algorithm: str, horizon: float | None, u: float,
                   lam: float, kappa: int | None, busy: list[float], t0: float) -> Plan:
    """Alg. 1's bisection as written: every κ trial of every θ from scratch (the planner before the shortcuts)."""
    model = SjfBcoContention(cluster, xi2_s=0.01)
    if horizon is None:
        horizon = max([t0, *busy]) + sum(j.rho_hat for j in jobs) * 1.5 + 1.0
    order = sorted(jobs, key=lambda j: (j.num_gpus, j.seq)) if algorithm == "sjf-bco" else \
        sorted(jobs, key=lambda j: j.seq)
    if algorithm == "sjf-bco":
        kappas = [kappa] if kappa is not None else kappa_classes([j.num_gpus for j in order],
                                                                 max(j.num_gpus for j in order))
    else:
        kappas = [0]
    best = Plan(algorithm, [], horizon, None, None, False)
    left, right, trials = 1, math.ceil(horizon), 0
    while left <= right:
        theta = (left + right) // 2
        m_theta, y_theta, k_theta = horizon, None, None
        for k in kappas:
            trials += 1
            m, entries = _run_trial(cluster, model, order, algorithm, theta, k, lam, u, busy, t0, horizon, None,
                                    cutoff=m_theta)
            if m < m_theta:
                m_theta, y_theta, k_theta = m, entries, k
        best.log.append((theta, k_theta, m_theta))
        if m_theta < best.makespan and y_theta is not None:
            best = Plan(algorithm, y_theta, m_theta, theta, k_theta if algorithm == "sjf-bco" else None, True,
                        log=best.log)
            right = theta - 1
        else:
            left = theta + 1
    best.trials = trials
    return best


@st.composite
def cases(draw):
    sizes = draw(st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=5))
    small = draw(st.booleans())  # some servers with GPUs too small for the big-memory jobs
    servers = [ServerSpec(n, "S" if small and i % 2 else "L", 10.0) for i, n in enumerate(sizes)]
    types = {"L": GPUType("L", 32768)} | ({"S": GPUType("S", 8192)} if small else {})
    cluster = Cluster.build("t", [servers], types)
    n_jobs = draw(st.integers(1, 12))
    jobs = []
    for i in range(n_jobs):
        g = draw(st.sampled_from([g for g in (1, 2, 3, 4, 8, 16) if g <= cluster.num_gpus]))
        iters = draw(st.integers(1, 400))
        mem = draw(st.sampled_from([0.0, 16000.0])) if small else 0.0
        jobs.append(PlanJob(f"j{i}", g, float(iters), iters * draw(st.sampled_from([0.05, 0.1, 0.37])),
                            PROFILES[i % 2], seq=draw(st.integers(0, 50)), mem_mb=mem))
    t0 = draw(st.sampled_from([0.0, 3.5, 5000.0]))
    busy = [t0 + draw(st.sampled_from([0.0, 0.0, 7.0, 40.0])) for _ in range(cluster.num_gpus)]
    horizon = draw(st.sampled_from([None, None, 30.0, 300.0, t0 + 900.0]))
    algorithm = draw(st.sampled_from(["sjf-bco", "sjf-bco", "ff", "ls"]))
    kappa = draw(st.sampled_from([None, None, 1, 3])) if algorithm == "sjf-bco" else None
    return cluster, jobs, dict(algorithm=algorithm, horizon=horizon, u=draw(st.sampled_from([1.0, 1.15])),
                               lam=draw(st.sampled_from([1.0, 2.0])), kappa=kappa, busy=busy, t0=t0)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_plan_equals_every_trial_from_scratch(case):
    cluster, jobs, kw = case
    ref = reference_plan(cluster, jobs, **kw)
    busy = kw.pop("busy")
    got = plan(cluster, jobs, model=SjfBcoContention(cluster, xi2_s=0.01), busy_until=busy, **kw)
    assert (got.entries, got.makespan, got.theta, got.kappa, got.feasible) == \
        (ref.entries, ref.makespan, ref.theta, ref.kappa, ref.feasible)
    assert got.log == ref.log and got.trials == ref.trials


def test_theta_steps_are_reused_when_the_cap_never_binds(monkeypatch):
    """In a simulation the horizon counts from ``now`` (days), far above any GPU's charge in the plan, so every θ
    the bisection tries is in the first one's interval: one θ step is computed, not ≈ 20."""
    calls = []
    real = sjf_bco._theta_step
    monkeypatch.setattr(sjf_bco, "_theta_step", lambda *a, **k: calls.append(a[4]) or real(*a, **k))
    cluster = Cluster.build("t", [[ServerSpec(8, "L", 10.0)] * 4], {"L": GPUType("L", 32768)})
    rng = random.Random(3)
    jobs = [PlanJob(f"j{i}", rng.choice([1, 1, 2, 4, 8]), 100.0, 50.0, PROFILES[0], seq=i) for i in range(30)]
    p = plan(cluster, jobs, t0=5.0e6)
    assert p.feasible and len(p.log) >= 20
    assert len(calls) == 1 and p.trials == len(p.log) * len(kappa_classes([j.num_gpus for j in jobs], 8))


@given(st.lists(st.integers(1, 40), max_size=30), st.integers(0, 48))
def test_kappa_classes_are_the_first_kappa_of_each_split(sizes, kmax):
    out, seen = [], set()
    for k in range(1, kmax + 1):
        split = frozenset(s for s in sizes if s <= k)
        if split not in seen:
            seen.add(split)
            out.append(k)
    assert kappa_classes(sizes, kmax) == out


# ---------------------------------------------------------------- replan_every_s (an approximation, off by default)
def _workload(draw_jobs):
    from ddlsched.workload import JobSpec

    return [JobSpec(f"j{i}", t, g, "m", iterations=it) for i, (t, g, it) in enumerate(draw_jobs)]


JOBS = st.lists(st.tuples(st.floats(0, 400, allow_nan=False).map(lambda x: round(x, 1)), st.sampled_from([1, 2, 4, 8]),
                          st.integers(50, 3000)), min_size=1, max_size=25).map(lambda js: sorted(js))


def _run(jobs, algorithm: str, **params):
    from ddlsched.engine import run_simulation
    from ddlsched.policies.sjf_bco import planned_policy
    from ddlsched.workload.profiles import ModelCatalog

    cat = ModelCatalog([ModelProfile("m", grad_mb=100.0, compute_ms=50.0, batch_size=32, mem_mb=1000)])
    cluster = Cluster.build("t", [[ServerSpec(4, "V100", 10.0) for _ in range(4)]], {"V100": GPUType("V100", 32768)})
    policy = planned_policy(algorithm, **params)
    made: list[tuple[float, bool]] = []  # (time of a replan, whether a planned job was still waiting then)
    real = policy._replan

    def spy(view):
        pending = {j.job_id for j in view.pending}
        made.append((view.now, any(e.job_id in pending for e in policy._entries)))
        real(view)

    policy._replan = spy
    return run_simulation(cluster, _workload(jobs), policy, catalog=cat), made


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JOBS, st.sampled_from([30.0, 120.0, 1000.0]), st.sampled_from(["sjf-bco", "ff", "rand"]))
def test_replan_every_s_spaces_replans_and_finishes_every_job(jobs, w, algorithm):
    r, made = _run(jobs, algorithm, replan_every_s=w)
    assert all(x["finish_s"] is not None for x in r.records) and len(r.records) == len(jobs)
    for (t0, _), (t1, waiting) in itertools.pairwise(made):
        assert t1 >= t0 + w or not waiting  # a replan comes W after the last, or when nothing planned waits
    for x in r.records:  # a job never starts before the replan that placed it
        assert any(t <= x["first_start_s"] for t, _ in made)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JOBS, st.sampled_from(["sjf-bco", "ls"]))
def test_replan_every_s_zero_is_the_default(jobs, algorithm):
    a, made_a = _run(jobs, algorithm)
    b, made_b = _run(jobs, algorithm, replan_every_s=0.0)
    assert a.records == b.records and made_a == made_b


def test_replan_every_s_must_be_finite_and_non_negative():
    import pytest

    from ddlsched.errors import ConfigError
    from ddlsched.policies import make_policy

    assert make_policy("sjf-bco", {"replan_every_s": 600}).replan_every_s == 600
    for bad in (-1, float("inf")):
        with pytest.raises(ConfigError):
            make_policy("sjf-bco", {"replan_every_s": bad})


def test_replan_every_s_at_the_measured_threshold_lifts_the_paper_scale_warning():
    from ddlsched.policies import make_policy
    from ddlsched.policies.sjf_bco import FAST_REPLAN_EVERY_S

    for name in ("sjf-bco", "bco-ff", "bco-ls", "bco-rand"):
        default = make_policy(name).paper_scale_jobs
        assert make_policy(name, {"replan_every_s": FAST_REPLAN_EVERY_S}).paper_scale_jobs is None
        assert make_policy(name, {"replan_every_s": FAST_REPLAN_EVERY_S / 2}).paper_scale_jobs == default
