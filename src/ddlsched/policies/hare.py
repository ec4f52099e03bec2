"""Hare (Chen et al., TCC 2024) and its baselines on the task-level engine (docs/policies/hare.md §4–§6) [I].

All of these carry ``engine = "hare"``: ``ddlsched simulate/compare`` run them on
:class:`ddlsched.engine.hare_tasks.HareSimulator`. Every rule below is a reconstruction [I]; parameters are
configurable (``--policy-param``).

Relaxed-sync policies (tasks of a round go to any GPU, one at a time, several may run on one GPU):

* ``hare-offline`` (docs/policies/hare.md §4): Smith's rule, ``prio_j = w_j / P_j`` with ``P_j = R_j · (n_j / cap_j +
s_j)`` and
  ``cap_j = Σ_k N_k / p_{j,k}`` (heterogeneity-normalised stand-alone time on the whole cluster); clairvoyant.
* ``hlas`` (docs/policies/hare.md §5): non-clairvoyant heterogeneity-aware least-attained service. ``A_j`` =
completed tasks ×
  p_{j,ref} (reference-GPU seconds); queues by thresholds (default [3600, 36000]); FIFO inside a queue, or with the
  heterogeneity-aware tie-break the job with the largest relative speed ``speed_{j,k} / mean_k' speed_{j,k'}`` on
  the idle GPU's type k first; starvation guard: a job waiting ≥ ``starvation_factor`` × its last service stretch is
  promoted to Q0.
* dispatch: idle GPUs in descending default speed; each takes one task of the best job that passes the
  **heterogeneity guard**: GPU g (type k) takes a task of j only if ``t + o + p_{j,k} ≤ F``, where F is the
  completion time of the u = (j's unstarted tasks) tasks when list-scheduled earliest-finish-first on the GPUs
  faster for j than g (each from its current free time). With u = 1, F = min over faster GPUs of
  (free time + o + p_fast), the docs/policies/hare.md §4 rule; for u > 1 we generalise it to "g helps only if it does
  not finish later
  than the faster GPUs alone would" [I].
* ``hare-naive-switch``: ``hlas`` with the naive runtime's switching cost (``switch_s`` seconds per switch).
* ``hare-gang``: HLAS order but gang rounds: a round starts only when n_j GPUs are idle at once, one task each
  (fastest for j first); the round lasts as long as its slowest task (ablation: no relaxed sync).

Gang baselines (a lease of n_j GPUs held through synchronisation, one task per GPU per round; re-planned from
scratch on job arrivals/finishes and every ``tick_s``; jobs that stay scheduled keep their GPUs):

* ``gavel-het``: Gavel-style heterogeneity-aware LAS: least normalised attained service first; each job takes the
  GPU type with the highest speed for it that still has n_j free GPUs, else the fastest-for-it free mix;
  ``tick_s`` = 360 s (Gavel's round).
* ``tiresias-het``: Tiresias 2D-LAS (attained GPU-seconds, queues [3600] s, FIFO in queue, starvation guard),
  heterogeneity-unaware (free GPUs in index order).
* ``srtf-het``: clairvoyant shortest remaining (reference) time first, gang, heterogeneity-unaware.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterator, Sequence
from itertools import islice, repeat
from typing import Any, Literal

from pydantic import NonNegativeFloat, PositiveFloat

from ddlsched.engine.decisions import Preempt, RunTask, Start, WakeAt
from ddlsched.engine.model import Requirements
from ddlsched.engine.rounds import RoundJobView as TaskJob
from ddlsched.engine.rounds import RoundsView as HareView
from ddlsched.errors import ConfigError
from ddlsched.policies.base import Policy
from ddlsched.policies.registry import register


def _rel_speed(job: TaskJob, gtype: str) -> float:
    """speed_{j,k} / mean_k' speed_{j,k'} (speed ∝ 1 / task time; depends only on the model and the types)."""
    inv = {t: 1.0 / p for t, p in job.task_s.items()}
    return round(inv[gtype] / (sum(inv.values()) / len(inv)), 6)


def _rounds(switch_s: float | None, gang: bool = False, clairvoyant: bool = False) -> Requirements:
    """Rounds execution model; a policy-level ``switch_s`` sets the model's switching cost (ablations)."""
    return Requirements(model="rounds", preemptive=True, gang=gang, clairvoyant=clairvoyant,
                        model_params={} if switch_s is None else {"switch_s": float(switch_s)})


