"""The job store: one transaction per write, every state change recorded, ends exactly once; a database that is
locked, corrupt or from a newer schema is refused at open and left untouched; a full database refuses writes."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from ddlsched.service.store import SCHEMA_VERSION, DuplicateJob, JobStore, StoreError, StoreFull


def row(i: int, **kw: object) -> dict[str, object]:
    return {"id": f"j{i}", "name": f"job {i}", "tenant": "alice", "num_gpus": 2, "model": "resnet50",
            "entrypoint": None, "iterations": 100.0, "duration_s": None, "priority": 1.0, **kw}


def test_lifecycle_recorded_in_order_and_ends_once(tmp_path: Path) -> None:
    s = JobStore(str(tmp_path / "a.db"))
    try:
        s.submit(row(1))
        assert s.record("j1", "arrived", run_s=0.0)
        assert s.record("j1", "started", {"gpus": [4, 5], "attempt": 1}, run_s=1.0)
        assert s.get("j1")["state"] == "running" and s.get("j1")["gpus"] == "4,5"
        assert s.record("j1", "progress", {"iterations": 40.0}, run_s=2.0)
        assert s.record("j1", "preempted", {"iterations": 40.0, "killed": False}, run_s=3.0)
        r = s.get("j1")
        assert r["state"] == "queued" and r["checkpoint_iterations"] == 40.0 and r["gpus"] == ""
        assert s.record("j1", "started", {"gpus": [0, 1], "attempt": 2}, run_s=4.0)
        assert s.record("j1", "finished", {}, run_s=5.0)
        assert not s.record("j1", "cancelled")  # already ended: ignored, nothing written
        assert not s.record("j1", "failed", {"reason": "x"})
        r = s.get("j1")
        assert r["state"] == "completed" and r["attempts"] == 2 and r["ended_at"] >= r["started_at"]
        kinds = [e["kind"] for e in s.events("j1")]
        assert kinds == ["submitted", "arrived", "started", "progress", "preempted", "started", "finished"]
        assert s.events("j1")[2]["detail"] == {"attempt": 1, "gpus": [4, 5]}
        assert s.counts()["completed"] == 1 and sum(s.counts().values()) == 1
        with pytest.raises(DuplicateJob):
            s.submit(row(1))
        assert len(s.events("j1")) == 7  # the duplicate wrote nothing
    finally:
        s.close()


def test_reopen_keeps_jobs_and_sequence(tmp_path: Path) -> None:
    db = str(tmp_path / "a.db")
    s = JobStore(db)
    for i in range(5):
        s.submit(row(i))
    s.record("j2", "failed", {"reason": "oom"})
    s.close()
    s = JobStore(db)
    try:
        assert [r["id"] for r in s.unfinished()] == ["j0", "j1", "j3", "j4"]
        assert s.get("j2")["reason"] == "oom"
        s.submit(row(9))
        assert s.list()[-1]["id"] == "j9" and s.schema_version() == SCHEMA_VERSION
        assert sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        s.close()


def test_second_service_on_the_same_file_is_refused(tmp_path: Path) -> None:
    db = str(tmp_path / "a.db")
    s = JobStore(db)
    try:
        with pytest.raises(StoreError, match="locked by another ddlsched service"):
            JobStore(db)
    finally:
        s.close()
    JobStore(db).close()  # released at close


def test_database_locked_by_another_process_is_a_clear_error(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    JobStore(str(db)).close()
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreError, match="locked"):
            JobStore(str(db), busy_timeout_s=0.2)
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_corrupt_and_foreign_files_refused_untouched(tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not a database, it is a note\n" * 10)
    before = bad.read_bytes()
    with pytest.raises(StoreError, match="not an SQLite database"):
        JobStore(str(bad))
    assert bad.read_bytes() == before
    foreign = tmp_path / "foreign.db"
    c = sqlite3.connect(foreign)
    c.execute("CREATE TABLE stuff (x)")
    c.commit()
    c.close()
    with pytest.raises(StoreError, match="not a ddlsched job store"):
        JobStore(str(foreign))
    assert [r[0] for r in sqlite3.connect(foreign).execute("SELECT name FROM sqlite_master")] == ["stuff"]


def test_newer_schema_refused_untouched(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    s = JobStore(str(db))
    s.submit(row(1))
    s.close()
    c = sqlite3.connect(db)
    c.execute("UPDATE ddlsched_meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    c.commit()
    c.close()
    with pytest.raises(StoreError, match=f"schema version {SCHEMA_VERSION + 1} was written by a newer"):
        JobStore(str(db))
    c = sqlite3.connect(db)
    assert c.execute("SELECT count(*) FROM jobs").fetchone()[0] == 1
    assert c.execute("SELECT value FROM ddlsched_meta").fetchone()[0] == str(SCHEMA_VERSION + 1)


def test_full_database_refuses_whole_writes_only(tmp_path: Path) -> None:
    """A database at its size limit (SQLite's max_page_count stands in for a full disk): the submission that does
    not fit raises StoreFull and leaves neither its job row nor its event row."""
    s = JobStore(str(tmp_path / "a.db"), sqlite_pragmas={"max_page_count": 40})
    try:
        n = 0
        with pytest.raises(StoreFull):
            for n in range(10_000):
                s.submit(row(n, name="x" * 150))
        assert n > 10
        assert s.get(f"j{n}") is None and s.events(f"j{n}") == []
        assert len(s.list(limit=-1)) == n and all(len(s.events(f"j{i}")) == 1 for i in (0, n - 1))
    finally:
        s.close()


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    s = JobStore(str(tmp_path / "a.db"))
    try:
        def work(k: int) -> None:
            for i in range(50):
                s.submit(row(k * 1000 + i))
                s.record(f"j{k * 1000 + i}", "started", {"gpus": [k], "attempt": 1})

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert s.counts()["running"] == 200
        assert len({r["seq"] for r in s.list(limit=-1)}) == 200
    finally:
        s.close()


def test_progress_checkpoints_raise_the_resume_point_only(tmp_path: Path) -> None:
    """A progress report's ``checkpoint`` (the executor's last saved iteration count) becomes the job's
    ``checkpoint_iterations`` (where a restart resumes it) when it is newer; an older or absent one changes nothing;
    a report without a number leaves the iteration count as it was."""
    s = JobStore(str(tmp_path / "a.db"))
    try:
        s.submit(row(1))
        s.record("j1", "started", {"gpus": [0], "attempt": 1})
        s.record("j1", "progress", {"iterations": 50.0, "checkpoint": 30.0})
        assert s.get("j1")["checkpoint_iterations"] == 30.0 and s.get("j1")["done_iterations"] == 50.0
        s.record_many([("j1", "progress", {"iterations": 70.0, "checkpoint": 20.0}, 1.0, 1.0),
                       ("j1", "progress", {"iterations": 80.0}, 2.0, 2.0),
                       ("j1", "progress", {"iterations": None, "checkpoint": 60.0}, 3.0, 3.0)])
        r = s.get("j1")
        assert r["checkpoint_iterations"] == 60.0 and r["done_iterations"] == 80.0
        assert [e["kind"] for e in s.events("j1")].count("progress") == 4
    finally:
        s.close()


def test_batched_changes_apply_in_order(tmp_path: Path) -> None:
    """Several changes of one job in one batch end in the state of the last one; a change after the job ended is
    not recorded (False) and the others of the batch are."""
    s = JobStore(str(tmp_path / "a.db"))
    try:
        s.submit(row(1))
        s.submit(row(2))
        done = s.record_many([("j1", "started", {"gpus": [0, 1], "attempt": 1}, 0.0, 1.0),
                              ("j2", "started", {"gpus": [2, 3], "attempt": 1}, 0.0, 1.0),
                              ("j1", "finished", {}, 1.0, 2.0),
                              ("j1", "cancelled", {}, 1.5, 2.5),
                              ("j2", "preempted", {"iterations": 10.0}, 2.0, 3.0),
                              ("nope", "started", {}, 2.0, 3.0)])
        assert done == [True, True, True, False, True, False]
        j1, j2 = s.get("j1"), s.get("j2")
        assert (j1["state"], j1["gpus"], j1["started_at"], j1["ended_at"]) == ("completed", "", 1.0, 2.0)
        assert (j2["state"], j2["gpus"], j2["checkpoint_iterations"]) == ("queued", "", 10.0)
        assert [e["kind"] for e in s.events("j1")] == ["submitted", "started", "finished"]
    finally:
        s.close()


def test_submit_many_refuses_duplicates_only(tmp_path: Path) -> None:
    s = JobStore(str(tmp_path / "a.db"))
    try:
        s.submit(row(1))
        out = s.submit_many([row(2), row(1), row(3), row(2)])
        assert [type(o).__name__ for o in out] == ["dict", "DuplicateJob", "dict", "DuplicateJob"]
        assert [r["id"] for r in s.list()] == ["j1", "j2", "j3"] and [r["seq"] for r in s.list()] == [1, 2, 3]
    finally:
        s.close()


def test_a_finished_job_has_done_its_iterations(tmp_path: Path) -> None:
    s = JobStore(str(tmp_path / "a.db"))
    try:
        s.submit(row(1, iterations=500.0))
        s.submit(row(2, iterations=None, duration_s=60.0))
        for jid in ("j1", "j2"):
            s.record(jid, "started", {"gpus": [0], "attempt": 1})
            s.record(jid, "progress", {"iterations": 11.0})
            s.record(jid, "finished", {"run_s": 5.0})
        assert s.get("j1")["done_iterations"] == 500.0
        assert s.get("j2")["done_iterations"] == 11.0  # asked for a duration: the last count reported stays
    finally:
        s.close()
