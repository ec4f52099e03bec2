"""The fluid execution model: between events every running job advances at a constant rate.

A running job does ``1 / iteration_time`` iterations per second; its iteration time (compute + communication, no
overlap) comes from the physics model (``ddlsched.perf``), which is told when a job starts or leaves and returns
the jobs whose time changed; only those are re-timed, and their superseded completion events are dropped lazily
(per-job version counter). Decisions: ``Start`` (exclusive GPUs, or shared with ``share=True`` up to the policy's
jobs-per-GPU limit and GPU memory; ``accum_steps`` for gradient accumulation) and ``Preempt`` (the job returns to
the queue; its next start loses ``restart_penalty_s`` of progress). Preemptions are applied before starts.

Run-time accounts (``ddlsched.vocabulary``): over every stretch of progress of a job at iteration time
T = c + m (compute c, communication m) on placement P, with c_P, m_P its iteration alone on P (no other job,
no accumulation) and c*, m* its ideal iteration, each iteration adds c* + m* of ideal time, c − c_P of sharing
(GPU co-location interference and gradient accumulation), m − m_P of contention, and E = (c_P + m_P) − (c* + m*)
split into heterogeneity (the compute difference c_P − c*, clamped to [0, E]) and placement spread (the rest).
Time after a restart before progress resumes is restart time.

Invariants: no GPU over its job limit or memory (validated on every ``Start``), time monotone (core), work
conserved at finish (a job finishes with exactly its iterations, within 1e-6), accounts closed (core), and at the
end of a complete run every GPU free.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ddlsched.cluster.topology import Cluster
from ddlsched.engine.allocation import FreeGPUs
from ddlsched.engine.decisions import Preempt, Start
from ddlsched.engine.ideal import IdealTimes, ideal_times
from ddlsched.engine.jobview import JobView
from ddlsched.engine.model import ExecutionModel, ModelSettings, Requirements
from ddlsched.engine.pending import PendingQueue
from ddlsched.engine.state import JobState, JobStatus
from ddlsched.engine.view import SchedulerView
from ddlsched.errors import SimulationError
from ddlsched.perf import make_perf_model
from ddlsched.perf.base import IterationTime, PerfModel, Placement
from ddlsched.perf.interference import accum_mem
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import ModelCatalog, ModelProfile

COMPLETE = 0


def _first_two(entry: tuple[Any, int, JobView]) -> tuple[Any, int]:
    return entry[0], entry[1]


@dataclass(slots=True, eq=False)
class FluidJob(JobState):
    """A job in the fluid model. Progress is accounted lazily: ``sync(now)`` brings the accounts up to ``now``."""

    done_iters: float = 0.0
    iter_time: IterationTime | None = None
    last_t: float = 0.0
    resume_t: float = 0.0
    gpus: tuple[int, ...] = ()
    accum_steps: int = 1
    last_start: float | None = None
    version: int = 0
    attained_gpu_s: float = 0.0
    queue_s: float = 0.0
    wait_since: float = 0.0
    ideal_c: float = 0.0  # ideal iteration: compute, communication
    ideal_m: float = 0.0
    alone_c: float = 0.0  # iteration alone on the current placement: compute, communication
    alone_m: float = 0.0
    d_het: float = 0.0  # per-iteration excess by cause on the current placement and rates
    d_spr: float = 0.0
    d_shr: float = 0.0
    d_con: float = 0.0
    view: JobView | None = None

    def sync(self, now: float) -> None:
        """Advance a running job's accounts to ``now`` at its current rate."""
        dt = now - self.last_t
        if dt <= 0:
            return
        self.run_s += dt
        self.attained_gpu_s += dt * len(self.gpus)
        active = now - max(self.last_t, self.resume_t)
        it = self.iter_time
        if active > 0 and it is not None:
            n = active / (it.compute_s + it.comm_s)
            self.done_iters += n
            self.comm_s += n * it.comm_s
            self.hetero_s += n * self.d_het
            self.spread_s += n * self.d_spr
            self.sharing_s += n * self.d_shr
            self.contention_s += n * self.d_con
            self.restart_s += dt - active
        else:
            self.restart_s += dt
        self.last_t = now


