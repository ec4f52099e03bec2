"""The service's slow-operation log: every store transaction, checkpoint and scheduling pass that took at least
``threshold_s`` (default 20 ms) is kept (the newest ``keep``) with what it did, so that a slow API request can be
matched with what the service was doing meanwhile (``GET /api/v1/slow``, admin token; bench_service prints it).

Times are ``time.perf_counter()`` seconds: on Linux that is ``CLOCK_MONOTONIC``, one clock for every process of the
machine, so a client on the same machine can compare them with its own.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any

SLOW_S = 0.02
"""An operation this long or longer is kept (seconds)."""


class SlowLog:
    """The newest ``keep`` operations that took ``threshold_s`` or longer (thread-safe: appends only)."""

    def __init__(self, threshold_s: float = SLOW_S, keep: int = 5000) -> None:
        self.threshold_s = threshold_s
        self._ops: deque[dict[str, Any]] = deque(maxlen=keep)
        self.seen = 0
        """Operations timed so far (slow or not)."""

    def note(self, what: str, start: float, dur: float, **detail: Any) -> None:
        """Time one operation ``what`` that began at ``start`` (perf_counter) and took ``dur`` seconds."""
        self.seen += 1
        if dur >= self.threshold_s:
            op: dict[str, Any] = {"what": what, "start": start, "ms": round(1000 * dur, 3),
                                  "thread": threading.current_thread().name}
            for k, v in detail.items():
                if k.endswith("_s"):
                    op[k[:-2] + "_ms"] = round(1000 * v, 3)
                else:
                    op[k] = v
            self._ops.append(op)

    def start_probe(self, period_s: float) -> threading.Event:
        """Start a thread that sleeps ``period_s`` again and again and notes each wake-up that came
        ``threshold_s`` or more late as an ``interpreter stall`` (another thread held the interpreter lock, or the
        OS gave the process no CPU). Set the returned event to stop it."""
        stop = threading.Event()

        def probe() -> None:
            due = time.perf_counter() + period_s
            while not stop.wait(max(0.0, due - time.perf_counter())):
                now = time.perf_counter()
                self.note("interpreter stall", due, now - due)
                due = now + period_s

        threading.Thread(target=probe, name="ddlsched-stall-probe", daemon=True).start()
        return stop

    def entries(self) -> list[dict[str, Any]]:
        """The kept operations, oldest first (a detail ``x_s`` is kept as ``x_ms``, in milliseconds)."""
        return list(self._ops)

    def report(self) -> dict[str, Any]:
        return {"threshold_ms": 1000 * self.threshold_s, "clock": "perf_counter", "now": time.perf_counter(),
                "timed": self.seen, "ops": self.entries()}


__all__ = ["SLOW_S", "SlowLog"]
