"""Task-level DAG engine of Wang et al. 2020 (ALGORITHMS.md §3.2–§3.6) — the paper-scale mode.

Every iteration of a job runs a forward then a backward task on each of its workers; once *all* workers
have finished backward, one all-reduce of the whole gradient (M MB) runs, then the next iteration starts.

* **GPUs are time-shared by memory:** a GPU hosts every job whose ``mem_mb`` fits (Σ ≤ GPU memory) and
  runs one compute task at a time, non-preemptively; when idle it picks the ready task of the resident job
  with the best priority (``srsf``: smallest remaining GPU service, ``srtf``: smallest remaining compute of
  one worker, ``sf``: fewest workers; ties by arrival) (§3.4).
* **Communication:** a job on one server synchronises instantly; a multi-server job's transfer occupies the
  NIC of every server it spans and, with k transfers on its busiest NIC, runs at 1/((k−1)η + kβ) MB/ms. It
  is *admitted* by the policy (SRSF(n) or AdaDUAL, §3.5); remaining bytes are tracked and every transfer is
  re-timed whenever the k of one of its NICs changes.
* **Placement** (§3.3) runs whenever a job arrives or leaves, walking the queue in the policy's order.

Event-driven rather than the authors' 1 ms stepping: state only changes at task ends, transfer ends and
arrivals, so jumping between those instants and doing, at each, the step's work in the same order
(completions → arrivals → placement → communication admission → re-timing → GPU picks) gives the same
semantics without ms rounding of transfer times. Not preemptive; no starvation queue (the authors' default
threshold disables it).

This engine is meant for tens to hundreds of jobs with tens to thousands of iterations. For trace jobs with
very many iterations, ``max_task_iters`` coarsens time (each task stands for ``iters/steps`` iterations:
fw, bw and the transfer scaled together, total work unchanged) — an approximation [ours], reported in
``result.config.perf_params``.

The result is a :class:`~ddlsched.engine.fluid.SimResult` with the fluid engine's record keys, so
``ddlsched.metrics.summarize`` and ``write_run`` work unchanged.
"""

from __future__ import annotations

import heapq
import math
import random
import time as wallclock
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ddlsched.cluster.topology import Cluster
from ddlsched.engine.fluid import SimConfig, SimResult
from ddlsched.errors import SimulationError
from ddlsched.perf.abe import PAPER_BETA_MS_PER_MB, PAPER_ETA_MS_PER_MB, speed_mb_per_ms
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import ModelCatalog, ModelProfile, default_catalog

_EPS = 1e-9
_TASK, _COMM = 0, 1
FW_READY, FW_RUN, BW_READY, BW_RUN, WAIT = range(5)


def fw_bw_ms(profile: ModelProfile) -> tuple[float, float]:
    """Forward/backward ms of one iteration; a profile without them splits compute 1:2 [I]."""
    if profile.fw_ms is not None and profile.bw_ms is not None:
        return float(profile.fw_ms), float(profile.bw_ms)
    return profile.compute_ms / 3.0, profile.compute_ms * 2.0 / 3.0


@dataclass
class TJob:
    """Runtime state of one job in the task-level engine (engine-private)."""

    spec: JobSpec
    seq: int
    n: int
    mem: float
    fw: float  # ms per task (coarsened)
    bw: float
    size_mb: float  # per transfer (coarsened)
    steps: int
    iters: float
    gpus: tuple[int, ...] = ()
    nodes: tuple[int, ...] = ()
    widx: dict[int, int] = field(default_factory=dict)
    phase: list[int] = field(default_factory=list)
    waiting: int = 0
    done_steps: int = 0
    remaining_service: float = 0.0
    start_ms: float | None = None
    finish_ms: float | None = None
    comm_remaining: float = 0.0
    comm_rate: float = 0.0
    comm_k: int = 0
    comm_t: float = 0.0
    comm_version: int = 0
    comm_ms: float = 0.0
    comm_started: float = 0.0
    comm_active: bool = False
    comm_ready: bool = False
    load_per_step: float = 0.0

    @property
    def job_id(self) -> str:
        return self.spec.job_id

    @property
    def multi(self) -> bool:
        return len(self.nodes) > 1

    @property
    def total_service(self) -> float:
        return (self.fw + self.bw) * self.steps * self.n

    @property
    def remaining_worker(self) -> float:
        return self.remaining_service / self.n


