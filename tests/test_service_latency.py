"""What keeps a submission's wait short (issue 29): no WAL checkpoint inside a writer's commit (a background
checkpointer, whose WAL still starts again), submission batches ahead of the loop's changes at the store's lock, the
loop's changes in short transactions, and the timing a slow request can be explained with (``Server-Timing``, the
slow-operation log)."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from ddlsched.service import scheduler as scheduler_mod
from ddlsched.service.app import TIMING_PARTS
from ddlsched.service.store import WAL_RESET_FRAMES, JobStore, WriteLock
from ddlsched.service.timing import SlowLog
from service_helpers import ADMIN, ALICE, auth, fake_service, job, wait_for


def rows(start: int, n: int) -> list[dict[str, Any]]:
    return [{"id": f"j{i}", "name": "x" * 150, "tenant": "alice", "num_gpus": 1, "model": "resnet50",
             "entrypoint": "y" * 1500, "iterations": 10.0, "duration_s": None, "priority": 1.0}
            for i in range(start, start + n)]


def test_writers_never_checkpoint_and_the_checkpointer_restarts_the_wal(tmp_path: Path) -> None:
    s = JobStore(str(tmp_path / "a.db"), wal_checkpoint_every_s=3600)  # the thread waits: cycles run by hand here
    try:
        with s.engine.connect() as c:
            assert c.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 0
        s.slow.threshold_s = 0.0  # keep every operation
        cp = s._checkpointer
        assert cp is not None
        wal = tmp_path / "a.db-wal"
        n = 0
        while (wal.stat().st_size - 32) // (4096 + 24) < WAL_RESET_FRAMES:  # WAL pages: header + frames
            s.submit_many(rows(n, 50))
            n += 50
        cp.cycle()  # a checkpoint, then (the WAL is large) one with the writers held: every page is copied
        assert [op["what"] for op in s.slow.entries() if op["what"].startswith("checkpoint")] == [
            "checkpoint", "checkpoint (writers held)"]
        s.submit_many(rows(n, 1))  # this writer starts the WAL again from its beginning
        n += 1
        _, frames, done = cp.checkpoint()
        assert 0 < frames < 20 and done == frames
    finally:
        s.close()
    con = sqlite3.connect(str(tmp_path / "a.db"))  # close checkpointed the rest: the file alone holds every row
    try:
        assert con.execute("select count(*) from jobs").fetchone()[0] == n
    finally:
        con.close()


def test_automatic_checkpoint_still_available(tmp_path: Path) -> None:
    s = JobStore(str(tmp_path / "a.db"), wal_checkpoint_every_s=None)
    try:
        assert s._checkpointer is None
        with s.engine.connect() as c:
            assert c.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 1000
    finally:
        s.close()


def test_write_lock_lets_the_first_lane_ahead() -> None:
    lock = WriteLock()
    order: list[str] = []
    held = threading.Event()
    release = threading.Event()

    def holder() -> None:
        with lock.held():
            held.set()
            release.wait(5)

    def waiter(name: str, first: bool) -> None:
        with lock.held(first=first):
            order.append(name)

    h = threading.Thread(target=holder)
    h.start()
    assert held.wait(5)
    late = threading.Thread(target=waiter, args=("change", False))
    late.start()
    time.sleep(0.05)  # the change writer (most likely) waits first ...
    urgent = threading.Thread(target=waiter, args=("submission", True))
    urgent.start()
    wait_for(lambda: lock._first_waiting == 1, timeout_s=5)
    release.set()
    for t in (h, late, urgent):
        t.join(5)
    assert order == ["submission", "change"]  # ... the submission batch goes first all the same


def test_slow_log_keeps_only_slow_operations() -> None:
    log = SlowLog(threshold_s=0.02)
    log.note("fast", 1.0, 0.019, rows=3)
    log.note("slow", 2.0, 0.05, rows=4, lock_wait_s=0.04)
    assert log.seen == 2
    (op,) = log.entries()
    assert op["what"] == "slow" and op["ms"] == 50.0 and op["lock_wait_ms"] == 40.0 and op["rows"] == 4


def test_slow_passes_are_logged_with_the_queue_length() -> None:
    from types import SimpleNamespace

    from ddlsched.policies.registry import make_policy
    from ddlsched.service.metrics import Histogram, TimedPolicy

    inner = make_policy("fifo")
    inner.schedule = lambda view: (time.sleep(0.03), [])[1]  # type: ignore[method-assign]
    log = SlowLog(threshold_s=0.02)
    TimedPolicy(inner, Histogram(), log).schedule(SimpleNamespace(pending=[1, 2, 3]))
    (op,) = log.entries()
    assert op["what"] == "scheduling pass" and op["pending"] == 3 and op["ms"] >= 30


def test_submission_answers_say_where_the_time_went(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(scheduler_mod, "CHUNK", 2)
    with fake_service(tmp_path) as (client, store, sched):
        store.slow.threshold_s = 0.0  # keep every operation
        t0 = time.perf_counter()
        r = client.post("/api/v1/jobs", json=job(), headers=auth(ALICE))
        took_ms = 1000 * (time.perf_counter() - t0)
        assert r.status_code == 201
        parts = dict(p.split(";", 1) for p in r.headers["server-timing"].split(", "))
        assert list(parts) == ["at", *TIMING_PARTS]
        assert t0 <= float(parts["at"].removeprefix("desc=")) <= t0 + took_ms / 1000
        durs = [float(parts[k].removeprefix("dur=")) for k in TIMING_PARTS]
        assert all(d >= 0 for d in durs) and sum(durs) <= took_ms
        for i in range(5):
            assert client.post("/api/v1/jobs", json=job(f"k{i}"), headers=auth(ALICE)).status_code == 201
        wait_for(lambda: store.counts()["completed"] == 6)
        assert sched.flush()
        assert client.get("/api/v1/slow", headers=auth(ALICE)).status_code == 403
        rep = client.get("/api/v1/slow", headers=auth(ADMIN)).json()
        kinds = {op["what"] for op in rep["ops"]}
        assert {"submit", "submit batch", "record"} <= kinds
        assert max(op["rows"] for op in rep["ops"] if op["what"] == "record") <= 2  # the loop's changes in chunks
        sub = next(op for op in rep["ops"] if op["what"] == "submit")
        assert {"lock_wait_ms", "statements_ms", "commit_ms", "db_file_written"} <= set(sub)
