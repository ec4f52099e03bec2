"""Tiresias' jobs kept by queue across passes, so a preemptive pass ranks and sorts neither the queue nor the
running jobs.

The preemptive pass (docs/policies/baselines.md, "Preemptive pass") walks the queued jobs by (queue, arrival) and
takes victims from the running jobs by (queue, arrival), worst first. A job's queue changes only when it enters or
leaves the queue, at a starvation promotion (queued) or at a threshold crossing (running) — each at a time known in
advance, ``Tiresias._queue_until``'s "until". So each index re-ranks only the jobs that changed state and those whose
"until" is due, from a heap; every other job keeps its queue.

* :class:`QueuedByClass` learns of queued jobs from the engine's ``queued_since`` log (arrivals and returns after a
  preemption) and of starts from the policy (``left``); it re-ranks at every pass, as the full ranking did.
* :class:`RunningByClass` learns of starts from the policy (``started``); it yields victims worst first as far as
  the pass draws; finished and preempted jobs a walk meets drop out at the next sync, the rest at a sweep once the
  index has doubled since the last one. Its jobs are re-ranked only where the full pass ranked every running job
  (when it needed victims or a wake-up time), because a running job's "until" is computed from the time it is
  ranked and float rounding would otherwise differ in the last bit.

Walks are in the order a full rank-and-sort gives (``tests/test_las_queues.py`` checks both indexes against full
rescans at every pass), so records are byte-identical; a pass costs O(changes + jobs walked) instead of
O(jobs · log jobs).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ddlsched._mypyc import mypyc_attr
from ddlsched.engine.jobview import JobView
from ddlsched.engine.pending import PendingQueue
from ddlsched.engine.state import JobStatus

if TYPE_CHECKING:
    from ddlsched.engine.view import SchedulerView

INF = float("inf")
SWEEP_AT = 1024
"""Filed running jobs at which :class:`RunningByClass` first sweeps out the ones that stopped."""
Classify = Callable[[JobView], tuple[int, float]]
Classified = dict[str, tuple[int, float, tuple[Any, ...]]]


@mypyc_attr(allow_interpreted_subclasses=True)
class _ByClass:
    """Jobs of one status in one bucket per queue (arrival order inside) and a heap of their "until" times.

    ``classify(job) -> (queue, until)`` is exact for a job of that status at the current time and changes only at
    ``until`` or when the job changes status; ``classified[job_id]`` is ``(queue, until, token)`` as it was last
    classified (the classifier's own cache, read here directly: a call through a callable is a generic call from
    compiled code, and the stale-entry checks make one per heap entry).
    """

    status: JobStatus

    def __init__(self, n_queues: int, classify: Classify, classified: Classified) -> None:
        self._classify = classify
        self._classified = classified
        self.buckets: list[PendingQueue[JobView]] = [PendingQueue() for _ in range(n_queues)]
        self._where: dict[str, int] = {}  # job id -> bucket it is filed in
        self._due: list[tuple[float, int, int, JobView]] = []  # (until, seq, push count, job): min-heap
        self._pushes = 0

    def __len__(self) -> int:
        return len(self._where)

    def _file(self, job: JobView) -> None:
        q, until = self._classify(job)
        jid, seq = job.job_id, job.seq
        old = self._where.get(jid)
        if old != q:
            if old is not None:
                self.buckets[old].remove(seq)
            self.buckets[q].insert(seq, job)
            self._where[jid] = q
        if until != INF:
            self._pushes += 1
            heapq.heappush(self._due, (until, seq, self._pushes, job))

    def _drop(self, job: JobView) -> None:
        q = self._where.pop(job.job_id, None)
        if q is not None:
            self.buckets[q].remove(job.seq)

    def _refile_due(self, now: float) -> None:
        """Re-rank the jobs whose "until" has come (``now`` is not before it)."""
        due, status, classified = self._due, self.status, self._classified
        while due and not now < due[0][0]:
            until, _, _, job = heapq.heappop(due)
            if job.status is status and classified[job.job_id][1] == until:
                self._file(job)

    def earliest_change(self) -> float:
        """The earliest "until" of a filed job (``inf``: none); drops heap entries that are out of date."""
        due, status, classified = self._due, self.status, self._classified
        while due:
            until, _, _, job = due[0]
            if job.status is status and classified[job.job_id][1] == until:
                return until
            heapq.heappop(due)
        return INF


@mypyc_attr(allow_interpreted_subclasses=True)
class QueuedByClass(_ByClass):
    """The queued jobs by queue."""

    status = JobStatus.PENDING

    def __init__(self, n_queues: int, classify: Classify, classified: Classified) -> None:
        super().__init__(n_queues, classify, classified)
        self._mark = 0

    def sync(self, view: SchedulerView) -> None:
        """File the jobs that entered the queue since the last sync and re-rank those whose promotion is due."""
        entered, self._mark = view.queued_since(self._mark)
        pending = self.status
        for job in entered:
            if job.status is pending:
                self._file(job)
        self._refile_due(view.now)

    def left(self, job: JobView) -> None:
        """``job`` left the queue (the policy started it)."""
        self._drop(job)

    def walk(self) -> Iterator[tuple[JobView, int]]:
        """Queued jobs by (queue, arrival), with their queue. Nothing may change the index while walking."""
        pending = self.status
        for q, bucket in enumerate(self.buckets):
            for job in bucket:
                if job.status is pending:  # always, unless a job was started without ``left``
                    yield job, q


@mypyc_attr(allow_interpreted_subclasses=True)
class RunningByClass(_ByClass):
    """The running jobs by queue; synced only when the pass needs every running job's queue."""

    status = JobStatus.RUNNING

    def __init__(self, n_queues: int, classify: Classify, classified: Classified) -> None:
        super().__init__(n_queues, classify, classified)
        self._fresh: list[JobView] = []  # started since the last sync
        self._stopped: list[JobView] = []  # met by a walk after they stopped running, dropped at the next sync
        self._sweep_at = SWEEP_AT

    def started(self, job: JobView) -> None:
        self._fresh.append(job)

    def sync(self, now: float) -> None:
        """Drop the jobs a walk found stopped, rank the jobs started since the last sync and re-rank those whose
        threshold crossing is due. A walk stops where its pass stops, so jobs that stopped further on stay filed
        (every reader skips them by status) until a sweep, once the index holds twice as many jobs as after the
        last one."""
        running = self.status
        stopped, self._stopped = self._stopped, []
        for job in stopped:
            if job.status is not running:
                self._drop(job)
        if len(self._where) >= self._sweep_at:
            for bucket in self.buckets:
                stopped = [job for job in bucket if job.status is not running]
                for job in stopped:
                    self._drop(job)
            self._sweep_at = max(SWEEP_AT, 2 * len(self._where))
        fresh, self._fresh = self._fresh, []
        for job in fresh:
            if job.status is running:
                self._file(job)
        self._refile_due(now)

    def worst_first(self, now: float, may_preempt: Callable[[JobView], bool]) -> Iterator[tuple[JobView, int]]:
        """Running jobs that ``may_preempt`` allows, by (queue, arrival) descending, with their queue, as far as the
        caller draws (the index is synced now, not at the first draw; nothing may change it while walking)."""
        self.sync(now)
        return self._walk_worst(may_preempt)

    def _walk_worst(self, may_preempt: Callable[[JobView], bool]) -> Iterator[tuple[JobView, int]]:
        running, stopped = self.status, self._stopped
        for q in range(len(self.buckets) - 1, -1, -1):
            for job in reversed(self.buckets[q]):
                if job.status is not running:
                    stopped.append(job)
                elif may_preempt(job):
                    yield job, q
