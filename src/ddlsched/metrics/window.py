"""The measurement window: which jobs the per-job metrics of a summary are taken over.

A steady-state measurement leaves out the jobs of a *warm-up* (the cluster is still filling) and of a
*cool-down* (arrivals have stopped and the queue drains). ``--warmup`` and ``--cooldown`` each take a duration
(``3600``, ``90s``, ``30m``, ``12h``, ``2d``: trace time from the first / back from the last arrival) or a job
count (``500jobs``: the first / last 500 jobs by arrival). The excluded jobs still run and load the cluster;
they are only left out of the per-job metrics (JCT, queueing, slowdown, causes, offered load), and the summary
states the window (``window_start_s``, ``window_end_s``, ``jobs_measured``). See docs/metrics.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ddlsched.errors import InputError

_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*(s|m|h|d|jobs?)?\s*$")


@dataclass(frozen=True)
class Exclusion:
    """A warm-up or cool-down: ``seconds`` of trace time, or ``jobs`` jobs by arrival order."""

    seconds: float = 0.0
    jobs: int = 0

    @classmethod
    def parse(cls, text: str | None, flag: str) -> Exclusion:
        if text is None or str(text).strip() == "":
            return cls()
        m = _RE.match(str(text))
        if not m:
            raise InputError(f"expected a duration (3600, 90s, 30m, 12h, 2d) or a job count (500jobs), got "
                             f"{text!r}", field=flag)
        value, unit = float(m.group(1)), (m.group(2) or "")
        if not math.isfinite(value):
            raise InputError(f"must be finite, got {text!r}", field=flag)
        if unit.startswith("job"):
            if value != int(value):
                raise InputError(f"a job count must be a whole number, got {text!r}", field=flag)
            return cls(jobs=int(value))
        return cls(seconds=value * _UNITS[unit])


@dataclass(frozen=True)
class Window:
    """Warm-up and cool-down exclusions (none by default: every completed job is measured)."""

    warmup: Exclusion = Exclusion()
    cooldown: Exclusion = Exclusion()

    @classmethod
    def parse(cls, warmup: str | None = None, cooldown: str | None = None) -> Window:
        return cls(Exclusion.parse(warmup, "--warmup"), Exclusion.parse(cooldown, "--cooldown"))

    @property
    def empty(self) -> bool:
        return self == Window()

    def bounds(self, arrivals: Sequence[float] | np.ndarray) -> tuple[float, float]:
        """[start, end] in trace time for the given arrival times (any order)."""
        if not len(arrivals):
            return math.nan, math.nan
        a = np.asarray(arrivals, dtype=float)
        if not (self.warmup.jobs or self.cooldown.jobs):  # the ends are all it needs: no sort
            return float(a.min()) + self.warmup.seconds, float(a.max()) - self.cooldown.seconds
        xs = np.sort(a).tolist()
        start = xs[0] + self.warmup.seconds
        if self.warmup.jobs:
            start = max(start, xs[self.warmup.jobs] if self.warmup.jobs < len(xs) else math.inf)
        end = xs[-1] - self.cooldown.seconds
        if self.cooldown.jobs:
            end = min(end, xs[-1 - self.cooldown.jobs] if self.cooldown.jobs < len(xs) else -math.inf)
        return start, end


__all__ = ["Exclusion", "Window"]
