"""Group commit of submissions: the jobs that concurrent requests submit while one transaction is being written are
written together in the next one (:meth:`JobStore.submit_many`), and each request is answered only after the
transaction holding its own job has committed. One transaction (and one commit) serves many submissions, so the
store's per-submission cost falls as the load rises, and the crash guarantee is unchanged: a 201 means the job's
row is in the database.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from ddlsched.service.store import JobStore

log = logging.getLogger("ddlsched.service")
MAX_BATCH = 1000
"""Most submissions one transaction writes."""
LINGER_S = 0.002
"""How long the writer waits, after the first queued submission, for others to join its transaction (seconds): at a
few hundred submissions per second that halves the transactions, the loop's turns and the wake-ups per submission,
for at most this much more latency (BENCHMARKS.md, the service)."""

_STOP = object()


def next_batch(q: queue.Queue[Any] | queue.SimpleQueue[Any], stop_marker: object, limit: int,
               linger_s: float = 0.0) -> tuple[list[Any], bool] | None:
    """Block for one item of ``q``, then take whatever else is queued, up to ``limit`` items in all, waiting up to
    ``linger_s`` after the first for more: (the batch, whether ``stop_marker`` came after it); None when the marker
    came first. One writer thread per queue turns its requests into one transaction per batch this way."""
    first = q.get()
    if first is stop_marker:
        return None
    batch = [first]
    until = time.perf_counter() + linger_s
    while len(batch) < limit:
        try:
            wait = until - time.perf_counter()
            nxt = q.get(timeout=wait) if wait > 0 else q.get_nowait()
        except queue.Empty:
            break
        if nxt is stop_marker:
            return batch, True
        batch.append(nxt)
    return batch, False


class GroupCommit:
    """One writer thread that stores queued submissions in batches (see the module docstring)."""

    def __init__(self, store: JobStore, on_stored: Callable[[dict[str, Any]], None] | None = None, *,
                 max_batch: int = MAX_BATCH, linger_s: float = LINGER_S) -> None:
        self.store = store
        self.on_stored = on_stored
        """Called with each stored row after its commit, in the writer's thread, in submission order (the service
        hands the job to the scheduling loop there, so a request whose client went away still gets its job run)."""
        self.max_batch = max_batch
        self.linger_s = linger_s
        self.batches = 0
        self.jobs = 0
        self._q: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="ddlsched-submit-writer", daemon=True)
        self._thread.start()

    async def submit(self, job: dict[str, Any], timing: list[float] | None = None) -> dict[str, Any]:
        """Store ``job`` (with the others queued meanwhile); returns its stored row once committed, or raises what
        :meth:`JobStore.submit` raises (``DuplicateJob``, ``StoreFull``, …). ``timing`` (if given) gets the
        perf_counter stamps of the way: queued, taken by the writer, asked for the store's lock, got it, statements
        done, committed, the batch handed on, answered in the event loop, resumed here (:data:`STAMPS`)."""
        if self._closed:
            raise RuntimeError("the submission writer is closed")
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[tuple[Any, tuple[float, ...], float]] = loop.create_future()
        queued = time.perf_counter()
        self._q.put((job, loop, fut))
        res, stamps, answered = await fut
        if timing is not None:
            timing.extend((queued, *stamps, answered, time.perf_counter()))
        if isinstance(res, BaseException):
            raise res
        return res  # type: ignore[no-any-return]

    def close(self, timeout_s: float = 10.0) -> None:
        """Store what is queued, then end the thread."""
        if not self._closed:
            self._closed = True
            self._q.put(_STOP)
        self._thread.join(timeout_s)

    def _run(self) -> None:
        while True:
            taken = next_batch(self._q, _STOP, self.max_batch, self.linger_s)
            if taken is None:
                return
            batch, stop = taken
            t_taken = time.perf_counter()
            try:
                results: list[Any] = list(self.store.submit_many([job for job, _, _ in batch]))
            except BaseException as e:  # nothing of this batch was written: every request gets the error
                if not isinstance(e, Exception):
                    log.exception("storing %d submissions failed", len(batch))
                results = [e] * len(batch)
            else:
                self.batches += 1
                self.jobs += len(batch)
                if self.on_stored is not None:
                    for res in results:
                        if isinstance(res, dict):
                            try:
                                self.on_stored(res)
                            except Exception:  # stored all the same: a restarted service resumes it
                                log.exception("handing stored job %s on failed", res.get("id"))
            written = self.store.last_timing() or (t_taken,) * 4
            stamps = (t_taken, *written, time.perf_counter())
            self.store.slow.note("submit batch", t_taken, stamps[-1] - t_taken, rows=len(batch),
                                 handoff_s=stamps[-1] - written[-1])
            by_loop: dict[Any, list[tuple[asyncio.Future[Any], Any]]] = defaultdict(list)
            for (_, loop, fut), res in zip(batch, results, strict=True):
                by_loop[loop].append((fut, (res, stamps)))
            for loop, answers in by_loop.items():  # one wake-up of each event loop per batch
                with suppress(RuntimeError):  # a closed loop: nobody waits for these answers any more
                    loop.call_soon_threadsafe(_answer, answers)
            if stop:
                return


def _answer(answers: list[tuple[asyncio.Future[Any], Any]]) -> None:
    now = time.perf_counter()
    for fut, (res, stamps) in answers:
        if not fut.done():  # done: the request was cancelled (client gone); its job is stored all the same
            fut.set_result((res, stamps, now))


STAMPS = ("queued", "taken", "lock_asked", "lock_got", "statements_done", "committed", "handed_on", "answered",
          "resumed")
"""What :meth:`GroupCommit.submit`'s ``timing`` holds, in order (perf_counter seconds)."""


__all__ = ["LINGER_S", "MAX_BATCH", "STAMPS", "GroupCommit", "next_batch"]
