"""Non-clairvoyance is enforced: a policy that does not declare ``Requirements(clairvoyant=True)`` gets a
ClairvoyanceError when it reads a job's duration from the fluid view, and every registered fluid policy runs with the
flag it declares (so a policy that reads durations without declaring it fails here)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

import ddlsched
from ddlsched.engine.decisions import Decision, Start
from ddlsched.engine.model import Requirements
from ddlsched.engine.view import SchedulerView
from ddlsched.errors import ClairvoyanceError
from ddlsched.policies import make_policy
from ddlsched.policies.placement import FirstFit
from ddlsched.policies.registry import clairvoyant, policy_rows
from ddlsched.workload import JobSpec

SMALL = ddlsched.build_cluster(racks=2, servers_per_rack=2, gpus_per_server=4)  # 16 GPUs: queues, preemptions
# sizes from minutes to hours, arriving faster than they finish: Tiresias-style thresholds are crossed, jobs preempted
JOBS = [JobSpec(f"j{i}", 300.0 * i, 1 + (i % 3 == 0) * 3 + (i % 7 == 0) * 4, ("resnet50", "vgg16", "bert")[i % 3],
                iterations=3000.0 * (1 + (i * 7) % 13) ** 2, user=f"u{i % 2}") for i in range(40)]


class _Peek(ddlsched.Policy):
    """FIFO that reads one attribute of every queued job first."""

    name = "peek-test"

    def __init__(self, attr: str, clairvoyant: bool) -> None:
        self.attr = attr
        self.requirements = Requirements(clairvoyant=clairvoyant)

    def schedule(self, view: SchedulerView) -> Sequence[Decision]:
        out: list[Decision] = []
        alloc = view.allocation()
        for job in view.pending:
            getattr(job, self.attr)
            _ = (job.num_gpus, job.user, job.model_name, job.attained_gpu_s, job.executed_s)  # always allowed
            gpus = FirstFit().place(job, alloc, view)
            if gpus is not None:
                alloc.take(gpus)
                out.append(Start(job.job_id, tuple(gpus)))
        return out


@pytest.mark.parametrize("attr", ["total_iters", "ideal_run_s", "remaining_iters", "remaining_ideal_s",
                                  "done_iters", "spec"])
def test_a_non_clairvoyant_policy_that_peeks_gets_the_error(attr: str) -> None:
    with pytest.raises(ClairvoyanceError, match=f"read '{attr}'.*not clairvoyant"):
        ddlsched.simulate(JOBS, SMALL, _Peek(attr, clairvoyant=False))
    r = ddlsched.simulate(JOBS, SMALL, _Peek(attr, clairvoyant=True))  # declared: allowed
    assert r.summary["jobs_completed"] == len(JOBS)


def test_every_policy_declares_the_flag_and_shows_it() -> None:
    rows = policy_rows()
    assert all(row[4] in ("yes", "no") for row in rows)
    flags = {row[0]: row[4] for row in rows}
    for name in ("sjf+consolidated", "srtf+first_fit", "sjf-bsbf", "sjf-bco", "hare-offline", "srtf-het"):
        assert flags[name] == "yes", name
    for name in ("fifo+consolidated", "tiresias+consolidated", "hlas", "gavel-fifo", "hindsight"):
        assert flags[name] == "no", name
    assert clairvoyant("hindsight", {"oracle": True}) is True
    assert clairvoyant("no-such-policy") is None


FLUID = [row[0] for row in policy_rows() if row[1] == "fluid"]


@pytest.mark.parametrize("name", FLUID)
def test_every_fluid_policy_runs_with_its_declared_flag(name: str) -> None:
    """A fluid policy declared non-clairvoyant that reads a duration anywhere in its passes raises here."""
    policy = make_policy(name)
    r = ddlsched.simulate(JOBS, SMALL, policy)
    assert r.summary["jobs_completed"] == len(JOBS)
