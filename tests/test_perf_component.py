"""The coupled-component search of the max-min and phased models expands each link once; it must return the jobs a
search expanding the link at every visit returns (docs/physics.md §4, "Speed")."""

from hypothesis import given, settings
from hypothesis import strategies as st

from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.perf import make_perf_model
from ddlsched.perf.base import PerfModel, Placement
from ddlsched.workload.profiles import ModelProfile

PROF = ModelProfile("m", grad_mb=100.0, compute_ms=50.0, batch_size=32, mem_mb=1000)


def cluster() -> Cluster:
    racks = [[ServerSpec(4, "V100", 10.0) for _ in range(3)] for _ in range(3)]
    return Cluster.build("t", racks, {"V100": GPUType("V100", 32768)}, oversubscription=3.0)


def naive(start: str, links_of, jobs_on, binding) -> list[str]:
    """Depth-first search expanding a link at every visit (the search before each link was expanded once)."""
    comp = {start}
    order = [start]
    stack = [start]
    while stack:
        j = stack.pop()
        for lid in links_of(j):
            if not binding(lid):
                continue
            for k in jobs_on(lid):
                if k not in comp:
                    comp.add(k)
                    order.append(k)
                    stack.append(k)
    return order


jobs_strategy = st.lists(st.lists(st.integers(0, 35), min_size=2, max_size=8, unique=True), min_size=2, max_size=14)


def placed(model: str, jobs: list[list[int]]) -> PerfModel:
    """The ``model`` on the test cluster with every job whose GPUs are still free placed, in order."""
    pm = make_perf_model(model, cluster())
    used: set[int] = set()
    for i, gpus in enumerate(jobs):
        if not used.intersection(gpus):
            used.update(gpus)
            pm.add(Placement(f"j{i}", tuple(gpus), PROF))
    return pm


@settings(max_examples=60, deadline=None)
@given(jobs=jobs_strategy)
def test_maxmin_component_matches_naive_search(jobs: list[list[int]]) -> None:
    pm = placed("maxmin", jobs)
    for jid in list(pm._job_links):
        want = naive(jid, lambda j: pm._job_links[j], lambda lid: pm._link_jobs[lid],
                     lambda lid: len(pm._link_jobs[lid]) > 1 and pm._binding(lid))
        assert pm._component(jid) == set(want)


@settings(max_examples=40, deadline=None)
@given(jobs=jobs_strategy)
def test_phased_component_matches_naive_search(jobs: list[list[int]]) -> None:
    pm = placed("phased", jobs)
    for jid in list(pm._jobs):
        want = naive(jid, lambda j: pm._jobs[j].use, lambda lid: pm._link_jobs[lid], pm._binding)
        assert pm._component(jid) == set(want)
