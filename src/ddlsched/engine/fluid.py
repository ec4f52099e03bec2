"""The event-driven fluid simulator (ALGORITHMS.md §1.2; ARCHITECTURE.md "engine").

Between events every running job advances at a constant rate of ``1 / iteration_time`` iterations per second.
Events are arrivals (a pointer into the arrival-sorted job list), completions and policy wake-ups (a heap).
When a job starts, finishes or is preempted, the physics model returns the jobs whose iteration time changed;
only those are re-timed, and their superseded completion events are invalidated lazily with a per-job
version counter (never searched for in the heap).

After all events at one instant are processed, the policy is asked for decisions once; the engine validates
and applies them (preemptions first, then starts), so a policy never mutates engine state.

Invariants checked on every run (a :class:`SimulationError` names the job and time): time never goes back,
no GPU hosts more jobs than allowed or more memory than it has, every finished job has done exactly its
iterations (work conserved), and a job never runs on a GPU twice at once.
"""

from __future__ import annotations

import heapq
import math
import random
import time as wallclock
from bisect import bisect_left, insort
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ddlsched.cluster.topology import Cluster
from ddlsched.engine.allocation import FreeGPUs
from ddlsched.engine.decisions import Decision, Preempt, Start, WakeAt
from ddlsched.engine.state import JobState, JobStatus, JobView, _Clock
from ddlsched.engine.view import SchedulerView
from ddlsched.errors import SimulationError
from ddlsched.perf import make_perf_model
from ddlsched.perf.base import IterationTime, PerfModel, Placement
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import ModelCatalog, default_catalog

_EPS = 1e-9
_COMPLETE, _WAKE = 0, 1


def _seq(view: JobView) -> int:
    return view.seq


def _first_two(entry: tuple[Any, int, JobView]) -> tuple[Any, int]:
    return entry[0], entry[1]


@dataclass
class SimConfig:
    """Engine settings. ``perf_model``/``perf_params`` pick the physics (``ddlsched.perf.PERF_MODELS``)."""

    perf_model: str = "maxmin"
    perf_params: dict[str, Any] = field(default_factory=dict)
    restart_penalty_s: float = 30.0
    max_jobs_per_gpu: int = 1
    seed: int = 0
    record_timeseries: bool = True
    audit: bool = False


@dataclass
class SimResult:
    """What a run produces: per-job records, a time series, and counters."""

    records: list[dict[str, Any]]
    timeseries: dict[str, list[float]]
    cluster: Cluster
    policy: str
    config: SimConfig
    events: int
    wall_s: float
    rejected: list[dict[str, Any]]
    unfinished: list[str]
    audit: list[tuple[float, str, str, float]] = field(default_factory=list)


