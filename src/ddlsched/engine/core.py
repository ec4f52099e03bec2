"""The one event loop every execution model runs on: a heap, ``now``, an arrival cursor, and one policy call
per instant.

    loop:
        now ← the earliest of the next live event and the next arrival
        process every model event at now (superseded ones are skipped: lazy version invalidation)
        queue every arrival at now; let the model settle the instant (e.g. instant synchronisations)
        if the model wants it (or a wake-up fired): decisions ← policy.schedule(view)
            the model validates and applies them (WakeAt goes on the heap)
        sample the time series; report progress
    end when no event and no arrival is left

Everything specific to how jobs execute lives in the execution model (``ExecutionModel``): its events, its
view, its decisions. The core also rejects impossible jobs up front (more memory than its largest GPU, or the
model's reason, e.g. more GPUs at once than the cluster has), checks that time never goes back, turns every
finished job into a record whose accounts must close (``engine/records.py``), integrates busy GPUs, and stops a
run that can make no more progress (the remaining jobs are reported unfinished, with a note).
"""

from __future__ import annotations

import gc
import heapq
import math
import time as wallclock
from collections.abc import Callable, Sequence
from typing import Any

from ddlsched._mypyc import mypyc_attr
from ddlsched.engine.decisions import WakeAt
from ddlsched.engine.model import ExecutionModel
from ddlsched.engine.records import job_record, rejected_row
from ddlsched.engine.result import Records, SimResult
from ddlsched.engine.state import JobState, JobStatus
from ddlsched.errors import SimulationError
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import ModelProfile

EPS = 1e-9
"""Events within EPS seconds of now are processed at now."""
WAKE = 1 << 30
"""Event kind of a policy wake-up (after every model kind at the same instant)."""
STALL_PASSES = 10_000
"""Consecutive idle wake-ups (nothing running, nothing decided) after which a run is declared stuck."""
COMPACT_AT = 4096
"""Heap size at which stale events are first dropped in bulk (models with ``stale_is_final``); after each bulk drop
the next one comes at twice the live size, so it costs O(1) per push amortised."""

Progress = Callable[[float, int, int], None]