class _TaskPolicy(Policy):
    """Relaxed-sync list scheduling with the heterogeneity guard; subclasses give the candidate order."""

    family = "chen2024"
    requirements = _rounds(None)
    gang = False
    clairvoyant = False  # True where the candidate order reads job sizes

    def __init__(self, guard: bool = True, switch_s: NonNegativeFloat | None = None) -> None:
        self.guard = bool(guard)
        self.requirements = _rounds(switch_s, gang=self.gang, clairvoyant=self.clairvoyant)
        self.reset()

    def reset(self) -> None:
        # per-run caches of values fixed for a job or the cluster (same arithmetic as computing them every pass)
        self._groups_of: object = None
        self._groups: list[list[str]] = []
        self._rel: dict[str, dict[str, float]] = {}
        self._cap: dict[str, float] = {}

    # ------------------------------------------------------------ ordering hooks
    def candidates(self, view: HareView, jobs: list[TaskJob], g: int) -> list[TaskJob]:
        raise NotImplementedError

    # ------------------------------------------------------------ dispatch
    def schedule(self, view: HareView) -> list[Any]:
        if not view.idle_count():
            return []
        jobs = view.ready_jobs
        if not jobs:
            return []
        gpu_type = view.cluster.gpu_type  # per GPU, fixed for the cluster
        groups = self._speed_groups(view)
        # free times of the GPUs outside any lease, per type, sorted (the guard only needs the u earliest per type);
        # on a cluster of one GPU type no type is faster, so the guard always passes and never reads them
        guard = self.guard and len(view.cluster.gpu_types) > 1
        free = view.free_times() if guard else {}
        left = {j.job_id: j.ready for j in jobs}
        tasks = sum(left.values())  # unstarted tasks of the jobs not deferred: none left, no later GPU takes one
        deferred: set[str] = set()
        out: list[Any] = []
        self.prepare(view, jobs)
        orders: dict[str, list[TaskJob]] = {}
        # a job skipped once stays skipped for this call (no tasks left, or deferred), so each type's scan resumes
        # where the previous GPU of that type stopped instead of from the head of the order
        start: dict[str, int] = {}
        for g in self._idle_in_order(view, groups):
            if not tasks:
                break
            k = gpu_type[g]
            if k not in orders:
                orders[k], start[k] = self.candidates(view, jobs, g), 0
            order = orders[k]
            while start[k] < len(order) and (left[order[start[k]].job_id] <= 0 or order[start[k]].job_id in deferred):
                start[k] += 1
            for i in range(start[k], len(order)):
                j = order[i]
                u = left[j.job_id]
                if u <= 0 or j.job_id in deferred:
                    continue
                fin = view.now + view.switch_cost(j, g) + view.task_time(j, g)
                if guard and not self._guard_ok(j, k, fin, u, free):
                    deferred.add(j.job_id)
                    tasks -= u
                    continue
                out.append(RunTask(j.job_id, g))
                left[j.job_id] -= 1
                tasks -= 1
                if guard:
                    lst = free[k]
                    lst.pop(0)  # the earliest slot of this type is this idle GPU
                    insort(lst, fin)
                break
        return out

    def prepare(self, view: HareView, jobs: list[TaskJob]) -> None:
        """Per-call precomputation (e.g. queue indices)."""

    def _speed_groups(self, view: HareView) -> list[list[str]]:
        """The cluster's GPU types by descending default speed, types of equal speed together (cached per run)."""
        c = view.cluster
        if self._groups_of is not c:
            by_speed: dict[float, list[str]] = {}
            for t, gt in c.gpu_types.items():
                by_speed.setdefault(gt.speed, []).append(t)
            self._groups_of, self._groups = c, [by_speed[v] for v in sorted(by_speed, reverse=True)]
        return self._groups

    @staticmethod
    def _idle_in_order(view: HareView, groups: list[list[str]]) -> Iterator[int]:
        """The idle GPUs in dispatch order — descending default speed of their type, then index — lazily."""
        by_type = view.idle_by_type()
        for group in groups:
            if len(group) == 1:
                yield from by_type[group[0]]
            else:
                yield from heapq.merge(*(by_type[t] for t in group))

    @staticmethod
    def _guard_ok(j: TaskJob, k: str, fin: float, u: int, free: dict[str, list[float]]) -> bool:
        """docs/policies/hare.md §4 heterogeneity guard, generalised to u unstarted tasks [I].

        True iff a task of j on a type-k GPU finishing at ``fin`` is not later than the earliest-finish list
        schedule of j's ``u`` unstarted tasks on the GPUs of types faster than k for j. On False the job is left
        for those faster GPUs and that list schedule is *reserved* in ``free`` (for this dispatch only), so jobs
        of lower priority see the faster GPUs as taken and may use the slow GPU instead.
        """
        p_k = j.task_s[k]
        heap: list[tuple[float, float, str, int]] = []
        for t, lst in free.items():
            p2 = j.task_s[t]
            if p2 < p_k:
                heap.extend((f + j.switch_s + p2, p2, t, i) for i, f in enumerate(lst[:u]))
        if not heap:
            return True
        heapq.heapify(heap)
        f = 0.0
        end: dict[tuple[str, int], float] = {}
        for _ in range(u):
            f, p2, t, i = heapq.heappop(heap)
            end[(t, i)] = f
            heapq.heappush(heap, (f + p2, p2, t, i))
        if fin <= f + 1e-9:
            return True
        for t in sorted({t for t, _ in end}):
            lst = free[t]
            for (t2, i), e in end.items():
                if t2 == t:
                    lst[i] = e
            lst.sort()
        return False