class Simulator:
    """Run one policy over one workload on one cluster."""

    def __init__(self, cluster: Cluster, jobs: Sequence[JobSpec], policy: Any, config: SimConfig | None = None,
                 *, catalog: ModelCatalog | None = None, perf: PerfModel | None = None,
                 progress: Callable[[float, int, int], None] | None = None) -> None:
        self.cluster = cluster
        self.config = config or SimConfig()
        self.catalog = catalog or default_catalog()
        self.policy = policy
        self.perf = perf or make_perf_model(self.config.perf_model, cluster, **self.config.perf_params)
        self.progress = progress
        self.clock = _Clock()
        self.free = FreeGPUs(cluster)
        self.gpu_jobs: list[list[str]] = [[] for _ in range(cluster.num_gpus)]
        self.gpu_mem: list[float] = [0.0] * cluster.num_gpus
        self.states: dict[str, JobState] = {}
        self.pending: dict[str, JobState] = {}
        self._pending_sorted: list[JobView] = []  # always in arrival order (kept incrementally)
        self._indexes: dict[Callable[[JobView], Any], list[tuple[Any, int, JobView]]] = {}
        self._pending_demand: Counter[int] = Counter()
        self.running: dict[str, JobState] = {}
        self.heap: list[tuple[float, int, int, str, int]] = []
        self._seq = 0
        self.rejected: list[dict[str, Any]] = []
        self.records: list[dict[str, Any]] = []
        self.ts: dict[str, list[float]] = {"time_s": [], "busy_gpus": [], "pending": [], "running": []}
        self.audit: list[tuple[float, str, str, float]] = []
        self._ideal_cache: dict[tuple[str, int], float] = {}
        self._busy_gpus = 0
        self.events = 0
        self.view = SchedulerView(
            cluster=cluster, free=self.free, perf=self.perf, rng=random.Random(f"policy-{self.config.seed}"),
            max_jobs_per_gpu=self.config.max_jobs_per_gpu, restart_penalty_s=self.config.restart_penalty_s,
            pending=self._pending_views, pending_sorted=self._pending_index,
            running=lambda: [s.view for s in self.running.values()],  # type: ignore[misc]
            job=lambda j: self.states[j].view, gpu_jobs=lambda g: tuple(self.gpu_jobs[g]),  # type: ignore[return-value,misc]
            gpu_mem_used=lambda g: self.gpu_mem[g],
        )
        self._arrivals = self._prepare(jobs)

    # ------------------------------------------------------------------ setup
    def _ideal_iter_s(self, profile_name: str, n: int) -> float | None:
        key = (profile_name, n)
        if key not in self._ideal_cache:
            c = self.cluster
            ref = next((t for t, gt in c.gpu_types.items() if gt.speed == 1.0), None)
            gpus = c.consolidated_gpus(n, ref) if ref is not None else None
            gpus = gpus or c.consolidated_gpus(n)
            if gpus is None:
                return None
            t = self.perf.isolated(Placement("__ideal__", tuple(gpus), self.catalog[profile_name]))
            self._ideal_cache[key] = t.total_s
        return self._ideal_cache[key]

    def _prepare(self, jobs: Sequence[JobSpec]) -> list[JobState]:
        order = sorted(range(len(jobs)), key=lambda i: (jobs[i].arrival_s, i))
        max_mem = max(gt.mem_mb for gt in self.cluster.gpu_types.values())
        out: list[JobState] = []
        for seq, i in enumerate(order):
            spec = jobs[i]
            if spec.job_id in self.states:
                raise SimulationError(f"duplicate job id {spec.job_id!r} ({spec.source})")
            profile = self.catalog[spec.model]
            ideal = self._ideal_iter_s(spec.model, spec.num_gpus) if spec.num_gpus <= self.cluster.num_gpus else None
            st = JobState(spec=spec, profile=profile, total_iters=0.0, ideal_iter_s=ideal or math.nan, seq=seq)
            st.view = JobView(st, self.clock)
            self.states[spec.job_id] = st
            mem = spec.gpu_mem_mb or profile.mem_mb
            if ideal is None:
                st.reject_reason = f"asks for {spec.num_gpus} GPUs; the cluster has {self.cluster.num_gpus}"
            elif mem > max_mem:
                st.reject_reason = f"needs {mem:g} MB per GPU; the largest GPU has {max_mem:g} MB"
            if st.reject_reason:
                st.status = JobStatus.REJECTED
                self.rejected.append({"job_id": spec.job_id, "source": spec.source, "reason": st.reject_reason})
                continue
            assert ideal is not None
            st.total_iters = spec.iterations if spec.iterations is not None else spec.duration_s / ideal  # type: ignore[operator]
            out.append(st)
        return out

    # ------------------------------------------------------------------ views
    def _pending_views(self) -> list[JobView]:
        return self._pending_sorted

    def _pending_index(self, key: Callable[[JobView], Any]) -> list[JobView]:
        """Pending jobs sorted by a *static* per-job key (then arrival), maintained incrementally."""
        idx = self._indexes.get(key)
        if idx is None:
            idx = sorted((key(v), v.seq, v) for v in self._pending_sorted)
            self._indexes[key] = idx
        return [e[2] for e in idx]

    def _enqueue(self, st: JobState, now: float, *, in_order: bool) -> None:
        st.status = JobStatus.PENDING
        st.wait_since = now
        self.pending[st.job_id] = st
        self._pending_demand[st.spec.num_gpus] += 1
        view = st.view
        assert view is not None
        if in_order:
            self._pending_sorted.append(view)
        else:
            insort(self._pending_sorted, view, key=_seq)
        for key, idx in self._indexes.items():
            insort(idx, (key(view), view.seq, view), key=_first_two)

    def _dequeue(self, st: JobState) -> None:
        del self.pending[st.job_id]
        d = st.spec.num_gpus
        self._pending_demand[d] -= 1
        if not self._pending_demand[d]:
            del self._pending_demand[d]
        view = st.view
        assert view is not None
        lst = self._pending_sorted
        del lst[bisect_left(lst, st.seq, key=_seq)]
        for key, idx in self._indexes.items():
            del idx[bisect_left(idx, (key(view), view.seq), key=_first_two)]

    # ------------------------------------------------------------------ main loop
    def run(self) -> SimResult:
        t0 = wallclock.perf_counter()
        arrivals = self._arrivals
        n_arr = len(arrivals)
        i = 0
        heap = self.heap
        states = self.states
        total_jobs = len(arrivals)
        next_report = 0
        while True:
            while heap:
                _, kind, _, jid, ver = heap[0]
                if kind == _COMPLETE:
                    st = states[jid]
                    if st.version != ver or st.status is not JobStatus.RUNNING:
                        heapq.heappop(heap)
                        continue
                break
            t_evt = heap[0][0] if heap else math.inf
            t_arr = arrivals[i].spec.arrival_s if i < n_arr else math.inf
            now = t_evt if t_evt < t_arr else t_arr
            if now == math.inf:
                break
            if now < self.clock.now - _EPS:
                raise SimulationError(f"time went back from {self.clock.now} to {now}")
            now = max(now, self.clock.now)
            self.clock.now = now
            self.view.now = now
            dirty = woken = False
            while heap and heap[0][0] <= now + _EPS:
                _, kind, _, jid, ver = heapq.heappop(heap)
                self.events += 1
                if kind == _COMPLETE:
                    st = states[jid]
                    if st.version == ver and st.status is JobStatus.RUNNING:
                        self._finish(st, now)
                        dirty = True
                else:
                    woken = dirty = True
            while i < n_arr and arrivals[i].spec.arrival_s <= now:
                st = arrivals[i]
                i += 1
                self.events += 1
                self._enqueue(st, now, in_order=True)
                if self.config.audit:
                    self.audit.append((now, "arrive", st.job_id, 0.0))
                dirty = True
            if dirty:
                self._schedule(now, woken)
            if self.config.record_timeseries:
                self._sample(now)
            if self.progress is not None and len(self.records) >= next_report:
                self.progress(now, len(self.records), total_jobs)
                next_report = len(self.records) + max(1, total_jobs // 200)
        if self.progress is not None:
            self.progress(self.clock.now, len(self.records), total_jobs)
        unfinished = sorted(self.pending, key=lambda j: self.states[j].seq) + list(self.running)
        return SimResult(records=self.records, timeseries=self.ts, cluster=self.cluster,
                         policy=getattr(self.policy, "name", type(self.policy).__name__), config=self.config,
                         events=self.events, wall_s=wallclock.perf_counter() - t0, rejected=self.rejected,
                         unfinished=unfinished, audit=self.audit)

    def _sample(self, now: float) -> None:
        ts = self.ts
        if ts["time_s"] and ts["time_s"][-1] == now:
            ts["busy_gpus"][-1] = self._busy_gpus
            ts["pending"][-1] = len(self.pending)
            ts["running"][-1] = len(self.running)
            return
        ts["time_s"].append(now)
        ts["busy_gpus"].append(self._busy_gpus)
        ts["pending"].append(len(self.pending))
        ts["running"].append(len(self.running))

    # ------------------------------------------------------------------ scheduling
    def _schedule(self, now: float, woken: bool) -> None:
        if not woken and not getattr(self.policy, "preemptive", False):
            if not self.pending:
                return
            if self.config.max_jobs_per_gpu == 1 and min(self._pending_demand) > self.free.num_free:
                return
        decisions: list[Decision] = list(self.policy.schedule(self.view))
        for d in decisions:
            if isinstance(d, Preempt):
                self._preempt(d, now)
        for d in decisions:
            if isinstance(d, Start):
                self._start(d, now)
        wakes = [d.time for d in decisions if isinstance(d, WakeAt)]
        if wakes:
            t = min(wakes)
            if t <= now:
                raise SimulationError(f"policy asked to wake at {t} <= now {now}")
            self._push(t, _WAKE, "", 0)

    def _push(self, t: float, kind: int, jid: str, version: int) -> None:
        self._seq += 1
        heapq.heappush(self.heap, (t, kind, self._seq, jid, version))

    def _start(self, d: Start, now: float) -> None:
        st = self.states.get(d.job_id)
        if st is None or st.status is not JobStatus.PENDING:
            raise SimulationError(f"t={now}: cannot start job {d.job_id!r}: it is not pending")
        gpus = tuple(d.gpus)
        if len(gpus) != st.spec.num_gpus or len(set(gpus)) != len(gpus):
            raise SimulationError(f"t={now}: job {d.job_id} needs {st.spec.num_gpus} distinct GPUs, got {gpus}")
        if d.accum_steps < 1:
            raise SimulationError(f"t={now}: job {d.job_id}: accum_steps must be >= 1")
        mem = self._job_mem(st, d.accum_steps)
        for g in gpus:
            if not 0 <= g < self.cluster.num_gpus:
                raise SimulationError(f"t={now}: job {d.job_id}: no GPU {g}")
            resident = self.gpu_jobs[g]
            if resident and not d.share:
                raise SimulationError(f"t={now}: job {d.job_id}: GPU {g} is busy with {resident}")
            if len(resident) >= self.config.max_jobs_per_gpu:
                raise SimulationError(f"t={now}: job {d.job_id}: GPU {g} already hosts "
                                      f"{self.config.max_jobs_per_gpu} job(s)")
            if self.gpu_mem[g] + mem > self.cluster.gpu_mem_mb(g) + 1e-6:
                raise SimulationError(f"t={now}: job {d.job_id}: GPU {g} memory over-allocated")
        self._dequeue(st)
        newly_busy = [g for g in gpus if not self.gpu_jobs[g]]
        self.free.take(newly_busy)
        self._busy_gpus += len(newly_busy)
        for g in gpus:
            self.gpu_jobs[g].append(st.job_id)
            self.gpu_mem[g] += mem
        st.status = JobStatus.RUNNING
        st.gpus = gpus
        st.accum_steps = d.accum_steps
        st.queue_s += now - st.wait_since
        st.last_t = now
        st.resume_t = now + (self.config.restart_penalty_s if st.preemptions else 0.0)
        if st.first_start is None:
            st.first_start = now
        st.last_start = now
        st.placements += 1
        st.max_servers = max(st.max_servers, len(self.cluster.servers_of(gpus)))
        st.max_racks = max(st.max_racks, len(self.cluster.racks_of(gpus)))
        self.running[st.job_id] = st
        if self.config.audit:
            self.audit.append((now, "start", st.job_id, st.done_iters))
        self._retime(self.perf.add(Placement(st.job_id, gpus, st.profile, d.accum_steps)), now)

    def _job_mem(self, st: JobState, accum_steps: int) -> float:
        mem = st.spec.gpu_mem_mb or st.profile.mem_mb
        return mem if accum_steps == 1 else self._accum_mem(mem, accum_steps)

    @staticmethod
    def _accum_mem(mem: float, accum_steps: int) -> float:
        """Memory with gradient accumulation (``ddlsched.perf.interference.accum_mem``, ALGORITHMS.md §5.2 [I])."""
        from ddlsched.perf.interference import accum_mem

        return accum_mem(mem, accum_steps)

    def _retime(self, changed: dict[str, IterationTime] | Any, now: float) -> None:
        for jid, t in changed.items():
            st = self.states[jid]
            st.sync(now)
            st.iter_time = t
            st.version += 1
            remaining = max(0.0, st.total_iters - st.done_iters)
            self._push(max(now, st.resume_t) + remaining * t.total_s, _COMPLETE, jid, st.version)

    def _release(self, st: JobState, now: float) -> None:
        st.sync(now)
        del self.running[st.job_id]
        mem = self._job_mem(st, st.accum_steps)
        freed = []
        for g in st.gpus:
            self.gpu_jobs[g].remove(st.job_id)
            self.gpu_mem[g] -= mem
            if not self.gpu_jobs[g]:
                freed.append(g)
                self.gpu_mem[g] = 0.0
        self.free.release(freed)
        self._busy_gpus -= len(freed)
        changed = self.perf.remove(st.job_id)
        st.iter_time = None
        st.version += 1
        self._retime(changed, now)

    def _preempt(self, d: Preempt, now: float) -> None:
        st = self.states.get(d.job_id)
        if st is None or st.status is not JobStatus.RUNNING:
            raise SimulationError(f"t={now}: cannot preempt job {d.job_id!r}: it is not running")
        self._release(st, now)
        st.preemptions += 1
        st.gpus = ()
        self._enqueue(st, now, in_order=False)
        if self.config.audit:
            self.audit.append((now, "preempt", st.job_id, st.done_iters))

    def _finish(self, st: JobState, now: float) -> None:
        st.sync(now)
        if st.done_iters < st.total_iters * (1 - 1e-6) - 1e-9:
            raise SimulationError(f"t={now}: job {st.job_id} completed with {st.done_iters} of "
                                  f"{st.total_iters} iterations (work not conserved)")
        st.done_iters = st.total_iters
        gpus = st.gpus
        self._release(st, now)
        st.status = JobStatus.DONE
        st.finish = now
        if self.config.audit:
            self.audit.append((now, "finish", st.job_id, st.done_iters))
        self.records.append(self._record(st, gpus))

    def _record(self, st: JobState, gpus: tuple[int, ...]) -> dict[str, Any]:
        spec = st.spec
        assert st.finish is not None and st.first_start is not None
        return {
            "job_id": spec.job_id, "model": spec.model, "num_gpus": spec.num_gpus, "user": spec.user or "",
            "arrival_s": spec.arrival_s, "first_start_s": st.first_start, "finish_s": st.finish,
            "jct_s": st.finish - spec.arrival_s, "queue_s": st.queue_s, "run_s": st.run_s,
            "ideal_run_s": st.ideal_run_s, "comm_s": st.comm_s, "penalty_s": st.penalty_s,
            "comm_overhead_s": max(0.0, st.run_s - st.penalty_s - st.ideal_run_s), "iterations": st.total_iters,
            "preemptions": st.preemptions, "placements": st.placements, "servers": st.max_servers,
            "racks": st.max_racks, "last_gpus": " ".join(map(str, gpus)),
        }


def simulate(cluster: Cluster, jobs: Sequence[JobSpec], policy: Any, config: SimConfig | None = None,
             **kwargs: Any) -> SimResult:
    """Convenience wrapper: build a :class:`Simulator` and run it."""
    if hasattr(policy, "reset"):
        policy.reset()
    return Simulator(cluster, jobs, policy, config, **kwargs).run()
