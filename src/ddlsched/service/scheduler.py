"""The one module of the service that talks to the live loop (``ddlsched.live.run.LiveRun``).

It owns the loop's thread and two kinds of helpers around it, so that an API request never waits for the loop:

* **hand-off** (one feeder thread): the API checks that the job can ever fit (:func:`never_fits`: the same two
  reasons the engine gives), commits the submission to the store (write-ahead), answers 201, and queues it here; the
  feeder passes everything queued meanwhile to ``LiveRun.submit_many`` in one command (it blocks until the loop's
  next turn, so one turn takes a whole batch, in submission order). The jobs arrive in the run when the loop takes
  them (the run clock's now). A rejection the loop still finds is stored with its reason.
* **writer** (one thread): every ``JobChange`` the loop reports (``on_change``, in the loop's thread, in order) is
  queued and written in order, a batch per transaction (group commit), at most one transaction start every
  ``changes_every_s``. The API only reads the store, so it never
  shows a change before it is stored. ``progress`` reports (iteration counts, not changes of state) are kept at
  most every ``progress_every_s`` wall seconds per job, or every ``checkpoint_progress_every_s`` when they carry a
  newer checkpoint (the executor's last saved iteration count; the store keeps it as ``checkpoint_iterations``).

Crash recovery (:meth:`Scheduler.start`): every job the store holds as ``queued`` or ``running`` is resubmitted, in
submission order, before the API accepts anything: a queued job as it was; a running one from the iterations of its
last stored checkpoint (a progress report's, a preemption's or a lost worker's), recorded as a ``recovered`` event
(``was: running``, a restart). The old process is gone (``kill -9`` ends the sim executor with it), so no job runs
twice at once. A change the loop reported but the writer had not stored when the process died is simply redone: a
job whose ``finished`` was not stored runs again from its checkpoint and ends once. A job whose cancellation was
requested but not yet reported is ended as cancelled.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ddlsched.cluster.topology import Cluster
from ddlsched.errors import ConfigError
from ddlsched.policies.base import Policy
from ddlsched.service.commit import next_batch
from ddlsched.service.metrics import Counters, Histogram, TimedPolicy
from ddlsched.service.store import JobStore, StoreFull
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import ModelCatalog

log = logging.getLogger("ddlsched.service")
EXECUTORS = ("sim", "ray")
ENDS = {"finished": "completed", "failed": "failed", "cancelled": "cancelled", "rejected": "rejected"}
BATCH = 2000
"""Most changes the writer takes from its queue at once (and most jobs the feeder hands to the loop at once)."""
CHUNK = 64
CHANGES_EVERY_S = 0.02
"""The writer starts a transaction of changes at most this often (seconds): the changes reported meanwhile are
written together, so under load the store writes a few large transactions instead of many small ones (the API never
waits for them; a crash redoes what was not stored)."""
"""Most changes the writer stores in one transaction: a submission batch waiting for the store's lock waits for at
most one such transaction (BENCHMARKS.md, the service)."""


class LiveLoop(Protocol):
    """What the service uses of ``LiveRun`` (docs/live.md; the contract in ``ddlsched.live.run``)."""

    def submit(self, spec: JobSpec, *, done_iterations: float = 0.0, attempt: int = 0) -> str | None: ...
    def submit_many(self, specs: list[JobSpec]) -> list[str | None]: ...
    def cancel(self, job_id: str) -> bool: ...
    def stop(self) -> None: ...
    def run(self) -> Any: ...
    def snapshot(self) -> dict[str, Any]: ...


RunFactory = Callable[[Policy, Callable[[Any], None]], LiveLoop]
"""Builds the live loop for a policy, wired to an ``on_change`` callback."""


def live_run_factory(cluster: Cluster, executor: str, *, time_scale: float, catalog: ModelCatalog,
                     options: dict[str, Any] | None = None) -> RunFactory:
    """The real loop: ``LiveRun(serve=True)`` over the sim executor (the digital twin) or the Ray executor."""
    if executor not in EXECUTORS:
        raise ConfigError(f"unknown executor {executor!r}; known: {', '.join(EXECUTORS)}", field="--executor")

    def build(policy: Policy, on_change: Callable[[Any], None]) -> LiveLoop:
        from ddlsched.live.run import LiveRun

        ex: Any
        if executor == "sim":
            from ddlsched.live.sim_executor import SimExecutor

            ex = SimExecutor(catalog, **(options or {}))
        else:
            from ddlsched.live.ray_executor import RayExecutor

            ex = RayExecutor(time_scale=time_scale, catalog=catalog, **(options or {}))
        return LiveRun(cluster, policy, ex, time_scale=time_scale, catalog=catalog, serve=True,
                       on_change=on_change)

    return build


def spec_of(row: dict[str, Any]) -> JobSpec:
    """The job a store row describes, as the live loop takes it (its arrival is set by the loop)."""
    return JobSpec(job_id=row["id"], arrival_s=0.0, num_gpus=int(row["num_gpus"]), model=row["model"],
                   iterations=row["iterations"], duration_s=row["duration_s"], user=row["tenant"],
                   weight=float(row["priority"]), source=f"api job {row['id']}")


def never_fits(cluster: Cluster, catalog: ModelCatalog, gpus: int, model: str,
               fitting: dict[float, int] | None = None) -> str:
    """Why a job can never run on this cluster (the engine's two reasons, same words), or ''. ``fitting``: a cache
    of GPUs with at least so much memory (the cluster does not change)."""
    if gpus > cluster.num_gpus:
        return f"asks for {gpus} GPUs; the cluster has {cluster.num_gpus}"
    mem = catalog[model].mem_mb
    fit = None if fitting is None else fitting.get(mem)
    if fit is None:
        fit = sum(1 for g in range(cluster.num_gpus) if cluster.gpu_mem_mb(g) >= mem)
        if fitting is not None:
            fitting[mem] = fit
    if fit < gpus:
        return f"asks for {gpus} GPUs with ≥ {mem:g} MB each; the cluster has {fit} GPUs that large"
    return ""


@dataclass
class Recovery:
    """What :meth:`Scheduler.start` found in the store."""

    requeued: list[str] = field(default_factory=list)
    restarted: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)


_STOP = object()


class Scheduler:
    """The live loop in its thread, bound to the store (see the module docstring)."""

    def __init__(self, store: JobStore, cluster: Cluster, policy: Policy, factory: RunFactory, *,
                 catalog: ModelCatalog, policy_name: str = "", policy_params: dict[str, Any] | None = None,
                 executor: str = "sim", time_scale: float = 1.0, progress_every_s: float = 2.0,
                 checkpoint_progress_every_s: float = 0.25, changes_every_s: float = CHANGES_EVERY_S) -> None:
        self.store = store
        self.cluster = cluster
        self.catalog = catalog
        self.pass_hist = Histogram()
        self.counters = Counters()
        self.policy = TimedPolicy(policy, self.pass_hist, store.slow)
        self.policy_name = policy_name or self.policy.name
        self.policy_params = dict(policy_params or {})
        self.executor = executor
        self.time_scale = time_scale
        self.progress_every_s = progress_every_s
        self.checkpoint_progress_every_s = checkpoint_progress_every_s
        self.changes_every_s = changes_every_s
        self._factory = factory
        self._run: LiveLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopping = False
        self.error: BaseException | None = None
        self.result: Any = None
        self.started_at = time.time()
        self._progress_at: dict[str, float] = {}  # job → when its last progress report was kept (monotonic)
        self._checkpoint_at: dict[str, float] = {}  # job → the checkpoint (iterations) of that report
        self._inbox: queue.Queue[Any] = queue.Queue()
        self._feeder: threading.Thread | None = None
        self._cancel_asked: set[str] = set()
        self._changes: queue.Queue[Any] = queue.Queue()
        self._writer: threading.Thread | None = None
        self._held: dict[str, int] = {}  # running job → GPUs it holds (from the loop's reports)
        self._busy_gpu_s = 0.0
        self._busy_since = time.monotonic()
        self._t0 = time.monotonic()
        self._busy_lock = threading.Lock()
        self._fitting: dict[float, int] = {}

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> Recovery:
        """Build the loop, start its thread and helpers, resubmit what the store left unfinished (before
        returning: the API opens after this)."""
        pending = self.store.unfinished()
        self._run = self._factory(self.policy, self._on_change)
        self._writer = threading.Thread(target=self._write_loop, name="ddlsched-store-writer", daemon=True)
        self._writer.start()
        self._thread = threading.Thread(target=self._loop, name="ddlsched-live", daemon=True)
        self._thread.start()
        rec = Recovery()
        for row in pending:
            jid = row["id"]
            if row["cancel_requested"]:
                if self.store.record(jid, "cancelled", {"reason": "cancel requested before the service restarted"}):
                    self.counters.end("cancelled")
                rec.cancelled.append(jid)
                continue
            was = row["state"]
            ckpt = float(row["checkpoint_iterations"] or 0.0)
            self.store.record(jid, "recovered", {"was": was, "from_iterations": ckpt, "attempts": row["attempts"]})
            (rec.restarted if was == "running" else rec.requeued).append(jid)
            reason = self._run.submit(spec_of(row), done_iterations=ckpt, attempt=int(row["attempts"]))
            if reason and self.store.record(jid, "rejected", {"reason": reason}):
                self.counters.end("rejected")
                rec.rejected.append(jid)
        self._feeder = threading.Thread(target=self._feed, name="ddlsched-feeder", daemon=True)
        self._feeder.start()
        return rec

    def _loop(self) -> None:
        assert self._run is not None
        try:
            self.result = self._run.run()
        except BaseException as e:  # the API reports it (GET /healthz, /metrics ddlsched_scheduler_up)
            self.error = e
            log.exception("the live loop stopped with an error")

    def stop(self, timeout_s: float = 30.0) -> None:
        """End the loop (jobs still open stay open in the store: a restarted service resumes them), then store
        every change it reported."""
        self._stopping = True
        self._inbox.put(_STOP)
        if self._run is not None:
            self._run.stop()
        if self._thread is not None:
            self._thread.join(timeout_s)
        if self._feeder is not None:
            self._feeder.join(timeout_s)
        self._changes.put(_STOP)
        if self._writer is not None:
            self._writer.join(timeout_s)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self.error is None

    # ---------------------------------------------------------------- the loop's reports
    def _on_change(self, ch: Any) -> None:
        """Queue one ``JobChange`` for the writer (called in the loop's thread, in order)."""
        kind = ch.kind
        if self._stopping and kind == "cancelled":
            return  # the loop ending its jobs at stop(): they stay open and resume at the next start
        if kind == "progress":  # not a change of state: see keep_progress
            if not self._keep_progress(ch.job_id, (ch.detail or {}).get("checkpoint")):
                return
        elif kind in ENDS:
            self._progress_at.pop(ch.job_id, None)
            self._checkpoint_at.pop(ch.job_id, None)
        detail = dict(ch.detail or {})
        if "gpus" in detail:
            detail["gpus"] = [int(g) for g in detail["gpus"]]
        self._account(ch.job_id, kind, detail)
        self._changes.put((ch.job_id, kind, detail, float(ch.time_s), time.time()))

    def _keep_progress(self, job_id: str, checkpoint: Any) -> bool:
        """Whether to store a progress report: at most one every ``progress_every_s`` wall seconds per job, but one
        that carries a newer checkpoint than the job's last stored one as soon as ``checkpoint_progress_every_s``
        wall seconds have passed since that job's last stored report (so that a restart resumes the job from a recent
        checkpoint while the number of writes stays bounded)."""
        now = time.monotonic()
        last = self._progress_at.get(job_id, -math.inf)
        newer = checkpoint is not None and checkpoint > self._checkpoint_at.get(job_id, 0.0)
        if now - last < (self.checkpoint_progress_every_s if newer else self.progress_every_s):
            return False
        self._progress_at[job_id] = now
        if newer:
            self._checkpoint_at[job_id] = float(checkpoint)
        return True

    def _write_loop(self) -> None:
        """Store the queued changes in order, in transactions of at most :data:`CHUNK`; a full store is retried
        (nothing dropped)."""
        while True:
            taken = next_batch(self._changes, _STOP, BATCH)
            if taken is None:
                return
            t0 = time.monotonic()
            batch, stop = taken
            done: list[bool] = []
            for k in range(0, len(batch), CHUNK):
                done += self._store_changes(batch[k:k + CHUNK])
            for (_, kind, _, _, _), ok in zip(batch, done, strict=True):
                if ok and kind in ENDS:
                    self.counters.end(ENDS[kind])
            if stop:
                return
            rest = self.changes_every_s - (time.monotonic() - t0)
            if rest > 0 and not self._stopping:
                time.sleep(rest)

    def _store_changes(self, chunk: list[Any]) -> list[bool]:
        """One transaction of changes; a full store is retried (nothing dropped) until the service stops."""
        while True:
            try:
                return self.store.record_many(chunk)
            except StoreFull:
                if self._stopping:  # not stored: those jobs stay open and resume at the next start
                    return [False] * len(chunk)
                log.error("job store full: %d changes wait to be stored", len(chunk))
                time.sleep(0.5)
            except Exception:
                log.exception("storing %d changes failed", len(chunk))
                return [False] * len(chunk)

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Wait until every change queued so far is stored (True) or ``timeout_s`` passes (False)."""
        end = time.monotonic() + timeout_s
        while not self._changes.empty():
            if time.monotonic() > end:
                return False
            time.sleep(0.005)
        return True

    def _account(self, job_id: str, kind: str, detail: dict[str, Any]) -> None:
        """Busy GPUs and their integral over wall time (utilisation since this process started)."""
        if kind not in ("started", "preempted", "lost", "finished", "failed", "cancelled"):
            return
        with self._busy_lock:
            now = time.monotonic()
            self._busy_gpu_s += sum(self._held.values()) * (now - self._busy_since)
            self._busy_since = now
            if kind == "started":
                self._held[job_id] = len(detail.get("gpus", ()))
            else:
                self._held.pop(job_id, None)

    def busy_gpus(self) -> int:
        with self._busy_lock:
            return sum(self._held.values())

    def utilisation(self) -> float:
        """Busy GPU-seconds / (cluster GPUs × wall seconds) since this process started."""
        with self._busy_lock:
            now = time.monotonic()
            busy = self._busy_gpu_s + sum(self._held.values()) * (now - self._busy_since)
        span = (now - self._t0) * self.cluster.num_gpus
        return busy / span if span > 0 else 0.0

    # ---------------------------------------------------------------- the API's requests
    def never_fits(self, gpus: int, model: str) -> str:
        return never_fits(self.cluster, self.catalog, gpus, model, self._fitting)

    def submit(self, row: dict[str, Any]) -> None:
        """Hand a stored job to the loop (a feeder passes it on; returns at once)."""
        self._inbox.put(row)

    def _feed(self) -> None:
        """Hand the queued jobs to the loop, everything queued meanwhile in one command."""
        assert self._run is not None
        while True:
            taken = next_batch(self._inbox, _STOP, BATCH)
            if taken is None:
                return
            batch, stop = taken
            rows = []
            for row in batch:
                if row["id"] in self._cancel_asked:  # cancelled before it reached the loop
                    if self.store.record(row["id"], "cancelled", {"reason": "cancelled before it was queued"}):
                        self.counters.end("cancelled")
                else:
                    rows.append(row)
            reasons = self._run.submit_many([spec_of(row) for row in rows]) if rows else []
            for row, reason in zip(rows, reasons, strict=True):
                jid = row["id"]
                if reason:
                    if not self._stopping and self.store.record(jid, "rejected", {"reason": reason}):
                        self.counters.end("rejected")
                elif jid in self._cancel_asked:  # asked while it was on its way: the loop has it now
                    self._run.cancel(jid)
            if stop:
                return

    def cancel(self, job_id: str) -> bool:
        """Ask the loop to cancel a job whose ``cancel_requested`` is stored (a job still on its way to the loop is
        cancelled when it gets there). False when the loop does not have it (yet, or any more)."""
        assert self._run is not None
        self._cancel_asked.add(job_id)
        return bool(self._run.cancel(job_id))

    def snapshot(self) -> dict[str, Any]:
        assert self._run is not None
        try:
            return dict(self._run.snapshot())
        except Exception as e:
            return {"error": str(e)}


__all__ = ["EXECUTORS", "LiveLoop", "Recovery", "Scheduler", "live_run_factory", "never_fits", "spec_of"]