@register
class HareOffline(_TaskPolicy):
    """docs/policies/hare.md §4 offline heuristic: Smith's rule on heterogeneity-normalised size + guarded EFT list
    scheduling."""

    name = "hare-offline"
    description = "Hare offline heuristic: Smith's rule on hetero-normalised size, guarded EFT task dispatch"
    requirements = _rounds(None, clairvoyant=True)
    clairvoyant = True

    def __init__(self, guard: bool = True, remaining: bool = False, switch_s: NonNegativeFloat | None = None) -> None:
        super().__init__(guard, switch_s)
        self.remaining = bool(remaining)

    def _size(self, view: HareView, j: TaskJob) -> float:
        cap = self._cap.get(j.job_id)
        if cap is None:  # fixed for the job
            cap = self._cap[j.job_id] = sum(1.0 / view.task_time(j, g) for g in range(view.cluster.num_gpus))
        rounds = j.remaining_rounds if self.remaining else j.rounds
        return rounds * (j.n / cap + j.sync_s)

    def prepare(self, view: HareView, jobs: list[TaskJob]) -> None:
        self._order = sorted(jobs, key=lambda j: (-j.weight / self._size(view, j), j.seq))

    def candidates(self, view: HareView, jobs: list[TaskJob], g: int) -> list[TaskJob]:
        live = {j.job_id for j in jobs}
        return [j for j in self._order if j.job_id in live]


@register
class Hlas(_TaskPolicy):
    """docs/policies/hare.md §5 online HLAS: discretised heterogeneity-normalised LAS, starvation guard,
    heterogeneity tie-break."""

    name = "hlas"
    description = "Hare online HLAS: hetero-normalised LAS queues, starvation guard, hetero tie-break, relaxed sync"
    paper_scale_jobs = 1_850  # measured (issue 30): jobs done in the first minute, docs/policies/README.md

    def __init__(self, thresholds: Sequence[PositiveFloat] = (3600.0, 36000.0),
                 starvation_factor: NonNegativeFloat = 2.0, tie_break: Literal["hetero", "fifo"] = "hetero",
                 guard: bool = True, switch_s: NonNegativeFloat | None = None) -> None:
        super().__init__(guard, switch_s)
        self.thresholds = sorted(float(x) for x in thresholds)
        if tie_break not in ("hetero", "fifo"):
            raise ConfigError("tie_break must be 'hetero' or 'fifo'", field="tie_break")
        self.tie_break = tie_break
        self.starvation_factor = float(starvation_factor)

    def queue(self, view: HareView, j: TaskJob) -> int:
        if (self.starvation_factor > 0 and j.running == 0 and j.last_service_s > 0
                and view.now - j.wait_since >= self.starvation_factor * j.last_service_s):
            return 0
        return bisect_right(self.thresholds, j.attained_ref_s)

    def prepare(self, view: HareView, jobs: list[TaskJob]) -> None:
        self._q = {j.job_id: self.queue(view, j) for j in jobs}

    def candidates(self, view: HareView, jobs: list[TaskJob], g: int) -> list[TaskJob]:
        q = self._q
        if self.tie_break == "fifo":
            return sorted(jobs, key=lambda j: (q[j.job_id], j.seq))
        k = view.gpu_type(g)
        rel = self._rel
        for j in jobs:
            if j.job_id not in rel:  # fixed for the job
                rel[j.job_id] = {t: _rel_speed(j, t) for t in j.task_s}
        return sorted(jobs, key=lambda j: (q[j.job_id], -rel[j.job_id][k], j.seq))


