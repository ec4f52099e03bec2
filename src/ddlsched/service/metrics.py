"""The service's figures: scheduling-pass latency (a timing wrapper around the policy), submission and completion
counters, and their Prometheus text exposition (``GET /metrics``)."""

from __future__ import annotations

import bisect
import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

from ddlsched.policies.base import Policy
from ddlsched.service.timing import SlowLog

PASS_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0)
"""Upper bounds (seconds) of the scheduling-pass latency histogram."""


class Histogram:
    """A Prometheus histogram (cumulative buckets, sum, count) plus the last samples for percentiles."""

    def __init__(self, buckets: Sequence[float] = PASS_BUCKETS, keep: int = 10_000) -> None:
        self.buckets = tuple(buckets)
        self.counts = [0] * (len(self.buckets) + 1)
        self.sum = 0.0
        self.count = 0
        self.recent: deque[float] = deque(maxlen=keep)
        self._lock = threading.Lock()

    def observe(self, v: float) -> None:
        with self._lock:
            self.counts[bisect.bisect_left(self.buckets, v)] += 1
            self.sum += v
            self.count += 1
            self.recent.append(v)

    def quantile(self, q: float) -> float | None:
        with self._lock:
            xs = sorted(self.recent)
        if not xs:
            return None
        return xs[min(len(xs) - 1, int(q * len(xs)))]


class TimedPolicy(Policy):
    """The operator's policy, unchanged, with each ``schedule`` call timed (decisions materialised in the timing,
    as the core consumes them all before applying any)."""

    def __init__(self, policy: Policy, hist: Histogram, slow: SlowLog | None = None) -> None:
        self.inner = policy
        self.hist = hist
        self.slow = slow
        self.name = policy.name or type(policy).__name__
        self.requirements = policy.requirements
        self.paper_scale_jobs = policy.paper_scale_jobs

    def reset(self) -> None:
        self.inner.reset()

    def mechanisms(self) -> dict[str, float]:
        return self.inner.mechanisms()

    def schedule(self, view: Any) -> Sequence[Any]:
        t0 = time.perf_counter()
        try:
            return list(self.inner.schedule(view))
        finally:
            dt = time.perf_counter() - t0
            self.hist.observe(dt)
            if self.slow is not None:
                self.slow.note("scheduling pass", t0, dt, pending=len(view.pending) if dt >= self.slow.threshold_s
                               else None)

    def __getattr__(self, name: str) -> Any:  # anything else a policy exposes (e.g. a plug-in's own attributes)
        return getattr(self.__dict__["inner"], name)


class Counters:
    """Submissions accepted and jobs ended (by outcome) since this service process started."""

    def __init__(self) -> None:
        self.submissions = 0
        self.ended: dict[str, int] = {"completed": 0, "failed": 0, "cancelled": 0, "rejected": 0}
        self._lock = threading.Lock()

    def submitted(self) -> None:
        with self._lock:
            self.submissions += 1

    def end(self, outcome: str) -> None:
        with self._lock:
            self.ended[outcome] = self.ended.get(outcome, 0) + 1


def exposition(gauges: dict[str, tuple[str, float]], counters: Counters, hist: Histogram) -> str:
    """Prometheus text format (version 0.0.4)."""
    out: list[str] = []
    for name, (help_, value) in gauges.items():
        out += [f"# HELP {name} {help_}", f"# TYPE {name} gauge", f"{name} {value:g}"]
    out += ["# HELP ddlsched_submissions_total Jobs accepted through the API since the service started.",
            "# TYPE ddlsched_submissions_total counter", f"ddlsched_submissions_total {counters.submissions}",
            "# HELP ddlsched_completions_total Jobs that ended since the service started, by outcome.",
            "# TYPE ddlsched_completions_total counter"]
    out += [f'ddlsched_completions_total{{outcome="{k}"}} {v}' for k, v in sorted(counters.ended.items())]
    name = "ddlsched_scheduling_pass_seconds"
    out += [f"# HELP {name} Wall time of one policy call (a scheduling pass).", f"# TYPE {name} histogram"]
    with hist._lock:
        cum = 0
        for le, n in zip(hist.buckets, hist.counts, strict=False):
            cum += n
            out.append(f'{name}_bucket{{le="{le:g}"}} {cum}')
        out.append(f'{name}_bucket{{le="+Inf"}} {hist.count}')
        out += [f"{name}_sum {hist.sum:.9g}", f"{name}_count {hist.count}"]
    return "\n".join(out) + "\n"


__all__ = ["Counters", "Histogram", "TimedPolicy", "exposition"]
