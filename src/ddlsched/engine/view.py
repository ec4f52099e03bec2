"""The read-only view of the cluster and queue a policy decides from (ARCHITECTURE.md "policy")."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from ddlsched.cluster.topology import Cluster
from ddlsched.engine.allocation import Allocation, FreeGPUs
from ddlsched.engine.state import JobView
from ddlsched.perf.base import IterationTime, PerfModel, Placement


class SchedulerView:
    """What a policy sees on each scheduling pass. Nothing here changes engine state; a policy plans on
    :meth:`allocation` (a tentative overlay) and returns decisions."""

    def __init__(self, *, cluster: Cluster, free: FreeGPUs, perf: PerfModel, rng: random.Random,
                 max_jobs_per_gpu: int, restart_penalty_s: float,
                 pending: Callable[[], Sequence[JobView]],
                 pending_sorted: Callable[[Callable[[JobView], Any]], Sequence[JobView]],
                 running: Callable[[], Sequence[JobView]],
                 job: Callable[[str], JobView], gpu_jobs: Callable[[int], tuple[str, ...]],
                 gpu_mem_used: Callable[[int], float]) -> None:
        self.now = 0.0
        self.cluster = cluster
        self.rng = rng
        self.max_jobs_per_gpu = max_jobs_per_gpu
        self.restart_penalty_s = restart_penalty_s
        self._free = free
        self._perf = perf
        self._pending = pending
        self._pending_sorted = pending_sorted
        self._running = running
        self._job = job
        self._gpu_jobs = gpu_jobs
        self._gpu_mem_used = gpu_mem_used

    @property
    def pending(self) -> Sequence[JobView]:
        """Queued jobs in arrival order (a preempted job keeps its original place)."""
        return self._pending()

    def pending_sorted(self, key: Callable[[JobView], Any]) -> Sequence[JobView]:
        """Queued jobs sorted by ``key`` (ties: arrival). ``key`` must be *static* — the same value for a job
        for as long as it is queued (e.g. size, ideal run time) — and the same callable on every pass: the
        engine keeps one incrementally-maintained index per key, so a pass costs no sort."""
        return self._pending_sorted(key)

    @property
    def running(self) -> Sequence[JobView]:
        """Running jobs in the order they (re)started."""
        return self._running()

    def job(self, job_id: str) -> JobView:
        return self._job(job_id)

    @property
    def num_free(self) -> int:
        """GPUs that host no job."""
        return self._free.num_free

    def allocation(self) -> Allocation:
        """A fresh tentative copy of the free-GPU index to plan this pass with."""
        return self._free.overlay()

    def gpu_jobs(self, gpu: int) -> tuple[str, ...]:
        """Jobs resident on a GPU (more than one only under GPU sharing)."""
        return self._gpu_jobs(gpu)

    def gpu_mem_free_mb(self, gpu: int) -> float:
        return self.cluster.gpu_mem_mb(gpu) - self._gpu_mem_used(gpu)

    def estimate(self, job: JobView, gpus: Sequence[int], accum_steps: int = 1) -> IterationTime:
        """Iteration time of ``job`` on ``gpus`` if it ran alone (the physics model, no state change)."""
        return self._perf.isolated(Placement(job.job_id, tuple(gpus), job.profile, accum_steps))

    def current_time(self, job_id: str) -> IterationTime:
        """A running job's current iteration time, contention included."""
        return self._perf.current(job_id)
