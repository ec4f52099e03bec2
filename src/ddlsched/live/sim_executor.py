"""The digital twin: an executor whose jobs progress at the rate the simulator's physics gives, in wall time.

:class:`SimExecutor` implements :class:`ddlsched.live.executor.Executor` without any worker: every launched job is a
placement in its own instance of the run's physics model (the same perf model a simulation uses, so jobs running at
once contend exactly as they would in ``ddlsched simulate``), advanced lazily to the run clock. It reports like a
real executor — STARTED, PROGRESS every ``report_every_s`` run seconds, FINISHED, CHECKPOINTED after a revoke,
FAILED / LOST when a fault is injected — and its events become visible only when the run clock reaches their time,
so a live run on the twin takes ``makespan / time_scale`` wall seconds.

What it models, and how it differs from a simulation (``docs/live.md``):

* A job's placement enters the physics when it is launched and leaves when it stops, as in the fluid model; a job
  iterates from ``start_s`` (first launch) or ``restart_s`` (a relaunch) run seconds after its launch — the
  simulator's restart penalty. Preemption: the job stops iterating at once and saves its progress; CHECKPOINTED
  follows ``checkpoint_s`` run seconds later (or it is killed after the grace period, losing the work since its last
  periodic checkpoint, every ``checkpoint_every_s`` of iterating; a lost worker likewise). PROGRESS comes every
  ``report_every_s`` run seconds, but at most every ``report_every_wall_s`` wall seconds.
* Actions take effect at the instant the core decided them (``LiveClock.decided_s``: zero actuation latency, the
  simulator's assumption) unless ``actuation="wall"``, which uses the run clock's now at the call (the loop's lag
  × time scale is then part of every job's time).
* Faults for tests: ``faults={job_id: Fault(...)}`` fails a job or loses its worker a given time after it started.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ddlsched.cluster.topology import Cluster
from ddlsched.errors import ConfigError
from ddlsched.live.clock import LiveClock
from ddlsched.live.executor import EventKind, ExecEvent, Launch
from ddlsched.perf import DEFAULT_PERF_MODEL, make_perf_model
from ddlsched.perf.base import PerfModel, Placement
from ddlsched.workload.profiles import ModelCatalog, ModelProfile

_STARTUP, _REPORT, _RELEASE, _FAULT = range(4)


@dataclass(frozen=True)
class Fault:
    """An injected fault: ``kind`` "fail" (the job's code fails) or "lose" (a worker dies), ``after_s`` run seconds
    after the job began iterating in launch ``attempt``."""

    kind: str
    after_s: float
    attempt: int = 1
    reason: str = "injected failure"


class _Job:
    """A launched job, with the fluid model's arithmetic (``FluidJob.sync`` and its completion time) so that the
    twin's event times are the simulator's, bit for bit, when the same things happen."""

    __slots__ = ("attempt", "began", "done", "fin", "iter_s", "job_id", "last_report", "last_t", "order", "resume",
                 "saved", "stopped", "work")

    def __init__(self, job_id: str, attempt: int, work: float, done: float, t: float, resume: float,
                 order: int = 0) -> None:
        self.job_id = job_id
        self.order = order  # launch order: breaks ties between equal completion times
        self.attempt = attempt
        self.work = work
        self.done = done
        self.saved = done  # iterations of its last checkpoint
        self.began: float | None = None  # when it began iterating (STARTED)
        self.iter_s = math.inf  # current iteration time (physics)
        self.stopped = False  # revoked or failed: no more progress
        self.last_t = t
        self.resume = resume  # it iterates from here on (its start-up ends)
        self.fin = math.inf
        self.last_report = (resume, done)

    def sync(self, t: float) -> None:
        dt = t - self.last_t
        if dt <= 0:
            return
        active = t - max(self.last_t, self.resume)
        if active > 0 and not self.stopped:
            self.done += active / self.iter_s
        self.last_t = t

    def done_at(self, t: float) -> float:
        """Iterations at ``t`` (no state change)."""
        active = t - max(self.last_t, self.resume)
        return min(self.work, self.done + (active / self.iter_s if active > 0 and not self.stopped else 0.0))

    def retime(self, t: float, iter_s: float) -> None:
        self.sync(t)
        self.iter_s = iter_s
        self.fin = max(t, self.resume) + max(0.0, self.work - self.done) * iter_s

    def finish_at(self) -> float:
        return math.inf if self.stopped else self.fin


class SimExecutor:
    """The digital twin (see the module docstring). ``clock`` is the run's clock (``LiveRun`` passes its own when
    the twin was built without one); ``perf_model``/``perf_params`` name the physics (default: the fluid model's)."""

    name = "sim"

    def __init__(self, catalog: ModelCatalog | None = None, *, clock: LiveClock | None = None,
                 perf_model: str | None = None, perf_params: Mapping[str, object] | None = None,
                 start_s: float = 0.0, restart_s: float = 30.0, report_every_s: float = 60.0,
                 report_every_wall_s: float = 0.05, checkpoint_s: float = 0.0, checkpoint_every_s: float = 600.0,
                 actuation: str = "decision", faults: Mapping[str, Fault] | None = None) -> None:
        for name, v in (("start_s", start_s), ("restart_s", restart_s), ("checkpoint_s", checkpoint_s)):
            if not (math.isfinite(v) and v >= 0):
                raise ConfigError(f"{name} must be a finite number >= 0, got {v!r}", field=name)
        for name, v in (("report_every_s", report_every_s), ("checkpoint_every_s", checkpoint_every_s),
                        ("report_every_wall_s", report_every_wall_s)):
            if not v > 0:
                raise ConfigError(f"{name} must be > 0, got {v!r}", field=name)
        if actuation not in ("decision", "wall"):
            raise ConfigError(f"actuation must be 'decision' or 'wall', got {actuation!r}", field="actuation")
        self.catalog = catalog
        self.clock = clock
        self.perf_model = perf_model or DEFAULT_PERF_MODEL
        self.perf_params = dict(perf_params or {})
        self.start_s, self.restart_s = start_s, restart_s
        self.report_every_s, self.checkpoint_s, self.checkpoint_every_s = report_every_s, checkpoint_s, \
            checkpoint_every_s
        self.report_every_wall_s = report_every_wall_s
        self.actuation = actuation
        self.faults = dict(faults or {})
        self.perf: PerfModel | None = None
        self.jobs: dict[str, _Job] = {}
        self._heap: list[tuple[float, int, int, str, int, float]] = []  # (t, seq, kind, job, attempt, value)
        self._fins: list[tuple[float, int, str, int]] = []  # (completion time, launch order, job, attempt); lazy
        self._seq = 0
        self._t = 0.0  # the last instant processed
        self._out: list[ExecEvent] = []
        self.launches = 0
        self.closed = False

    # ------------------------------------------------------------------ the Executor protocol
    def open(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.perf = make_perf_model(self.perf_model, cluster, **self.perf_params)
        if self.clock is None:
            self.clock = LiveClock(1.0)

    def launch(self, launch: Launch) -> None:
        t = self._instant()
        perf = self._perf()
        if launch.job_id in self.jobs:
            raise ConfigError(f"job {launch.job_id!r} launched while its attempt {self.jobs[launch.job_id].attempt} "
                              "is still running", field="launch")
        work = float(launch.options.get("work", launch.iterations))
        done = float(launch.options.get("resume_iterations", 0.0))
        startup = self.restart_s if launch.attempt > 1 else self.start_s
        self.launches += 1
        j = self.jobs[launch.job_id] = _Job(launch.job_id, launch.attempt, work, done, t, t + startup,
                                            self.launches)
        self._retime(perf.advance(t), t)  # the physics' clock (phased_tcp's phase locks), as the simulator's
        self._retime(perf.add(Placement(launch.job_id, tuple(launch.gpus), self._profile(launch))), t)
        self._push(j.resume, _STARTUP, j)

    def revoke(self, job_id: str, grace_s: float) -> None:
        t = self._instant()
        j = self.jobs.get(job_id)
        if j is None or j.stopped:
            return
        j.sync(t)
        self._stop(j, t)
        if self.checkpoint_s <= grace_s:
            j.saved = j.done
            self._push(t + self.checkpoint_s, _RELEASE, j, 0.0)
        else:
            self._checkpoint_before(j, t)
            self._push(t + grace_s, _RELEASE, j, 1.0)  # killed: it resumes from its last periodic checkpoint

    def cancel(self, job_id: str) -> None:
        t = self._instant()
        j = self.jobs.pop(job_id, None)
        if j is not None and not j.stopped:
            j.sync(t)
            self._stop(j, t)

    def poll(self, timeout_s: float) -> Sequence[ExecEvent]:
        clock = self._clock()
        timeout_s = max(0.0, timeout_s)
        deadline = time.perf_counter() + timeout_s
        limit = min(clock.now() + timeout_s * clock.time_scale, clock.horizon_s)  # never past the loop's next instant
        while True:
            self._advance(min(clock.now(), limit))
            if self._out or time.perf_counter() >= deadline:
                out, self._out = self._out, []
                return out
            nxt = self._next_time()
            wake = deadline if math.isinf(nxt) else min(deadline, clock.wall_of(nxt))
            pause = wake - time.perf_counter()
            if pause > 0:
                time.sleep(pause)

    def close(self) -> None:
        self.jobs.clear()
        self._heap.clear()
        self._fins.clear()
        self.closed = True

    # ------------------------------------------------------------------ internals
    def _clock(self) -> LiveClock:
        if self.clock is None:
            raise ConfigError("the twin executor was not opened", field="executor")
        return self.clock

    def _perf(self) -> PerfModel:
        if self.perf is None:
            raise ConfigError("the twin executor was not opened", field="executor")
        return self.perf

    def _profile(self, launch: Launch) -> ModelProfile:
        profile = launch.options.get("profile")
        if profile is None:
            if self.catalog is None:
                from ddlsched.engine.run import default_catalog

                self.catalog = default_catalog()
            profile = self.catalog[launch.spec.model]
        assert isinstance(profile, ModelProfile)
        return profile

    def _instant(self) -> float:
        """When an action takes effect: the decision's instant (or the clock's now), never before the last event
        already processed."""
        clock = self._clock()
        t = clock.instant() if self.actuation == "decision" else clock.now()
        self._advance(t)
        return max(t, self._t)

    def _report_every(self) -> float:
        """Run seconds between PROGRESS reports: ``report_every_s``, but at most one per ``report_every_wall_s`` of
        wall time (at a large time scale a report every minute of run time would be thousands per wall second)."""
        return max(self.report_every_s, self.report_every_wall_s * self._clock().time_scale)

    def _checkpoint_before(self, j: _Job, t: float) -> None:
        """``j.saved`` := its iterations at its last periodic checkpoint before ``t`` (every ``checkpoint_every_s``
        since it began iterating), back-computed at its current rate."""
        if j.began is None:
            return
        j.saved = self._saved_at(j, t, j.done)

    def _saved_at(self, j: _Job, t: float, done: float) -> float:
        """The iterations of ``j``'s last checkpoint before ``t`` when it has done ``done`` by ``t`` (no change)."""
        if j.began is None:
            return j.saved
        every = self.checkpoint_every_s
        k = math.floor((t - j.began) / every)
        if k < 1:
            return j.saved  # none yet in this attempt: it resumes where it began
        tc = j.began + k * every
        return max(j.saved, done - (t - tc) / j.iter_s)

    def _push(self, t: float, kind: int, j: _Job, value: float = 0.0) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, kind, j.job_id, j.attempt, value))

    def _stop(self, j: _Job, t: float) -> None:
        """The job stops iterating at ``t`` and leaves the physics (the others are re-timed)."""
        j.stopped = True
        self._retime(self._perf().advance(t), t)
        self._retime(self._perf().remove(j.job_id), t)

    def _retime(self, changed: Mapping[str, object], t: float) -> None:
        for jid, it in changed.items():
            j = self.jobs.get(jid)
            if j is None:
                continue
            j.retime(t, it.compute_s + it.comm_s)  # type: ignore[attr-defined]
            if j.fin < math.inf:
                heapq.heappush(self._fins, (j.fin, j.order, jid, j.attempt))
        if len(self._fins) > 4 * len(self.jobs) + 64:  # drop the stale entries now and then
            self._fins = [(j.fin, j.order, jid, j.attempt) for jid, j in self.jobs.items()
                          if j.fin < math.inf and not j.stopped]
            heapq.heapify(self._fins)

    def _first_finish(self) -> tuple[_Job | None, float]:
        """The running job that completes first and when (the earliest ``finish_at``; equal times: the earliest
        launched), from a heap whose outdated entries (re-timed, stopped or ended jobs) are dropped as they surface."""
        fins = self._fins
        while fins:
            f, _, jid, attempt = fins[0]
            j = self.jobs.get(jid)
            if j is not None and j.attempt == attempt and not j.stopped and j.fin == f:
                return j, f
            heapq.heappop(fins)
        return None, math.inf

    def _physics_time(self) -> float:
        """When the physics' times next change with time alone (``PerfModel.next_change``)."""
        return self.perf.next_change() if self.perf is not None else math.inf

    def _next_time(self) -> float:
        nxt = self._heap[0][0] if self._heap else math.inf
        return min(nxt, self._first_finish()[1], self._physics_time())

    def _advance(self, to: float) -> None:
        """Process every internal event up to run second ``to``, in time order."""
        heap = self._heap
        while True:
            t_heap = heap[0][0] if heap else math.inf
            fin, t_fin = self._first_finish()
            t_phys = self._physics_time()
            t = min(t_heap, t_fin, t_phys)
            if t > to or (self._out and t > self._out[-1].time_s):
                return  # one instant's reports at a time: the loop decides at that instant before the twin moves on
            t = max(t, self._t)
            self._t = t
            if t_phys < min(t_heap, t_fin):  # a phase lock ends: re-time, no report
                self._retime(self._perf().advance(t), t)
                continue
            if fin is not None and t_fin <= t_heap:
                self._finish(fin, t)
                continue
            _, _, kind, jid, attempt, value = heapq.heappop(heap)
            j = self.jobs.get(jid)
            if j is None or j.attempt != attempt:
                continue
            self._on(kind, j, t, value)

    def _emit(self, kind: EventKind, j: _Job, t: float, **kw: object) -> None:
        self._out.append(ExecEvent(kind, j.job_id, t, j.attempt, **kw))  # type: ignore[arg-type]

    def _finish(self, j: _Job, t: float) -> None:
        j.done = j.work
        self._retime(self._perf().advance(t), t)
        del self.jobs[j.job_id]
        self._retime(self._perf().remove(j.job_id), t)
        self._emit(EventKind.FINISHED, j, t, iterations=j.work)

    def _on(self, kind: int, j: _Job, t: float, value: float) -> None:
        if kind == _STARTUP:
            if j.stopped:
                return
            j.last_report = (t, j.done_at(t))
            self._emit(EventKind.STARTED, j, t, iterations=j.last_report[1])
            j.began = t
            self._push(t + self._report_every(), _REPORT, j)
            fault = self.faults.get(j.job_id)
            if fault is not None and fault.attempt == j.attempt:
                self._push(t + fault.after_s, _FAULT, j)
        elif kind == _REPORT:
            if j.stopped:
                return
            done = j.done_at(t)  # a report changes nothing in the job (its arithmetic stays the simulator's)
            t0, d0 = j.last_report
            iter_s = (t - t0) / (done - d0) if done > d0 else None
            j.last_report = (t, done)
            self._emit(EventKind.PROGRESS, j, t, iterations=done, iter_s=iter_s,
                       checkpoint=self._saved_at(j, t, done))
            self._push(t + self._report_every(), _REPORT, j)
        elif kind == _RELEASE:
            del self.jobs[j.job_id]
            self._emit(EventKind.CHECKPOINTED, j, t, iterations=j.saved, killed=bool(value))
        elif kind == _FAULT:
            if j.stopped:
                return
            j.sync(t)
            fault = self.faults[j.job_id]
            self._checkpoint_before(j, t)
            self._stop(j, t)
            del self.jobs[j.job_id]
            if fault.kind == "fail":
                self._emit(EventKind.FAILED, j, t, iterations=j.done, reason=fault.reason)
            else:
                self._emit(EventKind.LOST, j, t, iterations=j.saved, reason=fault.reason)


__all__ = ["Fault", "SimExecutor"]
