"""The live execution model: the fluid model with its clock and its job progress supplied by an executor.

:class:`LiveModel` *is* a :class:`~ddlsched.engine.fluid.FluidModel` — the same queue, the same free-GPU index, the
same decision validation, the same :class:`~ddlsched.engine.view.SchedulerView` and
:class:`~ddlsched.engine.jobview.JobView` for policies — with three differences:

* **Time** is the run clock (:class:`~ddlsched.live.clock.LiveClock`): :meth:`LiveModel.hold` blocks until the
  clock reaches the core's next event, while the executor's reports are pushed onto the core's heap at their run
  time (never before the core's now), and commands from other threads (submit, cancel, stop) are carried out.
* **Progress is measured.** A ``Start`` is validated exactly as in the fluid model and becomes an
  ``executor.launch``; no completion is predicted. A job's iterations are the executor's last report, extrapolated
  between reports at the measured iteration time (the physics' prediction before the first report); it finishes
  when the executor says FINISHED.
* **Preemption takes time.** ``Preempt`` revokes the job's lease (``executor.revoke``); the job goes back to the
  queue at once (as in the fluid model, so a policy may plan the freed GPUs in the same pass), but the GPUs are
  *draining* until CHECKPOINTED arrives: a start onto them (or of the job itself) is carried out — launched — only
  then. The job resumes from the iterations it saved; work since its checkpoint is lost and counted.

Accounts (``docs/live.md``): ``run_s`` is measured (from the start decision to the finish, over every attempt);
``restart_s`` is the time of every attempt before its first iteration (startup, waiting for a draining GPU) plus the
time of work lost (iterations past the last checkpoint, at the measured iteration time). The rest, the productive
time P, minus the ideal is the measured excess E; the physics predicts, for the placements and neighbours the job
actually had, an excess per cause S_c (summing to S). If E ≥ S every cause gets its prediction and the unexplained
remainder E − S is added to ``contention_s``; if 0 ≤ E < S the predictions are scaled by E / S; if E < 0 (faster
than its ideal) every other cause is 0 and ``contention_s`` = E is the one cause that may be negative.
"""

from __future__ import annotations

import math
import time
from bisect import bisect_left, insort
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ddlsched.cluster.topology import Cluster
from ddlsched.engine.decisions import Preempt, Start
from ddlsched.engine.fluid import FluidJob, FluidModel, _first_two
from ddlsched.engine.jobview import JobView
from ddlsched.engine.model import ModelSettings, Requirements
from ddlsched.engine.run import requirements_of
from ddlsched.engine.state import JobState, JobStatus
from ddlsched.engine.view import SchedulerView
from ddlsched.errors import ConfigError, SimulationError
from ddlsched.live.clock import LiveClock
from ddlsched.live.executor import EventKind, ExecEvent, Executor, Launch
from ddlsched.perf.base import IterationTime
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import ModelCatalog, ModelProfile

EXEC = 1
"""Event kind of an executor report on the core's heap (the fluid model's COMPLETE is 0 and never used here)."""
CMD = 2
"""Event kind of a command from another thread (cancel, stop), carried out at the run clock's now."""
POLL_S = 0.02
"""Longest wall wait inside :meth:`LiveModel.hold` before commands from other threads are looked at again."""


def server_name(server: int) -> str:
    """The name a live run gives server ``server`` of a cluster description (``s0``, ``s1``, …): ``Launch.servers``
    and what an executor matches its nodes against."""
    return f"s{server}"


def refusal(policy: Any) -> str:
    """Why a live run cannot carry out ``policy``'s decisions ('' when it can)."""
    req = requirements_of(policy)
    name = getattr(policy, "name", type(policy).__name__)
    if req.model != "fluid":
        return (f"policy {name!r} runs on the {req.model} execution model (task-level decisions); a live run carries "
                "out job-level Start/Preempt decisions only (the fluid model's)")
    if req.jobs_per_gpu > 1:
        return (f"policy {name!r} shares GPUs ({req.jobs_per_gpu} jobs per GPU); a live run gives every job "
                "exclusive GPUs")
    return ""


