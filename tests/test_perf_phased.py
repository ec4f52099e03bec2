"""Phase-aware contention (issue 14, item 1): the exact phase simulation on hand-computed cases, the fluid
``phased`` model's closed form, and the approximation against the exact mode on random scenarios."""

import itertools
import math
import random
import statistics

import pytest

from ddlsched.cluster.topology import GBIT, Cluster, GPUType, ServerSpec
from ddlsched.perf import PERF_MODELS, make_perf_model
from ddlsched.perf.base import Placement
from ddlsched.perf.phased import expected_inverse, leave_one_out_inverse
from ddlsched.perf.phased_check import campaign
from ddlsched.perf.phased_exact import phased_job, simulate_phases
from ddlsched.workload.profiles import ModelProfile

M0 = 2 * 3 / 4 * 100e6 / (10 * GBIT)  # a 4-worker ring of a 100 MB gradient over 10 Gb/s NICs: 0.12 s


def four_by_four() -> Cluster:
    return Cluster.build("t", [[ServerSpec(4, "V100", 10.0) for _ in range(4)]], {"V100": GPUType("V100", 32768)})


def prof(compute_s: float, overlap: float | None = None) -> ModelProfile:
    return ModelProfile("m", grad_mb=100.0, compute_ms=compute_s * 1e3, batch_size=32, mem_mb=1000, overlap=overlap)


def spread(c: Cluster, slot: int, p: ModelProfile, jid: str) -> Placement:
    return Placement(jid, tuple(c.server_gpus[s][slot] for s in range(4)), p)


def caps(c: Cluster) -> list[float]:
    return [link.capacity_Bps for link in c.links]


def test_registered():
    assert PERF_MODELS["phased"].name == "phased"


def test_exact_two_jobs_duty_half_opposite_vs_aligned():
    # c = m0: duty cycle ½ alone. Opposite phases (b starts m0 later): each communicates while the other computes,
    # no slow-down (iteration 2·m0). Aligned: they always share the NICs, communication takes 2·m0, iteration
    # 3·m0 = 1.5 × alone.
    c = four_by_four()
    jobs = [phased_job(c, spread(c, s, prof(M0), j), caps(c), 0.0) for s, j in ((0, "a"), (1, "b"))]
    opposite = simulate_phases(jobs, caps(c), {"b": M0})
    aligned = simulate_phases(jobs, caps(c), {})
    for j in "ab":
        assert opposite[j] == pytest.approx(2 * M0, rel=1e-9)
        assert aligned[j] == pytest.approx(3 * M0, rel=1e-9)
    # a partial offset δ keeps its overlap: both communication phases last 2·m0 − δ
    quarter = simulate_phases(jobs, caps(c), {"b": M0 / 4})
    assert quarter["a"] == pytest.approx(M0 + 2 * M0 - M0 / 4, rel=1e-9)


def test_exact_overlap_hides_part_of_the_allreduce():
    c = four_by_four()
    j = phased_job(c, spread(c, 0, prof(M0, overlap=0.5), "a"), caps(c), 0.0)
    assert j.hidden_s == pytest.approx(0.5 * M0)
    assert simulate_phases([j], caps(c))["a"] == pytest.approx(M0 + 0.5 * M0)
    pm = make_perf_model("phased", c)
    t = pm.add(spread(c, 0, prof(M0, overlap=0.5), "a"))["a"]
    assert (t.compute_s, t.comm_s) == pytest.approx((M0, 0.5 * M0))
    # the model's default overlap applies to profiles without one
    t2 = make_perf_model("phased", c, overlap=0.25).add(spread(c, 0, prof(M0), "a"))["a"]
    assert t2.comm_s == pytest.approx(0.75 * M0)


def test_fluid_two_jobs_closed_form():
    # independent phases: τ = m0 / (1 − d/2) with d = τ / (c + τ); c = m0 gives τ² = 2 m0², τ = √2 · m0
    c = four_by_four()
    pm = make_perf_model("phased", c)
    a = pm.add(spread(c, 0, prof(M0), "a"))["a"]
    assert a.total_s == pytest.approx(2 * M0)
    changed = pm.add(spread(c, 1, prof(M0), "b"))
    assert set(changed) == {"a", "b"}
    for j in "ab":
        assert changed[j].comm_s == pytest.approx(math.sqrt(2) * M0, rel=1e-7)
    # between opposite (2 m0) and aligned (3 m0); maxmin (always sharing) says aligned
    mm = make_perf_model("maxmin", c)
    mm.add(spread(c, 0, prof(M0), "a"))
    assert mm.add(spread(c, 1, prof(M0), "b"))["b"].total_s == pytest.approx(3 * M0)
    back = pm.remove("b")
    assert back["a"].total_s == pytest.approx(2 * M0)


def test_fluid_tends_to_maxmin_when_always_communicating_and_ignores_packed_jobs():
    c = four_by_four()
    pm = make_perf_model("phased", c)
    mm = make_perf_model("maxmin", c)
    for m in (pm, mm):
        m.add(spread(c, 0, prof(1e-6), "a"))
        m.add(spread(c, 1, prof(1e-6), "b"))
    assert pm.current("a").comm_s == pytest.approx(mm.current("a").comm_s, rel=1e-4)
    packed = pm.add(Placement("p", c.server_gpus[0][2:4], prof(M0)))
    assert set(packed) == {"p"}
    assert pm.add(Placement("one", (c.server_gpus[1][3],), prof(M0)))["one"].comm_s == 0.0


def test_expected_inverse_matches_enumeration():
    rng = random.Random(3)
    others = [(rng.choice([1.0, 2.0]), rng.random()) for _ in range(6)]
    brute = 0.0
    for xs in itertools.product((0, 1), repeat=len(others)):
        p = math.prod(d if x else 1 - d for (_, d), x in zip(others, xs, strict=True))
        brute += p / (1.0 + sum(m * x for (m, _), x in zip(others, xs, strict=True)))
    assert expected_inverse(1.0, others) == pytest.approx(brute, rel=1e-12)
    many = [(1.0, 0.3)] * 40
    exact = sum(math.comb(40, k) * 0.3 ** k * 0.7 ** (40 - k) / (1 + k) for k in range(41))
    assert expected_inverse(1.0, many) == pytest.approx(exact, rel=1e-12)


def test_leave_one_out_matches_the_reference():
    rng = random.Random(5)
    for n in (1, 2, 5, 30):
        ms = [rng.choice([1, 1, 2, 3]) for _ in range(n)]
        ds = [rng.choice([0.0, 0.5, 1.0, rng.random(), rng.random()]) for _ in range(n)]
        fast = leave_one_out_inverse(ms, ds)
        for k in range(n):
            others = [(float(ms[i]), ds[i]) for i in range(n) if i != k]
            assert fast[k] == pytest.approx(expected_inverse(float(ms[k]), others), rel=1e-9)


def test_fluid_against_exact_on_random_scenarios():
    # the small version of benchmarks/phased_error.py (200 scenarios: median 2.2 %, worst 16.8 %)
    errs = campaign(15, seed=7, draws=3, iterations=30, warmup=6)
    rel = [abs(e.rel_err) for e in errs]
    assert len(rel) >= 30
    assert statistics.median(rel) <= 0.05
    assert statistics.median(abs(e.maxmin_rel_err) for e in errs) > statistics.median(rel)
