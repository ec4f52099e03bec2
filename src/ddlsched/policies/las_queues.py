"""Tiresias' queued jobs kept by queue across passes, so a preemptive pass costs no rank or sort of the queue.

The pass (docs/policies/baselines.md, "Preemptive pass") walks the queued jobs by (queue, arrival). A queued job's
queue changes only when it enters the queue (arrival or preemption: the engine's ``queued_since`` log) or at its
starvation promotion, whose time is known when it enters (``Tiresias._queue_until``'s "until"). So the index
re-ranks exactly those jobs — the log's new entries and the due promotions, from a heap — and every other queued job
keeps the queue it had; a job leaves the index when the policy starts it (``left``). The walk is the same order the
full rank-and-sort gives (``tests/test_las_queues.py`` checks it against a rescan at every pass), so records are
byte-identical; a pass costs O(entries + promotions due + jobs walked) instead of O(queue · log queue).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ddlsched.engine.jobview import JobView
from ddlsched.engine.pending import PendingQueue
from ddlsched.engine.state import JobStatus

if TYPE_CHECKING:
    from ddlsched.engine.view import SchedulerView

PENDING = JobStatus.PENDING
INF = float("inf")


class QueuedByClass:
    """Queued jobs in one bucket per queue (arrival order inside), with a heap of the times their queue changes.

    ``classify(job) -> (queue, until)`` must be exact for a queued job at the current time and may only change
    at ``until`` or when the job leaves and re-enters the queue.
    """

    def __init__(self, n_queues: int, classify: Callable[[JobView], tuple[int, float]]) -> None:
        self._classify = classify
        self.buckets: list[PendingQueue[JobView]] = [PendingQueue() for _ in range(n_queues)]
        self._where: dict[str, int] = {}  # job id -> bucket it is filed in
        self._due: list[tuple[float, int, int, JobView]] = []  # (until, seq, push count, job): min-heap
        self._pushes = 0
        self._mark = 0

    def __len__(self) -> int:
        return len(self._where)

    def sync(self, view: SchedulerView) -> None:
        """File the jobs that entered the queue since the last sync and re-rank those whose queue is due."""
        entered, self._mark = view.queued_since(self._mark)
        for job in entered:
            if job.status is PENDING:
                self._file(job)
        due, now = self._due, view.now
        while due and not now < due[0][0]:
            job = heapq.heappop(due)[3]
            if job.status is PENDING:
                self._file(job)

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

    def left(self, job: JobView) -> None:
        """``job`` left the queue (the policy started it)."""
        q = self._where.pop(job.job_id, None)
        if q is not None:
            self.buckets[q].remove(job.seq)

    def walk(self) -> Iterator[tuple[JobView, int]]:
        """Queued jobs by (queue, arrival), with their queue. Nothing may change the index while walking."""
        for q, bucket in enumerate(self.buckets):
            for job in bucket:
                if job.status is PENDING:  # always, unless a job was started without ``left``
                    yield job, q

    def earliest_change(self, current_until: Callable[[JobView], float]) -> float:
        """The earliest future time a queued job's queue changes (``inf``: none); drops outdated heap entries.

        ``current_until(job)`` is the job's "until" as classified now; an entry that no longer matches it (the job
        left the queue, or re-entered with a new one) is dropped.
        """
        due = self._due
        while due:
            until, _, _, job = due[0]
            if job.status is PENDING and current_until(job) == until:
                return until
            heapq.heappop(due)
        return INF
