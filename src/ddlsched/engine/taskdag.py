"""The task-DAG execution model (Wang et al. 2020's system model; docs/policies/adadual.md) — paper scale.

Every iteration of a job runs a forward then a backward compute task on each of its workers; once *all* workers
have finished backward, one all-reduce of the whole gradient (M MB) runs, then the next iteration starts.

* **GPUs are time-shared by memory.** ``Start`` makes a job resident on its GPUs if its memory fits next to the
  jobs already there (Σ ≤ GPU memory). A GPU runs one compute task at a time, non-preemptively; which ready task
  runs next on an idle GPU is the policy's ``RunTask`` decision. A task of a model on a GPU type takes its
  reference time divided by the model's speed on that type.
* **Communication.** A job inside one server synchronises instantly. A multi-server job's transfer is admitted
  by the policy (``Transfer``); it occupies the NIC of every server it spans and, with k transfers on its
  busiest NIC, moves at 1/((k−1)η + kβ) MB per ms (the ``abe`` physics, parameters ``beta``, ``eta`` in ms/MB).
  Remaining bytes are tracked and every active transfer is re-timed whenever the k of one of its NICs changes.
* Event-driven: state changes only at task ends, transfer ends and arrivals. At each instant: events, arrivals,
  instant synchronisations of single-server jobs, then one policy pass (placements, admissions, task picks).
  Not preemptive.

Paper scale: every task is an event. For trace jobs with very many iterations, ``max_task_iters`` (default 200)
coarsens time: each simulated step stands for iters/steps iterations (forward, backward and transfer scaled
together, total work unchanged) — an approximation, reported in the summary's physics parameters.

Run-time accounts per step (docs/metrics.md): compute phase L (step start → last backward done) and
communication phase C (→ synchronised). With c_P = slowest worker's compute alone, m_P = β·M if the job spans
servers else 0, and the ideal c*, m*: sharing += L − c_P (waiting for time-shared GPUs), contention += C − m_P
(admission wait and k-way sharing), heterogeneity and spread split E = c_P + m_P − c* − m* as in the fluid model.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ddlsched.cluster.topology import Cluster
from ddlsched.engine.decisions import RunTask, Start, Transfer
from ddlsched.engine.ideal import ideal_times
from ddlsched.engine.model import ExecutionModel, ModelSettings, Requirements
from ddlsched.engine.state import JobState, JobStatus
from ddlsched.errors import ConfigError, SimulationError
from ddlsched.perf.abe import PAPER_BETA_MS_PER_MB, PAPER_ETA_MS_PER_MB, load_profile, speed_mb_per_ms
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import ModelCatalog, ModelProfile

TASK, COMM = 0, 1
FW_READY, FW_RUN, BW_READY, BW_RUN, WAIT = range(5)
_EPS = 1e-9


def fw_bw_s(profile: ModelProfile) -> tuple[float, float]:
    """Forward/backward seconds of one iteration on a reference GPU; a profile without them splits compute 1:2."""
    if profile.fw_ms is not None and profile.bw_ms is not None:
        return profile.fw_ms / 1000.0, profile.bw_ms / 1000.0
    return profile.compute_s / 3.0, profile.compute_s * 2.0 / 3.0


@dataclass(slots=True, eq=False)
class TaskJob(JobState):
    """A job in the task-DAG model (times in seconds, per simulated step)."""

    n: int = 0
    mem: float = 0.0
    fw: float = 0.0  # reference seconds per task (coarsened)
    bw: float = 0.0
    size_mb: float = 0.0  # per transfer (coarsened)
    steps: int = 0
    gpus: tuple[int, ...] = ()
    nodes: tuple[int, ...] = ()
    speed: dict[int, float] = field(default_factory=dict)  # GPU -> model speed on its type
    widx: dict[int, int] = field(default_factory=dict)
    phase: list[int] = field(default_factory=list)
    waiting: int = 0
    done_steps: int = 0
    remaining_service: float = 0.0
    load: dict[int, float] = field(default_factory=dict)  # this job's part of each GPU's LWF load
    step_start: float = 0.0
    ready_at: float = 0.0
    comm_ready: bool = False
    comm_active: bool = False
    comm_remaining: float = 0.0
    comm_rate: float = 0.0  # MB per second
    comm_k: int = 0
    comm_speed_up: int = 1  # poll_defect only
    comm_t: float = 0.0
    comm_version: int = 0
    ideal_c: float = 0.0
    ideal_m: float = 0.0
    alone_c: float = 0.0
    alone_m: float = 0.0

    @property
    def multi(self) -> bool:
        return len(self.nodes) > 1

    @property
    def total_service(self) -> float:
        return (self.fw + self.bw) * self.steps * self.n


class TaskJobView:
    """Read-only view of a task-DAG job for policies."""

    __slots__ = ("_j", "_m")

    def __init__(self, job: TaskJob, model: TaskDagModel) -> None:
        self._j = job
        self._m = model

    def __repr__(self) -> str:
        return f"TaskJobView({self.job_id})"

    @property
    def job_id(self) -> str:
        return self._j.spec.job_id

    @property
    def seq(self) -> int:
        """arrival order"""
        return self._j.seq

    @property
    def n(self) -> int:
        """workers (GPUs)"""
        return self._j.n

    @property
    def mem(self) -> float:
        """MB per GPU"""
        return self._j.mem

    @property
    def fw(self) -> float:
        """forward seconds per step on a reference GPU"""
        return self._j.fw

    @property
    def bw(self) -> float:
        """backward seconds per step on a reference GPU"""
        return self._j.bw

    @property
    def size_mb(self) -> float:
        """MB per transfer"""
        return self._j.size_mb

    @property
    def steps(self) -> int:
        return self._j.steps

    @property
    def total_service(self) -> float:
        """(fw + bw) · steps · n"""
        return self._j.total_service

    @property
    def remaining_service(self) -> float:
        """reference GPU-seconds left"""
        return self._j.remaining_service

    @property
    def remaining_worker(self) -> float:
        return self._j.remaining_service / self._j.n

    @property
    def gpus(self) -> tuple[int, ...]:
        return self._j.gpus

    @property
    def nodes(self) -> tuple[int, ...]:
        """servers the job spans (sorted)"""
        return self._j.nodes

    @property
    def multi(self) -> bool:
        """spans several servers"""
        return self._j.multi

    @property
    def status(self) -> JobStatus:
        return self._j.status

    def remaining_mb(self) -> float:
        """MB an active transfer still has to send, as of now (0 when no transfer is active)."""
        return self._m.remaining_mb(self._j) if self._j.comm_active else 0.0

    def ready_task_on(self, gpu: int) -> bool:
        """Whether the job has a compute task ready to run on ``gpu``."""
        j = self._j
        w = j.widx.get(gpu)
        return w is not None and j.phase[w] in (FW_READY, BW_READY)


class TaskView:
    """What a task-DAG policy sees at a pass (nothing here changes state)."""

    def __init__(self, model: TaskDagModel) -> None:
        self._m = model

    @property
    def now(self) -> float:
        return self._m.ctx.now

    @property
    def cluster(self) -> Cluster:
        return self._m.cluster

    @property
    def rng(self) -> random.Random:
        """the run's seeded generator for the policy's random choices"""
        return self._m.rng

    @property
    def beta(self) -> float:
        """ms per MB of one transfer alone"""
        return self._m.beta

    @property
    def eta(self) -> float:
        """ms per MB added per extra transfer on a NIC"""
        return self._m.eta

    @property
    def queue(self) -> list[TaskJobView]:
        """Pending jobs in arrival order."""
        return [self._m.views[j.job_id] for j in self._m.queue]

    def gpu_mem_free(self, gpu: int) -> float:
        return self._m.cluster.gpu_mem_mb(gpu) - self._m.gpu_mem[gpu]

    def gpu_load(self, gpu: int) -> float:
        """LWF load: Σ over resident jobs of their remaining compute and transfer seconds on this GPU."""
        return self._m.gpu_load[gpu]

    def node_load(self, server: int) -> float:
        gpus = self._m.cluster.server_gpus[server]
        return sum(self._m.gpu_load[g] for g in gpus) / len(gpus)

    @property
    def comm_ready(self) -> list[TaskJobView]:
        """Multi-server jobs whose all-reduce is ready and waits for admission (arrival order)."""
        return [self._m.views[j.job_id] for j in sorted(self._m.running.values(), key=lambda j: j.seq)
                if j.comm_ready and j.multi]

    def transfers_on(self, server: int) -> list[TaskJobView]:
        """Active transfers using the server's NIC, in admission order."""
        return [self._m.views[j.job_id] for j in self._m.node_comm[server]]

    def idle_gpus(self) -> list[int]:
        """GPUs running no compute task, ascending."""
        return [g for g, busy in enumerate(self._m.gpu_busy) if not busy]

    def resident(self, gpu: int) -> list[TaskJobView]:
        """Jobs resident on a GPU, in the order they arrived there."""
        return [self._m.views[j.job_id] for j in self._m.gpu_jobs[gpu]]