class FluidModel(ExecutionModel):
    name = "fluid"
    description = "jobs advance at constant rates between events; physics from --perf-model"
    decision_types = (Start, Preempt)
    options = frozenset({"perf_model", "perf_params", "restart_penalty_s"})

    def __init__(self, cluster: Cluster, catalog: ModelCatalog, requirements: Requirements,
                 settings: ModelSettings, *, perf: PerfModel | None = None) -> None:
        super().__init__(cluster, catalog, requirements, settings)
        if perf is None:
            name = settings.perf_model or "maxmin"
            params = dict(settings.perf_params)
            if requirements.jobs_per_gpu > 1 and name != "sharing":
                params = {"network": name, "network_params": params}
                name = "sharing"
            perf = make_perf_model(name, cluster, **params)
        self.perf = perf
        self.max_jobs_per_gpu = max(1, requirements.jobs_per_gpu)
        self.restart_penalty_s = settings.restart_penalty_s
        self.preemptive = requirements.preemptive
        self.free = FreeGPUs(cluster)
        self.gpu_jobs: list[list[str]] = [[] for _ in range(cluster.num_gpus)]
        self.gpu_mem: list[float] = [0.0] * cluster.num_gpus
        self._gpu_cap_mb = [cluster.gpu_mem_mb(g) for g in range(cluster.num_gpus)]
        self.states: dict[str, FluidJob] = {}
        self.pending: dict[str, FluidJob] = {}
        self._pending_sorted: PendingQueue[JobView] = PendingQueue()  # always in arrival order (incrementally)
        self._indexes: dict[Callable[[JobView], Any], list[tuple[Any, int, JobView]]] = {}
        self.queued_log: list[JobView] = []  # every job as it entered the queue (SchedulerView.queued_since)
        self._pending_demand: dict[int, int] = {}  # queued jobs per GPU count (not a Counter: its hooks are Python)
        self.running: dict[str, FluidJob] = {}
        self._busy_gpus = 0
        self._ideal_cache: dict[tuple[str, int], IdealTimes | None] = {}
        self._view: SchedulerView | None = None
        self._audit = False
        self._mech = {"starts": 0, "shared_starts": 0, "accumulation_starts": 0, "preemptions": 0}

    def mechanisms(self) -> dict[str, float]:
        return dict(self._mech)

    def bind(self, ctx: Any) -> None:
        super().bind(ctx)
        self._audit = ctx.auditing

    # ---------------------------------------------------------------- per job
    def new_state(self, spec: JobSpec, profile: ModelProfile, seq: int) -> FluidJob:
        st = FluidJob(spec=spec, profile=profile, seq=seq)
        st.view = JobView(st, self.ctx)
        self.states[spec.job_id] = st
        return st

    def ideal(self, profile: ModelProfile, n: int) -> IdealTimes | None:
        key = (profile.name, n)
        if key not in self._ideal_cache:
            c = self.cluster
            self._ideal_cache[key] = ideal_times(
                c, n, profile.compute_s, lambda t: profile.speed_on(t, c.gpu_types[t].speed),
                lambda gpus: self.perf.isolated(Placement("__ideal__", tuple(gpus), profile)).comm_s)
        return self._ideal_cache[key]

    def prepare(self, st: JobState) -> str:
        assert isinstance(st, FluidJob)
        ideal = self.ideal(st.profile, st.spec.num_gpus)
        if ideal is None:
            return f"asks for {st.spec.num_gpus} GPUs; the cluster has {self.cluster.num_gpus}"
        spec = st.spec
        mem = spec.gpu_mem_mb or st.profile.mem_mb
        fit = self.free.memory().count_at_least(mem)
        if fit < spec.num_gpus:
            return f"asks for {spec.num_gpus} GPUs with ≥ {mem:g} MB each; the cluster has {fit} GPUs that large"
        st.work = float(spec.iterations) if spec.iterations is not None else spec.duration_s / ideal.reference_iter_s  # type: ignore[operator]
        st.ideal_iter_s = ideal.iter_s
        st.ideal_c, st.ideal_m = ideal.compute_s, ideal.comm_s
        return ""

    def arrive(self, st: JobState) -> None:
        assert isinstance(st, FluidJob)
        self._enqueue(st, self.ctx.now, in_order=True)

    # ---------------------------------------------------------------- queue indexes
    def pending_views(self) -> Sequence[JobView]:
        return self._pending_sorted

    def pending_index(self, key: Callable[[JobView], Any]) -> list[JobView]:
        """Pending jobs sorted by a *static* per-job key (then arrival), maintained incrementally."""
        idx = self._indexes.get(key)
        if idx is None:
            idx = sorted((key(v), v.seq, v) for v in self._pending_sorted)
            self._indexes[key] = idx
        return [e[2] for e in idx]

    def _enqueue(self, st: FluidJob, now: float, *, in_order: bool) -> None:
        st.status = JobStatus.PENDING
        st.wait_since = now
        self.pending[st.job_id] = st
        demand, d = self._pending_demand, st.spec.num_gpus
        demand[d] = demand.get(d, 0) + 1
        view = st.view
        assert view is not None
        self.queued_log.append(view)
        if in_order:
            self._pending_sorted.append(st.seq, view)
        else:
            self._pending_sorted.insert(st.seq, view)
        for key, idx in self._indexes.items():
            insort(idx, (key(view), view.seq, view), key=_first_two)

    def _dequeue(self, st: FluidJob) -> None:
        del self.pending[st.job_id]
        demand, d = self._pending_demand, st.spec.num_gpus
        left = demand[d] - 1
        if left:
            demand[d] = left
        else:
            del demand[d]
        view = st.view
        assert view is not None
        self._pending_sorted.remove(st.seq)
        for key, idx in self._indexes.items():
            del idx[bisect_left(idx, (key(view), view.seq), key=_first_two)]

    # ---------------------------------------------------------------- events and passes
    def is_stale(self, kind: int, key: str, version: int) -> bool:
        st = self.states[key]
        return st.version != version or st.status is not JobStatus.RUNNING

    def on_event(self, kind: int, key: str, version: int) -> None:
        self._finish(self.states[key], self.ctx.now)

    def wants_pass(self, woken: bool) -> bool:
        if woken or self.preemptive:
            return True
        if not self.pending:
            return False
        return not (self.max_jobs_per_gpu == 1 and min(self._pending_demand) > self.free.num_free)

    def view(self) -> SchedulerView:
        if self._view is None:
            self._view = SchedulerView(self)
        return self._view

    def apply(self, decisions: Sequence[Any]) -> bool:
        if not decisions:
            return False
        now = self.ctx.now
        for d in decisions:
            if isinstance(d, Preempt):
                self._preempt(d, now)
        for d in decisions:
            if isinstance(d, Start):
                self._start(d, now)
        return bool(decisions)

    # ---------------------------------------------------------------- observation
    def busy_gpus(self) -> int:
        return self._busy_gpus

    def counts(self) -> tuple[int, int]:
        return len(self.pending), len(self.running)

    def unfinished(self) -> list[str]:
        return [v.job_id for v in self._pending_sorted] + list(self.running)

    def physics(self) -> tuple[str, dict[str, Any]]:
        return self.perf.name, self.perf.params()

    def finish_checks(self) -> None:
        if self._busy_gpus or self.free.num_free != self.cluster.num_gpus or any(self.gpu_mem):
            raise SimulationError("fluid model: GPUs still allocated after every job finished")

    # ---------------------------------------------------------------- decisions
    def job_mem(self, st: FluidJob, accum_steps: int) -> float:
        mem = st.spec.gpu_mem_mb or st.profile.mem_mb
        return mem if accum_steps == 1 else accum_mem(mem, accum_steps)

    def _start(self, d: Start, now: float) -> None:
        st = self.states.get(d.job_id)
        if st is None or st.status is not JobStatus.PENDING:
            raise SimulationError(f"t={now}: cannot start job {d.job_id!r}: it is not pending")
        gpus = tuple(d.gpus)
        if len(gpus) != st.spec.num_gpus or len(set(gpus)) != len(gpus):
            raise SimulationError(f"t={now}: job {d.job_id} needs {st.spec.num_gpus} distinct GPUs, got {gpus}")
        if d.accum_steps < 1:
            raise SimulationError(f"t={now}: job {d.job_id}: accum_steps must be >= 1")
        mem = self.job_mem(st, d.accum_steps)
        cluster = self.cluster
        num_gpus, gpu_jobs, gpu_mem, cap_mb = cluster.num_gpus, self.gpu_jobs, self.gpu_mem, self._gpu_cap_mb
        share, per_gpu = d.share, self.max_jobs_per_gpu
        for g in gpus:
            if not 0 <= g < num_gpus:
                raise SimulationError(f"t={now}: job {d.job_id}: no GPU {g}")
            resident = gpu_jobs[g]
            if resident and not share:
                raise SimulationError(f"t={now}: job {d.job_id}: GPU {g} is busy with {resident}")
            if len(resident) >= per_gpu:
                raise SimulationError(f"t={now}: job {d.job_id}: GPU {g} already hosts "
                                      f"{self.max_jobs_per_gpu} job(s)")
            if gpu_mem[g] + mem > cap_mb[g] + 1e-6:
                raise SimulationError(f"t={now}: job {d.job_id}: GPU {g} memory over-allocated")
        self._dequeue(st)
        mech = self._mech
        mech["starts"] += 1
        jid = st.job_id
        newly_busy = [g for g in gpus if not gpu_jobs[g]]
        if len(newly_busy) < len(gpus):
            mech["shared_starts"] += 1
        if d.accum_steps > 1:
            mech["accumulation_starts"] += 1
        self.free.take(newly_busy)
        self._busy_gpus += len(newly_busy)
        for g in gpus:
            gpu_jobs[g].append(jid)
            gpu_mem[g] += mem
        st.status = JobStatus.RUNNING
        st.gpus = gpus
        st.accum_steps = d.accum_steps
        st.queue_s += now - st.wait_since
        st.last_t = now
        st.resume_t = now + (self.restart_penalty_s if st.preemptions else 0.0)
        if st.first_start is None:
            st.first_start = now
        st.last_start = now
        st.last_gpus = gpus
        st.placements += 1
        gpu_server, server_rack = cluster.gpu_server, cluster.server_rack
        servers = {gpu_server[g] for g in gpus}
        st.max_servers = max(st.max_servers, len(servers))
        st.max_racks = max(st.max_racks, len({server_rack[s] for s in servers}))
        self.running[st.job_id] = st
        if self._audit:
            self.ctx.audit("start", st.job_id, st.done_iters)
        changed = self.perf.add(Placement(st.job_id, gpus, st.profile, d.accum_steps))
        alone = self.perf.alone(st.job_id)
        st.alone_c, st.alone_m = alone.compute_s, alone.comm_s
        excess = alone.compute_s + alone.comm_s - st.ideal_c - st.ideal_m
        st.d_het = min(max(alone.compute_s - st.ideal_c, 0.0), max(excess, 0.0))
        st.d_spr = excess - st.d_het
        self._retime(changed, now)

    def _retime(self, changed: dict[str, IterationTime] | Any, now: float) -> None:
        for jid, t in changed.items():
            st = self.states[jid]
            st.sync(now)
            st.iter_time = t
            st.d_shr = t.compute_s - st.alone_c
            st.d_con = t.comm_s - st.alone_m
            st.version += 1
            remaining = max(0.0, st.work - st.done_iters)
            self.ctx.push(max(now, st.resume_t) + remaining * (t.compute_s + t.comm_s), COMPLETE, jid, st.version)

    def _release(self, st: FluidJob, now: float) -> None:
        st.sync(now)
        del self.running[st.job_id]
        mem = self.job_mem(st, st.accum_steps)
        freed = []
        for g in st.gpus:
            self.gpu_jobs[g].remove(st.job_id)
            self.gpu_mem[g] -= mem
            if not self.gpu_jobs[g]:
                freed.append(g)
                if abs(self.gpu_mem[g]) > 1e-6:
                    raise SimulationError(f"t={now}: GPU {g} memory accounts do not return to 0 "
                                          f"({self.gpu_mem[g]} MB)")
                self.gpu_mem[g] = 0.0
            elif self.gpu_mem[g] < -1e-6:
                raise SimulationError(f"t={now}: GPU {g} memory below 0")
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
        self._mech["preemptions"] += 1
        st.preemptions += 1
        st.gpus = ()
        self._enqueue(st, now, in_order=False)
        if self._audit:
            self.ctx.audit("preempt", st.job_id, st.done_iters)

    def _finish(self, st: FluidJob, now: float) -> None:
        st.sync(now)
        if abs(st.done_iters - st.work) > st.work * 1e-6 + 1e-9:
            raise SimulationError(f"t={now}: job {st.job_id} completed with {st.done_iters} of {st.work} "
                                  "iterations (work not conserved)")
        st.done_iters = st.work
        self._release(st, now)
        st.finish = now
        self.ctx.complete(st)


__all__ = ["COMPLETE", "FluidJob", "FluidModel"]
