"""Task-level engine for heterogeneous GPUs with relaxed fixed-scale synchronisation (ALGORITHMS.md §6.2–6.3) [I].

This is the **paper-scale** mode for Hare (Chen et al., TCC 2024): tens to hundreds of jobs. Every task is one
simulator event, so a run costs O(Σ_j R_j · n_j · log) events plus the policy's work per event; with the default
``max_rounds = 100`` a 100-job Philly sample is about 10⁴–10⁵ events, i.e. seconds. Use the fluid engine for
thousands of jobs.

Model (all reconstructed [I], every parameter in :class:`HareConfig`):

* job j has R_j rounds of n_j tasks; a task of j takes ``p[j,k] = m_j · compute_s_j / speed(j, k)`` on a GPU of
  type k (``speed`` from ``ModelProfile.speed_on``, e.g. :func:`ddlsched.workload.gpu_speeds.catalog_with_gpu_speeds`);
* the tasks of a round are independent: any GPU, any order, several back to back on one GPU; round r+1 is released
  ``s_j = m_j · M_j / B_ps`` after the last task of round r finishes (parameter-server aggregation); the job completes
  when its last round's synchronisation completes (JCT = C_j − r_j);
* a GPU runs one task at a time; a task of a job different from the GPU's previous one first pays the switching
  overhead ``o_j = switch_frac · m_j · p[j, ref]`` (Hare's fast switching) or ``switch_s`` if set (naive runtime);
* **trace conversion (§6.7)**: n_j = the job's GPU count; the stand-alone run on n_j reference GPUs (one task per
  GPU per round) takes R_real · (p_ref + s_real); R_real = duration / (p_ref + s_real) (or the job's iterations).
  To bound the event count, R_real real rounds are simulated as R_j = min(max_rounds, ⌈R_real⌉) coarse rounds of
  m_j = R_real / R_j real rounds each (task and sync times × m_j), so the stand-alone time still equals the trace
  duration exactly. Coarse rounds rebalance tasks less often than real ones, a documented approximation.

Policies (``ddlsched.policies.hare``) return :class:`RunTask` (one task of the job's released round on an idle GPU),
:class:`Lease` / :class:`Revoke` (gang baselines: the job holds n_j GPUs; each round runs one task per leased GPU and
the GPUs stay held during synchronisation), or :class:`WakeAt`. The engine validates every decision.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ddlsched.cluster.topology import Cluster
from ddlsched.engine.fluid import SimConfig, SimResult
from ddlsched.errors import ConfigError, SimulationError
from ddlsched.workload.gpu_speeds import catalog_with_gpu_speeds
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import ModelCatalog, ModelProfile

_EPS = 1e-9


@dataclass(frozen=True)
class HareConfig:
    """Engine parameters (all [I] reconstructions, §6.2)."""

    ref_gpu: str = "V100"            # GPU type the trace durations refer to (falls back to a speed-1.0 type)
    max_rounds: int = 100            # coarse rounds per job (event-count bound)
    ps_bandwidth_gbps: float = 10.0  # s_j = M_j / B_ps per real round
    switch_frac: float = 0.05        # Hare's optimised switch: o = switch_frac × (one real task on the ref GPU)
    switch_s: float | None = None    # absolute switching cost per switch (naive runtime ablation); overrides frac
    seed: int = 0

    def __post_init__(self) -> None:
        if self.max_rounds < 1:
            raise ConfigError("must be >= 1", field="max_rounds")
        if self.ps_bandwidth_gbps <= 0:
            raise ConfigError("must be > 0", field="ps_bandwidth_gbps")
        if self.switch_frac < 0 or (self.switch_s is not None and self.switch_s < 0):
            raise ConfigError("switching overhead must be >= 0", field="switch_frac/switch_s")


# ------------------------------------------------------------------ decisions
@dataclass(frozen=True, slots=True)
class RunTask:
    job_id: str
    gpu: int


@dataclass(frozen=True, slots=True)
class Lease:
    job_id: str
    gpus: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Revoke:
    job_id: str


@dataclass(frozen=True, slots=True)
class HareWake:
    time: float


# ------------------------------------------------------------------ job state
@dataclass
class TaskJob:
    """Static description and run-time state of one job (policies read it, never write it)."""

    job_id: str
    spec: JobSpec
    profile: ModelProfile
    seq: int
    arrival_s: float
    weight: float
    n: int                       # tasks per round
    rounds: int                  # coarse rounds R_j
    scale: float                 # real rounds per coarse round m_j
    task_s: dict[str, float]     # coarse task time per GPU type
    ref_task_s: float            # coarse task time on the reference type
    sync_s: float                # coarse sync time
    switch_s: float              # switching overhead when a GPU changes to this job
    ideal_run_s: float
    # run-time state
    arrived: bool = False
    round: int = 0               # index of the current round
    ready: int = 0               # released, not yet started tasks of the current round
    running: int = 0
    done_in_round: int = 0
    syncing: bool = False
    tasks_done: int = 0
    attained_ref_s: float = 0.0  # heterogeneity-normalised attained service (ref-GPU seconds)
    gpu_busy_s: float = 0.0      # wall GPU-seconds used (tasks incl. switches)
    lease: tuple[int, ...] | None = None
    first_start: float | None = None
    finish: float | None = None
    active_since: float | None = None  # start of the current "has a task running or syncing or a lease" stretch
    active_s: float = 0.0
    last_service_s: float = 0.0
    wait_since: float = 0.0
    switches: int = 0
    penalty_s: float = 0.0
    preemptions: int = 0
    gpus_used: set[int] = field(default_factory=set)
    round_gpus: list[int] = field(default_factory=list)
    last_round_gpus: tuple[int, ...] = ()

    @property
    def done(self) -> bool:
        return self.finish is not None

    @property
    def remaining_rounds(self) -> int:
        return self.rounds - self.round

    @property
    def remaining_ref_s(self) -> float:
        """Clairvoyant remaining stand-alone time on n_j reference GPUs."""
        left = self.remaining_rounds * (self.ref_task_s + self.sync_s)
        return left - (self.done_in_round + self.running) / max(1, self.n) * self.ref_task_s

    @property
    def active(self) -> bool:
        return self.running > 0 or self.syncing or self.lease is not None


class HareView:
    """What a task-level policy sees at a decision point."""

    def __init__(self, sim: HareSimulator) -> None:
        self._sim = sim

    @property
    def now(self) -> float:
        return self._sim.now

    @property
    def cluster(self) -> Cluster:
        return self._sim.cluster

    @property
    def jobs(self) -> list[TaskJob]:
        """Arrived, unfinished jobs in arrival order."""
        return self._sim.active_jobs()

    @property
    def job_events(self) -> bool:
        """A job arrived or finished, or a GPU outside any lease became idle, since the last call."""
        return self._sim.job_events

    def idle_gpus(self) -> list[int]:
        """GPUs with no running task and no lease."""
        s = self._sim
        return [g for g in range(s.cluster.num_gpus) if s.gpu_job[g] is None and s.gpu_lease[g] is None]

    def free_at(self, g: int) -> float:
        s = self._sim
        return s.gpu_until[g] if s.gpu_job[g] is not None else s.now

    def leased_by(self, g: int) -> str | None:
        return self._sim.gpu_lease[g]

    def gpu_type(self, g: int) -> str:
        return self._sim.cluster.gpu_type[g]

    def switch_cost(self, job: TaskJob, g: int) -> float:
        return 0.0 if self._sim.gpu_last[g] == job.job_id else job.switch_s

    def task_time(self, job: TaskJob, g: int) -> float:
        return job.task_s[self._sim.cluster.gpu_type[g]]


# ------------------------------------------------------------------ engine
_ARRIVE, _DONE, _RELEASE, _WAKE = 0, 1, 2, 3


class HareSimulator:
    """Event-driven task-level simulation of one policy (see the module docstring)."""

    def __init__(self, cluster: Cluster, jobs: Sequence[JobSpec], policy: Any, config: HareConfig | None = None,
                 *, catalog: ModelCatalog | None = None) -> None:
        self.cluster = cluster
        self.config = config or HareConfig()
        self.policy = policy
        self.catalog = catalog or catalog_with_gpu_speeds()
        self.ref = self._ref_type()
        self.now = 0.0
        G = cluster.num_gpus
        self.gpu_job: list[str | None] = [None] * G
        self.gpu_until: list[float] = [0.0] * G
        self.gpu_last: list[str | None] = [None] * G
        self.gpu_lease: list[str | None] = [None] * G
        self.heap: list[tuple[float, int, int, str, int]] = []
        self._seq = 0
        self.jobs: dict[str, TaskJob] = {}
        self.records: list[dict[str, Any]] = []
        self.rejected: list[dict[str, Any]] = []
        self.ts: dict[str, list[float]] = {"time_s": [], "busy_gpus": [], "pending": [], "running": []}
        self.job_events = True
        self.events = 0
        self._active: list[TaskJob] = []
        self._active_dirty = True
        self._gang = bool(getattr(policy, "gang", False))
        self._switch_override = getattr(policy, "switch_s", None)
        self._prepare(jobs)

    # ---------------------------------------------------------------- setup
    def _ref_type(self) -> str:
        types = self.cluster.gpu_types
        if self.config.ref_gpu in types:
            return self.config.ref_gpu
        one = [t for t, gt in types.items() if gt.speed == 1.0]
        return one[0] if one else max(types, key=lambda t: (types[t].speed, t))

    def _push(self, t: float, kind: int, job_id: str, gpu: int = -1) -> None:
        self._seq += 1
        heapq.heappush(self.heap, (t, kind, self._seq, job_id, gpu))

    def _prepare(self, specs: Sequence[JobSpec]) -> None:
        cfg = self.config
        order = sorted(range(len(specs)), key=lambda i: (specs[i].arrival_s, i))
        ref_speed = self.cluster.gpu_types[self.ref].speed
        switch_abs = self._switch_override if self._switch_override is not None else cfg.switch_s
        for seq, i in enumerate(order):
            spec = specs[i]
            if spec.job_id in self.jobs:
                raise SimulationError(f"duplicate job id {spec.job_id!r} ({spec.source})")
            prof = self.catalog[spec.model]
            p_ref = prof.compute_s / prof.speed_on(self.ref, ref_speed)
            s_real = prof.grad_bytes / (cfg.ps_bandwidth_gbps * 1e9 / 8)
            if spec.iterations is not None:
                real_rounds = float(spec.iterations)
            else:
                real_rounds = float(spec.duration_s) / (p_ref + s_real)  # type: ignore[arg-type]
            rounds = max(1, min(cfg.max_rounds, math.ceil(real_rounds - 1e-9)))
            m = real_rounds / rounds
            task_s = {t: m * prof.compute_s / prof.speed_on(t, gt.speed) for t, gt in self.cluster.gpu_types.items()}
            switch = switch_abs if switch_abs is not None else cfg.switch_frac * p_ref
            job = TaskJob(job_id=spec.job_id, spec=spec, profile=prof, seq=seq, arrival_s=spec.arrival_s,
                          weight=spec.weight, n=spec.num_gpus, rounds=rounds, scale=m, task_s=task_s,
                          ref_task_s=m * p_ref, sync_s=m * s_real, switch_s=switch,
                          ideal_run_s=real_rounds * (p_ref + s_real))
            self.jobs[spec.job_id] = job
            if self._gang and spec.num_gpus > self.cluster.num_gpus:
                self.rejected.append({"job_id": spec.job_id, "num_gpus": spec.num_gpus,
                                      "reason": f"gang policy needs {spec.num_gpus} GPUs at once; the cluster has "
                                                f"{self.cluster.num_gpus}"})
                job.finish = math.nan
                continue
            self._push(spec.arrival_s, _ARRIVE, spec.job_id)

    # ---------------------------------------------------------------- helpers
    def active_jobs(self) -> list[TaskJob]:
        if self._active_dirty:
            self._active = [j for j in self.jobs.values() if j.arrived and not j.done]
            self._active_dirty = False
        return self._active

    def _set_active(self, job: TaskJob) -> None:
        if job.active and job.active_since is None:
            job.active_since = self.now
        elif not job.active and job.active_since is not None:
            stretch = self.now - job.active_since
            job.active_s += stretch
            job.last_service_s = stretch
            job.active_since = None
            job.wait_since = self.now

    def _start_task(self, job: TaskJob, g: int) -> None:
        if job.ready <= 0:
            raise SimulationError(f"t={self.now}: {job.job_id} has no ready task for GPU {g}")
        if self.gpu_job[g] is not None:
            raise SimulationError(f"t={self.now}: GPU {g} is busy with {self.gpu_job[g]}")
        o = 0.0 if self.gpu_last[g] == job.job_id else job.switch_s
        if o > 0:
            job.switches += 1
            job.penalty_s += o
        dur = o + job.task_s[self.cluster.gpu_type[g]]
        job.ready -= 1
        job.running += 1
        job.gpu_busy_s += dur
        job.gpus_used.add(g)
        job.round_gpus.append(g)
        if job.first_start is None:
            job.first_start = self.now
        self.gpu_job[g] = job.job_id
        self.gpu_last[g] = job.job_id
        self.gpu_until[g] = self.now + dur
        self._set_active(job)
        self._push(self.now + dur, _DONE, job.job_id, g)

    def _run_lease(self, job: TaskJob) -> None:
        """A leased job whose round is released and whose GPUs are all idle runs one task per leased GPU."""
        if job.lease is None or job.ready != job.n or job.running:
            return
        if any(self.gpu_job[g] is not None for g in job.lease):
            return
        for g in job.lease:
            self._start_task(job, g)

    # ---------------------------------------------------------------- events
    def _on_arrive(self, job: TaskJob) -> None:
        job.arrived = True
        job.ready = job.n
        job.wait_since = self.now
        self._active_dirty = True
        self.job_events = True

    def _on_done(self, job: TaskJob, g: int) -> None:
        self.gpu_job[g] = None
        if self.gpu_lease[g] is None:
            self.job_events = True
        job.running -= 1
        job.done_in_round += 1
        job.tasks_done += 1
        job.attained_ref_s += job.ref_task_s
        if job.done_in_round > job.n:
            raise SimulationError(f"{job.job_id}: round {job.round} ran {job.done_in_round} > {job.n} tasks")
        if job.done_in_round == job.n:
            if job.ready or job.running:
                raise SimulationError(f"{job.job_id}: round {job.round} complete with tasks outstanding")
            job.last_round_gpus = tuple(job.round_gpus)
            job.round_gpus = []
            job.syncing = True
            self._push(self.now + job.sync_s, _RELEASE, job.job_id)
        self._set_active(job)

    def _on_release(self, job: TaskJob) -> None:
        job.syncing = False
        job.round += 1
        job.done_in_round = 0
        if job.round >= job.rounds:
            self._finish(job)
            return
        job.ready = job.n
        self._set_active(job)

    def _finish(self, job: TaskJob) -> None:
        if job.tasks_done != job.rounds * job.n:
            raise SimulationError(f"{job.job_id}: finished with {job.tasks_done} of {job.rounds * job.n} tasks")
        if job.lease is not None:
            self._drop_lease(job)
        job.finish = self.now
        self._set_active(job)
        self._active_dirty = True
        self.job_events = True
        self.records.append(self._record(job))

    def _drop_lease(self, job: TaskJob) -> None:
        for g in job.lease or ():
            self.gpu_lease[g] = None
        job.lease = None
        self.job_events = True

    # ---------------------------------------------------------------- decisions
    def _apply(self, decisions: Sequence[Any]) -> None:
        for d in decisions:
            if isinstance(d, Revoke):
                job = self.jobs[d.job_id]
                if job.lease is not None:
                    self._drop_lease(job)
                    job.preemptions += 1
                    self._set_active(job)
        for d in decisions:
            if isinstance(d, HareWake):
                if d.time > self.now + _EPS:
                    self._push(d.time, _WAKE, "")
            elif isinstance(d, Lease):
                job = self._live(d.job_id)
                if job.lease is not None:
                    raise SimulationError(f"t={self.now}: {job.job_id} already holds a lease")
                if len(d.gpus) != job.n or len(set(d.gpus)) != job.n:
                    raise SimulationError(f"t={self.now}: lease for {job.job_id} needs {job.n} distinct GPUs")
                for g in d.gpus:
                    if self.gpu_lease[g] is not None or (self.gpu_job[g] not in (None, job.job_id)):
                        raise SimulationError(f"t={self.now}: GPU {g} is not free for {job.job_id}'s lease")
                for g in d.gpus:
                    self.gpu_lease[g] = job.job_id
                job.lease = tuple(d.gpus)
                self._set_active(job)
            elif isinstance(d, RunTask):
                job = self._live(d.job_id)
                if self.gpu_lease[d.gpu] not in (None, job.job_id):
                    raise SimulationError(f"t={self.now}: GPU {d.gpu} is leased to {self.gpu_lease[d.gpu]}")
                self._start_task(job, d.gpu)
            elif not isinstance(d, Revoke):
                raise SimulationError(f"unknown decision {d!r}")
        for job in self.active_jobs():
            if job.lease is not None:
                self._run_lease(job)

    def _live(self, job_id: str) -> TaskJob:
        job = self.jobs.get(job_id)
        if job is None or not job.arrived or job.done:
            raise SimulationError(f"t={self.now}: decision for a job that is not active: {job_id!r}")
        return job

    # ---------------------------------------------------------------- loop
    def run(self) -> SimResult:
        t0 = time.perf_counter()
        view = HareView(self)
        if hasattr(self.policy, "reset"):
            self.policy.reset()
        idle_wakes = 0
        while self.heap:
            t = self.heap[0][0]
            self.now = t
            only_wakes = True
            while self.heap and self.heap[0][0] <= t + _EPS:
                _, kind, _, jid, g = heapq.heappop(self.heap)
                self.events += 1
                if kind == _WAKE:
                    continue
                only_wakes = False
                job = self.jobs[jid]
                if kind == _ARRIVE:
                    self._on_arrive(job)
                elif kind == _DONE:
                    self._on_done(job, g)
                else:
                    self._on_release(job)
            running_before = sum(1 for x in self.gpu_job if x is not None)
            self._apply(self.policy.schedule(view))
            self.job_events = False
            busy = sum(1 for x in self.gpu_job if x is not None)
            if only_wakes and busy == running_before == 0 and not any(k != _WAKE for _, k, *_ in self.heap):
                idle_wakes += 1
                if idle_wakes > 1000:
                    break  # nothing can run any more: the remaining jobs are reported unfinished
            else:
                idle_wakes = 0
            self._sample(busy)
        unfinished = [j.job_id for j in self.jobs.values() if not j.done]
        return SimResult(records=self.records, timeseries=self.ts, cluster=self.cluster,
                         policy=getattr(self.policy, "name", type(self.policy).__name__),
                         config=SimConfig(perf_model="hare-tasks", seed=self.config.seed),
                         events=self.events, wall_s=time.perf_counter() - t0, rejected=self.rejected,
                         unfinished=unfinished)

    def _sample(self, busy: int) -> None:
        act = self.active_jobs()
        running = sum(1 for j in act if j.active)
        row = (float(busy), float(len(act) - running), float(running))
        ts = self.ts
        if ts["time_s"] and (ts["busy_gpus"][-1], ts["pending"][-1], ts["running"][-1]) == row:
            return
        ts["time_s"].append(self.now)
        ts["busy_gpus"].append(row[0])
        ts["pending"].append(row[1])
        ts["running"].append(row[2])

    def _record(self, job: TaskJob) -> dict[str, Any]:
        c = self.cluster
        assert job.finish is not None and job.first_start is not None
        servers = {c.gpu_server[g] for g in job.gpus_used}
        run_s = job.active_s
        jct = job.finish - job.arrival_s
        return {
            "job_id": job.job_id, "model": job.spec.model, "num_gpus": job.n, "user": job.spec.user or "",
            "arrival_s": job.arrival_s, "first_start_s": job.first_start, "finish_s": job.finish,
            "jct_s": jct, "queue_s": max(0.0, jct - run_s), "run_s": run_s, "ideal_run_s": job.ideal_run_s,
            "comm_s": job.rounds * job.sync_s, "penalty_s": job.penalty_s,
            "comm_overhead_s": max(0.0, run_s - job.ideal_run_s), "iterations": job.rounds * job.scale,
            "preemptions": job.preemptions, "placements": len(job.gpus_used), "servers": len(servers),
            "racks": len({c.server_rack[s] for s in servers}),
            "last_gpus": " ".join(map(str, job.last_round_gpus)),
        }


def simulate_tasks(cluster: Cluster, jobs: Sequence[JobSpec], policy: Any, config: HareConfig | None = None,
                   **kwargs: Any) -> SimResult:
    """Convenience wrapper: build a :class:`HareSimulator` and run it."""
    return HareSimulator(cluster, jobs, policy, config, **kwargs).run()
