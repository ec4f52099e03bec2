"""A stand-in for the live loop in API tests: FIFO on free GPUs, each job runs ``iterations`` ms of wall time.

It implements only what ``ddlsched.service.scheduler.LiveLoop`` names, reporting changes as ``LiveRun`` does
(``on_change`` in the loop's thread, in order). The tests of the real loop (sim executor) are in
test_service_drill.py and test_service_twin.py.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Change:
    time_s: float
    job_id: str
    kind: str
    detail: dict[str, Any] = field(default_factory=dict)


class FakeLoop:
    def __init__(self, num_gpus: int, on_change: Any, ms_per_iter: float = 1.0, max_gpus: int | None = None) -> None:
        self.max_gpus = num_gpus if max_gpus is None else max_gpus
        self.free = list(range(num_gpus))
        self.num_gpus = num_gpus
        self.on_change = on_change
        self.ms = ms_per_iter
        self.queue: deque[tuple[Any, float]] = deque()
        self.running: dict[str, tuple[Any, list[int], float]] = {}
        self.cv = threading.Condition()
        self.stopped = False
        self.t0 = time.monotonic()
        self.inbox: list[Change] = []

    def _now(self) -> float:
        return time.monotonic() - self.t0

    def submit(self, spec: Any, *, done_iterations: float = 0.0, attempt: int = 0) -> str | None:
        if spec.num_gpus > self.max_gpus:
            return f"needs {spec.num_gpus} GPUs; this loop runs at most {self.max_gpus}"
        with self.cv:
            self.queue.append((spec, done_iterations))
            self.inbox.append(Change(self._now(), spec.job_id, "arrived"))
            self.cv.notify()
        return None

    def submit_many(self, specs: list[Any]) -> list[str | None]:
        return [self.submit(spec) for spec in specs]

    def cancel(self, job_id: str) -> bool:
        with self.cv:
            for i, (spec, _) in enumerate(self.queue):
                if spec.job_id == job_id:
                    del self.queue[i]
                    self.inbox.append(Change(self._now(), job_id, "cancelled"))
                    self.cv.notify()
                    return True
            if job_id in self.running:
                _, gpus, _ = self.running.pop(job_id)
                self.free += gpus
                self.inbox.append(Change(self._now(), job_id, "cancelled"))
                self.cv.notify()
                return True
        return False

    def stop(self) -> None:
        with self.cv:
            self.stopped = True
            self.cv.notify()

    def snapshot(self) -> dict[str, Any]:
        with self.cv:
            return {"now": self._now(), "pending": len(self.queue), "running": len(self.running)}

    def run(self) -> None:
        while True:
            with self.cv:
                self.cv.wait(0.005)
                if self.stopped:
                    return
                now = self._now()
                for jid, (spec, gpus, end) in list(self.running.items()):
                    if end <= now:
                        del self.running[jid]
                        self.free += gpus
                        self.inbox.append(Change(now, jid, "finished", {"iterations": spec.iterations}))
                while self.queue and self.queue[0][0].num_gpus <= len(self.free):
                    spec, done = self.queue.popleft()
                    gpus, self.free = self.free[:spec.num_gpus], self.free[spec.num_gpus:]
                    left = (spec.iterations or 1.0) - done
                    self.running[spec.job_id] = (spec, gpus, now + left * self.ms / 1000)
                    self.inbox.append(Change(now, spec.job_id, "started", {"gpus": gpus, "attempt": 1}))
                out, self.inbox = self.inbox, []
            for ch in out:
                self.on_change(ch)