class LiveJob(FluidJob):
    """A fluid job whose progress is measured: ``sync`` extrapolates from the last report and collects the
    physics' predicted excess per cause over the stretches the job iterated (weights of the accounts)."""

    def __init__(self, spec: JobSpec, profile: ModelProfile, seq: int) -> None:
        super().__init__(spec, profile, seq)
        self.attempt = 0  # launches so far
        self.launched = False  # the current start reached the executor (False while deferred)
        self.started = False  # the current attempt reported STARTED
        self.pred: IterationTime | None = None  # the physics' iteration on the current placement and neighbours
        self.meas_iter_s: float | None = None  # measured mean iteration time (this attempt)
        self.factor = 1.0  # measured ÷ predicted iteration time over the last report interval
        self.mark_w = 0.0  # predicted iterations (w_sum) and measured iterations at the last report
        self.mark_n = 0.0
        self.base_iters = 0.0  # the last measured point: iterations (and mark_w: predicted iterations then)
        self.revoked_iters = 0.0  # iterations at the revoke that awaits its checkpoint
        self.lost_rate = 0.0  # seconds per iteration of the revoked attempt (to value lost work)
        self.lost_iters = 0.0
        self.w_sum = 0.0  # predicted iterations while iterating, and the predicted excess / comm over them
        self.w_het = self.w_spr = self.w_shr = self.w_con = self.w_comm = 0.0
        self.reason = ""
        self.prior = 0.0  # iterations done before this run (a resubmitted job): not part of its record here

    def rate(self) -> float:
        """Seconds per iteration to extrapolate with: the physics' prediction for the job's current placement and
        neighbours × the measured ÷ predicted ratio of the last report interval (1 before the first report)."""
        p = self.pred
        if p is None:
            return self.meas_iter_s if self.meas_iter_s is not None else math.inf
        return (p.compute_s + p.comm_s) * self.factor

    def sync(self, now: float) -> None:
        """The fluid job's accounts, at the same points and with the same arithmetic (so a policy reads the same
        figures as in a simulation); the job iterates from ``resume_t`` (its STARTED report, ``inf`` before it).
        Its iterations: the last report's + the physics' predicted iterations since ÷ the measured ratio."""
        dt = now - self.last_t
        if dt <= 0:
            return
        self.run_s += dt
        self.attained_gpu_s += dt * len(self.gpus)
        active = now - max(self.last_t, self.resume_t)
        p = self.pred
        if active > 0 and p is not None:
            w = active / (p.compute_s + p.comm_s)
            self.w_sum += w
            self.w_het += w * self.d_het
            self.w_spr += w * self.d_spr
            self.w_shr += w * self.d_shr
            self.w_con += w * self.d_con
            self.w_comm += w * p.comm_s
            self.restart_s += dt - active
            done = min(self.work, self.base_iters + (self.w_sum - self.mark_w) / self.factor)
            if done > self.done_iters:
                self.done_iters = done
        else:
            self.restart_s += dt
        self.last_t = now

    def w_at(self, now: float) -> float:
        """``w_sum`` as it will read after a sync at ``now`` (no state change)."""
        p = self.pred
        active = now - max(self.last_t, self.resume_t)
        return self.w_sum + (active / (p.compute_s + p.comm_s) if active > 0 and p is not None else 0.0)

    def began(self, now: float) -> None:
        """STARTED at ``now``: it iterates from here (resumed at ``done_iters``)."""
        self.resume_t = now
        self.started = True
        self.factor = 1.0
        self.mark_w, self.mark_n = self.w_at(now), self.done_iters
        self.base_iters = self.done_iters

    def measured(self, now: float, iterations: float) -> None:
        """A report at ``now``: ``iterations`` done. Updates the measured ÷ predicted ratio and the base of the
        extrapolation (no sync: the time accounts stay on the fluid model's schedule)."""
        w = self.w_at(now)
        dn = iterations - self.mark_n
        dw = w - self.mark_w
        if dn > 1e-9 and dw > 1e-9:
            self.factor = dw / dn
        self.mark_n, self.mark_w = iterations, w
        self.done_iters = min(max(iterations, 0.0), self.work)
        self.base_iters = self.done_iters

    def lose(self, saved: float, rate: float) -> float:
        """Go back to the checkpoint at ``saved`` iterations; the time of the lost work becomes restart time
        (at most the productive time so far). Returns the iterations lost."""
        lost = max(0.0, self.done_iters - saved)
        if lost > 0 and math.isfinite(rate):
            self.restart_s += min(lost * rate, max(0.0, self.run_s - self.restart_s))
        self.lost_iters += lost
        self.done_iters = min(max(saved, 0.0), self.work)
        return lost


