"""``phased_tcp``'s phase locking (docs/physics.md §15, ``perf/phase_lock.py``): rings of equal period keep the
offset they started with for their first ``lock_iterations`` iterations, so with the caller's clock the model gives
the hand-computed steady states of §11 (opposite phases: no slow-down; aligned: both share every all-reduce; an
offset δ < m0: 2·m0 − δ each, without TCP's uneven split; with it aligned rings drift apart and opposite ones stay
opposite), and random phases once the lock has ended."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.errors import ConfigError
from ddlsched.perf import make_perf_model
from ddlsched.perf.base import Placement
from ddlsched.perf.phase_lock import (
    DEFAULT_SPLIT,
    LOCK_ITERATIONS,
    LOCK_MAX,
    SPLIT_DRAWS,
    equal_periods,
    locked_iterations,
)
from ddlsched.perf.phased_exact import phased_job
from ddlsched.testbed.predict import JobRun, replay
from ddlsched.workload.profiles import ModelProfile


def rack() -> Cluster:
    return Cluster.build("t", [[ServerSpec(4, "V100", 10.0) for _ in range(4)]], {"V100": GPUType("V100", 32768)})


def prof(compute_ms: float, grad_mb: float = 100.0) -> ModelProfile:
    return ModelProfile("m", grad_mb=grad_mb, compute_ms=compute_ms, batch_size=32, mem_mb=1000)


def ring(c: Cluster, k: int, compute_ms: float, grad_mb: float = 100.0, job: str = "") -> Placement:
    g = c.server_gpus
    return Placement(job or "abcd"[k], tuple(g[s][k] for s in range(4)), prof(compute_ms, grad_mb))


def m0_and_c_per_ms() -> tuple[float, float]:
    """The alone all-reduce of a 100 MB 4-ring on the rack, and seconds of compute per profile millisecond."""
    c = rack()
    t = make_perf_model("phased_tcp", c).isolated(ring(c, 0, 1000.0))
    return t.comm_s, t.compute_s / 1000.0


def pair(offset_s: float, clock: bool = True, lock: bool = True, b_compute: float | None = None,
         split: float = 0.0):
    """Two 4-rings on the same NICs, compute = alone all-reduce (duty ½); b starts ``offset_s`` after a; the
    uneven split ``split`` (0: the TCP rule's even shares, the hand-computed cases)."""
    m0, per_ms = m0_and_c_per_ms()
    c = rack()
    pm = make_perf_model("phased_tcp", c, phase_lock=lock, split_noise=split)
    cms = m0 / per_ms
    if clock:
        pm.advance(0.0)
    pm.add(ring(c, 0, cms))
    if clock:
        pm.advance(offset_s)
    pm.add(ring(c, 1, cms if b_compute is None else b_compute))
    return pm, m0


def test_opposite_phases_never_meet():
    pm, m0 = pair(offset_s=m0_and_c_per_ms()[0])  # b half an alone period (= m0) after a
    for k in "ab":
        assert pm.current(k).comm_s == pytest.approx(m0, rel=1e-9)


def test_aligned_rings_share_every_all_reduce():
    pm, m0 = pair(offset_s=0.0)
    for k in "ab":
        assert pm.current(k).comm_s == pytest.approx(2 * m0, rel=1e-9)


@pytest.mark.parametrize("frac", [0.1, 0.4, 0.8])
def test_an_offset_below_one_all_reduce_gives_two_m0_minus_it(frac):
    m0 = m0_and_c_per_ms()[0]
    pm, _ = pair(offset_s=frac * m0)
    for k in "ab":
        assert pm.current(k).comm_s == pytest.approx((2 - frac) * m0, rel=1e-9)


def test_without_the_clock_or_with_lock_off_phases_are_random():
    m0 = m0_and_c_per_ms()[0]
    free, _ = pair(offset_s=m0, clock=False)
    off, _ = pair(offset_s=m0, lock=False)
    for k in "ab":
        assert free._rate[k] == off._rate[k]
        # §11's fluid pair of duty ½: τ = √2·m0 for rings that share one link equally
        assert free.current(k).comm_s == pytest.approx(2 ** 0.5 * m0, rel=1e-6)


def test_unequal_periods_are_not_locked():
    m0, per_ms = m0_and_c_per_ms()
    locked, _ = pair(offset_s=m0, b_compute=2 * m0 / per_ms)
    free, _ = pair(offset_s=m0, lock=False, b_compute=2 * m0 / per_ms)
    assert locked._rate == free._rate


def test_the_offset_survives_a_third_job_leaving_and_the_clock_goes_forward_only():
    # a and b opposite, then c (another equal ring) joins and leaves: a, b locked again from their own offsets
    m0, per_ms = m0_and_c_per_ms()
    c = rack()
    pm = make_perf_model("phased_tcp", c)
    cms = m0 / per_ms
    pm.advance(0.0)
    pm.add(ring(c, 0, cms))
    pm.advance(m0)
    pm.add(ring(c, 1, cms))
    pm.advance(4 * m0)  # two periods on: still opposite
    pm.add(ring(c, 2, cms))
    pm.advance(4 * m0 + 2 * m0 * 0.37)
    pm.remove("c")
    assert pm.current("a").comm_s > m0  # c's stay shifted them: no longer exactly opposite, but still locked
    with pytest.raises(ValueError, match="time went back"):
        pm.advance(0.0)


def test_bad_phase_lock_is_refused():
    with pytest.raises(ConfigError, match="phase_lock"):
        make_perf_model("phased_tcp", rack(), phase_lock="yes")


def test_the_lock_ends_after_lock_iterations_then_phases_are_random():
    pm, m0 = pair(offset_s=0.0)  # aligned from t = 0: 2·m0 each, a period of 3·m0, while locked
    free, _ = pair(offset_s=0.0, lock=False)
    end = pm.next_change()
    assert end == pytest.approx(LOCK_ITERATIONS * 3 * m0, rel=1e-12)
    assert pm.advance(end * (1 - 1e-9)) == {}  # not yet
    assert pm.current("a").comm_s == pytest.approx(2 * m0, rel=1e-9)
    changed = pm.advance(end)
    assert sorted(changed) == ["a", "b"]
    for k in "ab":
        assert pm._rate[k] == free._rate[k]  # the random-phase fixed point, the same floats
        assert changed[k].comm_s == pytest.approx(2 ** 0.5 * m0, rel=1e-6)
    assert pm.next_change() == math.inf
    assert pm.advance(10 * end) == {}  # an ended lock stays ended while the component is unchanged


def test_a_change_after_the_lock_ended_locks_the_new_component():
    pm, m0 = pair(offset_s=0.0)
    c = rack()
    pm.advance(pm.next_change())
    assert pm.next_change() == math.inf
    t = 20 * m0
    pm.advance(t)
    pm.add(ring(c, 2, m0 / m0_and_c_per_ms()[1]))  # a third equal ring on the same NICs
    assert t < pm.next_change() < math.inf
    pm.advance(t + m0)
    pm.remove("c")  # back to a and b: locked again from their offsets then
    assert t + m0 < pm.next_change() < math.inf


def test_lock_iterations_is_a_parameter():
    m0 = m0_and_c_per_ms()[0]
    c = rack()
    pm = make_perf_model("phased_tcp", c, lock_iterations=2, split_noise=0)
    pm.advance(0.0)
    pm.add(ring(c, 0, m0 / m0_and_c_per_ms()[1]))
    pm.add(ring(c, 1, m0 / m0_and_c_per_ms()[1]))
    assert pm.next_change() == pytest.approx(2 * 3 * m0, rel=1e-12)
    assert pm.params()["lock_iterations"] == 2.0


@pytest.mark.parametrize("bad", [0, -1.0, True, "6"])
def test_bad_lock_iterations_is_refused(bad):
    with pytest.raises(ConfigError, match="lock_iterations"):
        make_perf_model("phased_tcp", rack(), lock_iterations=bad)


def test_replay_ends_the_lock_after_lock_iterations():
    # an aligned pair of 20 iterations: LOCK_ITERATIONS at the locked period 3·m0, the rest at random phases
    m0, per_ms = m0_and_c_per_ms()
    c = rack()
    g = c.server_gpus
    jobs = [JobRun(k, tuple(g[s][i] for s in range(4)), 100.0, 20, m0 / per_ms) for i, k in enumerate("ab")]
    pred = replay(make_perf_model("phased_tcp", c, split_noise=0), jobs)
    n = LOCK_ITERATIONS
    for k in "ab":
        assert pred[k].jct_s == pytest.approx(n * 3 * m0 + (20 - n) * (1 + 2 ** 0.5) * m0, rel=1e-6)
        assert pred[k].comm_s == pytest.approx((n * 2 * m0 + (20 - n) * 2 ** 0.5 * m0) / 20, rel=1e-6)


def test_the_split_pulls_aligned_rings_apart_and_leaves_opposite_ones():
    # TCP's uneven split (docs/physics.md §14) in the locked replay: aligned rings share less than every
    # all-reduce, more with a larger σ; opposite rings never meet, so their shares never matter
    m0 = m0_and_c_per_ms()[0]
    even, _ = pair(offset_s=0.0)
    default, _ = pair(offset_s=0.0, split=DEFAULT_SPLIT)
    wide, _ = pair(offset_s=0.0, split=0.3)
    again, _ = pair(offset_s=0.0, split=DEFAULT_SPLIT)
    for k in "ab":
        assert m0 < wide.current(k).comm_s < default.current(k).comm_s < even.current(k).comm_s
        assert default._rate[k] == again._rate[k]  # seeded draws: deterministic
    opposite, _ = pair(offset_s=m0, split=0.3)
    for k in "ab":
        assert opposite.current(k).comm_s == pytest.approx(m0, rel=1e-9)
    assert make_perf_model("phased_tcp", rack()).params()["split_noise"] == DEFAULT_SPLIT


def test_the_split_is_the_mean_of_seeded_draws():
    c = rack()
    cap = [link.capacity_Bps for link in c.links]
    jobs = [phased_job(c, ring(c, k, 50.0), cap, 0.0) for k in (0, 1)]
    waits = {"a": 0.0, "b": 0.0}
    one = locked_iterations(jobs, cap, waits, 1.5, 0.0, 0.2, draws=1)
    many = locked_iterations(jobs, cap, waits, 1.5, 0.0, 0.2)
    assert locked_iterations(jobs, cap, waits, 1.5, 0.0, 0.2) == many
    assert one != many and SPLIT_DRAWS > 1
    assert locked_iterations(jobs, cap, waits, 1.5, 0.0, 0.0) == locked_iterations(jobs, cap, waits, 1.5, 0.0)


@pytest.mark.parametrize("bad", [-0.1, math.nan, math.inf, True, "0.1"])
def test_bad_split_noise_is_refused(bad):
    with pytest.raises(ConfigError, match="split_noise"):
        make_perf_model("phased_tcp", rack(), split_noise=bad)


def test_equal_periods_and_group_size():
    c = rack()
    cap = [link.capacity_Bps for link in c.links]
    a, b = (phased_job(c, ring(c, k, 50.0), cap, 0.0) for k in (0, 1))
    assert equal_periods([a, b])
    assert not equal_periods([a, phased_job(c, ring(c, 1, 60.0), cap, 0.0)])
    assert LOCK_MAX >= 2


def test_testbed_replay_gives_the_clock():
    # the validation suite's offset0.5 shape: the replay tells the model each event's time, so it locks
    m0, per_ms = m0_and_c_per_ms()
    c = rack()
    g = c.server_gpus
    jobs = [JobRun("a", tuple(g[s][0] for s in range(4)), 100.0, 6, m0 / per_ms),
            JobRun("b", tuple(g[s][1] for s in range(4)), 100.0, 6, m0 / per_ms, start_s=m0)]
    locked = replay(make_perf_model("phased_tcp", c), jobs)
    free = replay(make_perf_model("phased_tcp", c, phase_lock=False), jobs)
    assert locked["b"].comm_s == pytest.approx(m0, rel=1e-6)
    assert free["b"].comm_s > 1.2 * m0


# equal rings are what locking is for: few shapes, so random cases often hold 2–4 rings of equal period
lock_jobs_st = st.lists(st.tuples(st.sampled_from([(0, 1), (0, 1, 2, 3), (2, 3), (1, 2)]), st.integers(0, 3),
                                  st.sampled_from([0.0, 50.0, 150.0]), st.floats(0.0, 2.0)),
                        min_size=2, max_size=6)


@settings(max_examples=40, deadline=None)
@given(lock_jobs_st, st.booleans())
def test_clocked_properties(spec, leave):
    """With the clock: positive rates, never faster than alone, every link's mean load within its capacity, the
    same floats from a second model, and removing a job leaves every other job finite and not faster than alone."""
    c = rack()

    def build():
        pm = make_perf_model("phased_tcp", c)
        now, used, ps = 0.0, set(), []
        for i, (servers, slot, comp, gap) in enumerate(spec):
            gpus = tuple(c.server_gpus[s][slot] for s in servers)
            if used & set(gpus):
                continue
            used |= set(gpus)
            now += gap
            pm.advance(now)
            p = Placement(f"j{i}", gpus, prof(comp, 50.0))
            pm.add(p)
            ps.append(p)
        return pm, ps, now

    pm, ps, now = build()
    again, _, _ = build()
    assert again._rate == pm._rate
    cap = [link.capacity_Bps for link in c.links]
    load = [0.0] * len(cap)
    for p in ps:
        r = pm._rate[p.job_id]
        assert r > 0 and math.isfinite(r)
        t = pm.current(p.job_id)
        assert t.total_s >= pm.isolated(p).total_s * (1 - 1e-9)
        j = phased_job(c, p, cap, 0.0)
        for lid, m in j.use.items():
            load[lid] += m * j.bytes_per_hop / t.total_s  # the ring's mean bytes/s on the link
    for lid, x in enumerate(load):
        assert x <= cap[lid] * (1 + 1e-6), c.links[lid].name
    end = pm.next_change()
    assert end > now
    if end < math.inf:  # the locks that end: every time stays finite and not faster than alone
        pm.advance(end)
        assert pm.next_change() > end
        for p in ps:
            assert pm.current(p.job_id).total_s >= pm.isolated(p).total_s * (1 - 1e-9)
        now = end
    if leave and len(ps) > 1:
        pm.advance(now + 0.3)
        pm.remove(ps[0].job_id)
        for p in ps[1:]:
            t = pm.current(p.job_id).total_s
            assert math.isfinite(t) and t >= pm.isolated(p).total_s * (1 - 1e-9)


def test_rings_with_nothing_to_send_or_compute_do_not_break_the_clock():
    c = rack()
    pm = make_perf_model("phased_tcp", c)
    pm.advance(0.0)
    pm.add(ring(c, 0, 0.0, grad_mb=0.0))
    pm.advance(1.0)
    pm.add(ring(c, 1, 0.0, grad_mb=0.0))
    pm.advance(2.0)
    pm.remove("a")
    assert math.isfinite(pm.current("b").total_s)