@register
class HareNaiveSwitch(Hlas):
    """Ablation: HLAS with a naive runtime's task-switching cost (3 s per switch by default)."""

    name = "hare-naive-switch"
    description = "Ablation: HLAS with a naive runtime's task-switching cost (switch_s=3 s)"
    paper_scale_jobs = None  # not measured

    def __init__(self, thresholds: Sequence[PositiveFloat] = (3600.0, 36000.0),
                 starvation_factor: NonNegativeFloat = 2.0, tie_break: Literal["hetero", "fifo"] = "hetero",
                 guard: bool = True, switch_s: NonNegativeFloat | None = 3.0) -> None:
        super().__init__(thresholds, starvation_factor, tie_break, guard, switch_s)


@register
class HareGang(Hlas):
    """Ablation: HLAS order, but a round needs n_j simultaneously idle GPUs (no relaxed sync)."""

    name = "hare-gang"
    description = "Ablation: HLAS order with gang rounds (no relaxed sync)"
    paper_scale_jobs = None  # not measured
    gang = True

    def schedule(self, view: HareView) -> list[Any]:
        idle = view.idle_gpus()
        if not idle:
            return []
        jobs = [j for j in view.ready_jobs if j.ready == j.n and j.running == 0]
        if not jobs:
            return []
        self.prepare(view, jobs)
        gpu_type = view.cluster.gpu_type
        by_type = view.idle_by_type()  # idle GPUs per type, ascending
        free = set(idle)
        out: list[Any] = []
        for j in sorted(jobs, key=lambda j: (self._q[j.job_id], j.seq)):
            if j.n > len(free):
                continue
            pick = self._fastest(j, by_type, free, gpu_type, view.last_ran(j))
            out.extend(RunTask(j.job_id, g) for g in pick)
            free.difference_update(pick)
            for g in pick:
                lst = by_type[gpu_type[g]]
                del lst[bisect_left(lst, g)]
        return out

    @staticmethod
    def _fastest(j: TaskJob, by_type: dict[str, list[int]], free: set[int], gpu_type: Sequence[str],
                 last: list[int]) -> list[int]:
        """The j.n idle GPUs with the smallest (switching overhead + task time for j, GPU index): the idle GPUs
        ordered by that key, merged from one ascending run per type (overhead ``switch_s``) and one of the GPUs
        whose last task was j's (no overhead), cut at j.n."""
        own = [g for g in last if g in free]
        own_set = set(own)
        s, task_s = j.switch_s, j.task_s
        runs: list[Any] = [sorted((0.0 + task_s[gpu_type[g]], g) for g in own)]
        for t, gs in by_type.items():
            if gs:
                runs.append(zip(repeat(s + task_s[t]), (g for g in gs if g not in own_set)))
        return [g for _, g in islice(heapq.merge(*runs), j.n)]


