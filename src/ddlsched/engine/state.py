"""Per-job runtime state (engine-private) and the read-only view policies get of it."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from ddlsched.perf.base import IterationTime
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import ModelProfile


class JobStatus(Enum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    REJECTED = "rejected"


@dataclass(slots=True)
class JobState:
    """Everything the engine tracks for one job. Progress is accounted lazily: ``sync(now)`` brings
    ``done_iters``, ``run_s``, ``comm_s`` and ``attained_gpu_s`` up to ``now`` at the current rate."""

    spec: JobSpec
    profile: ModelProfile
    total_iters: float
    ideal_iter_s: float
    seq: int
    status: JobStatus = JobStatus.PENDING
    done_iters: float = 0.0
    iter_time: IterationTime | None = None
    last_t: float = 0.0
    resume_t: float = 0.0
    gpus: tuple[int, ...] = ()
    accum_steps: int = 1
    first_start: float | None = None
    last_start: float | None = None
    finish: float | None = None
    version: int = 0
    preemptions: int = 0
    run_s: float = 0.0
    penalty_s: float = 0.0
    comm_s: float = 0.0
    attained_gpu_s: float = 0.0
    queue_s: float = 0.0
    wait_since: float = 0.0
    placements: int = 0
    max_servers: int = 0
    max_racks: int = 0
    reject_reason: str = ""
    view: JobView | None = field(default=None, repr=False)

    @property
    def job_id(self) -> str:
        return self.spec.job_id

    @property
    def ideal_run_s(self) -> float:
        return self.total_iters * self.ideal_iter_s

    def sync(self, now: float) -> None:
        """Advance the lazily-kept accounts of a running job to ``now``."""
        dt = now - self.last_t
        if dt <= 0:
            return
        self.run_s += dt
        self.attained_gpu_s += dt * len(self.gpus)
        active = now - max(self.last_t, self.resume_t)
        if active > 0 and self.iter_time is not None:
            total = self.iter_time.total_s
            self.done_iters = min(self.total_iters, self.done_iters + active / total)
            self.comm_s += active * self.iter_time.comm_s / total
            self.penalty_s += dt - active
        else:
            self.penalty_s += dt
        self.last_t = now


class JobView:
    """A read-only window on a job for policies. Time-dependent figures are given as of the engine's now."""

    __slots__ = ("_clock", "_s", "job_id")

    def __init__(self, state: JobState, clock: _Clock) -> None:
        self._s = state
        self._clock = clock
        self.job_id: str = state.spec.job_id

    def __repr__(self) -> str:
        return f"JobView({self.job_id}, {self.status.value}, gpus={self.num_gpus})"

    # static
    @property
    def spec(self) -> JobSpec:
        return self._s.spec

    @property
    def profile(self) -> ModelProfile:
        return self._s.profile

    @property
    def num_gpus(self) -> int:
        return self._s.spec.num_gpus

    @property
    def arrival_s(self) -> float:
        return self._s.spec.arrival_s

    @property
    def seq(self) -> int:
        """Arrival order (ties broken by trace order)."""
        return self._s.seq

    @property
    def total_iters(self) -> float:
        return self._s.total_iters

    @property
    def ideal_iter_s(self) -> float:
        """Iteration time alone and consolidated (the clairvoyant size estimate)."""
        return self._s.ideal_iter_s

    @property
    def ideal_run_s(self) -> float:
        return self._s.ideal_run_s

    # dynamic
    @property
    def now(self) -> float:
        """The engine's current time."""
        return self._clock.now

    @property
    def status(self) -> JobStatus:
        return self._s.status

    @property
    def gpus(self) -> tuple[int, ...]:
        return self._s.gpus

    @property
    def accum_steps(self) -> int:
        return self._s.accum_steps

    @property
    def preemptions(self) -> int:
        return self._s.preemptions

    @property
    def iter_time(self) -> IterationTime | None:
        return self._s.iter_time

    def _synced(self) -> JobState:
        s = self._s
        if s.status is JobStatus.RUNNING:
            s.sync(self._clock.now)
        return s

    @property
    def done_iters(self) -> float:
        return self._synced().done_iters

    @property
    def remaining_iters(self) -> float:
        s = self._synced()
        return s.total_iters - s.done_iters

    @property
    def remaining_ideal_s(self) -> float:
        """Remaining work in alone-and-consolidated seconds (clairvoyant; used by SJF/SRTF)."""
        return self.remaining_iters * self._s.ideal_iter_s

    @property
    def executed_s(self) -> float:
        """Wall time this job has held GPUs so far."""
        s = self._s
        if s.status is JobStatus.RUNNING:
            return s.run_s + max(0.0, self._clock.now - s.last_t)
        return s.run_s

    @property
    def attained_gpu_s(self) -> float:
        """GPU-seconds of service received so far (Tiresias' 2D attained service)."""
        s = self._s
        if s.status is JobStatus.RUNNING:
            return s.attained_gpu_s + max(0.0, self._clock.now - s.last_t) * len(s.gpus)
        return s.attained_gpu_s

    @property
    def waiting_s(self) -> float:
        """Time since the job last entered the queue (arrival or preemption); 0 while running."""
        s = self._s
        return self._clock.now - s.wait_since if s.status is JobStatus.PENDING else 0.0

    @property
    def queued_s(self) -> float:
        """Total time spent pending so far."""
        return self._s.queue_s + self.waiting_s

    @property
    def last_start(self) -> float | None:
        return self._s.last_start


class _Clock:
    __slots__ = ("now",)

    def __init__(self) -> None:
        self.now = 0.0
