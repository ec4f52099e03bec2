"""The preemptive pass's memo of failed attempts (``OrderedPolicy._preemptive``, docs/policies/baselines.md "What a
pass costs") skips only placement calls whose answer is known to be "no room": with it on or off, every pass
makes the same decisions, so runs give the same records. Checked on random small clusters and queues for the
placements that declare a key, and on a Philly slice where the memo skips thousands of calls."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ddlsched
from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.engine import SimConfig, run_simulation
from ddlsched.policies import make_policy
from ddlsched.policies.baselines import OrderedPolicy, keys_its_answers
from ddlsched.policies.placement import Consolidated, RandomPlacement
from ddlsched.workload import JobSpec
from ddlsched.workload.profiles import default_catalog

PHILLY = Path(__file__).resolve().parents[1] / "data/traces/philly_pollux/philly.csv"
MODELS = ["resnet50", "vgg16", "bert", "lstm"]
POLICIES = ["hindsight", "tiresias+consolidated", "srtf+consolidated", "tiresias+first_fit", "srtf+pack",
            "tiresias+least_loaded", "tiresias-cc"]
TYPES = {"V100": GPUType("V100", 32768, 1.0), "K80": GPUType("K80", 12288, 0.25)}


def _with_decisions(policy: OrderedPolicy, memo: bool) -> tuple[OrderedPolicy, list[Any]]:
    """``policy`` with the memo on or off, and the list its passes' decisions are appended to."""
    policy.memo = memo
    seen: list[Any] = []
    inner = policy.schedule

    def spy(view: Any) -> Any:
        out = inner(view)
        seen.append((view.now, [repr(d) for d in out]))
        return out

    policy.schedule = spy  # type: ignore[method-assign]
    return policy, seen


@st.composite
def workloads(draw: st.DrawFn) -> list[JobSpec]:
    n = draw(st.integers(1, 40))
    jobs = []
    for i in range(n):
        gpus = draw(st.sampled_from([1, 1, 2, 2, 3, 4, 6, 8, 16]))
        secs = draw(st.sampled_from([60.0, 600.0, 3600.0, 36000.0]))
        jobs.append(JobSpec(f"j{i}", draw(st.floats(0, 5000, allow_nan=False)), gpus, draw(st.sampled_from(MODELS)),
                            duration_s=secs * draw(st.floats(0.5, 2.0)), user=draw(st.sampled_from(["a", "b"]))))
    return jobs


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=workloads(), name=st.sampled_from(POLICIES), racks=st.integers(1, 2), servers=st.integers(1, 3),
       per_server=st.sampled_from([4, 8]), hetero=st.booleans(), seed=st.integers(0, 2))
def test_memo_on_and_off_make_the_same_decisions(jobs: list[JobSpec], name: str, racks: int, servers: int,
                                                 per_server: int, hetero: bool, seed: int) -> None:
    if hetero:  # two GPU types: hindsight's placement keys on the model too
        cluster = Cluster.build("het", [[ServerSpec(per_server, t, 10.0) for t in ("K80", "V100")[:servers]]
                                        for _ in range(racks)], TYPES)
    else:
        cluster = ddlsched.build_cluster(racks=racks, servers_per_rack=servers, gpus_per_server=per_server)
    runs = []
    for memo in (False, True):
        policy, seen = _with_decisions(make_policy(name), memo)
        r = run_simulation(cluster, jobs, policy, SimConfig(audit=True, seed=seed), catalog=default_catalog())
        runs.append((seen, r.records, r.mechanisms, len(r.rejected), len(r.unfinished)))
    assert runs[0][0] or runs[0][3] == len(jobs), "the spy saw no pass"  # none if every job can never fit
    assert runs[0] == runs[1]


def test_memo_skips_calls_on_a_philly_slice_and_changes_nothing() -> None:
    results = []
    skips = {}
    for name in ("hindsight", "tiresias+consolidated"):
        for memo in (False, True):
            policy, seen = _with_decisions(make_policy(name), memo)
            r = ddlsched.simulate(PHILLY, "philly512", policy, max_jobs=1500, load_scale=4.0, timeseries=False)
            results.append((name, memo, seen, r.records))
            skips[(name, memo)] = policy.memo_skips
    for off, on in ((results[0], results[1]), (results[2], results[3])):
        assert len(off[2]) > 1000, "the spy saw too few passes"
        assert off[2] == on[2] and off[3] == on[3], f"{off[0]}: the memo changed a decision"
    assert skips[("hindsight", False)] == skips[("tiresias+consolidated", False)] == 0
    assert skips[("hindsight", True)] > 1000 and skips[("tiresias+consolidated", True)] > 1000


def test_only_a_key_declared_with_the_answer_is_trusted() -> None:
    class Overrides(Consolidated):  # a new answer, the parent's key: not trusted
        def place(self, job: Any, alloc: Any, view: Any) -> Any:
            return super().place(job, alloc, view)

    class Declares(Overrides):
        def memo_key(self, job: Any, view: Any) -> Any:
            return (job.num_gpus, job.mem_mb)

    class Inherits(Consolidated):  # the same answer: the key holds
        pass

    assert keys_its_answers(Consolidated()) and keys_its_answers(Inherits()) and keys_its_answers(Declares())
    assert not keys_its_answers(Overrides())
    assert not keys_its_answers(RandomPlacement())  # a random draw: the base's "no key"