# ------------------------------------------------------------------ gang lease baselines
class _GangLease(Policy):
    family = "chen2024"
    requirements = _rounds(None, gang=True)
    hetero_aware = False
    clairvoyant = False  # True where the key reads remaining work
    def __init__(self, tick_s: PositiveFloat = 60.0, switch_s: NonNegativeFloat | None = None) -> None:
        if tick_s <= 0:
            raise ConfigError("must be > 0", field="tick_s")
        self.tick_s = float(tick_s)
        self.requirements = _rounds(switch_s, gang=True, clairvoyant=self.clairvoyant)
        self._next = 0.0

    def reset(self) -> None:
        self._next = 0.0

    def key(self, view: HareView, j: TaskJob) -> Any:
        raise NotImplementedError

    def schedule(self, view: HareView) -> list[Any]:
        now = view.now
        if not view.job_events and now < self._next - 1e-9:
            return []
        self._next = now + self.tick_s
        jobs = view.jobs
        if not jobs:
            return []
        order = sorted(jobs, key=lambda j: (self.key(view, j), j.seq))
        G = view.cluster.num_gpus
        # GPUs usable for the plan: not running a task of a job that will lose its lease (still busy); a job may
        # also use the GPUs running its own tasks. cand: the free GPUs running no task, ascending, kept in step
        # with free
        busy = view.running_gpus()
        free = set(range(G))
        cand = sorted(free.difference(busy))
        keep: dict[str, tuple[int, ...]] = {}
        new: dict[str, tuple[int, ...]] = {}

        def take(gpus: Sequence[int]) -> None:
            free.difference_update(gpus)
            for g in gpus:
                i = bisect_left(cand, g)
                if i < len(cand) and cand[i] == g:
                    del cand[i]

        for j in order:
            if j.n > len(free):
                continue
            if j.lease is not None and set(j.lease) <= free:
                keep[j.job_id] = j.lease
                take(j.lease)
                continue
            own = [g for g in j.running_gpus if g in free]
            avail = sorted(cand + own) if own else cand
            pick = self.place(view, j, avail)
            if pick is None:
                take(avail[: j.n])  # reserve (no backfill past a blocked higher-priority job)
                continue
            new[j.job_id] = pick
            take(pick)
        out: list[Any] = [Preempt(j.job_id) for j in jobs if j.lease is not None and j.job_id not in keep]
        out.extend(Start(jid, gpus) for jid, gpus in new.items())
        out.append(WakeAt(self._next))
        return out

    def place(self, view: HareView, j: TaskJob, avail: list[int]) -> tuple[int, ...] | None:
        if len(avail) < j.n:
            return None
        if not self.hetero_aware or len(view.cluster.gpu_types) == 1:  # one type: the fastest fitting is the only
            return tuple(avail[: j.n])
        by_type: dict[str, list[int]] = {}
        for g in avail:
            by_type.setdefault(view.gpu_type(g), []).append(g)
        fitting = [t for t, gs in by_type.items() if len(gs) >= j.n]
        if fitting:
            best = min(fitting, key=lambda t: (j.task_s[t], t))
            return tuple(by_type[best][: j.n])
        return tuple(sorted(avail, key=lambda g: (view.task_time(j, g), g))[: j.n])


@register
class GavelHet(_GangLease):
    """Gavel-style heterogeneity-aware gang LAS (docs/policies/hare.md §6) [I]."""

    name = "gavel-het"
    description = "Gavel-style heterogeneity-aware gang LAS, 360 s rounds"
    hetero_aware = True

    def __init__(self, tick_s: PositiveFloat = 360.0, switch_s: NonNegativeFloat | None = None) -> None:
        super().__init__(tick_s, switch_s)

    def key(self, view: HareView, j: TaskJob) -> Any:
        return j.attained_ref_s


@register
class TiresiasHet(_GangLease):
    """Tiresias 2D-LAS, gang, heterogeneity-unaware (docs/policies/hare.md §6) [I]."""

    name = "tiresias-het"
    description = "Tiresias 2D-LAS gang, heterogeneity-unaware"

    def __init__(self, thresholds: Sequence[PositiveFloat] = (3600.0,), starvation_factor: NonNegativeFloat = 2.0,
                 tick_s: PositiveFloat = 60.0, switch_s: NonNegativeFloat | None = None) -> None:
        super().__init__(tick_s, switch_s)
        self.thresholds = sorted(float(x) for x in thresholds)
        self.starvation_factor = float(starvation_factor)

    def key(self, view: HareView, j: TaskJob) -> Any:
        if (self.starvation_factor > 0 and j.lease is None and j.running == 0 and j.last_service_s > 0
                and view.now - j.wait_since >= self.starvation_factor * j.last_service_s):
            return 0
        return bisect_right(self.thresholds, j.gpu_busy_s)


@register
class SrtfHet(_GangLease):
    """Clairvoyant SRTF on remaining reference time, gang, heterogeneity-unaware (docs/policies/hare.md §6) [I]."""

    name = "srtf-het"
    description = "SRTF gang (clairvoyant), heterogeneity-unaware"
    requirements = _rounds(None, gang=True, clairvoyant=True)
    clairvoyant = True

    def key(self, view: HareView, j: TaskJob) -> Any:
        return j.remaining_ref_s
