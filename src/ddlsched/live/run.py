"""A live run: one policy, the one core, the live execution model, an executor and the run clock.

:class:`LiveRun` runs in the thread that calls :meth:`LiveRun.run`; :meth:`submit`, :meth:`cancel`, :meth:`stop`
and :meth:`snapshot` may be called from any thread (a service's request handlers): commands are queued and carried
out by the loop at its next wait (within ``POLL_S`` wall seconds), under the run's state lock, which the loop holds
except while it waits. ``on_change`` is called in the loop's thread, in order, for every change of a job.

Batch mode (``jobs`` given, ``serve=False``): the jobs arrive at their trace arrival times on the run clock (run
seconds: wall seconds × ``time_scale``) and the run ends when no job can make progress any more. Serve mode: the run
goes on until :meth:`stop`. Every job submitted is accounted for at the end: completed + rejected + failed +
cancelled + unfinished = submitted (checked).
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ddlsched.cluster.topology import Cluster
from ddlsched.engine.core import Core, Progress
from ddlsched.engine.fluid import FluidModel
from ddlsched.engine.result import SimResult
from ddlsched.engine.run import DEFAULT_RESTART_PENALTY_S, SimConfig, default_catalog
from ddlsched.engine.state import JobStatus
from ddlsched.errors import ConfigError, SimulationError
from ddlsched.live.clock import LiveClock
from ddlsched.live.executor import Executor
from ddlsched.live.model import LiveJob, LiveModel, build_live_model
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import ModelCatalog

_FLAGS = {"perf_model": "--perf-model", "perf_params": "--perf-param", "model_params": "--model-param",
          "restart_penalty_s": "--restart-penalty"}


@dataclass(frozen=True)
class JobChange:
    """One change of one job (``kind``: arrived, rejected, started, progress, preempted, lost, finished, failed,
    cancelled), at run second ``time_s``."""

    time_s: float
    job_id: str
    kind: str
    detail: dict[str, Any]


@dataclass
class LiveResult(SimResult):
    """A :class:`SimResult` with measured times, plus the jobs that failed or were cancelled and the live figures
    (``live``: scheduling latency, event lag, CPU busy; ``docs/live.md``)."""

    failed: list[dict[str, Any]] = field(default_factory=list)
    cancelled: list[dict[str, Any]] = field(default_factory=list)
    submitted: int = 0
    live: dict[str, Any] = field(default_factory=dict)
    latency_samples: list[dict[str, Any]] = field(default_factory=list)
    """One per launch that followed a finish: job_id, attempt, ``pending`` (jobs still queued), ``latency_s`` (the
    finish → the launch handed to the executor) and, where the executor measures it, ``dispatched_s`` (the finish
    → the executor's backend asked: for Ray, the GPUs' warm actors called or the placement group requested)."""


def latency_stats(samples: Sequence[float]) -> dict[str, Any]:
    """count, median, p95 and max of wall-second samples, in milliseconds (None when there is none)."""
    if not samples:
        return {"count": 0, "median_ms": None, "p95_ms": None, "max_ms": None}
    xs = sorted(samples)

    def pct(q: float) -> float:
        k = (len(xs) - 1) * q
        lo = math.floor(k)
        hi = min(lo + 1, len(xs) - 1)
        return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)

    return {"count": len(xs), "median_ms": round(pct(0.5) * 1e3, 3), "p95_ms": round(pct(0.95) * 1e3, 3),
            "max_ms": round(xs[-1] * 1e3, 3)}


def _cpu_times() -> tuple[float, float] | None:
    """(busy, total) jiffies of every core since boot (Linux), or None."""
    try:
        with open("/proc/stat") as f:
            parts = [float(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = parts[3] + (parts[4] if len(parts) > 4 else 0.0)
    return sum(parts) - idle, sum(parts)


@dataclass
class _Command:
    kind: str
    args: tuple[Any, ...]
    done: threading.Event = field(default_factory=threading.Event)
    result: Any = None


def _over(kind: str, args: tuple[Any, ...]) -> Any:
    """A command's answer once the run is over."""
    if kind == "submit":
        return "the run is over"
    if kind == "submit_many":
        return ["the run is over"] * len(args[0])
    return False


