"""The service's job store: every job and every state change, in one SQLAlchemy database (SQLite in WAL mode by
default, a PostgreSQL URL works too; docs/service.md).

Every write is one transaction (a job row and its event row commit together or not at all). A job's ``state`` only
moves forward to one of the terminal states (completed, failed, rejected, cancelled) once: a change reported for a
job that already ended is ignored, so every job ends exactly once. At open the store refuses, with a clear error and
without writing anything, a database that is locked by another process, is not a database (corrupt), or was written
by a newer schema; an older schema is migrated in one transaction.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Column,
    Connection,
    Engine,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    bindparam,
    create_engine,
    event,
    func,
    insert,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from ddlsched.errors import ConfigError, DdlschedError
from ddlsched.service.timing import SlowLog

log = logging.getLogger("ddlsched.service")
SCHEMA_VERSION = 1
"""The schema this code writes. A database with a higher version is refused (written by a newer ddlsched)."""

TERMINAL = ("completed", "failed", "cancelled", "rejected")
OPEN = ("queued", "running")
STATES = OPEN + TERMINAL
SQLITE_MAGIC = b"SQLite format 3\x00"

metadata = MetaData()
meta = Table("ddlsched_meta", metadata, Column("key", String(64), primary_key=True), Column("value", Text))
jobs = Table(
    "jobs", metadata,
    Column("id", String(64), primary_key=True),
    Column("seq", Integer, nullable=False, unique=True),
    Column("name", String(200), nullable=False),
    Column("tenant", String(64), nullable=False, index=True),
    Column("num_gpus", Integer, nullable=False),
    Column("model", String(200), nullable=False),
    Column("entrypoint", Text),
    Column("iterations", Float),
    Column("duration_s", Float),
    Column("priority", Float, nullable=False),
    Column("state", String(16), nullable=False, index=True),
    Column("reason", Text, nullable=False, default=""),
    Column("submitted_at", Float, nullable=False),
    Column("started_at", Float),
    Column("ended_at", Float),
    Column("done_iterations", Float, nullable=False, default=0.0),
    Column("checkpoint_iterations", Float, nullable=False, default=0.0),
    Column("attempts", Integer, nullable=False, default=0),
    Column("restarts", Integer, nullable=False, default=0),
    Column("gpus", Text, nullable=False, default=""),
    Column("cancel_requested", Integer, nullable=False, default=0),
)
events = Table(
    "job_events", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("job_id", String(64), nullable=False),
    Column("at", Float, nullable=False),
    Column("run_s", Float),
    Column("kind", String(32), nullable=False),
    Column("detail", Text, nullable=False, default="{}"),
    Index("ix_job_events_job", "job_id", "id"),
)

MIGRATIONS: dict[int, Callable[[Connection], None]] = {}
"""``MIGRATIONS[v]`` turns a version ``v - 1`` database into version ``v`` (inside the open transaction). Version 1 is
the first schema: created whole, nothing to migrate yet."""


class StoreError(DdlschedError):
    """The store cannot be used (locked, corrupt, newer schema): raised at open, nothing was written."""


class StoreFull(DdlschedError):
    """The database (or its disk) is full: the write was rolled back (the API answers 507)."""


class DuplicateJob(DdlschedError):
    """A job with this id is already in the store."""


@dataclass(frozen=True)
class Change:
    """How one reported state change moves a job (the store's reading of a live run's ``JobChange``)."""

    state: str | None = None
    """The job's new state, or None when the state does not change."""
    columns: tuple[str, ...] = ()


CHANGES: dict[str, Change] = {
    "arrived": Change(),
    "recovered": Change("queued"),
    "rejected": Change("rejected", ("reason",)),
    "started": Change("running", ("gpus", "attempt")),
    "progress": Change(None, ("iterations",)),
    "preempted": Change("queued", ("iterations",)),
    "lost": Change("queued", ("iterations",)),
    "finished": Change("completed"),
    "failed": Change("failed", ("reason",)),
    "cancelled": Change("cancelled"),
    "cancel_requested": Change(),
}
"""Every event kind the store records, with the state it moves a job to (``submitted`` is written by
:meth:`JobStore.submit`)."""


