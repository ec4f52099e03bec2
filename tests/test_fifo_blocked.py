"""Strict FIFO skips the pass while its blocked head and the free GPUs are unchanged (policies/baselines.py,
docs/policies/baselines.md "What a pass costs"): the same records as asking every time, with fewer placements."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ddlsched.cluster import load_cluster
from ddlsched.engine import SimConfig, run_simulation
from ddlsched.policies import make_policy
from ddlsched.policies.baselines import OrderedPolicy, answers_from_free_gpus
from ddlsched.policies.placement import Consolidated, RandomPlacement
from ddlsched.workload.synthetic import philly_mix


def counting(free_only: bool) -> Consolidated:
    """Consolidated placement that counts its answers, declaring ``free_only`` as given."""

    class Counting(Consolidated):
        asked = 0

        def place(self, job, alloc, view):  # type: ignore[no-untyped-def]
            self.asked += 1
            return super().place(job, alloc, view)

    Counting.free_only = free_only  # type: ignore[misc]
    return Counting()


def _fifo(placement: Consolidated) -> OrderedPolicy:
    return OrderedPolicy(make_policy("fifo+consolidated").ordering, placement, backfill=False,
                         name="fifo+consolidated")


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), rate=st.sampled_from([1 / 2, 1 / 5, 1 / 60]))
def test_skipping_a_blocked_head_changes_no_record(seed: int, rate: float) -> None:
    jobs = philly_mix(150, seed=seed, rate_per_s=rate).jobs
    cluster = load_cluster("rack256")
    memo, plain = counting(free_only=True), counting(free_only=False)
    a = run_simulation(cluster, jobs, _fifo(memo), SimConfig())
    b = run_simulation(cluster, jobs, _fifo(plain), SimConfig())
    assert list(a.records.rows()) == list(b.records.rows())
    assert a.timeseries == b.timeseries and a.mechanisms == b.mechanisms
    assert memo.asked <= plain.asked


def test_a_loaded_queue_asks_the_placement_less() -> None:
    jobs = philly_mix(400, seed=1, rate_per_s=1 / 2).jobs  # overloaded: the head waits for a tight slot
    cluster = load_cluster("rack256")
    memo, plain = counting(free_only=True), counting(free_only=False)
    a = run_simulation(cluster, jobs, _fifo(memo), SimConfig())
    b = run_simulation(cluster, jobs, _fifo(plain), SimConfig())
    assert list(a.records.rows()) == list(b.records.rows())
    assert memo.asked < 0.8 * plain.asked


def test_only_placements_that_answer_from_the_free_gpus_are_skipped() -> None:
    assert answers_from_free_gpus(Consolidated()) and not answers_from_free_gpus(RandomPlacement())
    assert not answers_from_free_gpus(make_policy("fifo+random").placement)

    class Overrides(Consolidated):  # a new answer without a new declaration: not trusted
        def place(self, job, alloc, view):  # type: ignore[no-untyped-def]
            return None

    class Inherits(Consolidated):  # the same answer: the declaration holds
        pass

    assert not answers_from_free_gpus(Overrides()) and answers_from_free_gpus(Inherits())
