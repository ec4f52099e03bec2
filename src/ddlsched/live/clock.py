"""The run clock of a live run: wall seconds since the run's start × ``time_scale`` (run seconds).

Run seconds are the unit of every time a live run reports (trace arrivals, executor events, records), so a trace
replayed at ``time_scale = 100`` runs 100 times faster in wall time and its records read as if it ran at scale 1.

``decided_s`` is the instant of the core's decision that is being carried out right now (set by the live model
around each call into the executor, ``None`` otherwise). An executor that models zero actuation latency (the
digital twin, :mod:`ddlsched.live.sim_executor`) starts a job at that instant rather than at the wall clock's now,
which lags it by the loop's processing time × ``time_scale``. Likewise ``horizon_s`` is the next instant the loop
has scheduled; the twin reports nothing after it before the loop has processed it.
"""

from __future__ import annotations

import math
import time


class LiveClock:
    """Wall clock × ``time_scale``; starts at run second 0 on :meth:`start`."""

    def __init__(self, time_scale: float = 1.0) -> None:
        if not (isinstance(time_scale, int | float) and math.isfinite(time_scale) and time_scale > 0):
            raise ValueError(f"time_scale must be a finite number > 0, got {time_scale!r}")
        self.time_scale = float(time_scale)
        self._t0: float | None = None
        self.decided_s: float | None = None
        self.horizon_s = math.inf
        """The next instant the loop has scheduled (its next event or arrival): what an executor reports after
        it is processed after that instant (the twin reports nothing past it until the loop gets there)."""

    @property
    def started(self) -> bool:
        return self._t0 is not None

    def start(self) -> None:
        """Run second 0 is now (a second call does nothing)."""
        if self._t0 is None:
            self._t0 = time.perf_counter()

    def now(self) -> float:
        """Run seconds since :meth:`start` (0 before it)."""
        t0 = self._t0
        return 0.0 if t0 is None else (time.perf_counter() - t0) * self.time_scale

    def wall_of(self, run_s: float) -> float:
        """The ``time.perf_counter()`` reading at which the run clock reads ``run_s``."""
        t0 = self._t0 if self._t0 is not None else time.perf_counter()
        return t0 + run_s / self.time_scale

    def wall_until(self, run_s: float) -> float:
        """Wall seconds from now until the run clock reads ``run_s`` (≤ 0 if it already has; ``inf`` for ``inf``)."""
        if math.isinf(run_s):
            return math.inf
        return self.wall_of(run_s) - time.perf_counter()

    def instant(self) -> float:
        """The instant an action takes effect: the decision being carried out, else the clock's now."""
        d = self.decided_s
        return self.now() if d is None else d


__all__ = ["LiveClock"]