JOB_COLUMNS = tuple(c.name for c in jobs.columns)
# The hot path's statements, built once with bound parameters (SQLAlchemy compiles each once and caches it)
_INSERT_JOBS = insert(jobs)
_INSERT_EVENTS = insert(events)
_TAKEN_IDS = select(jobs.c.id).where(jobs.c.id.in_(bindparam("ids", expanding=True)))
_CURRENTS = select(jobs.c.id, jobs.c.state, jobs.c.started_at, jobs.c.restarts, jobs.c.checkpoint_iterations,
                   jobs.c.iterations).where(jobs.c.id.in_(bindparam("ids", expanding=True)))
_UPDATE_JOB = update(jobs).where(jobs.c.id == bindparam("jid_"))  # SET: the columns the parameters name
WAL_CHECKPOINT_EVERY_S = 0.5
"""How often the store's checkpointer copies the WAL into the SQLite database file (:class:`Checkpointer`)."""
WAL_RESET_FRAMES = 1000
"""WAL pages (4 KiB each) past which the checkpointer makes sure the WAL starts again (SQLite's own automatic
checkpoint size)."""
ID_CHUNK = 500
"""Most ids one duplicate check binds (SQLite allows 32,766 variables per statement)."""


def _is_full(e: DBAPIError) -> bool:
    msg = str(e.orig).lower()
    return "disk is full" in msg or "database or disk is full" in msg or "no space left" in msg \
        or "could not extend file" in msg or getattr(e.orig, "pgcode", "") == "53100"


def sqlite_path(url: str) -> Path | None:
    """The file of a ``sqlite:///PATH`` URL (None for another database or an in-memory one)."""
    if not url.startswith("sqlite:///"):
        return None
    p = url[len("sqlite:///"):]
    return None if p in ("", ":memory:") else Path(p)


def as_url(db: str) -> str:
    """``--db``: a database URL, or a file path (SQLite)."""
    return db if "://" in db else f"sqlite:///{Path(db).resolve()}"


def _iters(detail: dict[str, Any], key: str = "iterations") -> float | None:
    """``detail[key]`` as a finite float, or None (absent, None, or not a number: the column is left as it is)."""
    v = detail.get(key)
    try:
        f = float(v) if v is not None else None
    except (TypeError, ValueError):
        return None
    return f if f is not None and math.isfinite(f) else None


def _changed_columns(cur: dict[str, Any], kind: str, detail: dict[str, Any], at: float) -> dict[str, Any]:
    """The columns a change of ``kind`` sets on a job whose row is ``cur`` (not ended)."""
    spec = CHANGES.get(kind, Change())  # a kind the store does not know: an event row, no state change
    values: dict[str, Any] = {}
    if spec.state is not None:
        values["state"] = spec.state
        if spec.state in TERMINAL:
            values["ended_at"] = at
    if kind in ("rejected", "failed"):
        values["reason"] = str(detail.get("reason", ""))
    elif kind == "started":
        values["gpus"] = ",".join(str(g) for g in detail.get("gpus", ()))
        values["attempts"] = int(detail.get("attempt", 0))
        if cur["started_at"] is None:
            values["started_at"] = at
    elif kind == "progress":
        done = _iters(detail)
        if done is not None:
            values["done_iterations"] = done
        ckpt = _iters(detail, "checkpoint")
        if ckpt is not None and ckpt > cur["checkpoint_iterations"]:
            values["checkpoint_iterations"] = ckpt
    elif kind in ("preempted", "lost"):
        values["checkpoint_iterations"] = values["done_iterations"] = _iters(detail) or 0.0
        values["gpus"] = ""
    elif kind == "recovered":
        if detail.get("was") == "running":
            values["restarts"] = cur["restarts"] + 1
        values["gpus"] = ""
    elif kind == "cancel_requested":
        values["cancel_requested"] = 1
    elif kind == "finished":
        values["gpus"] = ""
        done = _iters(detail)
        if done is None:  # a finished job has done all it asked for (the live loop's report need not say)
            done = cur["iterations"]
        if done is not None:
            values["done_iterations"] = float(done)
    if kind in ("failed", "cancelled", "rejected"):
        values["gpus"] = ""
    return values


