"""Queue orderings (docs/physics.md §1, docs/policies/gpu-sharing.md §5; Tiresias' discretised 2D-LAS).

| name     | key (smaller runs first)                                      | preemptive |
|----------|---------------------------------------------------------------|------------|
| fifo     | arrival order                                                 | no         |
| sjf      | ideal (alone, consolidated) run time                          | no         |
| srtf     | remaining ideal run time (clairvoyant)                        | yes        |
| tiresias | (queue by attained service, arrival); starvation guard         | yes        |

SJF/SRTF use the clairvoyant size: iterations × alone-and-consolidated iteration time.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

from ddlsched._mypyc import mypyc_attr
from ddlsched.engine.jobview import JobView
from ddlsched.engine.state import JobStatus
from ddlsched.engine.view import SchedulerView
from ddlsched.policies.las_queues import QueuedByClass, RunningByClass

_TOL = 1e-6  # seconds / GPU-seconds: absorbs float error at threshold and promotion times


@mypyc_attr(allow_interpreted_subclasses=True)
class Ordering(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    preemptive: ClassVar[bool] = False
    clairvoyant: ClassVar[bool] = False  # the key reads job durations (Requirements.clairvoyant)
    static: ClassVar[bool] = False  # key never changes while a job is queued (lets the engine index it)

    @abstractmethod
    def key(self, job: JobView) -> Any: ...

    def preempt_class(self, job: JobView) -> Any:
        """A running job may be preempted only for a job of a strictly smaller class (default: the key)."""
        return self.key(job)

    def rank(self, job: JobView) -> tuple[Any, Any]:
        """(preempt class, key), computed together (override when both come from one costly figure)."""
        return self.preempt_class(job), self.key(job)

    def pending_ranked(self, view: SchedulerView) -> Iterable[tuple[JobView, Any]]:
        """Queued jobs best first — by (preempt class, key), ties in arrival order — each with its preempt class.
        The default ranks and sorts the whole queue; an ordering may keep an index across passes instead."""
        ranks = {j.job_id: self.rank(j) for j in view.pending}
        return [(j, ranks[j.job_id][0]) for j in sorted(view.pending, key=lambda j: ranks[j.job_id])]

    def left_queue(self, job: JobView) -> None:  # noqa: B027 - optional hook
        """The policy started ``job`` (for an ordering that keeps indexes; see :meth:`pending_ranked`)."""

    def victims(self, view: SchedulerView, may_preempt: Callable[[JobView], bool]) -> Iterable[tuple[JobView, Any]]:
        """Running jobs ``may_preempt`` allows, worst first — by (preempt class, key) descending — each with its
        preempt class. The pass draws only as many as it needs. The default ranks and sorts every running job; an
        ordering may keep an index and yield from it instead."""
        ranks = {j.job_id: self.rank(j) for j in view.running}
        chosen = sorted((j for j in view.running if may_preempt(j)), key=lambda j: ranks[j.job_id], reverse=True)
        return [(j, ranks[j.job_id][0]) for j in chosen]

    def next_change(self, view: SchedulerView) -> float | None:
        """Earliest future time at which some job's key changes (so the policy must run again)."""
        return None

    def reset(self) -> None:  # noqa: B027 - optional hook
        """Forget per-run state."""


@mypyc_attr(allow_interpreted_subclasses=True)
class Fifo(Ordering):
    name = "fifo"
    description = "first come, first served"

    def key(self, job: JobView) -> Any:
        return job.seq


@mypyc_attr(allow_interpreted_subclasses=True)
class Sjf(Ordering):
    name = "sjf"
    description = "shortest job first by ideal run time (non-preemptive, clairvoyant)"
    clairvoyant = True
    static = True

    def key(self, job: JobView) -> Any:
        return (job.ideal_run_s, job.seq)


@mypyc_attr(allow_interpreted_subclasses=True)
class Srtf(Ordering):
    name = "srtf"
    description = "shortest remaining time first (preemptive, clairvoyant)"
    preemptive = True
    clairvoyant = True

    def key(self, job: JobView) -> Any:
        return (job.remaining_ideal_s, job.seq)

    def pending_ranked(self, view: SchedulerView) -> Iterable[tuple[JobView, Any]]:
        # a queued job's remaining work does not change, so its key is static while queued: the engine's index
        key = self.key
        return ((j, key(j)) for j in view.pending_sorted(key))