@mypyc_attr(allow_interpreted_subclasses=True)
class Core:
    """Run one policy over one workload through one execution model (see the module docstring)."""

    def __init__(self, jobs: Sequence[JobSpec], policy: Any, model: ExecutionModel, *,
                 record_timeseries: bool = True, audit: bool = False, progress: Progress | None = None,
                 skipped: int = 0) -> None:
        self.policy = policy
        self.model = model
        self.cluster = model.cluster
        self.now = 0.0
        self.heap: list[tuple[float, int, int, str, int]] = []
        self._seq = 0
        self._compact_at = COMPACT_AT if model.stale_is_final else -1  # -1: never
        self.compactions = 0
        self.events = 0
        self.records: list[tuple[Any, ...]] = []  # one row per completed job (engine/result.py Records)
        self.rejected: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.audit_log: list[tuple[float, str, str, float]] = []
        self._audit = self.auditing = audit
        self._record_ts = record_timeseries
        self.ts: dict[str, list[float]] = {"time_s": [], "busy_gpus": [], "pending": [], "running": []}
        self._busy = 0
        self._busy_since = 0.0
        self.busy_gpu_s = 0.0
        self.progress = progress
        self.skipped = skipped
        self._ids: set[str] = set()  # every job id given to this run (duplicates are an error)
        self._model_name: str = model.name
        self._nonphysical: frozenset[str] = model.nonphysical
        model.bind(self)
        self.arrivals = self._prepare(jobs)

    # ---------------------------------------------------------------- services for the model
    def push(self, t: float, kind: int, key: str = "", version: int = 0) -> None:
        self._seq += 1
        heap = self.heap
        heapq.heappush(heap, (t, kind, self._seq, key, version))
        if len(heap) == self._compact_at:
            self._compact()

    def _compact(self) -> None:
        """Drop the stale events in bulk. Events are unique tuples (``seq``), so the live ones pop in the same order
        from the rebuilt heap; a stale one would only have been skipped."""
        model, heap = self.model, self.heap
        heap[:] = [e for e in heap if e[1] == WAKE or not model.is_stale(e[1], e[3], e[4])]
        heapq.heapify(heap)
        self._compact_at = max(COMPACT_AT, 2 * len(heap))
        self.compactions += 1

    def complete(self, st: JobState) -> None:
        """The model finished a job: build its record and check that its accounts close."""
        st.status = JobStatus.DONE
        self.records.append(job_record(st, self._model_name, self._nonphysical))
        if self._audit:
            self.audit_log.append((self.now, "finish", st.job_id, st.work))

    def audit(self, kind: str, job_id: str, value: float = 0.0) -> None:
        if self._audit:
            self.audit_log.append((self.now, kind, job_id, value))

    # ---------------------------------------------------------------- setup
    def _prepare(self, jobs: Sequence[JobSpec]) -> list[JobState]:
        collecting = gc.isenabled()
        gc.disable()  # every job's state is new and lives on: collections here would find nothing to free
        try:
            return self._prepare_states(jobs)
        finally:
            if collecting:
                gc.enable()

    def _prepare_states(self, jobs: Sequence[JobSpec], first_seq: int = 0) -> list[JobState]:
        model, cluster = self.model, self.cluster
        arrivals: list[float] = [spec.arrival_s for spec in jobs]
        order: Sequence[int] = range(len(jobs))  # already in arrival order (loaders sort): what the sort gives
        for k in range(1, len(arrivals)):
            if arrivals[k] < arrivals[k - 1]:
                order = sorted(order, key=lambda i: (arrivals[i], i))
                break
        max_mem = max(gt.mem_mb for gt in cluster.gpu_types.values())
        seen = self._ids
        out: list[JobState] = []
        profiles: dict[str, ModelProfile] = {}  # the catalog's answers, looked up once per model name
        for seq, i in enumerate(order, first_seq):
            spec = jobs[i]
            if spec.job_id in seen:
                raise SimulationError(f"duplicate job id {spec.job_id!r} ({spec.source})")
            seen.add(spec.job_id)
            profile = profiles.get(spec.model)
            if profile is None:
                profile = profiles[spec.model] = model.catalog[spec.model]
            st = model.new_state(spec, profile, seq)
            mem = st.mem_mb
            if mem > max_mem:
                st.reject_reason = f"needs {mem:g} MB per GPU; the largest GPU has {max_mem:g} MB"
            else:
                st.reject_reason = model.prepare(st)
            if st.reject_reason:
                st.status = JobStatus.REJECTED
                self.rejected.append(rejected_row(st))
                continue
            out.append(st)
        return out

    def submit(self, spec: JobSpec) -> JobState | None:
        """Add one job while the run is going (live runs: a submission through the service). It is prepared and
        checked exactly like a trace's job; a job that can never run is rejected (None, its row in ``rejected``).
        Its arrival must not be before the last arrival already queued (arrivals stay in time order)."""
        if self.arrivals and spec.arrival_s < self.arrivals[-1].arrival_s:
            raise SimulationError(f"job {spec.job_id!r} submitted at {spec.arrival_s} s, before the last arrival "
                                  f"({self.arrivals[-1].arrival_s} s)")
        before = len(self.rejected)
        states = self._prepare_states([spec], len(self._ids))  # its rank: after every job given so far
        if len(self.rejected) > before:
            return None
        self.arrivals.append(states[0])
        return states[0]

    # ---------------------------------------------------------------- the loop
    def run(self) -> SimResult:
        t0 = wallclock.perf_counter()
        model, policy, heap, arrivals = self.model, self.policy, self.heap, self.arrivals
        records = self.records
        settles = type(model).settle is not ExecutionModel.settle
        holds = type(model).hold is not ExecutionModel.hold  # a live model: its clock, not the heap, sets the pace
        heappop = heapq.heappop
        record_ts, audit, progress = self._record_ts, self._audit, self.progress
        n_arr, i = len(arrivals), 0
        decision_types = (*model.decision_types, WakeAt)
        total, next_report, idle_wakes = n_arr, 0, 0
        events = 0
        while True:
            while heap:
                top = heap[0]
                if top[1] != WAKE and model.is_stale(top[1], top[3], top[4]):
                    heappop(heap)
                    continue
                break
            t_evt = heap[0][0] if heap else math.inf
            t_arr = arrivals[i].arrival_s if i < n_arr else math.inf
            now = t_evt if t_evt < t_arr else t_arr
            if holds and model.hold(now):
                n_arr = len(arrivals)  # Core.submit may have added arrivals
                continue
            if now == math.inf:
                break
            if now < self.now:
                if now < self.now - EPS:
                    raise SimulationError(f"time went back from {self.now} to {now}")
                now = self.now
            self.busy_gpu_s += self._busy * (now - self._busy_since)
            self._busy_since = self.now = now
            woken = False
            n_model = 0
            limit = now + EPS
            while heap and heap[0][0] <= limit:
                _, kind, _, key, ver = heappop(heap)
                if kind == WAKE:
                    woken = True
                    events += 1
                elif not model.is_stale(kind, key, ver):
                    events += 1
                    n_model += 1
                    model.on_event(kind, key, ver)
            while i < n_arr and arrivals[i].arrival_s <= now:
                st = arrivals[i]
                i += 1
                events += 1
                n_model += 1
                model.arrive(st)
                if audit:
                    self.audit_log.append((now, "arrive", st.job_id, 0.0))
            if settles:
                model.settle()
            changed = False
            if model.wants_pass(woken):
                todo = []
                wake = math.inf
                for d in policy.schedule(model.view()):
                    if type(d) is WakeAt:
                        if d.time < wake:
                            wake = d.time
                    elif isinstance(d, decision_types):
                        todo.append(d)
                    else:
                        raise SimulationError(f"t={now}: policy {self._policy_name()} returned {d!r}, which "
                                              f"the {model.name} execution model does not accept")
                changed = model.apply(todo)
                if wake < math.inf:
                    if not wake > now:
                        raise SimulationError(f"t={now}: policy asked to wake at {wake} <= now")
                    self.push(wake, WAKE)
            if woken and n_model == 0 and not changed and model.counts()[1] == 0:
                idle_wakes += 1
                if idle_wakes >= STALL_PASSES:
                    self.notes.append(f"stopped at t={now:g} s: {STALL_PASSES} wake-ups in a row with nothing "
                                      "running and nothing decided (the policy cannot start the remaining jobs)")
                    break
            else:
                idle_wakes = 0
            self._busy = model.busy_gpus()
            if record_ts:
                pending, running = model.counts()
                self._sample(now, pending, running)
            if progress is not None and len(records) >= next_report:
                progress(now, len(records), total)
                next_report = len(records) + max(1, total // 200)
        self.events = events
        self.busy_gpu_s += self._busy * (self.now - self._busy_since)
        self._busy_since = self.now
        unfinished = model.unfinished() + [st.job_id for st in arrivals[i:]]
        if not unfinished:
            model.finish_checks()
        if progress is not None:
            progress(self.now, len(self.records), total)
        name, params = model.physics()
        mech = {**model.mechanisms(), **policy.mechanisms()}
        return SimResult(mechanisms=dict(sorted(mech.items())),
                         records=Records(self.records), rejected=self.rejected, unfinished=unfinished,
                         timeseries=self.ts,
                         cluster=self.cluster, policy=self._policy_name(), execution_model=model.name,
                         perf_model=name, perf_params=params, seed=model.settings.seed, events=self.events,
                         wall_s=wallclock.perf_counter() - t0, busy_gpu_s=self.busy_gpu_s, skipped=self.skipped,
                         notes=self.notes, audit=self.audit_log)

    def release(self) -> None:
        """Drop the run's per-job state once its result is built (:meth:`ExecutionModel.release`)."""
        self.model.release()
        self.arrivals = []
        self.heap.clear()

    def _policy_name(self) -> str:
        return self.policy.name or type(self.policy).__name__

    def _sample(self, now: float, pending: int, running: int) -> None:
        ts = self.ts
        times = ts["time_s"]
        if times:
            if ts["busy_gpus"][-1] == self._busy and ts["pending"][-1] == pending and ts["running"][-1] == running:
                return
            if times[-1] == now:
                ts["busy_gpus"][-1], ts["pending"][-1], ts["running"][-1] = self._busy, pending, running
                return
        times.append(now)
        ts["busy_gpus"].append(self._busy)
        ts["pending"].append(pending)
        ts["running"].append(running)