class WriteLock:
    """The store's writers' lock, with a fast lane: a writer holding it ``first`` (a submission batch, which requests
    wait for) gets it as soon as the transaction in progress ends, ahead of the other waiting writers (the loop's
    state changes, which nobody waits for)."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._held = False
        self._first_waiting = 0

    @contextmanager
    def held(self, *, first: bool = False) -> Iterator[None]:
        with self._cond:
            if first:
                self._first_waiting += 1
            try:
                while self._held or (not first and self._first_waiting):
                    self._cond.wait()
            finally:
                if first:
                    self._first_waiting -= 1
            self._held = True
        try:
            yield
        finally:
            with self._cond:
                self._held = False
                self._cond.notify_all()


class JobStore:
    """The job store (see the module docstring). Thread-safe: writes are serialised by one lock."""

    def __init__(self, db: str, *, busy_timeout_s: float = 2.0, sqlite_pragmas: dict[str, Any] | None = None,
                 synchronous: str = "NORMAL", wal_checkpoint_every_s: float | None = WAL_CHECKPOINT_EVERY_S) -> None:
        self.url = as_url(db)
        self.path = sqlite_path(self.url)
        self._lock = WriteLock()
        self._seq = 0
        self._committed: Callable[[], None] | None = None
        self._file_lock: Any = None
        self.slow = SlowLog()
        """Every transaction is timed (waiting for the writers' lock, its statements, its commit); the slow ones are
        kept here (``ddlsched.service.timing``)."""
        self._last = threading.local()
        if self.path is not None:
            self._check_file(self.path)
            self._take_file_lock(self.path)
        pragmas = {"journal_mode": "WAL", "busy_timeout": int(busy_timeout_s * 1000), "synchronous": synchronous,
                   "foreign_keys": "ON", **(sqlite_pragmas or {})}
        background = self.path is not None and wal_checkpoint_every_s is not None
        if background:
            pragmas["wal_autocheckpoint"] = 0  # no checkpoint inside a writer's COMMIT: the checkpointer does it
        self._checkpointer: Checkpointer | None = None
        try:
            self.engine = self._connect(pragmas)
            self._open()
            self.reader = self._connect(pragmas, writer=False) if self.path is not None else self.engine
            if background:
                assert self.path is not None and wal_checkpoint_every_s is not None
                self._checkpointer = Checkpointer(self.path, wal_checkpoint_every_s, pragmas, self.slow,
                                                  self._lock.held)
        except BaseException:
            self.close()
            raise

    # ---------------------------------------------------------------- opening
    @staticmethod
    def _check_file(path: Path) -> None:
        if not path.exists():
            if not path.parent.is_dir():
                raise StoreError(f"{path}: its folder does not exist")
            return
        if path.is_dir():
            raise StoreError(f"{path}: is a folder, not a database file")
        with path.open("rb") as f:
            head = f.read(len(SQLITE_MAGIC))
        if head and head != SQLITE_MAGIC:
            raise StoreError(f"{path}: not an SQLite database (corrupt or another kind of file); left as it is")

    def _take_file_lock(self, path: Path) -> None:
        """One service per database file: an advisory lock on ``PATH.lock`` (released by the OS when the process
        dies, so a ``kill -9`` leaves no stale lock)."""
        import fcntl

        lock_path = path.with_name(path.name + ".lock")
        f = lock_path.open("a+")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.seek(0)
            owner = f.read().strip() or "unknown"
            f.close()
            raise StoreError(f"{path}: locked by another ddlsched service (pid {owner}); stop it first") from None
        f.seek(0)
        f.truncate()
        f.write(str(os.getpid()))
        f.flush()
        self._file_lock = f

    def _connect(self, pragmas: dict[str, Any], *, writer: bool = True) -> Engine:
        """The writer's engine opens every transaction with ``BEGIN IMMEDIATE`` (SQLite); the reader's runs each
        statement on its own (autocommit: a consistent snapshot per statement, never a write lock)."""
        if self.path is None:
            return create_engine(self.url, pool_pre_ping=True)
        engine = create_engine(self.url, connect_args={"check_same_thread": False, "timeout": 0.1})

        @event.listens_for(engine, "connect")
        def _setup(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (SQLAlchemy's pysqlite recipe)
            cur = dbapi_conn.cursor()
            for k, v in pragmas.items():
                cur.execute(f"PRAGMA {k}={v}")
            cur.close()

        if writer:
            @event.listens_for(engine, "begin")
            def _begin(conn: Connection) -> None:
                conn.exec_driver_sql("BEGIN IMMEDIATE")  # take the write lock up front: no deadlocked upgrades

        return engine

    def _open(self) -> None:
        where = str(self.path) if self.path is not None else self.url.split("@")[-1]
        try:
            with self.engine.begin() as c:
                if self.path is not None:
                    mode = c.exec_driver_sql("PRAGMA journal_mode").scalar()
                    if str(mode).lower() != "wal":
                        raise StoreError(f"{where}: could not switch to WAL mode (got {mode!r})")
                names = set(inspect(c).get_table_names())
                if "ddlsched_meta" not in names:
                    if names - {"jobs", "job_events"} or names & {"jobs", "job_events"}:
                        raise StoreError(f"{where}: holds tables that are not a ddlsched job store "
                                         f"({', '.join(sorted(names))}); left as it is")
                    metadata.create_all(c)
                    c.execute(insert(meta).values(key="schema_version", value=str(SCHEMA_VERSION)))
                    version = SCHEMA_VERSION
                else:
                    raw = c.execute(select(meta.c.value).where(meta.c.key == "schema_version")).scalar()
                    try:
                        version = int(raw)
                    except (TypeError, ValueError):
                        raise StoreError(f"{where}: schema version {raw!r} unreadable; left as it is") from None
                if version > SCHEMA_VERSION:
                    raise StoreError(f"{where}: schema version {version} was written by a newer ddlsched (this one "
                                     f"reads up to {SCHEMA_VERSION}); upgrade ddlsched; left as it is")
                for v in range(version + 1, SCHEMA_VERSION + 1):
                    MIGRATIONS[v](c)
                if version < SCHEMA_VERSION:
                    c.execute(update(meta).where(meta.c.key == "schema_version").values(value=str(SCHEMA_VERSION)))
                self._seq = int(c.execute(select(func.coalesce(func.max(jobs.c.seq), 0))).scalar() or 0)
        except OperationalError as e:
            msg = str(e.orig)
            if "locked" in msg or "busy" in msg:
                raise StoreError(f"{where}: the database is locked by another process ({msg})") from None
            raise StoreError(f"{where}: cannot open the database: {msg}") from None
        except DBAPIError as e:
            raise StoreError(f"{where}: not a usable database (corrupt?): {e.orig}; left as it is") from None

    def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.close()
            self._checkpointer = None
        for name in ("reader", "engine"):
            engine = getattr(self, name, None)
            if engine is not None:
                engine.dispose()
        if self._file_lock is not None:
            self._file_lock.close()
            self._file_lock = None

    # ---------------------------------------------------------------- writes (one transaction each)
    @contextmanager
    def _write(self, what: str, n: int, *, first: bool = False) -> Iterator[Connection]:
        """One transaction under the writers' lock (``first``: ahead of the writers waiting without it);
        ``self._committed`` (if a write set it) runs after the commit, still under the lock. Timed:
        :meth:`last_timing` (this thread's last write) and :attr:`slow`."""
        t0 = time.perf_counter()
        self._last.timing = None
        with self._lock.held(first=first):
            t1 = time.perf_counter()
            self._committed = None
            before = self._db_mtime()
            try:
                with self.engine.connect() as c:
                    with c.begin():
                        yield c
                        t2 = time.perf_counter()
                    t3 = time.perf_counter()  # committed (an automatic WAL checkpoint runs inside the commit)
            except IntegrityError:
                raise
            except DBAPIError as e:
                if _is_full(e):
                    raise StoreFull(f"the job store is full ({e.orig}); nothing was written") from None
                raise
            if self._committed is not None:
                self._committed()
            wrote_db = before is not None and self._db_mtime() != before
        self._last.timing = (t0, t1, t2, t3)
        self.slow.note(what, t0, t3 - t0, rows=n, lock_wait_s=t1 - t0, statements_s=t2 - t1, commit_s=t3 - t2,
                       db_file_written=wrote_db)

    def last_timing(self) -> tuple[float, float, float, float] | None:
        """This thread's last write: (asked for the lock, got it, statements done, committed), perf_counter."""
        return getattr(self._last, "timing", None)

    def _db_mtime(self) -> int | None:
        """The database file's modification time (in WAL mode only a checkpoint writes to it)."""
        if self.path is None:
            return None
        try:
            return os.stat(self.path).st_mtime_ns
        except OSError:
            return None

    def submit(self, job: dict[str, Any], *, at: float | None = None) -> dict[str, Any]:
        """Insert a new job (state ``queued``) and its ``submitted`` event; returns the stored row."""
        out = self.submit_many([job], at=at)[0]
        if isinstance(out, DuplicateJob):
            raise out
        return out

    def submit_many(self, batch: list[dict[str, Any]], *,
                    at: float | None = None) -> list[dict[str, Any] | DuplicateJob]:
        """Insert several new jobs in one transaction (all or none: :class:`StoreFull` leaves no row). Returns, per
        job in order, its stored row, or a :class:`DuplicateJob` (an id already stored or earlier in the batch:
        that job is not written, the others are)."""
        at = time.time() if at is None else at
        ids = [j["id"] for j in batch]
        if len(set(ids)) == len(ids):  # the common case: insert without looking first (a stored id aborts it)
            try:
                return self._submit_many(batch, at, look=False)
            except IntegrityError:
                pass  # an id already stored (or taken meanwhile): the careful way tells which
        return self._submit_many(batch, at, look=True)

    def _submit_many(self, batch: list[dict[str, Any]], at: float, *,
                     look: bool) -> list[dict[str, Any] | DuplicateJob]:
        """:meth:`submit_many`; ``look``: first read which ids are stored (else an IntegrityError aborts it all)."""
        try:
            # the lock is held until the commit: ``seq`` is taken and advanced under it
            with self._write("submit", len(batch), first=True) as c:  # a request waits for it: ahead of changes
                ids = [j["id"] for j in batch]
                taken: set[str] = set()
                for k in range(0, len(ids) if look else 0, ID_CHUNK):
                    taken.update(c.execute(_TAKEN_IDS, {"ids": ids[k:k + ID_CHUNK]}).scalars())
                seq = self._seq
                out: list[dict[str, Any] | DuplicateJob] = []
                rows: list[dict[str, Any]] = []
                evs: list[dict[str, Any]] = []
                for job in batch:
                    if job["id"] in taken:
                        out.append(DuplicateJob(f"job {job['id']!r} already exists"))
                        continue
                    taken.add(job["id"])
                    seq += 1
                    full = {"seq": seq, "state": "queued", "reason": "", "submitted_at": at, "done_iterations": 0.0,
                            "checkpoint_iterations": 0.0, "attempts": 0, "restarts": 0, "gpus": "",
                            "cancel_requested": 0, "started_at": None, "ended_at": None, **job}
                    row = {k: full.get(k) for k in JOB_COLUMNS}
                    rows.append(row)
                    evs.append({"job_id": row["id"], "at": at, "run_s": None, "kind": "submitted",
                                "detail": json.dumps({k: job[k] for k in sorted(job) if k != "id"})})
                    out.append(row)
                if rows:
                    c.execute(_INSERT_JOBS, rows)
                    c.execute(_INSERT_EVENTS, evs)
                self._committed = lambda: setattr(self, "_seq", seq)
        except IntegrityError:  # another writer of a shared database (PostgreSQL) took one of these ids meanwhile
            if not look:
                raise
            if len(batch) == 1:
                return [DuplicateJob(f"job {batch[0]['id']!r} already exists")]
            return [r for j in batch for r in self._submit_many([j], at, look=True)]
        return out

    def record(self, job_id: str, kind: str, detail: dict[str, Any] | None = None, *, run_s: float | None = None,
               at: float | None = None) -> bool:
        """Record one state change (an event row and the job's new columns, together). Returns False (nothing
        written) when the job is unknown or already ended."""
        return self.record_many([(job_id, kind, detail or {}, run_s, time.time() if at is None else at)])[0]

    def record_many(self, changes: list[tuple[str, str, dict[str, Any], float | None, float]]) -> list[bool]:
        """Several changes ``(job_id, kind, detail, run_s, at)`` in order, in one transaction (all or none); per
        change, whether it was recorded (False: the job is unknown or had already ended). The jobs' rows are read
        once, the changes applied to them in order in memory, and each job's row written once with its final
        values; the event rows are inserted together, in order."""
        with self._write("record", len(changes)) as c:
            ids = list(dict.fromkeys(ch[0] for ch in changes))
            cur: dict[str, dict[str, Any]] = {}
            for k in range(0, len(ids), ID_CHUNK):
                for r in c.execute(_CURRENTS, {"ids": ids[k:k + ID_CHUNK]}):
                    cur[r.id] = dict(r._mapping)
            merged: dict[str, dict[str, Any]] = {}
            evs: list[dict[str, Any]] = []
            done: list[bool] = []
            for job_id, kind, detail, run_s, at in changes:
                row = cur.get(job_id)
                if row is None or row["state"] in TERMINAL:
                    done.append(False)
                    continue
                values = _changed_columns(row, kind, detail, at)
                row.update(values)
                merged.setdefault(job_id, {}).update(values)
                evs.append({"job_id": job_id, "at": at, "run_s": run_s, "kind": kind,
                            "detail": json.dumps(detail, default=str, sort_keys=True)})
                done.append(True)
            by_columns: dict[tuple[str, ...], list[dict[str, Any]]] = {}
            for job_id, values in merged.items():
                if values:
                    by_columns.setdefault(tuple(sorted(values)), []).append({"jid_": job_id, **values})
            for params in by_columns.values():
                c.execute(_UPDATE_JOB, params)
            if evs:
                c.execute(_INSERT_EVENTS, evs)
            return done

    # ---------------------------------------------------------------- reads
    def get(self, job_id: str) -> dict[str, Any] | None:
        with self.reader.connect() as c:
            r = c.execute(select(jobs).where(jobs.c.id == job_id)).first()
            c.rollback()
        return None if r is None else dict(r._mapping)

    def list(self, *, tenant: str | None = None, state: str | None = None, limit: int = 100,
             offset: int = 0, newest_first: bool = False) -> list[dict[str, Any]]:
        q = select(jobs).order_by(jobs.c.seq.desc() if newest_first else jobs.c.seq)
        if tenant is not None:
            q = q.where(jobs.c.tenant == tenant)
        if state is not None:
            q = q.where(jobs.c.state.in_(state.split(",")))
        with self.reader.connect() as c:
            rows = [dict(r._mapping) for r in c.execute(q.limit(limit).offset(offset))]
            c.rollback()
        return rows

    def events(self, job_id: str) -> list[dict[str, Any]]:
        q = select(events).where(events.c.job_id == job_id).order_by(events.c.id)
        with self.reader.connect() as c:
            out = [{**dict(r._mapping), "detail": json.loads(r.detail)} for r in c.execute(q)]
            c.rollback()
        return out

    def unfinished(self) -> list[dict[str, Any]]:
        """Jobs submitted but not ended, in submission order (what a restarted service resubmits)."""
        return self.list(state="queued,running", limit=-1)

    def counts(self, tenant: str | None = None) -> dict[str, int]:
        """Jobs per state (every state present, 0 when none)."""
        q = select(jobs.c.state, func.count()).group_by(jobs.c.state)
        if tenant is not None:
            q = q.where(jobs.c.tenant == tenant)
        with self.reader.connect() as c:
            got = {s: int(n) for s, n in c.execute(q)}
            c.rollback()
        return {s: got.get(s, 0) for s in STATES}

    def stats(self) -> list[dict[str, Any]]:
        """Per tenant: jobs per state, mean JCT of completed jobs (wall seconds, submission to end), GPU count."""
        q = select(jobs.c.tenant, jobs.c.state, func.count(), func.avg(jobs.c.ended_at - jobs.c.submitted_at),
                   func.sum(jobs.c.num_gpus)).group_by(jobs.c.tenant, jobs.c.state).order_by(jobs.c.tenant)
        with self.reader.connect() as c:
            rows = list(c.execute(q))
            c.rollback()
        out: dict[str, dict[str, Any]] = {}
        for tenant, state, n, jct, gpus in rows:
            t = out.setdefault(tenant, {"tenant": tenant, **{s: 0 for s in STATES}, "avg_jct_s": None,
                                        "running_gpus": 0})
            t[state] = int(n)
            if state == "completed":
                t["avg_jct_s"] = float(jct) if jct is not None else None
            if state == "running":
                t["running_gpus"] = int(gpus or 0)
        return list(out.values())

    def schema_version(self) -> int:
        with self.reader.connect() as c:
            v = int(c.execute(select(meta.c.value).where(meta.c.key == "schema_version")).scalar() or 0)
            c.rollback()
        return v

    def ping(self) -> None:
        with self.reader.connect() as c:
            c.execute(text("SELECT 1"))


class Checkpointer:
    """A thread that checkpoints an SQLite database's WAL every ``every_s`` seconds on its own connection
    (``PRAGMA wal_checkpoint(PASSIVE)``: copies the committed pages into the database file and syncs it, without
    waiting for readers or writers, which go on meanwhile). The writers' connections run with
    ``wal_autocheckpoint=0``, so that no writer's COMMIT runs a checkpoint (it would hold the store's lock, and keep
    every request waiting on it, for the whole sync: 15–165 ms measured, BENCHMARKS.md). Durability is unchanged: a
    committed transaction is in the WAL whether or not it was checkpointed, and a checkpoint interrupted by a crash is
    redone from the WAL at the next open."""

    def __init__(self, path: Path, every_s: float, pragmas: dict[str, Any], slow: SlowLog,
                 writers_held: Callable[[], AbstractContextManager[Any]]) -> None:
        import sqlite3

        self.every_s = every_s
        self.writers_held = writers_held
        self.slow = slow
        self.runs = 0
        self.error: BaseException | None = None
        self._conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        for k in ("busy_timeout", "synchronous", "wal_autocheckpoint"):
            if k in pragmas:
                self._conn.execute(f"PRAGMA {k}={pragmas[k]}")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ddlsched-checkpointer", daemon=True)
        self._thread.start()

    def checkpoint(self, what: str = "checkpoint") -> tuple[int, int, int]:
        """One passive checkpoint now: (busy, frames in the WAL, frames checkpointed), SQLite's answer."""
        t0 = time.perf_counter()
        # fetchall: the statement runs to its end (a statement left open would keep a read lock on the WAL)
        ((busy, frames, done),) = self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        self.runs += 1
        self.slow.note(what, t0, time.perf_counter() - t0, wal_frames=frames, checkpointed=done)
        return int(busy), int(frames), int(done)

    def cycle(self) -> None:
        """A checkpoint; then, once the WAL holds :data:`WAL_RESET_FRAMES` pages or more, a second one with the
        writers held, which copies only the pages written during the first (short), so that every page is in the
        database file and the next writer starts the WAL again from its beginning. (Writers add pages while a
        checkpoint runs, so without the second one the WAL would grow without bound under a steady load.)"""
        _, frames, _ = self.checkpoint()
        if frames >= WAL_RESET_FRAMES:
            with self.writers_held():
                self.checkpoint("checkpoint (writers held)")

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                self.cycle()
            except Exception as e:  # a failed checkpoint loses nothing (the WAL keeps the pages); tried again
                self.error = e
                log.warning("WAL checkpoint failed (tried again in %g s): %s", self.every_s, e)

    def close(self) -> None:
        """Stop the thread and checkpoint what is left (the database file then holds every commit)."""
        self._stop.set()
        self._thread.join(30)
        try:
            with suppress(Exception):  # the pages stay in the WAL: the next open checkpoints them
                self.checkpoint()
        finally:
            self._conn.close()


def open_store(db: str, **kw: Any) -> JobStore:
    """Open the store, turning a :class:`StoreError` into a :class:`ConfigError` naming ``--db``."""
    try:
        return JobStore(db, **kw)
    except StoreError as e:
        raise ConfigError(str(e), field="--db") from None


__all__ = ["CHANGES", "OPEN", "SCHEMA_VERSION", "STATES", "TERMINAL", "DuplicateJob", "JobStore", "StoreError",
           "StoreFull", "open_store"]
