"""Crash recovery with the real live loop (sim executor), in process: a job the store holds as running (its service
was killed) is restarted from its checkpoint and recorded as a restart; a graceful stop leaves running jobs open
(checkpointed) and the next start finishes them; a cancel request stored before the crash ends the job cancelled."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from service_helpers import wait_for

pytest.importorskip("ddlsched.live.run", reason="needs the live loop (issue-live)")


def _scheduler(store: Any, scale: float = 1000.0) -> Any:
    from ddlsched.api import load_cluster
    from ddlsched.engine.run import default_catalog
    from ddlsched.policies.registry import make_policy
    from ddlsched.service.scheduler import Scheduler, live_run_factory

    cl, cat = load_cluster("wang2020"), default_catalog()
    return Scheduler(store, cl, make_policy("fifo"), live_run_factory(cl, "sim", time_scale=scale, catalog=cat),
                     catalog=cat, time_scale=scale)


def _job(i: str, **kw: Any) -> dict[str, Any]:
    return {"id": i, "name": i, "tenant": "alice", "num_gpus": 4, "model": "resnet50", "entrypoint": None,
            "iterations": 4000.0, "duration_s": None, "priority": 1.0, **kw}


def test_running_job_of_a_dead_service_restarts_from_its_checkpoint(tmp_path: Path) -> None:
    from ddlsched.service.store import JobStore

    store = JobStore(str(tmp_path / "a.db"))
    try:
        # what a killed service left: r1 running (checkpointed at 1000 iterations in attempt 1, relaunched as 2),
        # q1 queued, c1 running with a cancel request
        store.submit(_job("r1"))
        store.record("r1", "started", {"gpus": [0, 1, 2, 3], "attempt": 1})
        store.record("r1", "preempted", {"iterations": 1000.0})
        store.record("r1", "started", {"gpus": [4, 5, 6, 7], "attempt": 2})
        store.submit(_job("q1"))
        store.submit(_job("c1"))
        store.record("c1", "started", {"gpus": [8], "attempt": 1})
        store.record("c1", "cancel_requested", {"by": "alice"})
        sched = _scheduler(store)
        try:
            rec = sched.start()
            assert rec.restarted == ["r1"] and rec.requeued == ["q1"] and rec.cancelled == ["c1"]
            wait_for(lambda: store.counts()["completed"] == 2, timeout_s=30)
        finally:
            sched.stop()
        r1 = store.get("r1")
        assert r1["state"] == "completed" and r1["restarts"] == 1 and r1["attempts"] == 3
        evs = store.events("r1")
        rec_ev = next(e for e in evs if e["kind"] == "recovered")
        assert rec_ev["detail"] == {"was": "running", "from_iterations": 1000.0, "attempts": 2}
        starts = [e for e in evs if e["kind"] == "started"]
        assert starts[-1]["detail"]["attempt"] == 3 and starts[-1]["detail"]["iterations"] == pytest.approx(1000.0)
        assert store.get("q1")["restarts"] == 0 and store.get("c1")["state"] == "cancelled"
    finally:
        store.close()


def test_graceful_stop_keeps_running_jobs_and_the_next_start_finishes_them(tmp_path: Path) -> None:
    from ddlsched.service.store import JobStore

    store = JobStore(str(tmp_path / "a.db"))
    try:
        sched = _scheduler(store, scale=20.0)
        try:
            sched.start()
            store.submit(_job("long", iterations=50_000.0))
            sched.submit(store.get("long"))
            wait_for(lambda: store.get("long")["state"] == "running", timeout_s=20)
        finally:
            sched.stop()
        row = store.get("long")
        assert row["state"] == "queued", row  # not cancelled: it resumes at the next start
        assert [e["kind"] for e in store.events("long")][-1] == "preempted"
        sched = _scheduler(store, scale=1e5)
        try:
            rec = sched.start()
            assert rec.requeued == ["long"]
            wait_for(lambda: store.get("long")["state"] == "completed", timeout_s=30)
        finally:
            sched.stop()
    finally:
        store.close()