class LiveView(SchedulerView):
    """The fluid model's view; a running job's current iteration time is the measured one once reported."""

    def current_time(self, job_id: str) -> IterationTime:
        st = self._m.states[job_id]
        return st.iter_time if st.iter_time is not None else self._m.perf.current(job_id)


Change = Callable[[float, str, str, dict[str, Any]], None]


class LiveModel(FluidModel):
    name = "live"
    description = "the fluid model's decisions carried out by an executor; progress and times measured"

    def __init__(self, cluster: Cluster, catalog: ModelCatalog, requirements: Requirements,
                 settings: ModelSettings, *, executor: Executor, clock: LiveClock, grace_s: float = 30.0,
                 serve: bool = False) -> None:
        super().__init__(cluster, catalog, requirements, settings)
        # the unexplained remainder may be < 0 (module docstring). Set on the instance: the compiled core reads the
        # base class's attribute slot, where a class attribute of this plain-Python subclass is not seen
        self.nonphysical = frozenset({"contention_s"})
        # the engine's copy of the physics only estimates (times are the executor's): not told the clock, so no
        # PHYSICS events here; a twin's own physics is (live/sim_executor.py)
        self._clocked = False
        self.executor = executor
        self.clock = clock
        self.grace_s = grace_s
        self.serve = serve
        self._inbox: dict[int, ExecEvent] = {}
        self._inbox_seq = 0
        self._deferred: dict[str, LiveJob] = {}  # started by the policy, launch waiting for draining GPUs
        self._draining: dict[int, str] = {}  # GPU → revoked job still checkpointing on it
        self._draining_jobs: dict[str, tuple[int, ...]] = {}
        self._material = False  # an event the fluid model would also have (arrival, finish, …) at this instant
        self.stopping = False
        self._stop_deadline = math.inf
        self._finalised = False
        self.arrived = 0
        self.never_arrived: list[str] = []
        self.failed: list[dict[str, Any]] = []
        self.cancelled: list[dict[str, Any]] = []
        self.on_change: Change | None = None
        self.commands: Callable[[], bool] | None = None  # the run's queued commands (returns: anything changed)
        self.run_command: Callable[[Any], None] | None = None  # carries out a command deferred to its instant
        self._cmds: dict[int, Any] = {}
        self.lock: Any = None  # the run's state lock, held by the loop except while it waits
        self._mech.update({"lost_workers": 0, "killed_revocations": 0, "deferred_launches": 0, "failures": 0,
                           "cancellations": 0})
        self._finish_mark: tuple[float, float] | None = None  # (wall processed, wall of the event's run time)
        self.latency_s: list[float] = []  # a job's finish (its run time on the clock) → next launch, wall s
        self.latency_launches: list[tuple[str, int, int]] = []  # per latency_s sample: job, attempt, jobs still queued
        self.decision_s: list[float] = []  # the finish event processed → next launch, wall s
        self.event_lag_s: list[float] = []  # an executor event's run time → processed, wall s
        self._server_names = [server_name(s) for s in range(cluster.num_servers)]

    # ---------------------------------------------------------------- per job
    def new_state(self, spec: JobSpec, profile: ModelProfile, seq: int) -> LiveJob:
        st = LiveJob(spec, profile, seq)
        st.view = JobView(st, self.ctx)
        self.states[spec.job_id] = st
        return st

    def arrive(self, st: JobState) -> None:
        self.arrived += 1
        if st.status is JobStatus.CANCELLED:
            return  # cancelled before it arrived (it stays in the core's arrivals: the core's cursor counts it)
        super().arrive(st)
        self._material = True
        self._emit("arrived", st.job_id, {"num_gpus": st.num_gpus, "model": st.spec.model})

    # ---------------------------------------------------------------- the clock
    def hold(self, t_next: float) -> bool:
        clock, executor, lock = self.clock, self.executor, self.lock
        self._finish_mark = None  # a launch in a later turn is not the finish's pass
        while True:
            changed = self.commands() if self.commands is not None else False
            if self.stopping:
                if self._stop_step():
                    return True
                if self._finalised:
                    return False
            wait = clock.wall_until(t_next)
            busy = bool(self.running) or bool(self._draining_jobs)
            if not (busy or changed or self.serve or self.stopping):
                if math.isinf(t_next):
                    return False  # a batch run with nothing left that can report (pending jobs stay unfinished)
                core: Any = self.ctx
                if not self.pending and self.arrived == len(core.arrivals):
                    core.heap.clear()  # only policy wake-ups are left, with nothing to decide: the run is over
                    return True
            timeout = 0.0 if (changed or wait <= 0) else min(wait, POLL_S)
            # a command just carried out (a submission arriving at the clock's now, a deferred cancel) is an instant
            # t_next does not include: the twin must not move past the core's now before the core has handled it
            # (else a job launched at that arrival starts at the twin's later time; the service's twin test)
            clock.horizon_s = min(t_next, self.ctx.now) if changed else t_next
            if lock is not None:
                lock.release()  # other threads may read a snapshot or queue commands while the loop waits
            try:
                events = executor.poll(timeout)
            finally:
                if lock is not None:
                    lock.acquire()
            if events:
                self._enqueue_events(events)
                changed = True
            if changed:
                return True
            if wait <= 0:
                return False

    def _enqueue_events(self, events: Sequence[ExecEvent]) -> None:
        now, wall, clock = self.ctx.now, time.perf_counter(), self.clock
        for ev in events:
            self._inbox_seq += 1
            self._inbox[self._inbox_seq] = ev
            self.event_lag_s.append(max(0.0, wall - clock.wall_of(ev.time_s)))
            self.ctx.push(max(ev.time_s, now), EXEC, ev.job_id, self._inbox_seq)

    # ---------------------------------------------------------------- events
    def is_stale(self, kind: int, key: str, version: int) -> bool:
        return False

    def defer(self, command: Any) -> None:
        """Carry out ``command`` (through ``run_command``) as an event at the run clock's now, so that it happens at
        the instant it was asked for (the core's now may lag the clock when nothing has happened for a while)."""
        self._inbox_seq += 1
        self._cmds[self._inbox_seq] = command
        self.ctx.push(max(self.clock.now(), self.ctx.now), CMD, "", self._inbox_seq)

    def on_event(self, kind: int, key: str, version: int) -> None:
        if kind == CMD:
            command = self._cmds.pop(version)
            if self.run_command is not None:
                self.run_command(command)
            return
        ev = self._inbox.pop(version)
        st = self.states.get(ev.job_id)
        if not isinstance(st, LiveJob):
            return  # not a job of this run (an executor's stray report)
        now = self.ctx.now
        k = ev.kind
        if k is EventKind.CHECKPOINTED or (st.job_id in self._draining_jobs and ev.attempt == st.attempt
                                           and k is EventKind.LOST):
            self._checkpointed(st, ev, now)
            return
        if st.job_id in self._draining_jobs and ev.attempt == st.attempt and k in (EventKind.FINISHED,
                                                                                   EventKind.FAILED):
            self._undrain(st)
            if st.status is JobStatus.RUNNING:  # restarted by the policy meanwhile; that launch never happened
                self._deferred.pop(st.job_id, None)
                self._release(st, now)
            elif st.status is JobStatus.PENDING:
                self._dequeue(st)
            self._launch_ready(now)
        elif ev.attempt != st.attempt or st.status is not JobStatus.RUNNING or not st.launched:
            return  # a report of an older attempt, or of a job no longer running here
        if k is EventKind.STARTED:
            st.began(now)
        elif k is EventKind.PROGRESS:
            st.measured(now, ev.iterations - st.prior)
            if ev.iter_s is not None and ev.iter_s > 0 and math.isfinite(ev.iter_s):
                st.meas_iter_s = ev.iter_s
            self._show_measured(st)
            detail = {"iterations": st.prior + st.done_iters, "iter_s": ev.iter_s}
            if ev.checkpoint is not None:  # the executor's last saved checkpoint (a service stores it)
                detail["checkpoint"] = ev.checkpoint
            self._emit("progress", st.job_id, detail)
        elif k is EventKind.FINISHED:
            self._complete(st, now)
        elif k is EventKind.FAILED:
            self._fail(st, ev.reason or "the job's code failed", now)
        elif k is EventKind.LOST:
            self._lost(st, ev, now)

    @staticmethod
    def _show_measured(st: LiveJob) -> None:
        """What policies read as the job's iteration time: the prediction × the measured ratio, once measured."""
        p = st.pred
        if p is not None and st.meas_iter_s is not None:
            st.iter_time = IterationTime(p.compute_s * st.factor, p.comm_s * st.factor)

    def _complete(self, st: LiveJob, now: float) -> None:
        if st.status is JobStatus.RUNNING:
            st.sync(now)
            self._release(st, now)
        st.done_iters = st.work
        st.finish = now
        self._close_accounts(st)
        self.ctx.complete(st)
        self._material = True
        if self.pending:
            self._finish_mark = (time.perf_counter(), self.clock.wall_of(now))
        self._emit("finished", st.job_id, {"run_s": st.run_s, "restart_s": st.restart_s})

    def _fail(self, st: LiveJob, reason: str, now: float) -> None:
        if st.status is JobStatus.RUNNING:
            st.sync(now)
            self._release(st, now)
        elif st.status is JobStatus.PENDING:
            self._dequeue(st)
        st.status = JobStatus.FAILED
        st.reason = reason
        self.failed.append({"job_id": st.job_id, "num_gpus": st.num_gpus, "time_s": now, "reason": reason,
                            "iterations": st.prior + st.done_iters, "attempts": st.attempt})
        self._mech["failures"] += 1
        self._material = True
        self._emit("failed", st.job_id, {"reason": reason})

    def _lost(self, st: LiveJob, ev: ExecEvent, now: float) -> None:
        st.sync(now)
        rate = st.rate()
        self._release(st, now)
        st.gpus = ()
        lost = st.lose(ev.iterations - st.prior, rate)
        st.preemptions += 1
        st.started = st.launched = False
        self._mech["lost_workers"] += 1
        self._enqueue(st, now, in_order=False)
        self._material = True
        self._emit("lost", st.job_id, {"iterations": st.prior + st.done_iters, "lost_iterations": lost,
                                       "reason": ev.reason})

    def _checkpointed(self, st: LiveJob, ev: ExecEvent, now: float) -> None:
        if st.job_id not in self._draining_jobs or ev.attempt != st.attempt:
            return
        self._undrain(st)
        if st.status is JobStatus.RUNNING:
            st.sync(now)  # restarted meanwhile (deferred): waiting for this checkpoint
        queued = st.status is JobStatus.PENDING
        if queued:  # its iterations change while it is queued: out of the sorted indexes, and back in after
            self._unindex(st)
        killed = ev.killed or ev.kind is EventKind.LOST
        if killed:  # work since its last checkpoint is lost (valued at the extrapolated progress at the revoke)
            st.done_iters = st.revoked_iters
            lost = st.lose(ev.iterations - st.prior, st.lost_rate)
            self._mech["killed_revocations"] += 1
        else:  # it saved its state at the lease's end: nothing lost (the count corrects the extrapolation)
            lost = 0.0
            st.done_iters = min(max(ev.iterations - st.prior, 0.0), st.work)
        if queued:
            self._reindex(st)
        self._emit("preempted", st.job_id, {"iterations": st.prior + st.done_iters, "killed": killed,
                                            "lost_iterations": lost})
        self._launch_ready(now)

    def _unindex(self, st: LiveJob) -> None:
        """Take a queued job out of the policies' sorted indexes (``pending_sorted``: keys are static while a job is
        queued in a simulation; here a checkpoint's count may change its remaining work)."""
        view = st.view
        for key, idx in self._indexes.items():
            del idx[bisect_left(idx, (key(view), view.seq), key=_first_two)]

    def _reindex(self, st: LiveJob) -> None:
        view = st.view
        for key, idx in self._indexes.items():
            insort(idx, (key(view), view.seq, view), key=_first_two)

    def _undrain(self, st: LiveJob) -> None:
        for g in self._draining_jobs.pop(st.job_id, ()):
            if self._draining.get(g) == st.job_id:
                del self._draining[g]

    # ---------------------------------------------------------------- passes and decisions
    def wants_pass(self, woken: bool) -> bool:
        material, self._material = self._material, False
        if self.stopping:
            return False
        if woken:
            return True
        return material and super().wants_pass(False)

    def view(self) -> SchedulerView:
        if self._view is None:
            self._view = LiveView(self)
        return self._view

    def _start(self, d: Start, now: float) -> None:
        if d.share or d.accum_steps != 1:
            raise SimulationError(f"t={now}: job {d.job_id}: a live run gives every job exclusive GPUs and its own "
                                  "batch (no share=True, no accum_steps)")
        super()._start(d, now)
        st = self.states[d.job_id]
        assert isinstance(st, LiveJob)
        st.started = st.launched = False
        st.resume_t = math.inf  # no progress before the executor reports STARTED
        st.meas_iter_s = None
        st.factor = 1.0
        if self._blocked(st):
            self._deferred[st.job_id] = st
            self._mech["deferred_launches"] += 1
        else:
            self._launch(st, now)

    def _blocked(self, st: LiveJob) -> bool:
        draining = self._draining
        return st.job_id in self._draining_jobs or any(g in draining for g in st.gpus)

    def _launch_ready(self, now: float) -> None:
        for jid, st in list(self._deferred.items()):
            if not self._blocked(st):
                del self._deferred[jid]
                self._launch(st, now)

    def _launch(self, st: LiveJob, now: float) -> None:
        st.attempt += 1
        st.launched = True
        st.base_iters = st.done_iters
        p = st.pred
        names = self._server_names
        gpu_server = self._gpu_server
        launch = Launch(job_id=st.job_id, attempt=st.attempt, spec=st.spec, gpus=st.gpus,
                        servers=tuple(names[gpu_server[g]] for g in st.gpus),
                        iterations=max(1, round(st.prior + st.work)), ideal_iter_s=st.ideal_iter_s,
                        predicted_iter_s=(p.compute_s + p.comm_s) if p is not None else math.nan,
                        options={"work": st.prior + st.work, "resume_iterations": st.prior + st.done_iters,
                                 "profile": st.profile})
        self._call(self.executor.launch, now, launch)
        mark = self._finish_mark
        if mark is not None:
            wall = time.perf_counter()
            self.decision_s.append(wall - mark[0])
            self.latency_s.append(max(0.0, wall - mark[1]))
            self.latency_launches.append((st.job_id, st.attempt, len(self.pending)))
            self._finish_mark = None
        self._emit("started", st.job_id, {"gpus": list(st.gpus), "attempt": st.attempt,
                                          "iterations": st.prior + st.done_iters})

    def _call(self, fn: Callable[..., Any], now: float, *args: Any) -> Any:
        clock = self.clock
        clock.decided_s = now
        try:
            return fn(*args)
        finally:
            clock.decided_s = None

    def _retime(self, changed: Mapping[str, IterationTime], now: float) -> None:
        """The physics' new predictions (no completion event: the executor reports it)."""
        for jid, t in changed.items():
            st = self.states[jid]
            assert isinstance(st, LiveJob)
            st.sync(now)
            st.pred = t
            st.d_shr = t.compute_s - st.alone_c
            st.d_con = t.comm_s - st.alone_m
            st.version += 1
            st.iter_time = t
            self._show_measured(st)

    def _preempt(self, d: Preempt, now: float) -> None:
        st = self.states.get(d.job_id)
        if st is None or st.status is not JobStatus.RUNNING:
            raise SimulationError(f"t={now}: cannot preempt job {d.job_id!r}: it is not running")
        assert isinstance(st, LiveJob)
        st.sync(now)
        rate = st.rate()
        launched = st.launched
        gpus = st.gpus
        self._release(st, now)
        self._mech["preemptions"] += 1
        st.preemptions += 1
        st.gpus = ()
        st.started = st.launched = False
        if launched:
            st.revoked_iters, st.lost_rate = st.done_iters, rate
            self._draining_jobs[st.job_id] = gpus
            for g in gpus:
                self._draining[g] = st.job_id
            self._call(self.executor.revoke, now, st.job_id, self.grace_s)
        else:
            self._deferred.pop(st.job_id, None)  # never reached the executor: nothing to revoke
            self._emit("preempted", st.job_id, {"iterations": st.prior + st.done_iters, "killed": False,
                                                "lost_iterations": 0.0})
        self._enqueue(st, now, in_order=False)
        if self._audit:
            self.ctx.audit("preempt", st.job_id, st.done_iters)

    # ---------------------------------------------------------------- accounts
    def _close_accounts(self, st: LiveJob) -> None:
        """Split the measured run time into ideal + causes (module docstring)."""
        st.restart_s = min(st.restart_s, st.run_s)
        productive = st.run_s - st.restart_s
        ideal = st.work * st.ideal_iter_s
        if st.w_sum > 0:
            k = st.work / st.w_sum
            pred = [st.w_het * k, st.w_spr * k, st.w_shr * k, st.w_con * k]
            pred = [max(0.0, x) for x in pred]
            comm = st.w_comm * k
        else:
            pred, comm = [0.0, 0.0, 0.0, 0.0], 0.0
        excess = productive - ideal
        total = sum(pred)
        extra = 0.0
        if excess >= total:
            extra = excess - total
        elif excess > 0:
            pred = [x * excess / total for x in pred]
        else:
            pred, extra = [0.0, 0.0, 0.0, 0.0], excess
        st.hetero_s, st.spread_s, st.sharing_s, st.contention_s = pred[0], pred[1], pred[2], pred[3] + extra
        st.switch_s = 0.0
        predicted = ideal + total
        st.comm_s = comm * (productive / predicted) if predicted > 0 else 0.0

    # ---------------------------------------------------------------- commands (the run's thread)
    def cancel(self, job_id: str) -> bool:
        """Cancel a pending or running job (running: executor.cancel, its GPUs released at once)."""
        st = self.states.get(job_id)
        if not isinstance(st, LiveJob) or st.status not in (JobStatus.PENDING, JobStatus.RUNNING):
            return False
        now = self.ctx.now
        if st.status is JobStatus.RUNNING:
            st.sync(now)
            launched = st.launched
            self._deferred.pop(job_id, None)
            self._release(st, now)
            if launched:
                self._call(self.executor.cancel, now, job_id)
        else:
            self._dequeue(st)
        if job_id in self._draining_jobs:
            self._call(self.executor.cancel, now, job_id)
            self._undrain(st)
            self._launch_ready(now)
        st.status = JobStatus.CANCELLED
        self.cancelled.append({"job_id": job_id, "num_gpus": st.num_gpus, "time_s": now,
                               "iterations": st.prior + st.done_iters})
        self._mech["cancellations"] += 1
        self._material = True
        self._emit("cancelled", job_id, {"iterations": st.prior + st.done_iters})
        return True

    def stop(self, deadline_wall_s: float) -> None:
        """Begin the end of the run: revoke every running job (its checkpoint is awaited until
        ``deadline_wall_s``, a ``time.perf_counter`` reading, then it is cancelled); no further decision."""
        if self.stopping:
            return
        self.stopping = True
        self._stop_deadline = deadline_wall_s
        now = self.ctx.now
        for st in list(self.running.values()):
            assert isinstance(st, LiveJob)
            self._preempt(Preempt(st.job_id), now)

    def _stop_step(self) -> bool:
        """While stopping: once nothing drains (or the deadline passed), empty the core's agenda. Returns whether
        the core must look again."""
        if self._finalised:
            return False
        if self._draining_jobs and time.perf_counter() < self._stop_deadline:
            return False
        now = self.ctx.now
        for jid in list(self._draining_jobs):
            self._call(self.executor.cancel, now, jid)
            st = self.states[jid]
            assert isinstance(st, LiveJob)
            self._undrain(st)
        for st in list(self._deferred.values()):
            self._release(st, now)
            self._enqueue(st, now, in_order=False)
        self._deferred.clear()
        core: Any = self.ctx
        core.heap.clear()  # the core's own list: nothing more happens in this run
        arrivals = core.arrivals
        self.never_arrived = [s.job_id for s in arrivals[self.arrived:] if s.status is not JobStatus.CANCELLED]
        del arrivals[self.arrived:]
        self._finalised = True
        return True

    # ---------------------------------------------------------------- observation
    def busy_gpus(self) -> int:
        return self._busy_gpus

    def finish_checks(self) -> None:
        super().finish_checks()
        if self._draining or self._deferred:
            raise SimulationError("live model: GPUs still draining or launches still deferred at the end")

    def _emit(self, kind: str, job_id: str, detail: dict[str, Any]) -> None:
        cb = self.on_change
        if cb is not None:
            cb(self.ctx.now, job_id, kind, detail)


def build_live_model(cluster: Cluster, policy: Any, executor: Executor, clock: LiveClock, *,
                     perf_model: str | None = None, perf_params: Mapping[str, Any] | None = None,
                     restart_penalty_s: float = 30.0, seed: int = 0, catalog: ModelCatalog,
                     grace_s: float = 30.0, serve: bool = False) -> LiveModel:
    """The live model for ``policy`` (refused with the reason when a live run cannot carry it out)."""
    why = refusal(policy)
    if why:
        raise ConfigError(why, field="policy")
    req = requirements_of(policy)
    settings = ModelSettings(perf_model=perf_model, perf_params=dict(perf_params or {}),
                             model_params=dict(req.model_params), restart_penalty_s=restart_penalty_s, seed=seed)
    return LiveModel(cluster, catalog, req, settings, executor=executor, clock=clock, grace_s=grace_s, serve=serve)


__all__ = ["CMD", "EXEC", "LiveJob", "LiveModel", "LiveView", "build_live_model", "refusal", "server_name"]