@mypyc_attr(allow_interpreted_subclasses=True)
class Tiresias(Ordering):
    """Discretised 2D-LAS (Tiresias; docs/policies/gpu-sharing.md §5 gives the SJF-BSBF authors' settings).

    queue(j) = number of thresholds ≤ counted service, where service is GPU-seconds (``gpu_time``) or
    executed seconds (``time``). Inside a queue: arrival order; a running job is only preempted for a job
    of a strictly higher queue. Starvation guard: a pending job that has run before and has waited
    ≥ ``starvation_factor`` × its executed time is promoted to queue 0, and its counted service restarts
    from zero (so it keeps queue 0 for a full quantum instead of being demoted at once, which would make
    jobs ping-pong). ``starvation_factor=None`` disables the guard.
    """

    name = "tiresias"
    description = "discretised 2D least-attained-service queues with a starvation guard (preemptive)"
    preemptive = True

    def __init__(self, thresholds: Sequence[float] = (3600.0,), service: str = "gpu_time",
                 starvation_factor: float | None = 1.0) -> None:
        if service not in ("gpu_time", "time"):
            raise ValueError("service must be 'gpu_time' or 'time'")
        thresholds = [float(t) for t in thresholds]
        if thresholds != sorted(thresholds) or any(t <= 0 for t in thresholds):
            raise ValueError("thresholds must be positive and increasing")
        if starvation_factor is not None and not (math.isfinite(starvation_factor) and starvation_factor > 0):
            raise ValueError(f"starvation_factor must be a finite number > 0 (or null: no guard), "
                             f"got {starvation_factor}")
        self.thresholds = thresholds
        self.service = service
        self.starvation_factor = starvation_factor
        self._base: dict[str, float] = {}
        # job → (queue, valid until, state token): a queue only changes at a threshold crossing (running)
        # or a starvation promotion (pending), both known in advance, or when the job starts/stops.
        self._cache: dict[str, tuple[int, float, tuple[Any, ...]]] = {}
        self._queued: QueuedByClass | None = None  # queued and running jobs by queue, kept across passes
        self._running: RunningByClass | None = None

    def reset(self) -> None:
        self._base.clear()
        self._cache.clear()
        self._queued = self._running = None

    def _index(self, view: SchedulerView) -> QueuedByClass:
        if self._queued is None:
            self._queued = QueuedByClass(len(self.thresholds) + 1, self._queue_until, self._cache)
        self._queued.sync(view)
        return self._queued

    def _running_index(self) -> RunningByClass:
        if self._running is None:
            self._running = RunningByClass(len(self.thresholds) + 1, self._queue_until, self._cache)
        return self._running

    def _raw(self, job: JobView) -> float:
        return job.attained_gpu_s if self.service == "gpu_time" else job.executed_s

    def counted_service(self, job: JobView) -> float:
        return self._raw(job) - self._base.get(job.job_id, 0.0)

    def _queue_until(self, job: JobView) -> tuple[int, float]:
        now = job.now
        token = (job.status, job.preemptions, job.last_start)
        cached = self._cache.get(job.job_id)
        if cached is not None and cached[2] == token and now < cached[1]:
            return cached[0], cached[1]
        raw = self._raw(job)
        a = raw - self._base.get(job.job_id, 0.0)
        q = bisect_right(self.thresholds, a + _TOL)
        until = math.inf
        if job.status is JobStatus.RUNNING:
            if q < len(self.thresholds):
                rate = job.num_gpus if self.service == "gpu_time" else 1.0
                until = now + (self.thresholds[q] - a) / rate
        elif q and self.starvation_factor is not None:
            executed = job.executed_s
            if executed > 0:
                promote_at = now + self.starvation_factor * executed - job.waiting_s
                if promote_at <= now + _TOL:
                    self._base[job.job_id] = raw  # promotion: service counted afresh
                    q = 0
                else:
                    until = promote_at
        self._cache[job.job_id] = (q, until, token)
        return q, until

    def queue(self, job: JobView) -> int:
        return self._queue_until(job)[0]

    def key(self, job: JobView) -> Any:
        return (self.queue(job), job.seq)

    def preempt_class(self, job: JobView) -> Any:
        return self.queue(job)

    def rank(self, job: JobView) -> tuple[Any, Any]:
        q = self.queue(job)
        return q, (q, job.seq)

    def pending_ranked(self, view: SchedulerView) -> Iterable[tuple[JobView, Any]]:
        return self._index(view).walk()  # the queue index: same order as ranking and sorting the queue

    def left_queue(self, job: JobView) -> None:
        if self._queued is not None:
            self._queued.left(job)
        self._running_index().started(job)

    def victims(self, view: SchedulerView, may_preempt: Callable[[JobView], bool]) -> Iterable[tuple[JobView, Any]]:
        return self._running_index().worst_first(view.now, may_preempt)

    def next_change(self, view: SchedulerView) -> float | None:
        running = self._running_index()
        running.sync(view.now)
        best = min(running.earliest_change(), self._index(view).earliest_change())  # crossings, promotions
        return None if best == math.inf else best


ORDERINGS: dict[str, type[Ordering]] = {cls.name: cls for cls in (Fifo, Sjf, Srtf, Tiresias)}
