"""Max-min progressive filling (docs/physics.md §4): ``MaxMinLinkSharing.fill`` must give, bit for bit, the rates of
the plain formulation — headrooms and weights kept by link id, every live link scanned each round — including the
shortcut for a one-job component and the near-tie rule (a share within 1e-12 of the best does not replace it)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.perf import make_perf_model
from ddlsched.perf.base import Placement
from ddlsched.perf.maxmin import MaxMinLinkSharing
from ddlsched.workload.profiles import ModelProfile

PROF = ModelProfile("m", grad_mb=100.0, compute_ms=50.0, batch_size=32, mem_mb=1000)


def reference(pm: MaxMinLinkSharing, comp: set[str]) -> dict[str, float]:
    """Progressive filling as the docstring states it, with dictionaries keyed by link id."""
    weight: dict[int, float] = {}
    for j in comp:
        for lid, m in pm._job_links[j].items():
            weight[lid] = weight.get(lid, 0.0) + m
    remaining = {lid: pm._cap[lid] for lid in weight}
    live = dict.fromkeys(sorted(weight))
    active, rates, level = set(comp), {}, 0.0
    while active:
        best, bottleneck = math.inf, []
        for lid in live:
            share = remaining[lid] / weight[lid]
            if share < best * (1 - 1e-12):
                best, bottleneck = share, [lid]
            elif share <= best * (1 + 1e-12):
                bottleneck.append(lid)
        delta = max(best, 0.0)
        level += delta
        for lid in live:
            remaining[lid] -= weight[lid] * delta
        for j in sorted({j for lid in bottleneck for j in pm._link_jobs[lid] if j in active}):
            rates[j] = level
            active.discard(j)
            for lid, m in pm._job_links[j].items():
                weight[lid] -= m
                if weight[lid] <= 1e-12:
                    live.pop(lid, None)
    return rates


def cluster(oversub: float, nic: float) -> Cluster:
    racks = [[ServerSpec(4, "V100", nic) for _ in range(3)] for _ in range(3)]
    return Cluster.build("t", racks, {"V100": GPUType("V100", 32768)}, oversubscription=oversub)


jobs_strategy = st.lists(st.lists(st.integers(0, 35), min_size=2, max_size=8, unique=True), min_size=1, max_size=14)


@settings(max_examples=80, deadline=None)
@given(jobs=jobs_strategy, oversub=st.sampled_from([1.0, 2.0, 3.0, 4.5]), nic=st.sampled_from([10.0, 25.0, 40.0]),
       nudge=st.dictionaries(st.integers(0, 59), st.floats(-3e-12, 3e-12), max_size=30))
def test_fill_matches_the_plain_formulation(jobs: list[list[int]], oversub: float, nic: float,
                                            nudge: dict[int, float]) -> None:
    pm = make_perf_model("maxmin", cluster(oversub, nic))
    assert isinstance(pm, MaxMinLinkSharing)
    assert len(pm._cap) == 60  # 36 GPU links, 18 NIC links (tx, rx), 6 rack uplinks
    for lid, eps in nudge.items():  # capacities a hair apart: near-ties the 1e-12 rule must settle as before
        pm._cap[lid] *= 1 + eps
    used: set[int] = set()
    for i, gpus in enumerate(jobs):
        if not used.intersection(gpus):
            used.update(gpus)
            pm.add(Placement(f"j{i}", tuple(gpus), PROF))
    seen: set[str] = set()
    for jid in sorted(pm._job_links):
        if jid in seen:
            continue
        comp = pm._component(jid)
        seen |= comp
        got, want = pm.fill(comp), reference(pm, comp)
        assert got == want  # exact: the same float operations in the same order
        # the model keeps a rate that moved by ≤ 1e-9 (relative) since it was last set, so compare within that
        assert all(math.isclose(got[j], pm.rate(j), rel_tol=1e-9) for j in comp)


def test_one_job_component_takes_the_first_near_tie_in_link_order() -> None:
    pm = make_perf_model("maxmin", cluster(1.0, 10.0))
    assert isinstance(pm, MaxMinLinkSharing)
    gpus = (0, 4)  # two servers in one rack: NIC tx of server 0, NIC rx of server 1 (and intra-server links)
    hops = pm.cluster.ring_hops(gpus)
    nics = sorted({lid for hop in hops for lid in hop if pm._cap[lid] == min(pm._cap)})
    assert len(nics) >= 2
    pm._cap[nics[-1]] *= 1 - 5e-13  # strictly the smallest share, but within 1e-12 of the first one
    pm.add(Placement("a", gpus, PROF))
    assert pm.rate("a") == reference(pm, {"a"})["a"] == pm._cap[nics[0]]
    assert pm.rate("a") != min(pm._cap[lid] for lid in nics)  # `alone` (the true minimum) differs here