class LiveRun:
    """Run ``policy`` live on ``cluster`` through ``executor`` (see the module docstring)."""

    def __init__(self, cluster: Cluster, policy: Any, executor: Executor, *, time_scale: float = 1.0,
                 config: SimConfig | None = None, catalog: ModelCatalog | None = None,
                 jobs: Sequence[JobSpec] = (), serve: bool = False,
                 on_change: Callable[[JobChange], None] | None = None,
                 checkpoint_grace_s: float = 30.0, progress: Progress | None = None) -> None:
        config = config or SimConfig()
        try:
            self.clock = LiveClock(time_scale)
        except ValueError as e:
            raise ConfigError(str(e), field="time_scale") from None
        if not (math.isfinite(checkpoint_grace_s) and checkpoint_grace_s >= 0):
            raise ConfigError(f"checkpoint grace must be a finite number >= 0, got {checkpoint_grace_s!r}",
                              field="checkpoint_grace_s")
        for opt in config.given():
            if opt not in FluidModel.options:
                raise ConfigError("does not apply to a live run (the fluid model's options: --perf-model, "
                                  "--perf-param, --restart-penalty)", field=_FLAGS[opt])
        if getattr(executor, "clock", 0) is None:  # an executor that runs on the run's clock (the twin)
            executor.clock = self.clock  # type: ignore[attr-defined]
        self.cluster, self.policy, self.executor = cluster, policy, executor
        self.config = config
        self.serve = serve
        self.grace_s = checkpoint_grace_s
        self._on_change = on_change
        penalty = DEFAULT_RESTART_PENALTY_S if config.restart_penalty_s is None else config.restart_penalty_s
        self.model: LiveModel = build_live_model(
            cluster, policy, executor, self.clock, perf_model=config.perf_model, perf_params=config.perf_params,
            restart_penalty_s=penalty, seed=config.seed, catalog=catalog or default_catalog(),
            grace_s=checkpoint_grace_s, serve=serve)
        policy.reset()
        self.core = Core(list(jobs), policy, self.model, record_timeseries=config.record_timeseries,
                         audit=config.audit, progress=progress)
        self.submitted = len(jobs)
        self._lock = threading.Lock()
        self._commands: deque[_Command] = deque()
        self._loop_thread: int | None = None
        self._state = "new"  # new → running → done
        self._changes = 0
        model = self.model
        model.lock = self._lock
        model.commands = self._drain
        model.run_command = self._run_deferred
        self._inflight: list[_Command] = []
        model.on_change = self._changed

    # ------------------------------------------------------------------ thread-safe entry points
    def submit(self, spec: JobSpec, *, done_iterations: float = 0.0, attempt: int = 0) -> str | None:
        """Queue a job now (its arrival is the run clock's now). ``done_iterations`` > 0: it resumes from a
        checkpoint after ``attempt`` earlier launches. Returns the rejection reason, or None."""
        return self._command("submit", spec, done_iterations, attempt)  # type: ignore[no-any-return]

    def submit_many(self, specs: Sequence[JobSpec]) -> list[str | None]:
        """Queue several new jobs in one turn of the loop, in order (each arrives at the run clock's now, as with
        :meth:`submit`). Returns each job's rejection reason, or None."""
        if not specs:
            return []
        return self._command("submit_many", list(specs))  # type: ignore[no-any-return]

    def cancel(self, job_id: str) -> bool:
        """Cancel a job that has not finished: pending → cancelled; running → stopped at once (no checkpoint)."""
        return bool(self._command("cancel", job_id))

    def stop(self) -> None:
        """End the run: running jobs are revoked (their checkpoints awaited up to the grace period, then they are
        cancelled) and reported unfinished; nothing new starts. Returns at once."""
        if self._state == "done":
            return
        cmd = _Command("stop", ())
        with self._lock:
            self._commands.append(cmd)

    def snapshot(self) -> dict[str, Any]:
        """The run now: clock, pending and running jobs, counts."""
        if threading.get_ident() == self._loop_thread:
            return self._snapshot()
        with self._lock:
            return self._snapshot()

    # ------------------------------------------------------------------ the loop
    @staticmethod
    def _latency_samples(model: LiveModel, dispatch: Any) -> list[dict[str, Any]]:
        out = []
        for (jid, attempt, pending), lat in zip(model.latency_launches, model.latency_s, strict=True):
            row: dict[str, Any] = {"job_id": jid, "attempt": attempt, "pending": pending, "latency_s": round(lat, 6)}
            d = dispatch.get((jid, attempt)) if isinstance(dispatch, Mapping) else None
            if d is not None:
                row["dispatched_s"] = round(lat + d, 6)
            out.append(row)
        return out

    @staticmethod
    def _dispatched(samples: list[dict[str, Any]]) -> dict[str, Any]:
        """``sched_latency_dispatched`` where the executor measured its own hop (finish → backend asked)."""
        d = [r["dispatched_s"] for r in samples if "dispatched_s" in r]
        return {"sched_latency_dispatched": latency_stats(d)} if d else {}

    def run(self) -> LiveResult:
        """Run until every job is done (batch) or :meth:`stop` (serve); returns the result."""
        if self._state != "new":
            raise SimulationError("a LiveRun runs once")
        model, core, executor = self.model, self.core, self.executor
        self._loop_thread = threading.get_ident()
        self._lock.acquire()
        self._state = "running"
        cpu0, sys0, wall0 = time.process_time(), _cpu_times(), time.perf_counter()
        try:
            executor.open(self.cluster)
            self.clock.start()
            for row in core.rejected:
                self._changed(0.0, row["job_id"], "rejected", {"reason": row["reason"]})
            result = core.run()
        finally:
            try:
                executor.close()
            finally:
                self._state = "done"
                self._lock.release()
                self._answer_leftovers()
        wall = time.perf_counter() - wall0
        cpu = time.process_time() - cpu0
        samples = self._latency_samples(model, getattr(executor, "dispatch_s", None))
        sys1 = _cpu_times()
        system_busy = None
        if sys0 is not None and sys1 is not None and sys1[1] > sys0[1]:
            system_busy = round((sys1[0] - sys0[0]) / (sys1[1] - sys0[1]), 4)
        live = {
            "executor": getattr(executor, "name", type(executor).__name__),
            "time_scale": self.clock.time_scale,
            "run_s": round(core.now, 6),
            "wall_s": round(wall, 4),
            "cpu_s": round(cpu, 4),
            "cpu_busy_loop": round(cpu / wall, 4) if wall > 0 else None,
            "cpu_busy_system": system_busy,
            "cpu_cores": os.cpu_count(),
            "sched_latency": latency_stats(model.latency_s),
            **self._dispatched(samples),
            "decision_latency": latency_stats(model.decision_s),
            "event_lag": latency_stats(model.event_lag_s),
            "checkpoint_grace_s": self.grace_s,
        }
        out = LiveResult(**{f: getattr(result, f) for f in SimResult.__dataclass_fields__},
                         failed=list(model.failed), cancelled=list(model.cancelled), submitted=self.submitted,
                         live=live, latency_samples=samples)
        out.unfinished = list(result.unfinished) + model.never_arrived
        out.execution_model = model.name
        n = len(out.records) + len(out.rejected) + len(out.failed) + len(out.cancelled) + len(out.unfinished)
        if n != self.submitted:
            raise SimulationError(f"live run: {self.submitted} jobs submitted but {len(out.records)} completed + "
                                  f"{len(out.rejected)} rejected + {len(out.failed)} failed + {len(out.cancelled)} "
                                  f"cancelled + {len(out.unfinished)} unfinished = {n}")
        return out

    # ------------------------------------------------------------------ internals (the loop's thread)
    def _command(self, kind: str, *args: Any) -> Any:
        if self._state == "done":
            return _over(kind, args)
        if threading.get_ident() == self._loop_thread:
            return self._do(kind, args)
        if self._state == "new":
            with self._lock:
                if self._state == "new":
                    return self._do(kind, args)
        cmd = _Command(kind, args)
        with self._lock:
            if self._state == "done":
                return _over(kind, args)
            self._commands.append(cmd)
        cmd.done.wait()
        return cmd.result

    def _drain(self) -> bool:
        """Take the queued commands (called by the model in the loop, the lock held): a submission is carried out
        now (its arrival is the clock's now); a cancel or stop becomes an event at the clock's now."""
        changed = False
        while self._commands:
            cmd = self._commands.popleft()
            changed = True
            if cmd.kind in ("submit", "submit_many"):
                try:
                    cmd.result = self._do(cmd.kind, cmd.args)
                finally:
                    cmd.done.set()
            else:
                self._inflight.append(cmd)
                self.model.defer(cmd)
        return changed

    def _run_deferred(self, cmd: _Command) -> None:
        try:
            cmd.result = self._do(cmd.kind, cmd.args)
        finally:
            self._inflight.remove(cmd)
            cmd.done.set()

    def _answer_leftovers(self) -> None:
        for cmd in [*self._commands, *self._inflight]:
            cmd.result = _over(cmd.kind, cmd.args)
            cmd.done.set()
        self._commands.clear()
        self._inflight.clear()

    def _do(self, kind: str, args: tuple[Any, ...]) -> Any:
        if kind == "submit":
            return self._submit_now(*args)
        if kind == "submit_many":
            return [self._submit_now(spec, 0.0, 0) for spec in args[0]]
        if kind == "cancel":
            return self._cancel_now(*args)
        if kind == "stop":
            self.model.stop(time.perf_counter() + self.grace_s / self.clock.time_scale + 5.0)
            return None
        raise ValueError(kind)

    def _submit_now(self, spec: JobSpec, done_iterations: float, attempt: int) -> str | None:
        core, model = self.core, self.model
        if model.stopping:
            return "the run is stopping"
        arrival = max(self.clock.now(), core.now, core.arrivals[-1].arrival_s if core.arrivals else 0.0)
        before = len(core.rejected)
        try:
            st = core.submit(replace(spec, arrival_s=arrival))
        except SimulationError as e:  # a duplicate job id
            return str(e)
        self.submitted += 1
        if st is None:
            reason = str(core.rejected[before]["reason"]) if len(core.rejected) > before else "rejected"
            self._changed(arrival, spec.job_id, "rejected", {"reason": reason})
            return reason
        assert isinstance(st, LiveJob)
        if done_iterations > 0:  # its record here covers the iterations left (executors see absolute counts)
            st.prior = min(float(done_iterations), st.work)
            st.work -= st.prior
            st.attempt = max(0, int(attempt))
            st.preemptions = max(st.preemptions, 1 if attempt > 0 else 0)
        return None

    def _cancel_now(self, job_id: str) -> bool:
        model, core = self.model, self.core
        st = model.states.get(job_id)
        if not isinstance(st, LiveJob):
            return False
        if st.status is JobStatus.PENDING and job_id not in model.pending:  # submitted, not arrived yet
            st.status = JobStatus.CANCELLED  # the model drops it when it arrives
            model.cancelled.append({"job_id": job_id, "num_gpus": st.num_gpus, "time_s": core.now,
                                    "iterations": st.prior + st.done_iters})
            self._changed(core.now, job_id, "cancelled", {"iterations": st.prior + st.done_iters})
            return True
        return model.cancel(job_id)

    def _changed(self, t: float, job_id: str, kind: str, detail: dict[str, Any]) -> None:
        self._changes += 1
        cb = self._on_change
        if cb is not None:
            cb(JobChange(t, job_id, kind, detail))

    def _snapshot(self) -> dict[str, Any]:
        model, core = self.model, self.core
        states = model.states
        pending = []
        for v in model.pending_views():
            s = states[v.job_id]
            assert isinstance(s, LiveJob)
            pending.append({"job_id": v.job_id, "num_gpus": v.num_gpus, "iterations": s.prior + s.done_iters,
                            "total_iterations": s.prior + s.work})
        running = []
        for st in model.running.values():
            assert isinstance(st, LiveJob)
            running.append({"job_id": st.job_id, "num_gpus": st.num_gpus, "gpus": list(st.gpus),
                            "iterations": st.prior + st.done_iters, "total_iterations": st.prior + st.work,
                            "attempt": st.attempt,
                            "launched": st.launched, "started": st.started})
        return {"now": self.clock.now(), "state": self._state, "pending": pending, "running": running,
                "counts": {"submitted": self.submitted, "completed": len(core.records),
                           "rejected": len(core.rejected), "failed": len(model.failed),
                           "cancelled": len(model.cancelled), "pending": len(pending), "running": len(running),
                           "not_arrived": sum(1 for st in core.arrivals[model.arrived:]
                                              if st.status is not JobStatus.CANCELLED)}}


__all__ = ["JobChange", "LiveResult", "LiveRun", "latency_stats"]