class TaskLevelRules(Protocol):
    """What a task-level policy supplies (see ``ddlsched.policies.ada_srsf``)."""

    name: str

    def order(self, queue: list[TJob], rng: random.Random) -> list[TJob]: ...
    def pick(self, job: TJob, engine: TaskLevelEngine) -> list[int] | None: ...
    def priority(self, job: TJob) -> float: ...
    def admit(self, job: TJob, engine: TaskLevelEngine) -> bool: ...


class TaskLevelEngine:
    """Run one task-level policy over jobs on a cluster (times in ms inside, seconds in the result)."""

    def __init__(self, cluster: Cluster, jobs: Sequence[JobSpec], policy: TaskLevelRules, *,
                 beta: float = PAPER_BETA_MS_PER_MB, eta: float = PAPER_ETA_MS_PER_MB, seed: int = 0,
                 max_task_iters: int | None = None, catalog: ModelCatalog | None = None) -> None:
        if beta <= 0 or eta < 0:
            raise SimulationError("beta must be > 0 and eta >= 0")
        self.cluster = cluster
        self.policy = policy
        self.beta, self.eta = beta, eta
        self.seed = seed
        self.max_task_iters = max_task_iters
        self.catalog = catalog or default_catalog()
        self.rng = random.Random(f"tasklevel-{seed}")
        self.now = 0.0
        g = cluster.num_gpus
        self.gpu_jobs: list[list[TJob]] = [[] for _ in range(g)]
        self.gpu_mem: list[float] = [0.0] * g
        self.gpu_busy: list[bool] = [False] * g
        self.gpu_load: list[float] = [0.0] * g  # LWF bookkeeping (§3.3), ms
        self.node_comm: list[list[TJob]] = [[] for _ in range(cluster.num_servers)]
        self.heap: list[tuple[float, int, int, str, int, int]] = []
        self._seq = 0
        self.queue: list[TJob] = []
        self.running: dict[str, TJob] = {}
        self.records: list[dict[str, Any]] = []
        self.rejected: list[dict[str, Any]] = []
        self.events = 0
        self.ts: dict[str, list[float]] = {"time_s": [], "busy_gpus": [], "pending": [], "running": []}
        self.jobs = self._prepare(jobs)

    # ------------------------------------------------------------------ setup
    def alone_step_ms(self, n: int, fw: float, bw: float, size_mb: float) -> float:
        multi = n > self.cluster.max_gpus_per_server
        return fw + bw + (self.beta * size_mb if multi else 0.0)

    def _prepare(self, jobs: Sequence[JobSpec]) -> list[TJob]:
        order = sorted(range(len(jobs)), key=lambda i: (jobs[i].arrival_s, i))
        out: list[TJob] = []
        max_mem = max(self.cluster.gpu_mem_mb(g) for g in range(self.cluster.num_gpus))
        seen: set[str] = set()
        for seq, i in enumerate(order):
            spec = jobs[i]
            if spec.job_id in seen:
                raise SimulationError(f"duplicate job id {spec.job_id!r} ({spec.source})")
            seen.add(spec.job_id)
            prof = self.catalog[spec.model]
            mem = spec.gpu_mem_mb or prof.mem_mb
            reason = ""
            if spec.num_gpus > self.cluster.num_gpus:
                reason = f"asks for {spec.num_gpus} GPUs; the cluster has {self.cluster.num_gpus}"
            elif mem > max_mem:
                reason = f"needs {mem:g} MB per GPU; the largest GPU has {max_mem:g} MB"
            if reason:
                self.rejected.append({"job_id": spec.job_id, "source": spec.source, "reason": reason})
                continue
            fw, bw = fw_bw_ms(prof)
            if spec.iterations is not None:
                iters = float(spec.iterations)
            else:
                iters = spec.duration_s * 1000.0 / self.alone_step_ms(spec.num_gpus, fw, bw, prof.grad_mb)  # type: ignore[operator]
            steps = max(1, math.ceil(iters - 1e-9))
            if self.max_task_iters is not None and steps > self.max_task_iters:
                steps = self.max_task_iters
            c = iters / steps
            out.append(TJob(spec=spec, seq=seq, n=spec.num_gpus, mem=mem, fw=fw * c, bw=bw * c,
                            size_mb=prof.grad_mb * c, steps=steps, iters=iters))
        return out

    # ------------------------------------------------------------------ helpers for policies
    def gpu_mem_free(self, g: int) -> float:
        return self.cluster.gpu_mem_mb(g) - self.gpu_mem[g]

    def node_load(self, s: int) -> float:
        gpus = self.cluster.server_gpus[s]
        return sum(self.gpu_load[g] for g in gpus) / len(gpus)

    def k_max(self, job: TJob) -> int:
        """Active transfers on the busiest NIC the job spans."""
        return max(len(self.node_comm[s]) for s in job.nodes) if job.nodes else 0

    def ongoing(self, job: TJob) -> list[TJob]:
        """Distinct active transfers on the job's NICs (sorted by arrival)."""
        seen: dict[str, TJob] = {}
        for s in job.nodes:
            for other in self.node_comm[s]:
                seen[other.job_id] = other
        return sorted(seen.values(), key=lambda j: j.seq)

    def remaining_mb(self, job: TJob) -> float:
        """Bytes (MB) an active transfer still has to send, as of now."""
        return max(0.0, job.comm_remaining - job.comm_rate * (self.now - job.comm_t))

    # ------------------------------------------------------------------ events
    def _push(self, t: float, kind: int, jid: str, a: int, b: int) -> None:
        self._seq += 1
        heapq.heappush(self.heap, (t, kind, self._seq, jid, a, b))

    def run(self) -> SimResult:
        t0 = wallclock.perf_counter()
        arr = self.jobs
        i = 0
        while True:
            t_evt = self.heap[0][0] if self.heap else math.inf
            t_arr = arr[i].spec.arrival_s * 1000.0 if i < len(arr) else math.inf
            now = min(t_evt, t_arr)
            if now == math.inf:
                break
            if now < self.now - 1e-6:
                raise SimulationError(f"time went back from {self.now} to {now}")
            self.now = now = max(now, self.now)
            placement_needed = False
            dirty: set[int] = set()
            comm_done: list[TJob] = []
            while self.heap and self.heap[0][0] <= now + _EPS:
                _, kind, _, jid, a, b = heapq.heappop(self.heap)
                job = self.running.get(jid)
                if job is None:
                    continue
                if kind == _TASK:
                    self.events += 1
                    self._task_done(job, a, b, dirty)
                elif job.comm_active and b == job.comm_version:
                    self.events += 1
                    comm_done.append(job)
            for job in comm_done:
                self._end_transfer(job)
            for job in comm_done:
                placement_needed |= self._sync(job, dirty)
            while i < len(arr) and arr[i].spec.arrival_s * 1000.0 <= now + _EPS:
                self.queue.append(arr[i])
                i += 1
                self.events += 1
                placement_needed = True
            for _ in range(2):  # a job finishing at an instant sync frees memory for the queue
                if placement_needed and self.queue:
                    self._place(dirty)
                placement_needed = self._communicate(dirty)
                if not placement_needed:
                    break
            self._retime()
            for g in sorted(dirty):
                if not self.gpu_busy[g]:
                    self._pick(g)
            self._sample()
        unfinished = [j.job_id for j in self.queue] + list(self.running)
        config = SimConfig(perf_model="abe-tasklevel", perf_params={
            "beta": self.beta, "eta": self.eta, "max_task_iters": self.max_task_iters}, seed=self.seed)
        return SimResult(records=self.records, timeseries=self.ts, cluster=self.cluster,
                         policy=getattr(self.policy, "name", type(self.policy).__name__), config=config,
                         events=self.events, wall_s=wallclock.perf_counter() - t0, rejected=self.rejected,
                         unfinished=unfinished)

    def _sample(self) -> None:
        t = self.now / 1000.0
        busy = sum(1 for g in self.gpu_jobs if g)
        ts = self.ts
        if ts["time_s"] and ts["time_s"][-1] == t:
            ts["busy_gpus"][-1], ts["pending"][-1], ts["running"][-1] = busy, len(self.queue), len(self.running)
            return
        ts["time_s"].append(t)
        ts["busy_gpus"].append(busy)
        ts["pending"].append(len(self.queue))
        ts["running"].append(len(self.running))

    # ------------------------------------------------------------------ compute tasks
    def _task_done(self, job: TJob, gpu: int, phase: int, dirty: set[int]) -> None:
        w = job.widx[gpu]
        self.gpu_busy[gpu] = False
        dirty.add(gpu)
        if phase == FW_RUN:
            job.phase[w] = BW_READY
            job.remaining_service -= job.fw
            self.gpu_load[gpu] -= job.fw
        else:
            job.phase[w] = WAIT
            job.remaining_service -= job.bw
            self.gpu_load[gpu] -= job.bw
            job.waiting += 1
            if job.waiting == job.n:
                job.comm_ready = True

    def _pick(self, g: int) -> None:
        best: TJob | None = None
        best_key: tuple[float, int] | None = None
        for job in self.gpu_jobs[g]:
            ph = job.phase[job.widx[g]]
            if ph in (FW_READY, BW_READY):
                key = (self.policy.priority(job), job.seq)
                if best_key is None or key < best_key:
                    best, best_key = job, key
        if best is None:
            return
        w = best.widx[g]
        ph = best.phase[w]
        best.phase[w] = ph + 1
        self.gpu_busy[g] = True
        dur = best.fw if ph == FW_READY else best.bw
        self._push(self.now + dur, _TASK, best.job_id, g, ph + 1)

    # ------------------------------------------------------------------ communication
    def _communicate(self, dirty: set[int]) -> bool:
        ready = [j for j in self.running.values() if j.comm_ready]
        finished_any = False
        for job in [j for j in ready if not j.multi]:
            finished_any |= self._sync(job, dirty)  # intra-server all-reduce: instantaneous (§3.2)
        multi = sorted((j for j in ready if j.multi), key=lambda j: (self.policy.priority(j), j.seq))
        for job in multi:
            if self.policy.admit(job, self):
                self._begin_transfer(job)
        return finished_any

    def _begin_transfer(self, job: TJob) -> None:
        job.comm_ready = False
        job.comm_active = True
        job.comm_remaining = job.size_mb
        job.comm_t = self.now
        job.comm_rate = 0.0
        job.comm_k = 0
        job.comm_started = self.now
        for s in job.nodes:
            self.node_comm[s].append(job)

    def _end_transfer(self, job: TJob) -> None:
        job.comm_active = False
        job.comm_ms += self.now - job.comm_started
        for s in job.nodes:
            self.node_comm[s].remove(job)
        for g in job.gpus:
            self.gpu_load[g] -= self.beta * job.size_mb

    def _retime(self) -> None:
        """Give every active transfer the speed of its busiest NIC; re-time those whose k changed."""
        seen: set[str] = set()
        for s in range(len(self.node_comm)):
            for job in self.node_comm[s]:
                if job.job_id in seen:
                    continue
                seen.add(job.job_id)
                k = self.k_max(job)
                if k == job.comm_k:
                    continue
                job.comm_remaining = self.remaining_mb(job)
                job.comm_t = self.now
                job.comm_k = k
                job.comm_rate = speed_mb_per_ms(k, self.beta, self.eta)
                job.comm_version += 1
                self._push(self.now + job.comm_remaining / job.comm_rate, _COMM, job.job_id, 0, job.comm_version)

    def _sync(self, job: TJob, dirty: set[int]) -> bool:
        """The all-reduce of one step is done: next step, or the job finishes. Returns True on finish."""
        job.comm_ready = False
        job.done_steps += 1
        job.waiting = 0
        if job.done_steps >= job.steps:
            self._finish(job, dirty)
            return True
        for w in range(job.n):
            job.phase[w] = FW_READY
        dirty.update(job.gpus)
        return False

    # ------------------------------------------------------------------ placement
    def _place(self, dirty: set[int]) -> None:
        placed: list[TJob] = []
        for job in self.policy.order(list(self.queue), self.rng):
            gpus = self.policy.pick(job, self)
            if gpus is None:
                continue
            if len(gpus) != job.n or len(set(gpus)) != job.n:
                raise SimulationError(f"policy gave job {job.job_id} {len(gpus)} GPUs, needs {job.n} distinct")
            for g in gpus:
                if self.gpu_mem_free(g) + 1e-6 < job.mem:
                    raise SimulationError(f"job {job.job_id}: GPU {g} memory over-allocated")
            self._start(job, tuple(gpus))
            dirty.update(gpus)
            placed.append(job)
        if placed:
            ids = {j.job_id for j in placed}
            self.queue = [j for j in self.queue if j.job_id not in ids]

    def _start(self, job: TJob, gpus: tuple[int, ...]) -> None:
        job.gpus = gpus
        job.nodes = tuple(sorted(self.cluster.servers_of(gpus)))
        job.widx = {g: w for w, g in enumerate(gpus)}
        job.phase = [FW_READY] * job.n
        job.remaining_service = job.total_service
        job.start_ms = self.now
        comm = self.beta * job.size_mb if job.multi else 0.0
        job.load_per_step = comm
        for g in gpus:
            self.gpu_jobs[g].append(job)
            self.gpu_mem[g] += job.mem
            self.gpu_load[g] += (job.fw + job.bw + comm) * job.steps
        self.running[job.job_id] = job

    def _finish(self, job: TJob, dirty: set[int]) -> None:
        job.finish_ms = self.now
        del self.running[job.job_id]
        for g in job.gpus:
            self.gpu_jobs[g].remove(job)
            self.gpu_mem[g] -= job.mem
            if not self.gpu_jobs[g]:
                self.gpu_mem[g] = 0.0
                self.gpu_load[g] = 0.0
        dirty.update(job.gpus)
        self.records.append(self._record(job))

    def _record(self, job: TJob) -> dict[str, Any]:
        spec = job.spec
        assert job.start_ms is not None and job.finish_ms is not None
        start, finish = job.start_ms / 1000.0, job.finish_ms / 1000.0
        ideal = job.steps * self.alone_step_ms(job.n, job.fw, job.bw, job.size_mb) / 1000.0
        run = finish - start
        return {
            "job_id": spec.job_id, "model": spec.model, "num_gpus": spec.num_gpus, "user": spec.user or "",
            "arrival_s": spec.arrival_s, "first_start_s": start, "finish_s": finish,
            "jct_s": finish - spec.arrival_s, "queue_s": start - spec.arrival_s, "run_s": run,
            "ideal_run_s": ideal, "comm_s": job.comm_ms / 1000.0, "penalty_s": 0.0,
            "comm_overhead_s": max(0.0, run - ideal), "iterations": job.iters, "preemptions": 0,
            "placements": 1, "servers": len(job.nodes), "racks": len(self.cluster.racks_of(job.gpus)),
            "last_gpus": " ".join(map(str, job.gpus)),
        }


def simulate_tasklevel(cluster: Cluster, jobs: Sequence[JobSpec], policy: TaskLevelRules,
                       **kwargs: Any) -> SimResult:
    """Convenience wrapper: build a :class:`TaskLevelEngine` and run it."""
    return TaskLevelEngine(cluster, jobs, policy, **kwargs).run()
