"""Auto-tuners for the delay-scheduling timers (ALGORITHMS.md §4.5; the whole section is a reconstruction [I]).

* **A — analytic** (``AnalyticTuner``): per-job timer D_j = clamp(ω · T̂_j · σ_j, 0, D_max), T̂_j = remaining
  alone-and-consolidated run time; ω = 0.5, D_max = 7200 s.
* **B — feedback** (``FeedbackTuner``): every window W (3600 s) each class timer (high, medium) is multiplied by
  ``up`` (1.25) if the class's consolidated-placement rate is below ``target`` (0.8) while its mean wait is below
  its mean slowdown saved (σ · T̂ of the jobs placed at their best level), or by ``down`` (0.8) if its mean
  wait exceeds the saving or the queue grew over the window. A zero timer that must grow starts at ``floor_s``.
* **C — simulation-in-the-loop search** (``SearchTuner``): every window W (4 h) the jobs that arrived in the
  last window (at most ``replay_jobs``, the most recent) are replayed with their relative arrivals on an empty
  copy of the cluster through :class:`ddlsched.engine.Simulator` (same physics), once per grid point; the
  timers are searched coordinate-wise (high over the grid with medium fixed, then medium), objective average
  JCT or makespan, and the best point is adopted. Replaying on an *empty* cluster (running jobs left out) is our
  simplification.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol

from ddlsched.engine.jobview import JobView
from ddlsched.engine.view import SchedulerView
from ddlsched.policies.sensitivity import HIGH, LOW, MEDIUM
from ddlsched.workload.jobspec import JobSpec


class DelayScheduling(Protocol):
    """What a tuner needs of the delay-scheduling policy it tunes (no import of the policy module)."""

    timers: dict[str, float]

    def replay_copy(self, *, timer_high: float, timer_medium: float) -> Any: ...


class AnalyticTuner:
    name = "analytic"

    def __init__(self, omega: float = 0.5, max_timer: float = 7200.0) -> None:
        if not 0 < omega <= 1 or max_timer < 0:
            raise ValueError("need 0 < omega <= 1 and max_timer >= 0")
        self.omega, self.max_timer = omega, max_timer

    def reset(self) -> None:
        pass

    def observe(self, view: SchedulerView, policy: DelayScheduling) -> None:
        pass

    def placed(self, job: JobView, cls: str, sigma: float, at_best: bool, view: SchedulerView) -> None:
        pass

    def timer(self, job: JobView, cls: str, sigma: float, policy: DelayScheduling) -> float:
        return min(max(self.omega * job.remaining_ideal_s * sigma, 0.0), self.max_timer)


class FeedbackTuner:
    name = "feedback"

    def __init__(self, window_s: float = 3600.0, target: float = 0.8, up: float = 1.25, down: float = 0.8,
                 floor_s: float = 30.0, max_timer: float = 7200.0) -> None:
        if window_s <= 0 or not 0 <= target <= 1 or up < 1 or not 0 < down <= 1:
            raise ValueError("need window_s > 0, 0 <= target <= 1, up >= 1, 0 < down <= 1")
        self.window_s, self.target, self.up, self.down = window_s, target, up, down
        self.floor_s, self.max_timer = floor_s, max_timer
        self.reset()

    def reset(self) -> None:
        self._next = self.window_s
        self._queue = 0
        self._stats: dict[str, list[tuple[float, bool, float]]] = {HIGH: [], MEDIUM: []}
        self.history: list[tuple[float, float, float]] = []

    def placed(self, job: JobView, cls: str, sigma: float, at_best: bool, view: SchedulerView) -> None:
        if cls in self._stats:
            self._stats[cls].append((job.waiting_s, at_best, sigma * job.remaining_ideal_s if at_best else 0.0))

    def observe(self, view: SchedulerView, policy: DelayScheduling) -> None:
        if view.now < self._next:
            return
        queue = len(view.pending)
        growing = queue > self._queue
        for cls, stats in self._stats.items():
            t = policy.timers[cls]
            if not stats:
                continue
            rate = sum(1 for _, b, _ in stats if b) / len(stats)
            wait = sum(w for w, _, _ in stats) / len(stats)
            saved = sum(s for _, _, s in stats) / len(stats)
            if rate < self.target and wait < saved:
                t = min(self.max_timer, max(self.floor_s, t * self.up))
            elif wait > saved or growing:
                t = t * self.down
            policy.timers[cls] = t
            stats.clear()
        self.history.append((view.now, policy.timers[HIGH], policy.timers[MEDIUM]))
        self._queue = queue
        self._next = view.now + self.window_s

    def timer(self, job: JobView, cls: str, sigma: float, policy: DelayScheduling) -> float:
        return policy.timers[cls]


class SearchTuner:
    name = "search"

    def __init__(self, window_s: float = 14400.0, grid: Sequence[float] = (0.0, 300.0, 1800.0, 3600.0),
                 replay_jobs: int = 60, objective: str = "avg_jct") -> None:
        if window_s <= 0 or not grid or replay_jobs < 1 or objective not in ("avg_jct", "makespan"):
            raise ValueError("need window_s > 0, a non-empty grid, replay_jobs >= 1, objective avg_jct|makespan")
        self.window_s, self.grid, self.replay_jobs, self.objective = window_s, tuple(grid), replay_jobs, objective
        self.reset()

    def reset(self) -> None:
        self._next = self.window_s
        self._seen: dict[str, JobSpec] = {}
        self.history: list[tuple[float, float, float]] = []
        self.replays = 0

    def placed(self, job: JobView, cls: str, sigma: float, at_best: bool, view: SchedulerView) -> None:
        pass

    def observe(self, view: SchedulerView, policy: DelayScheduling) -> None:
        for j in view.pending:
            if j.job_id not in self._seen:
                self._seen[j.job_id] = j.spec
        if view.now < self._next:
            return
        self._next = view.now + self.window_s
        lo = view.now - self.window_s
        recent = [s for s in self._seen.values() if s.arrival_s >= lo][-self.replay_jobs:]
        if len(recent) < 2:
            return
        profiles = {s.model: view.job(s.job_id).profile for s in recent}
        best = (policy.timers[HIGH], policy.timers[MEDIUM])
        cache: dict[tuple[float, float], float] = {}
        for which in (0, 1):
            scores = []
            for v in self.grid:
                point = (v, best[1]) if which == 0 else (best[0], v)
                if point not in cache:
                    cache[point] = self._replay(view, policy, recent, profiles, point)
                scores.append((cache[point], point))
            best = min(scores)[1]
        policy.timers[HIGH], policy.timers[MEDIUM] = best
        self.history.append((view.now, best[0], best[1]))

    def _replay(self, view: SchedulerView, policy: DelayScheduling, jobs: list[JobSpec], profiles: dict[str, Any],
                point: tuple[float, float]) -> float:
        from dataclasses import replace

        from ddlsched.engine.run import SimConfig, default_catalog, run_simulation

        self.replays += 1
        t0 = min(s.arrival_s for s in jobs)
        specs = [replace(s, arrival_s=s.arrival_s - t0) for s in jobs]
        name, params = view.physics  # the run's physics: same model and parameters for the replay
        cfg = SimConfig(perf_model=name, perf_params=params, restart_penalty_s=view.restart_penalty_s,
                        record_timeseries=False)
        sub = policy.replay_copy(timer_high=point[0], timer_medium=point[1])
        catalog = default_catalog().with_profiles(profiles.values())
        res = run_simulation(view.cluster, specs, sub, cfg, catalog=catalog)
        if not res.records:
            return math.inf
        if self.objective == "makespan":
            return max(r["finish_s"] for r in res.records) + 1e9 * len(res.unfinished)
        return sum(r["jct_s"] for r in res.records) / len(res.records) + 1e9 * len(res.unfinished)

    def timer(self, job: JobView, cls: str, sigma: float, policy: DelayScheduling) -> float:
        return policy.timers[cls]


TUNERS: dict[str, type] = {"analytic": AnalyticTuner, "feedback": FeedbackTuner, "search": SearchTuner}
ALIASES = {"A": "analytic", "B": "feedback", "C": "search"}
__all__ = ["ALIASES", "LOW", "TUNERS", "AnalyticTuner", "FeedbackTuner", "SearchTuner"]