class TaskDagModel(ExecutionModel):
    name = "taskdag"
    description = "per-task DAG (forward, backward, admitted all-reduce), GPUs time-shared by memory; paper scale"
    decision_types = (Start, Transfer, RunTask)
    options = frozenset({"perf_model", "perf_params", "model_params"})

    def __init__(self, cluster: Cluster, catalog: ModelCatalog, requirements: Requirements,
                 settings: ModelSettings) -> None:
        super().__init__(cluster, catalog, requirements, settings)
        if settings.perf_model not in (None, "abe"):
            raise ConfigError(f"the task-DAG execution model uses its own per-transfer 'abe' physics; "
                              f"perf model {settings.perf_model!r} does not apply", field="perf_model")
        p = dict(settings.perf_params)
        unknown = sorted(set(p) - {"beta", "eta", "profile", "poll_defect", "load_ms_per_mb"})
        if unknown:
            raise ConfigError(f"unknown physics parameter(s) {unknown} for the task-DAG model; it takes beta, eta "
                              "(ms/MB), profile, poll_defect and load_ms_per_mb", field="perf_param")
        load_c = p.pop("load_ms_per_mb", None)
        if load_c is not None and (isinstance(load_c, bool) or not isinstance(load_c, int | float)
                                   or not math.isfinite(load_c) or load_c < 0):
            raise ConfigError("load_ms_per_mb must be a finite number >= 0", field="perf_param")
        self.poll_defect = p.pop("poll_defect", 0)
        if self.poll_defect not in (0, 1) or isinstance(self.poll_defect, float):
            raise ConfigError("poll_defect must be 0 or 1", field="perf_param")
        if self.poll_defect:
            self.nonphysical = frozenset({"contention_s"})
        if p.get("profile") is not None:
            fit = load_profile(str(p["profile"]))
            p.setdefault("beta", fit["beta_ms_per_mb"])
            p.setdefault("eta", fit["eta_ms_per_mb"])
        self.beta = float(p.get("beta", PAPER_BETA_MS_PER_MB))
        self.eta = float(p.get("eta", PAPER_ETA_MS_PER_MB))
        if not (math.isfinite(self.beta) and self.beta > 0 and math.isfinite(self.eta) and self.eta >= 0):
            raise ConfigError("need finite beta > 0 and eta >= 0 (ms/MB)", field="perf_param")
        # GPU-load bookkeeping (what LWF-κ reads): a transfer counts load_ms_per_mb per MB, by default β
        self.load_ms_per_mb = self.beta if load_c is None else float(load_c)
        mp = dict(settings.model_params)
        unknown = sorted(set(mp) - {"max_task_iters"})
        if unknown:
            raise ConfigError(f"unknown model parameter(s) {unknown} for the task-DAG model; it takes "
                              "max_task_iters", field="model_param")
        mti = mp.get("max_task_iters", 200)
        if mti is not None and (isinstance(mti, bool) or not isinstance(mti, int) or mti < 1):
            raise ConfigError("max_task_iters must be a positive integer or null", field="model_param")
        self.max_task_iters: int | None = mti
        g = cluster.num_gpus
        self.gpu_jobs: list[list[TaskJob]] = [[] for _ in range(g)]
        self.gpu_mem: list[float] = [0.0] * g
        self.gpu_busy: list[bool] = [False] * g
        self.gpu_load: list[float] = [0.0] * g
        self.node_comm: list[list[TaskJob]] = [[] for _ in range(cluster.num_servers)]
        self.queue: list[TaskJob] = []
        self.running: dict[str, TaskJob] = {}
        self.jobs: dict[str, TaskJob] = {}
        self.views: dict[str, TaskJobView] = {}
        self._busy_gpus = 0
        self._view = TaskView(self)
        self._mech = {"transfers": 0, "contended_transfers": 0, "time_shared_starts": 0}

    def mechanisms(self) -> dict[str, float]:
        return dict(self._mech)

    # ---------------------------------------------------------------- physics helpers
    def transfer_alone_s(self, size_mb: float) -> float:
        return self.beta * size_mb / 1000.0

    def _comm_alone(self, gpus: Sequence[int], size_mb: float) -> float:
        return self.transfer_alone_s(size_mb) if len(self.cluster.servers_of(gpus)) > 1 else 0.0

    def remaining_mb(self, job: TaskJob) -> float:
        left = job.comm_remaining - job.comm_rate * (self.ctx.now - job.comm_t)
        if left < -1e-6 * max(1.0, job.size_mb):
            raise SimulationError(f"t={self.ctx.now}: transfer of {job.job_id} overshot by {-left} MB")
        return max(0.0, left)

    # ---------------------------------------------------------------- per job
    def new_state(self, spec: JobSpec, profile: ModelProfile, seq: int) -> TaskJob:
        job = TaskJob(spec=spec, profile=profile, seq=seq)
        self.jobs[spec.job_id] = job
        self.views[spec.job_id] = TaskJobView(job, self)
        return job

    def prepare(self, st: JobState) -> str:
        assert isinstance(st, TaskJob)
        spec, prof, c = st.spec, st.profile, self.cluster
        fw, bw = fw_bw_s(prof)
        n = spec.num_gpus
        ideal = ideal_times(c, n, fw + bw, lambda t: prof.speed_on(t, c.gpu_types[t].speed),
                            lambda gpus: self._comm_alone(gpus, prof.grad_mb))
        if ideal is None:
            return f"asks for {n} GPUs; the cluster has {c.num_gpus}"
        iters = float(spec.iterations) if spec.iterations is not None else spec.duration_s / ideal.reference_iter_s  # type: ignore[operator]
        steps = max(1, math.ceil(iters - 1e-9))
        if self.max_task_iters is not None and steps > self.max_task_iters:
            steps = self.max_task_iters
        scale = iters / steps
        st.n, st.mem = n, spec.gpu_mem_mb or prof.mem_mb
        st.fw, st.bw, st.size_mb, st.steps = fw * scale, bw * scale, prof.grad_mb * scale, steps
        st.work = iters
        st.ideal_iter_s = ideal.iter_s
        st.ideal_c, st.ideal_m = ideal.compute_s * scale, ideal.comm_s * scale
        return ""

    def arrive(self, st: JobState) -> None:
        assert isinstance(st, TaskJob)
        self.queue.append(st)

    # ---------------------------------------------------------------- events
    def is_stale(self, kind: int, key: str, version: int) -> bool:
        if kind == COMM:
            job = self.running.get(key)
            return job is None or not job.comm_active or job.comm_version != version
        return False

    def on_event(self, kind: int, key: str, version: int) -> None:
        job = self.running[key]
        if kind == TASK:
            self._task_done(job, version)
        else:
            self._end_transfer(job)
            self._sync(job)

    def settle(self) -> None:
        for job in [j for j in self.running.values() if j.comm_ready and not j.multi]:
            self._sync(job)  # intra-server all-reduce: instantaneous
        self._retime()  # transfers that ended at this instant free NIC share for the others

    def wants_pass(self, woken: bool) -> bool:
        return True

    def view(self) -> TaskView:
        return self._view

    def apply(self, decisions: Sequence[Any]) -> bool:
        starts = [d for d in decisions if isinstance(d, Start)]
        for d in starts:
            self._start(d)
        if starts:
            placed = {d.job_id for d in starts}
            self.queue = [j for j in self.queue if j.job_id not in placed]
        for t in decisions:
            if isinstance(t, Transfer):
                self._begin_transfer(t)
        for r in decisions:
            if isinstance(r, RunTask):
                self._run_task(r)
        self._retime()
        return bool(decisions)

    # ---------------------------------------------------------------- observation
    def busy_gpus(self) -> int:
        return self._busy_gpus

    def counts(self) -> tuple[int, int]:
        return len(self.queue), len(self.running)

    def unfinished(self) -> list[str]:
        return [j.job_id for j in self.queue] + list(self.running)

    def physics(self) -> tuple[str, dict[str, Any]]:
        params = {"beta": self.beta, "eta": self.eta, "max_task_iters": self.max_task_iters}
        if self.poll_defect:
            params["poll_defect"] = 1
        if self.load_ms_per_mb != self.beta:
            params["load_ms_per_mb"] = self.load_ms_per_mb
        return "abe-transfers", params

    def release(self) -> None:
        for per_gpu in (self.gpu_jobs, self.node_comm):
            for jobs in per_gpu:
                jobs.clear()
        self.queue.clear()
        self.running.clear()
        self.jobs.clear()
        self.views.clear()  # each view refers to this model

    def finish_checks(self) -> None:
        if self._busy_gpus or any(self.gpu_mem) or any(self.gpu_busy) or any(self.node_comm):
            raise SimulationError("task-DAG model: resources still held after every job finished")

    # ---------------------------------------------------------------- compute tasks
    def _task_done(self, job: TaskJob, gpu: int) -> None:
        w = job.widx[gpu]
        self.gpu_busy[gpu] = False
        if job.phase[w] == FW_RUN:
            job.phase[w] = BW_READY
            job.remaining_service -= job.fw
            self._unload(job, gpu, job.fw / job.speed[gpu])
        elif job.phase[w] == BW_RUN:
            job.phase[w] = WAIT
            job.remaining_service -= job.bw
            self._unload(job, gpu, job.bw / job.speed[gpu])
            job.waiting += 1
            if job.waiting == job.n:
                job.comm_ready = True
                job.ready_at = self.ctx.now
        else:
            raise SimulationError(f"t={self.ctx.now}: task end on GPU {gpu} for {job.job_id} with no task running")

    def _unload(self, job: TaskJob, gpu: int, amount: float) -> None:
        self.gpu_load[gpu] -= amount
        job.load[gpu] -= amount

    def _run_task(self, d: RunTask) -> None:
        now = self.ctx.now
        job = self.running.get(d.job_id)
        if job is None:
            raise SimulationError(f"t={now}: RunTask for {d.job_id!r}, which is not resident")
        w = job.widx.get(d.gpu)
        if w is None:
            raise SimulationError(f"t={now}: RunTask: {d.job_id} has no worker on GPU {d.gpu}")
        if self.gpu_busy[d.gpu]:
            raise SimulationError(f"t={now}: RunTask: GPU {d.gpu} is already running a task")
        ph = job.phase[w]
        if ph not in (FW_READY, BW_READY):
            raise SimulationError(f"t={now}: RunTask: {d.job_id} has no ready task on GPU {d.gpu}")
        job.phase[w] = ph + 1
        self.gpu_busy[d.gpu] = True
        dur = (job.fw if ph == FW_READY else job.bw) / job.speed[d.gpu]
        self.ctx.push(now + dur, TASK, job.job_id, d.gpu)

    # ---------------------------------------------------------------- communication
    def _begin_transfer(self, d: Transfer) -> None:
        now = self.ctx.now
        job = self.running.get(d.job_id)
        if job is None or not job.comm_ready or not job.multi or job.comm_active:
            raise SimulationError(f"t={now}: Transfer for {d.job_id!r}: no multi-server all-reduce is waiting")
        job.comm_ready = False
        job.comm_active = True
        job.comm_remaining = job.size_mb
        job.comm_t = now
        job.comm_rate = 0.0
        job.comm_k, job.comm_speed_up = 0, 1
        self._mech["transfers"] += 1
        if any(self.node_comm[s] for s in job.nodes):
            self._mech["contended_transfers"] += 1
        for s in job.nodes:
            self.node_comm[s].append(job)

    def _end_transfer(self, job: TaskJob) -> None:
        left = self.remaining_mb(job)
        if left > 1e-6 * max(1.0, job.size_mb):
            raise SimulationError(f"t={self.ctx.now}: transfer of {job.job_id} ended with {left} MB left")
        job.comm_active = False
        for s in job.nodes:
            self.node_comm[s].remove(job)
        per_gpu = self.load_ms_per_mb * job.size_mb / 1000.0
        for g in job.gpus:
            self._unload(job, g, per_gpu)

    def k_max(self, job: TaskJob) -> int:
        return max(len(self.node_comm[s]) for s in job.nodes) if job.nodes else 0

    def _retime(self) -> None:
        """Give every active transfer the speed of its busiest NIC; re-time those whose k changed (or, with
        ``poll_defect``, whose number of polling jobs changed)."""
        now = self.ctx.now
        seen: set[str] = set()
        polls = self._pollers() if self.poll_defect else None
        for jobs in self.node_comm:
            for job in jobs:
                if job.job_id in seen:
                    continue
                seen.add(job.job_id)
                k = self.k_max(job)
                speed_up = 1 + polls.get(job.job_id, 0) if polls is not None else 1
                if (k, speed_up) == (job.comm_k, job.comm_speed_up):
                    continue
                job.comm_remaining = self.remaining_mb(job)
                job.comm_t = now
                job.comm_k, job.comm_speed_up = k, speed_up
                job.comm_rate = speed_mb_per_ms(k, self.beta, self.eta) * 1000.0 * speed_up
                job.comm_version += 1
                self.ctx.push(now + job.comm_remaining / job.comm_rate, COMM, job.job_id, job.comm_version)

    def _pollers(self) -> dict[str, int]:
        """``poll_defect`` (authors-compatible, non-physical; docs/policies/adadual.md §10): per active transfer, the
        multi-server jobs waiting for admission on one of its NICs whose busiest NIC carries exactly one transfer —
        the only case in which AdaDUAL's admission test reads remaining sizes (k = 0 admits, k ≥ 2 refuses). In the
        authors' simulator each such job reads the transfer's remaining size every millisecond and each read
        advances it by the bytes sent since its last rate change once more, so the transfer moves (1 + pollers)
        times too fast."""
        waiting = [j for j in self.running.values() if j.comm_ready and j.multi and self.k_max(j) == 1]
        out: dict[str, int] = {}
        for w in waiting:
            for t in {t.job_id for s in w.nodes for t in self.node_comm[s]}:
                out[t] = out.get(t, 0) + 1
        return out

    def _sync(self, job: TaskJob) -> None:
        """The step's all-reduce is done: account the step, then the next step or the job's end."""
        now = self.ctx.now
        job.comm_ready = False
        compute_phase, comm_phase = job.ready_at - job.step_start, now - job.ready_at
        job.sharing_s += compute_phase - job.alone_c
        job.comm_s += comm_phase
        job.contention_s += comm_phase - job.alone_m
        excess = job.alone_c + job.alone_m - job.ideal_c - job.ideal_m
        het = min(max(job.alone_c - job.ideal_c, 0.0), max(excess, 0.0))
        job.hetero_s += het
        job.spread_s += excess - het
        job.done_steps += 1
        job.waiting = 0
        job.step_start = now
        if job.done_steps >= job.steps:
            self._finish(job)
            return
        for w in range(job.n):
            job.phase[w] = FW_READY

    # ---------------------------------------------------------------- placement
    def _start(self, d: Start) -> None:
        now = self.ctx.now
        job = self.jobs.get(d.job_id)
        if job is None or job.status is not JobStatus.PENDING or job not in self.queue:
            raise SimulationError(f"t={now}: cannot start {d.job_id!r}: it is not queued")
        gpus = tuple(d.gpus)
        if len(gpus) != job.n or len(set(gpus)) != job.n:
            raise SimulationError(f"t={now}: job {job.job_id} needs {job.n} distinct GPUs, got {gpus}")
        c = self.cluster
        for g in gpus:
            if not 0 <= g < c.num_gpus:
                raise SimulationError(f"t={now}: job {job.job_id}: no GPU {g}")
            if self.gpu_mem[g] + job.mem > c.gpu_mem_mb(g) + 1e-6:
                raise SimulationError(f"t={now}: job {job.job_id}: GPU {g} memory over-allocated")
        job.status = JobStatus.RUNNING
        job.gpus = gpus
        job.nodes = tuple(sorted(c.servers_of(gpus)))
        job.widx = {g: w for w, g in enumerate(gpus)}
        job.speed = {g: job.profile.speed_on(c.gpu_type[g], c.gpu_types[c.gpu_type[g]].speed) for g in gpus}
        job.phase = [FW_READY] * job.n
        job.remaining_service = job.total_service
        job.first_start = job.step_start = now
        job.last_gpus = gpus
        job.placements, job.max_servers, job.max_racks = 1, len(job.nodes), len(c.racks_of(gpus))
        job.alone_c = (job.fw + job.bw) / min(job.speed.values())
        job.alone_m = self.transfer_alone_s(job.size_mb) if job.multi else 0.0
        per_step_comm = self.load_ms_per_mb * job.size_mb / 1000.0 if job.multi else 0.0
        if any(self.gpu_jobs[g] for g in gpus):
            self._mech["time_shared_starts"] += 1
        for g in gpus:
            if not self.gpu_jobs[g]:
                self._busy_gpus += 1
            self.gpu_jobs[g].append(job)
            self.gpu_mem[g] += job.mem
            load = ((job.fw + job.bw) / job.speed[g] + per_step_comm) * job.steps
            self.gpu_load[g] += load
            job.load[g] = load
        self.running[job.job_id] = job
        self.ctx.audit("start", job.job_id, 0.0)

    def _finish(self, job: TaskJob) -> None:
        now = self.ctx.now
        if abs(job.remaining_service) > 1e-6 * max(1.0, job.total_service):
            raise SimulationError(f"t={now}: {job.job_id} finished with {job.remaining_service} s of compute left "
                                  "(work not conserved)")
        del self.running[job.job_id]
        for g in job.gpus:
            if abs(job.load[g]) > 1e-6 * max(1.0, job.total_service):
                raise SimulationError(f"t={now}: {job.job_id} left {job.load[g]} s of load on GPU {g}")
            self.gpu_load[g] -= job.load[g]
            self.gpu_jobs[g].remove(job)
            self.gpu_mem[g] -= job.mem
            if self.gpu_mem[g] < -1e-6:
                raise SimulationError(f"t={now}: GPU {g} memory below 0")
            if not self.gpu_jobs[g]:
                self._busy_gpus -= 1
                self.gpu_mem[g] = 0.0
                self.gpu_load[g] = 0.0
        assert job.first_start is not None
        job.run_s = now - job.first_start
        job.finish = now
        self.ctx.complete(job)
