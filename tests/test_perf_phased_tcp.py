"""``phased_tcp`` (docs/physics.md §15): phases + overlap + TCP-biased sharing in the fluid engine.

Hand-computed limits (γ = 0 is ``phased``; always-sending rings get the TCP rule's rates), and properties over
random placements: feasible mean link loads, positive rates, no job faster than alone, determinism, and an
incremental model that equals one built from scratch."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ddlsched.perf.phased_tcp as phased_tcp
from ddlsched.cluster.topology import GBIT, Cluster, GPUType, ServerSpec
from ddlsched.perf import PERF_MODELS, make_perf_model
from ddlsched.perf.base import Placement
from ddlsched.perf.phased_exact import phased_job
from ddlsched.perf.phased_tcp import GRID_PER_HOP, weighted_leave_one_out, weighted_loads
from ddlsched.workload.profiles import ModelProfile

C = 10 * GBIT
W2 = 2 ** -1.5


def two_racks() -> Cluster:
    """2 racks × 3 servers × 4 GPUs, 10 Gb/s NICs, 2:1 uplinks (so rack uplinks can bind too)."""
    s = ServerSpec(4, "V100", 10.0)
    return Cluster.build("t", [[s] * 3, [s] * 3], {"V100": GPUType("V100", 32768)}, oversubscription=2.0)


def prof(compute_ms: float, grad_mb: float = 100.0, overlap: float | None = None) -> ModelProfile:
    return ModelProfile("m", grad_mb=grad_mb, compute_ms=compute_ms, batch_size=32, mem_mb=1000, overlap=overlap)


def test_registered():
    assert PERF_MODELS["phased_tcp"].name == "phased_tcp"


def test_gamma_zero_is_phased():
    c = two_racks()
    g = c.server_gpus
    ps = [Placement("a", (g[0][0], g[1][0]), prof(40)), Placement("b", (g[0][1], g[1][1], g[2][1], g[3][1]), prof(90)),
          Placement("c", (g[1][2], g[4][2]), prof(10, overlap=0.3))]
    a, b = make_perf_model("phased", c), make_perf_model("phased_tcp", c, tcp_exponent=0.0)
    for p in ps:
        a.add(p)
        b.add(p)
    for p in ps:
        assert b._rate[p.job_id] == a._rate[p.job_id]


def test_always_sending_parking_lot_gets_the_tcp_rule():
    # compute 0: every ring sends all the time, so the fluid expectation is the all-sending allocation: the
    # 2-ring/4-ring case of docs/physics.md §12 (a = C·W/(1+W), b = C/(1+W), W = 2^−1.5; max-min: C/2 each)
    c = Cluster.build("t", [[ServerSpec(4, "V100", 10.0) for _ in range(4)]], {"V100": GPUType("V100", 32768)})
    g = c.server_gpus
    pm = make_perf_model("phased_tcp", c)
    pm.add(Placement("a", (g[0][0], g[1][0]), prof(0)))
    pm.add(Placement("b", (g[0][1], g[1][1], g[2][1], g[3][1]), prof(0)))
    assert pm._rate["a"] == pytest.approx(C * W2 / (1 + W2), rel=1e-9)
    assert pm._rate["b"] == pytest.approx(C / (1 + W2), rel=1e-9)


def test_weighted_loads_grid():
    assert weighted_loads([1, 1], [1.0, 1.0]) == [GRID_PER_HOP, GRID_PER_HOP]  # capped: 4 steps per hop
    assert weighted_loads([2, 1], [W2, 1.0]) == [5, 7]  # step (2·W2 + 1) / 12


def test_weighted_expectation_is_the_sum_over_every_state():
    import itertools

    loads, ds = [1.0, W2, 2 * W2, 0.5], [0.3, 0.9, 0.5, 1.0]
    got = weighted_leave_one_out(loads, ds)
    for k in range(len(loads)):
        want = 0.0
        for xs in itertools.product([0, 1], repeat=len(loads)):
            p = math.prod(d if x else 1 - d for i, (x, d) in enumerate(zip(xs, ds, strict=True)) if i != k)
            if xs[k]:
                others = sum(a * x for i, (a, x) in enumerate(zip(loads, xs, strict=True)) if i != k)
                want += p / (loads[k] + others)
        assert got[k] == pytest.approx(want, rel=1e-12)


def test_bad_parameters_are_refused():
    from ddlsched.errors import ConfigError

    with pytest.raises(ConfigError, match="tcp_own_queue"):
        make_perf_model("phased_tcp", two_racks(), tcp_own_queue=2.0)


jobs_st = st.lists(st.tuples(st.lists(st.integers(0, 5), min_size=2, max_size=4, unique=True),
                             st.integers(0, 3), st.floats(0, 400), st.floats(5, 200), st.sampled_from([0.0, 0.3])),
                   min_size=1, max_size=6)


def _placements(c: Cluster, spec) -> list[Placement]:
    out, used = [], set()
    for i, (servers, slot, comp, grad, om) in enumerate(spec):
        gpus = tuple(c.server_gpus[s][slot] for s in servers)
        if used & set(gpus):
            continue
        used |= set(gpus)
        out.append(Placement(f"j{i}", gpus, prof(comp, grad, om)))
    return out


@settings(max_examples=60, deadline=None)
@given(jobs_st, st.sampled_from([0.0, 1.0, 1.5, 3.0]), st.sampled_from([0.0, 0.7]), st.sampled_from([0, 8]))
def test_properties(spec, gamma, kappa, exact_max):
    phased_tcp.EXACT_MAX = exact_max  # 0: every link with unequal weights on the integer grid
    try:
        _check_properties(spec, gamma, kappa)
    finally:
        phased_tcp.EXACT_MAX = 8


def _check_properties(spec, gamma, kappa):
    c = two_racks()
    cap = [link.capacity_Bps for link in c.links]
    ps = _placements(c, spec)
    pm = make_perf_model("phased_tcp", c, tcp_exponent=gamma, tcp_own_queue=kappa)
    for p in ps:
        pm.add(p)
    load = [0.0] * len(cap)
    for p in ps:
        j = phased_job(c, p, cap, 0.0)
        r = pm._rate[p.job_id]
        assert r > 0 and math.isfinite(r)
        assert r <= j.alone_rate * (1 + 1e-9)  # contention never speeds a ring up
        t = pm.current(p.job_id)
        assert t.total_s >= pm.isolated(p).total_s * (1 - 1e-9)
        for lid, m in j.use.items():
            load[lid] += m * j.bytes_per_hop / t.total_s  # bytes/s the ring puts on the link, averaged
    for lid, x in enumerate(load):
        assert x <= cap[lid] * (1 + 1e-6), c.links[lid].name
    # determinism and incrementality: a fresh model with the same jobs gives the same floats; removing a job
    # gives what a model built without it gives
    again = make_perf_model("phased_tcp", c, tcp_exponent=gamma, tcp_own_queue=kappa)
    for p in ps:
        again.add(p)
    assert {p.job_id: again._rate[p.job_id] for p in ps} == {p.job_id: pm._rate[p.job_id] for p in ps}
    if len(ps) > 1:
        pm.remove(ps[0].job_id)
        fresh = make_perf_model("phased_tcp", c, tcp_exponent=gamma, tcp_own_queue=kappa)
        for p in ps[1:]:
            fresh.add(p)
        for p in ps[1:]:
            assert pm._rate[p.job_id] == pytest.approx(fresh._rate[p.job_id], rel=1e-7)
