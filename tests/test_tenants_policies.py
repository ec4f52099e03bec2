"""The tenant-aware policies (quota, fair-maxmin, ftf) on hand-computed cases, and properties of the family."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ddlsched
from ddlsched.cluster.tenants import Tenant, TenantSet, attach
from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.engine.decisions import Decision, Preempt, Start
from ddlsched.engine.view import SchedulerView
from ddlsched.policies.quota import QuotaPolicy
from ddlsched.workload import JobSpec


def _cluster(gpus: int = 8, tenants: TenantSet | None = None) -> Cluster:
    c = Cluster.build("h", [[ServerSpec(gpus, "V100", 10.0)]], {"V100": GPUType("V100", 32768)})
    return attach(c, tenants) if tenants is not None else c


def _ts(a: dict, b: dict) -> TenantSet:
    def t(name: str, d: dict) -> Tenant:
        return Tenant(name, d.get("weight", 1.0), d.get("quota", 0), {}, d.get("borrow_limit"), d.get("cohort"),
                      d.get("cohort"))
    return TenantSet({"A": t("A", a), "B": t("B", b), "default": t("default", {})}, "default")


def _job(jid: str, user: str, arrival: float, dur: float, gpus: int = 1) -> JobSpec:
    return JobSpec(jid, arrival, gpus, "resnet50", duration_s=dur, user=user)


# B bursts onto the whole cluster at 0 (8 × 1 GPU, 1000 s); A asks for its quota of 4 at t = 100 (4 × 50 s).
BURST = [_job(f"b{i}", "B", 0.0, 1000.0) for i in range(8)] + [_job(f"a{i}", "A", 100.0, 50.0) for i in range(4)]


def _by_id(res: ddlsched.Result) -> dict[str, dict]:
    return {r["job_id"]: r for r in res.records}


def test_quota_reclaims_within_one_round() -> None:
    c = _cluster(8, _ts({"quota": 4, "cohort": "x"}, {"quota": 4, "cohort": "x"}))
    res = ddlsched.simulate(BURST, c, "quota")
    r = _by_id(res)
    # A's four jobs start in the pass that sees them arrive: B's four borrowed jobs (started last: b7..b4) are
    # preempted there
    assert [r[f"a{i}"]["first_start_s"] for i in range(4)] == [100.0] * 4
    assert [r[f"a{i}"]["finish_s"] for i in range(4)] == pytest.approx([150.0] * 4)
    assert [r[f"b{i}"]["preemptions"] for i in range(8)] == [0] * 4 + [1] * 4
    # b0..b3 (B's quota) run on; b4..b7 restart at 150 (A done), pay the 30 s restart, then their last 900 s
    assert [r[f"b{i}"]["finish_s"] for i in range(8)] == pytest.approx([1000.0] * 4 + [1080.0] * 4)
    assert res.summary["mechanisms"]["reclaim_preemptions"] == 4
    assert res.summary["mechanisms"]["borrowed_starts"] == 8  # b4..b7 at 0, and again at 150


@pytest.mark.parametrize(("reclaim", "cohorts", "a_start"), [
    ("never", ("x", "x"), 1000.0), ("cohort", ("y", "x"), 1000.0), ("cohort", ("x", "x"), 100.0),
    ("always", ("y", "x"), 100.0), ("always", (None, None), 100.0), ("cohort", (None, None), 1000.0)])
def test_quota_reclaim_modes(reclaim: str, cohorts: tuple, a_start: float) -> None:
    c = _cluster(8, _ts({"quota": 4, "cohort": cohorts[0]}, {"quota": 4, "cohort": cohorts[1]}))
    r = _by_id(ddlsched.simulate(BURST, c, "quota", policy_params={"reclaim": reclaim}))
    assert r["a0"]["first_start_s"] == pytest.approx(a_start)


def test_quota_borrow_limit_and_no_tenants() -> None:
    c = _cluster(8, _ts({"quota": 4}, {"quota": 4, "borrow_limit": 2}))
    r = _by_id(ddlsched.simulate(BURST, c, "quota"))
    assert sorted(r[f"b{i}"]["first_start_s"] for i in range(8))[:6] == [0.0] * 6
    assert r["b6"]["first_start_s"] > 0 and r["b7"]["first_start_s"] > 0  # 4 + 2 at most
    assert [r[f"a{i}"]["first_start_s"] for i in range(4)] == [100.0] * 4  # 2 free + 2 reclaimed
    # without tenants the cluster is one tenant's quota: FIFO (b0..b7 at 0, a0..a3 when they finish)
    r = _by_id(ddlsched.simulate(BURST, _cluster(8), "quota"))
    assert [r[f"a{i}"]["first_start_s"] for i in range(4)] == pytest.approx([1000.0] * 4)


def test_fair_maxmin_weighted_shares() -> None:
    # A (weight 1) and B (weight 3) each queue 8 × 1 GPU at 0 on 8 GPUs: budgets 8·1/4 = 2 and 6
    jobs = [_job(f"a{i}", "A", 0.0, 1000.0) for i in range(8)] + [_job(f"b{i}", "B", 0.0, 1000.0) for i in range(8)]
    r = _by_id(ddlsched.simulate(jobs, _cluster(8, _ts({"weight": 1.0}, {"weight": 3.0})), "fair-maxmin"))
    at_zero = sorted(j for j, rec in r.items() if rec["first_start_s"] == 0.0)
    assert at_zero == ["a0", "a1", "b0", "b1", "b2", "b3", "b4", "b5"]
    # at 1000 the demands are A 6, B 2: B sated at 2, A gets the other 6: everybody starts
    assert all(rec["first_start_s"] == pytest.approx(1000.0) for j, rec in r.items() if j not in at_zero)


def test_ftf_runs_the_job_furthest_behind_its_isolated_share() -> None:
    # 1 GPU, rounds of 10 s. L (1000 s) runs from 0; S (10 s) arrives at 5. At the round at 10:
    # L: n̄ = (1·5 + 2·5)/10 = 1.5, rho = (10 + 990)/(1000·1.5) = 0.667; S: n̄ = 2, rho = (5 + 10)/(10·2) = 0.75
    jobs = [_job("L", "A", 0.0, 1000.0), _job("S", "A", 5.0, 10.0)]
    r = _by_id(ddlsched.simulate(jobs, _cluster(1), "ftf", policy_params={"round_s": 10.0}))
    assert r["S"]["first_start_s"] == pytest.approx(10.0) and r["S"]["finish_s"] == pytest.approx(20.0)
    assert r["L"]["preemptions"] == 1 and r["L"]["finish_s"] == pytest.approx(20.0 + 30.0 + 990.0)
    # fair-maxmin (one tenant, LAS: same class, running first) lets L finish first
    r = _by_id(ddlsched.simulate(jobs, _cluster(1), "fair-maxmin", policy_params={"round_s": 10.0}))
    assert r["S"]["first_start_s"] == pytest.approx(1000.0) and r["L"]["preemptions"] == 0


_jobs = st.lists(st.tuples(st.sampled_from(["A", "B", "C"]), st.floats(0, 500), st.floats(1, 300),
                           st.sampled_from([1, 1, 2, 4])), min_size=1, max_size=14)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=_jobs, policy=st.sampled_from(["quota", "fair-maxmin", "fair-maxmin-het", "ftf"]),
       reclaim=st.sampled_from(["never", "cohort", "always"]), qa=st.integers(0, 4), qb=st.integers(0, 4))
def test_family_completes_every_job_deterministically(jobs: list, policy: str, reclaim: str, qa: int,
                                                      qb: int) -> None:
    ts = _ts({"quota": qa, "cohort": "x", "weight": 2.0}, {"quota": qb, "cohort": "x"})
    c = _cluster(8, ts)
    specs = [_job(f"j{i}", u, a, d, g) for i, (u, a, d, g) in enumerate(jobs)]
    params = {"reclaim": reclaim} if policy == "quota" else {"round_s": 60.0}
    one = ddlsched.simulate(specs, c, policy, policy_params=params)
    two = ddlsched.simulate(specs, c, policy, policy_params=params)
    assert one.summary["jobs_completed"] == len(specs)
    assert list(one.records.rows()) == list(two.records.rows())
    assert 0.0 <= one.summary["rho_gt1_frac"] <= 1.0 and one.summary["rho_max"] > 0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=_jobs, qa=st.integers(0, 8))
def test_quota_without_borrowing_never_exceeds_a_quota(jobs: list, qa: int) -> None:
    # no borrowing → no reclaim → each job runs in one stretch [first_start, finish]: usage is exact from records
    ts = _ts({"quota": qa, "borrow_limit": 0}, {"quota": 8 - qa, "borrow_limit": 0})
    specs = [_job(f"j{i}", u if u != "C" else "A", a, d, g) for i, (u, a, d, g) in enumerate(jobs)]
    specs = [s for s in specs if s.num_gpus <= (qa if s.user == "A" else 8 - qa)]
    if not specs:
        return
    res = ddlsched.simulate(specs, _cluster(8, ts), "quota")
    recs = list(res.records)
    assert len(recs) == len(specs)
    for r in recs:
        t = r["first_start_s"]
        used = sum(o["num_gpus"] for o in recs if o["user"] == r["user"] and o["first_start_s"] <= t < o["finish_s"])
        assert used <= (qa if r["user"] == "A" else 8 - qa)


def test_het_lp_splits_fast_gpus_evenly() -> None:
    # one FAST (speed 1) and one SLOW (0.5) GPU, tenants A and B with one 1-GPU job each, budgets 1 GPU each:
    # max z with Θ_A, Θ_B ≥ z is 0.75: each job half a round on each type (the total 1.5 is also the maximum)
    import numpy as np

    from ddlsched.policies.fair_maxmin_het import solve

    s = np.array([[1.0, 0.5], [1.0, 0.5]])
    x = solve(np.array([1.0, 1.0]), s, np.array([1.0, 1.0]), np.array([0, 1]), np.array([1.0, 1.0]))
    assert x is not None
    theta = (x * s).sum(axis=1)
    assert theta == pytest.approx([0.75, 0.75], abs=1e-6)


def test_het_policy_alternates_the_fast_gpu() -> None:
    # FAST and SLOW servers of 1 GPU each; A's job a and B's job b (same work) arrive at 0; rounds of 100 s.
    # The LP gives each half a round on each type; the priority (share ÷ rounds received there) swaps them every
    # round, so both progress at 0.75 of full speed and finish close together.
    c = Cluster.build("het", [[ServerSpec(1, "FAST", 10.0), ServerSpec(1, "SLOW", 10.0)]],
                      {"FAST": GPUType("FAST", 32768, 1.0), "SLOW": GPUType("SLOW", 32768, 0.5)})
    c = attach(c, _ts({}, {}))
    jobs = [_job("a", "A", 0.0, 3000.0), _job("b", "B", 0.0, 3000.0)]
    res = ddlsched.simulate(jobs, c, "fair-maxmin-het", policy_params={"round_s": 100.0}, restart_penalty_s=0.0)
    r = _by_id(res)
    # 40 rounds of 100 s, 150 reference-seconds of progress per job per 200 s: both finish at 4000, swapping types
    # at every round boundary but the first (39 preemptions each, migrated within the pass)
    assert res.summary["mechanisms"]["lp_rounds"] == 40
    assert [r[j]["finish_s"] for j in "ab"] == pytest.approx([4000.0, 4000.0])
    assert [r[j]["preemptions"] for j in "ab"] == [39, 39]
    # the homogeneous variant leaves a on FAST (3000 s) and b on SLOW (6000 s)
    r = _by_id(ddlsched.simulate(jobs, c, "fair-maxmin", policy_params={"round_s": 100.0}, restart_penalty_s=0.0))
    assert [r[j]["finish_s"] for j in "ab"] == pytest.approx([3000.0, 6000.0])


# -- per-type quotas (docs/policies/fairness.md §2) -------------------------------------------------------------

def _two_types(tenants: dict[str, dict]) -> Cluster:
    """Server 0: 4 V100 (GPUs 0-3), server 1: 4 A100 (GPUs 4-7); ``tenants``: name → fields. The catalogue has no
    speed-up for A100, so both types run a job at the same speed (the hand-computed times stay simple)."""
    c = Cluster.build("h2", [[ServerSpec(4, "V100", 10.0), ServerSpec(4, "A100", 10.0)]],
                      {"V100": GPUType("V100", 32768), "A100": GPUType("A100", 32768)})

    def t(name: str, d: dict) -> Tenant:
        q = d.get("quota", 0)
        by_type = q if isinstance(q, dict) else {}
        return Tenant(name, 1.0, sum(by_type.values()) if by_type else q, by_type, d.get("borrow_limit"), None,
                      None)
    ts = {n: t(n, d) for n, d in tenants.items()} | {"default": t("default", {})}
    return attach(c, TenantSet(ts, "default"))


class _Watched(QuotaPolicy):
    """The quota policy, recording the GPUs of every start and, after each pass, each tenant's GPUs per type."""

    def __init__(self, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.starts: dict[str, list[tuple[int, ...]]] = {}
        self.held: list[dict[tuple[str, str], int]] = []

    def schedule(self, view: SchedulerView) -> Sequence[Decision]:
        out = super().schedule(view)
        ts, kind = view.cluster.tenants, view.cluster.gpu_type
        gone = {d.job_id for d in out if isinstance(d, Preempt)}
        now = [(j.user, j.gpus) for j in view.running if j.job_id not in gone]
        for d in out:
            if isinstance(d, Start):
                self.starts.setdefault(d.job_id, []).append(d.gpus)
                now.append((view.job(d.job_id).user, d.gpus))
        held: dict[tuple[str, str], int] = {}
        for user, gpus in now:
            for g in gpus:
                key = (ts.of(user), kind[g])
                held[key] = held.get(key, 0) + 1
        self.held.append(held)
        return out


def test_quota_per_type_reclaims_exactly_its_type() -> None:
    # A {V100: 4}, B {A100: 4}. B bursts eight 1000 s jobs at 0: b0..b3 within quota on the A100s, b4..b7 borrow
    # the V100s. A's four 50 s jobs at 100 are within quota on V100 only: each reclaims one of B's V100 jobs
    # (most recently started first, ties latest arrival: b7, b6, b5, b4) in that same pass; b0..b3 stay untouched.
    c = _two_types({"A": {"quota": {"V100": 4}}, "B": {"quota": {"A100": 4}}})
    pol = _Watched()
    res = ddlsched.simulate(BURST, c, pol)
    r = _by_id(res)
    v100, a100 = {0, 1, 2, 3}, {4, 5, 6, 7}
    assert [set(pol.starts[f"b{i}"][0]) <= a100 for i in range(4)] == [True] * 4
    assert [set(pol.starts[f"b{i}"][0]) <= v100 for i in range(4, 8)] == [True] * 4
    assert [r[f"a{i}"]["first_start_s"] for i in range(4)] == [100.0] * 4
    assert set().union(*(pol.starts[f"a{i}"][0] for i in range(4))) == v100
    assert [r[f"a{i}"]["finish_s"] for i in range(4)] == pytest.approx([150.0] * 4)
    assert [r[f"b{i}"]["preemptions"] for i in range(8)] == [0] * 4 + [1] * 4
    # b4..b7 borrow the V100s again at 150, pay the 30 s restart, then run their last 900 s
    assert [r[f"b{i}"]["finish_s"] for i in range(8)] == pytest.approx([1000.0] * 4 + [1080.0] * 4)
    assert res.summary["mechanisms"]["reclaim_preemptions"] == 4
    assert res.summary["mechanisms"]["borrowed_starts"] == 8


@pytest.mark.parametrize(("quota", "borrow_limit", "a_start", "borrowed"), [
    ({"V100": 4}, None, 100.0, 1),  # within quota on V100 only: the free A100 is borrowed (step 2)
    ({"V100": 4}, 0, 1000.0, 0),  # ... and with no borrowing it waits for C's V100s
    (4, 0, 100.0, 0)])  # a total quota is type-agnostic: the free A100 is within quota
def test_quota_per_type_does_not_guarantee_other_types(quota: object, borrow_limit: int | None, a_start: float,
                                                      borrowed: int) -> None:
    # C (total quota 4, so never borrowing with 4 GPUs) fills the V100s at 0 (consolidated: server 0 first) with
    # four 1000 s jobs; A's one 50 s job arrives at 100 with the four A100s free. C is not borrowing on V100, so
    # nothing is reclaimed for A.
    c = _two_types({"A": {"quota": quota, "borrow_limit": borrow_limit}, "C": {"quota": 4}})
    jobs = [_job(f"c{i}", "C", 0.0, 1000.0) for i in range(4)] + [_job("a", "A", 100.0, 50.0)]
    pol = _Watched()
    res = ddlsched.simulate(jobs, c, pol)
    r = _by_id(res)
    assert all(set(pol.starts[f"c{i}"][0]) <= {0, 1, 2, 3} for i in range(4))
    assert r["a"]["first_start_s"] == pytest.approx(a_start)
    assert res.summary["mechanisms"]["borrowed_starts"] == borrowed
    assert res.summary["mechanisms"]["reclaim_preemptions"] == 0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=_jobs, qv=st.integers(0, 4), qk=st.integers(0, 4), reclaim=st.sampled_from(["never", "always"]))
def test_quota_per_type_without_borrowing_never_exceeds_a_type_quota(jobs: list, qv: int, qk: int,
                                                                      reclaim: str) -> None:
    quotas = {"A": {"V100": qv, "A100": qk}, "B": {"V100": 4 - qv, "A100": 4 - qk}}
    c = _two_types({t: {"quota": q, "borrow_limit": 0} for t, q in quotas.items()})
    specs = [_job(f"j{i}", u if u != "C" else "A", a, d, g) for i, (u, a, d, g) in enumerate(jobs)]
    specs = [s for s in specs if s.num_gpus <= max(quotas[s.user].values())]  # others could never start
    if not specs:
        return
    pol = _Watched(reclaim=reclaim)
    res = ddlsched.simulate(specs, c, pol)
    assert res.summary["jobs_completed"] == len(specs)
    for held in pol.held:
        for (t, kind), n in held.items():
            assert n <= quotas[t][kind], (t, kind, n)
    again = ddlsched.simulate(specs, c, _Watched(reclaim=reclaim))
    assert list(res.records.rows()) == list(again.records.rows())
