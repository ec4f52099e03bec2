"""The one module of the service that talks to the live loop (``ddlsched.live.run.LiveRun``).

It owns the loop's thread, persists every change the loop reports to the job store *before* the loop goes on (the
loop calls ``on_change`` in its own thread and waits for it), resubmits at start what an earlier process left
unfinished (crash recovery), and keeps the scheduling-pass timings. Everything else in the service sees only
:class:`Scheduler`.

Crash recovery: every job the store holds as ``queued`` or ``running`` is resubmitted, in submission order, before
the API accepts anything: a queued job as it was; a running one from the iterations of its last checkpoint (a
preemption's or a lost worker's), recorded as a ``recovered`` event (``was: running``, a restart). The old process
is gone (``kill -9`` ends the sim executor with it), so no job runs twice at once. A job whose cancellation was
requested but not yet reported is ended as cancelled.

Every change of state is written before the loop goes on; ``progress`` reports (iteration counts, not changes of
state) are written at most every ``progress_every_s`` wall seconds per job, so a busy twin does not turn the store
into the bottleneck.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ddlsched.cluster.topology import Cluster
from ddlsched.errors import ConfigError
from ddlsched.policies.base import Policy
from ddlsched.service.metrics import Counters, Histogram, TimedPolicy
from ddlsched.service.store import JobStore, StoreFull
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import ModelCatalog

log = logging.getLogger("ddlsched.service")
EXECUTORS = ("sim", "ray")


class LiveLoop(Protocol):
    """What the service uses of ``LiveRun`` (docs/live.md; the contract in ``ddlsched.live.run``)."""

    def submit(self, spec: JobSpec, *, done_iterations: float = 0.0, attempt: int = 0) -> str | None: ...
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


@dataclass
class Recovery:
    """What :meth:`Scheduler.start` found in the store."""

    requeued: list[str] = field(default_factory=list)
    restarted: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)


class Scheduler:
    """The live loop in its thread, bound to the store (see the module docstring)."""

    def __init__(self, store: JobStore, cluster: Cluster, policy: Policy, factory: RunFactory, *,
                 catalog: ModelCatalog, policy_name: str = "", policy_params: dict[str, Any] | None = None,
                 executor: str = "sim", time_scale: float = 1.0, progress_every_s: float = 2.0) -> None:
        self.store = store
        self.cluster = cluster
        self.catalog = catalog
        self.pass_hist = Histogram()
        self.counters = Counters()
        self.policy = TimedPolicy(policy, self.pass_hist)
        self.policy_name = policy_name or self.policy.name
        self.policy_params = dict(policy_params or {})
        self.executor = executor
        self.time_scale = time_scale
        self._factory = factory
        self._run: LiveLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopping = False
        self.error: BaseException | None = None
        self.result: Any = None
        self.started_at = time.time()
        self.progress_every_s = progress_every_s
        self._progress_at: dict[str, float] = {}
        self._held: dict[str, int] = {}  # running job → GPUs it holds (from the loop's reports)
        self._busy_gpu_s = 0.0
        self._busy_since = time.monotonic()
        self._t0 = time.monotonic()
        self._busy_lock = threading.Lock()

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> Recovery:
        """Build the loop, start its thread, resubmit what the store left unfinished."""
        pending = self.store.unfinished()
        self._run = self._factory(self.policy, self._on_change)
        self._thread = threading.Thread(target=self._loop, name="ddlsched-live", daemon=True)
        self._thread.start()
        rec = Recovery()
        for row in pending:
            jid = row["id"]
            if row["cancel_requested"]:
                self.store.record(jid, "cancelled", {"reason": "cancel requested before the service restarted"})
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
        return rec

    def _loop(self) -> None:
        assert self._run is not None
        try:
            self.result = self._run.run()
        except BaseException as e:  # the API reports it (GET /healthz, /api/v1/cluster)
            self.error = e
            log.exception("the live loop stopped with an error")

    def stop(self, timeout_s: float = 30.0) -> None:
        """End the loop (jobs still open stay open in the store: a restarted service resumes them)."""
        self._stopping = True
        if self._run is not None:
            self._run.stop()
        if self._thread is not None:
            self._thread.join(timeout_s)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self.error is None

    # ---------------------------------------------------------------- the loop's reports
    def _on_change(self, ch: Any) -> None:
        """Persist one ``JobChange`` (called in the loop's thread; the loop goes on once it is stored). A full disk
        holds the loop until the write succeeds: a change is never dropped."""
        kind = ch.kind
        if self._stopping and kind == "cancelled":
            return  # the loop ending its jobs at stop(): they stay open and resume at the next start
        if kind == "progress":  # not a change of state: stored at most every progress_every_s per job
            now = time.monotonic()
            if now - self._progress_at.get(ch.job_id, -math.inf) < self.progress_every_s:
                return
            self._progress_at[ch.job_id] = now
        elif kind in ("finished", "failed", "cancelled", "rejected"):
            self._progress_at.pop(ch.job_id, None)
        detail = dict(ch.detail or {})
        if "gpus" in detail:
            detail["gpus"] = [int(g) for g in detail["gpus"]]
        while True:
            try:
                done = self.store.record(ch.job_id, kind, detail, run_s=float(ch.time_s))
                break
            except StoreFull:
                if self._stopping:  # not stored: the job stays open in the store and resumes at the next start
                    return
                log.error("job store full: holding the loop until %s of %s can be stored", kind, ch.job_id)
                time.sleep(0.5)
        if done:
            self._account(ch.job_id, kind, detail)
            outcome = {"finished": "completed", "failed": "failed", "cancelled": "cancelled",
                       "rejected": "rejected"}.get(kind)
            if outcome:
                self.counters.end(outcome)

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
    def submit(self, row: dict[str, Any]) -> str | None:
        """Queue a stored job now; the rejection reason (the store then holds it as rejected), or None."""
        assert self._run is not None
        reason = self._run.submit(spec_of(row))
        if reason and self.store.record(row["id"], "rejected", {"reason": reason}):
            self.counters.end("rejected")
        return reason

    def cancel(self, job_id: str) -> bool:
        """Ask the loop to cancel a job whose ``cancel_requested`` is stored. False when the loop no longer has it
        (it ended meanwhile)."""
        assert self._run is not None
        return bool(self._run.cancel(job_id))

    def snapshot(self) -> dict[str, Any]:
        assert self._run is not None
        try:
            return dict(self._run.snapshot())
        except Exception as e:
            return {"error": str(e)}


__all__ = ["EXECUTORS", "LiveLoop", "Recovery", "Scheduler", "live_run_factory", "spec_of"]
