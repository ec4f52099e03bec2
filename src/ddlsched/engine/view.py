"""The read-only view a fluid-model policy decides from. Nothing here changes engine state; a policy plans on
:meth:`SchedulerView.allocation` (a tentative overlay of the free GPUs) and returns decisions."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ddlsched._mypyc import mypyc_attr
from ddlsched.cluster.topology import Cluster
from ddlsched.engine.allocation import Allocation
from ddlsched.engine.jobview import JobView
from ddlsched.perf.base import IterationTime, Placement

if TYPE_CHECKING:
    from ddlsched.engine.fluid import FluidModel


@mypyc_attr(allow_interpreted_subclasses=True)
class SchedulerView:
    def __init__(self, model: FluidModel) -> None:
        self._m = model

    @property
    def now(self) -> float:
        return self._m.ctx.now

    @property
    def cluster(self) -> Cluster:
        return self._m.cluster

    @property
    def rng(self) -> random.Random:
        """The run's seeded generator for the policy's random choices."""
        return self._m.rng

    @property
    def max_jobs_per_gpu(self) -> int:
        return self._m.max_jobs_per_gpu

    @property
    def restart_penalty_s(self) -> float:
        return self._m.restart_penalty_s

    @property
    def physics(self) -> tuple[str, dict[str, Any]]:
        """(name, parameters) of the run's physics model, e.g. to replay a window with the same physics."""
        return self._m.physics()

    @property
    def pending(self) -> Sequence[JobView]:
        """Queued jobs in arrival order (a preempted job keeps its original place)."""
        return self._m.pending_views()

    def pending_sorted(self, key: Callable[[JobView], Any]) -> Sequence[JobView]:
        """Queued jobs sorted by ``key`` (ties: arrival). ``key`` must be *static* — the same value for a job
        for as long as it is queued (e.g. size, ideal run time) — and the same callable on every pass: the
        engine keeps one incrementally-maintained index per key, so a pass costs no sort."""
        return self._m.pending_index(key)

    def queued_since(self, mark: int) -> tuple[Sequence[JobView], int]:
        """The jobs that entered the queue (arrived, or came back after a preemption) after ``mark`` (0 at the
        start of a run), in order — one may since have started again, or appear twice — and the mark to pass next
        time. With the policy's own ``Start`` decisions (the only way out of the queue) this keeps an index of the
        queue across passes without rescanning it (``ddlsched.policies.las_queues`` does)."""
        log = self._m.queued_log
        return log[mark:], len(log)

    @property
    def running(self) -> Sequence[JobView]:
        """Running jobs in the order they (re)started."""
        return [s.view for s in self._m.running.values()]  # type: ignore[misc]

    def job(self, job_id: str) -> JobView:
        view = self._m.states[job_id].view
        assert view is not None
        return view

    @property
    def num_free(self) -> int:
        """GPUs that host no job."""
        return self._m.free.num_free

    def allocation(self) -> Allocation:
        """A fresh tentative copy of the free-GPU index to plan this pass with."""
        return self._m.free.overlay()

    @property
    def free_changes(self) -> int:
        """How often the free GPUs have changed so far in the run: equal values, the same free GPUs."""
        return self._m.free.changes

    def gpu_jobs(self, gpu: int) -> tuple[str, ...]:
        """Jobs resident on a GPU (more than one only under GPU sharing)."""
        return tuple(self._m.gpu_jobs[gpu])

    def gpu_mem_free_mb(self, gpu: int) -> float:
        return self._m.cluster.gpu_mem_mb(gpu) - self._m.gpu_mem[gpu]

    def estimate(self, job: JobView, gpus: Sequence[int], accum_steps: int = 1) -> IterationTime:
        """Iteration time of ``job`` on ``gpus`` if it ran alone (the physics model, no state change)."""
        return self._m.perf.isolated(Placement(job.job_id, tuple(gpus), job.profile, accum_steps))

    def current_time(self, job_id: str) -> IterationTime:
        """A running job's current iteration time, contention included."""
        return self._m.perf.current(job_id)
