"""The rounds model keeps its views incrementally (docs/engine.md, "Rounds model: incremental bookkeeping"): at every
pass of a run each one must equal its definition by a full rescan of the model's per-GPU and per-job state. Runs on
a four-type cluster, so the per-type views, the heterogeneity guard and the gang leases with preemptions are all
exercised."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import ddlsched
from ddlsched.engine.rounds import RoundsView
from ddlsched.policies import make_policy

PHILLY = Path(__file__).resolve().parents[1] / "data/traces/philly_pollux/philly.csv"


def _check(view: RoundsView) -> None:
    m = view._m
    c = m.cluster
    G = range(c.num_gpus)
    idle = [g for g in G if m.gpu_job[g] is None and m.gpu_lease[g] is None]
    assert view.idle_gpus() == idle and view.idle_count() == len(idle)
    assert view.idle_by_type() == {t: [g for g in idle if c.gpu_type[g] == t] for t in c.gpu_types}
    free: dict[str, list[float]] = {t: [] for t in c.gpu_types}
    for g in G:
        if m.gpu_lease[g] is None:
            free[c.gpu_type[g]].append(m.gpu_until[g] if m.gpu_job[g] is not None else m.ctx.now)
    assert view.free_times() == {t: sorted(v) for t, v in free.items()}
    active = [j for j in m.jobs.values() if j.arrived and not j.done]
    assert [v.job_id for v in view.jobs] == [j.job_id for j in active]
    assert [v.job_id for v in view.ready_jobs] == [j.job_id for j in active if j.ready > 0]
    running = sum(1 for j in active if j.active)
    assert m.counts() == (len(active) - running, running)
    assert view.running_gpus() == {g for g in G if m.gpu_job[g] is not None}
    for v in view.jobs:
        assert v.running_gpus == tuple(g for g in G if m.gpu_job[g] == v.job_id)
        assert view.last_ran(v) == [g for g in G if m.gpu_last[g] == v.job_id]
    assert view.finished_count == sum(1 for j in m.jobs.values() if j.done)
    freed, mark = view.freed_since(len(m.freed))
    assert freed == [] and mark == len(m.freed)


@pytest.mark.parametrize("name", ["hlas", "hare-offline", "hare-gang", "gavel-het", "gavel-fifo",
                                  "sched-homo", "hare-alg1", "allox"])
def test_incremental_views_match_a_full_rescan(name: str) -> None:
    policy = make_policy(name)
    inner = policy.schedule
    passes = [0]

    def checked(view: Any) -> Any:
        _check(view)
        passes[0] += 1
        return inner(view)

    policy.schedule = checked  # type: ignore[method-assign]
    r = ddlsched.simulate(PHILLY, "hetero", policy, max_jobs=24, load_scale=20.0, timeseries=False)
    assert passes[0] > 100
    assert len(r.records) + len(r.rejected) == 24 and not r.unfinished
