"""Auto-tuners for the delay-scheduling timers (docs/policies/delay-sched.md §5; the whole section is a
reconstruction [I]).

* **A — analytic** (``AnalyticTuner``): per-job timer D_j = clamp(ω · T̂_j · σ_j, 0, D_max), T̂_j = remaining
  alone-and-consolidated run time; ω = 0.5, D_max = 7200 s.
* **B — feedback** (``FeedbackTuner``): every window W (3600 s) each class timer (high, medium) is multiplied by
  ``up`` (1.25) if the class's consolidated-placement rate is below ``target`` (0.8) while its mean wait is below
  its mean slowdown saved (σ · T̂ of the jobs placed at their best level), or by ``down`` (0.8) if its mean
  wait exceeds the saving or the queue grew over the window. A zero timer that must grow starts at ``floor_s``.
* **C — simulation-in-the-loop search** (``SearchTuner``): every window W (4 h) the jobs that arrived in the
  last window (at most ``replay_jobs``, the most recent) are replayed with their relative arrivals through the
  same engine and physics, once per grid point, on the cluster *as it is now*: every running job is started first
  on its current GPUs with its remaining iterations (``occupancy=True``; ``False`` replays on an empty cluster).
  The timers are searched coordinate-wise (high over the grid with medium fixed, then medium) over the grid
  {0, 60, 300, 900, 1800, 3600} s, objective average JCT (or makespan) of the replayed jobs only; a point replaces
  the current timers only if it scores strictly better (relative 1e-9), so ties keep the current timers instead
  of drifting to the smallest grid value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol

from ddlsched.engine.decisions import Decision, Start
from ddlsched.engine.jobview import JobView
from ddlsched.engine.view import SchedulerView
from ddlsched.policies.base import Policy
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

    def __init__(self, window_s: float = 14400.0, grid: Sequence[float] = (0.0, 60.0, 300.0, 900.0, 1800.0, 3600.0),
                 replay_jobs: int = 60, objective: str = "avg_jct", occupancy: bool = True) -> None:
        if window_s <= 0 or not grid or replay_jobs < 1 or objective not in ("avg_jct", "makespan"):
            raise ValueError("need window_s > 0, a non-empty grid, replay_jobs >= 1, objective avg_jct|makespan")
        if min(grid) < 0:
            raise ValueError("grid timers must be >= 0")
        self.window_s, self.grid, self.replay_jobs, self.objective = window_s, tuple(grid), replay_jobs, objective
        self.occupancy = bool(occupancy)
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
        running = [(r.spec, r.gpus, r.remaining_iters) for r in view.running] if self.occupancy else []
        profiles.update({r.spec.model: r.profile for r in view.running} if self.occupancy else {})
        best = (policy.timers[HIGH], policy.timers[MEDIUM])
        cache: dict[tuple[float, float], float] = {}

        def score(point: tuple[float, float]) -> float:
            if point not in cache:
                cache[point] = self._replay(view, policy, recent, running, profiles, point)
            return cache[point]

        best_score = score(best)
        for which in (0, 1):
            for v in self.grid:
                point = (v, best[1]) if which == 0 else (best[0], v)
                sc = score(point)
                if sc < best_score - 1e-9 * abs(best_score):  # strictly better: ties keep the current timers
                    best, best_score = point, sc
        policy.timers[HIGH], policy.timers[MEDIUM] = best
        self.history.append((view.now, best[0], best[1]))

    def _replay(self, view: SchedulerView, policy: DelayScheduling, jobs: list[JobSpec],
                running: list[tuple[JobSpec, tuple[int, ...], float]], profiles: dict[str, Any],
                point: tuple[float, float]) -> float:
        from dataclasses import replace

        from ddlsched.engine.run import SimConfig, default_catalog, run_simulation

        self.replays += 1
        t0 = min(s.arrival_s for s in jobs)
        lead = 1.0 if running else 0.0  # the running jobs start at 0, the replayed window from 1 s on
        specs = [replace(s, arrival_s=s.arrival_s - t0 + lead) for s in jobs]
        pinned = {f"running:{s.job_id}": gpus for s, gpus, _ in running}
        specs += [replace(s, job_id=f"running:{s.job_id}", arrival_s=0.0, iterations=max(left, 1e-9),
                          duration_s=None) for s, _, left in running]
        name, params = view.physics  # the run's physics: same model and parameters for the replay
        cfg = SimConfig(perf_model=name, perf_params=params, restart_penalty_s=view.restart_penalty_s,
                        record_timeseries=False)
        sub = policy.replay_copy(timer_high=point[0], timer_medium=point[1])
        if pinned:
            sub = _Pinned(sub, dict(pinned))
        catalog = default_catalog().with_profiles(profiles.values())
        res = run_simulation(view.cluster, specs, sub, cfg, catalog=catalog)
        recs = [r for r in res.records if r["job_id"] not in pinned]
        lost = sum(1 for u in res.unfinished if u not in pinned)
        if not recs:
            return math.inf
        if self.objective == "makespan":
            return max(r["finish_s"] for r in recs) + 1e9 * lost
        return sum(r["jct_s"] for r in recs) / len(recs) + 1e9 * lost

    def timer(self, job: JobView, cls: str, sigma: float, policy: DelayScheduling) -> float:
        return policy.timers[cls]


class _Pinned(Policy):
    """A replay policy that first restarts the jobs running at the tuning instant on their own GPUs, then hands
    every later decision to the replayed delay-scheduling copy."""

    def __init__(self, inner: Any, pinned: dict[str, tuple[int, ...]]) -> None:
        self.inner, self.pinned = inner, pinned
        self.name, self.requirements = inner.name, inner.requirements

    def reset(self) -> None:
        self.inner.reset()

    def schedule(self, view: SchedulerView) -> Sequence[Decision]:
        waiting = [j for j in view.pending if j.job_id in self.pinned]
        if waiting:  # once started they are ordinary jobs (a preempted one is re-placed by the policy)
            decisions: list[Decision] = [Start(j.job_id, self.pinned.pop(j.job_id)) for j in waiting]
            return decisions
        return self.inner.schedule(view)


TUNERS: dict[str, type] = {"analytic": AnalyticTuner, "feedback": FeedbackTuner, "search": SearchTuner}
ALIASES = {"A": "analytic", "B": "feedback", "C": "search"}
__all__ = ["ALIASES", "LOW", "TUNERS", "AnalyticTuner", "FeedbackTuner", "SearchTuner"]
