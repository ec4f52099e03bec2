"""``hindsight``: a non-clairvoyant policy that learns job sizes from the jobs the run has finished
(docs/policies/hindsight.md).

Rules (sources in the doc):

1. **Predictor.** Every finished job adds its GPU-time (GPU-seconds it held, as observed) to groups keyed by what is
   known at submission: (user, model, GPUs), (user, GPUs), (user), (model, GPUs), (GPUs), all. A group keeps its
   ``window`` most recent samples; its sorted snapshot is refreshed when it has grown by an eighth (so a pass never
   re-sorts a group).
2. **Gittins classes.** A job that has received ``a`` GPU-seconds is ranked by the Gittins index of the most specific
   group holding at least ``min_samples`` samples above ``a`` (its size distribution conditioned on having survived
   to ``a``); with none, by ``1 / a`` (least attained service). ``a`` is rounded down to a grid of half-octaves from
   ``base_gpu_s``, and the index's reciprocal (an "effective remaining size") to ``num_classes`` octave classes:
   class 0 first, arrival order inside a class (Tiresias-style discretised queues, so ranks change only at grid
   crossings, known in advance).
3. **Bounded preemption.** A queued job evicts a running one only if it is at least ``hysteresis`` classes better,
   and a job is preempted at most ``max_preemptions`` times.
4. **No starvation.** A queued job that has waited ``starvation_factor`` × its executed time, and at least
   ``starve_after_s``, is promoted to class 0 until it has received ``base_gpu_s`` more GPU-seconds. Opt-in
   (``reserve=true``; measured worse on the full Philly-derived trace, docs): the earliest promoted job still queued
   gets a reservation — the server or rack it needs, of one type, with the most GPUs free or held by jobs it may
   evict, takes no other job until it starts.
5. **Placement**: consolidated (one server when it fits, else one rack; otherwise wait — a short delay that other
   jobs may fill).

``oracle=true`` is the perfect-predictor variant (clairvoyant, for the benchmark only): the class comes from the true
remaining GPU-time.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pydantic import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt

from ddlsched.cluster.topology import Cluster
from ddlsched.engine.decisions import Decision, Preempt, Start
from ddlsched.engine.jobview import JobView
from ddlsched.engine.model import Requirements
from ddlsched.engine.state import JobStatus
from ddlsched.engine.view import SchedulerView
from ddlsched.policies.baselines import OrderedPolicy
from ddlsched.policies.hindsight_speed import FastestTypeConsolidated, speed_factor
from ddlsched.policies.las_queues import QueuedByClass, RunningByClass
from ddlsched.policies.locality import L0, L1, best_level
from ddlsched.policies.ordering import Ordering
from ddlsched.policies.registry import register

_TOL = 1e-6
_STEP = math.sqrt(2.0)  # the attained-service grid: half-octaves
GroupKey = tuple[Any, ...]


class _Group:
    """The most recent ``window`` GPU-times of finished jobs of one group, and a sorted snapshot refreshed when the
    group has grown by an eighth (Gittins indexes are cached per snapshot)."""

    __slots__ = ("added", "index", "recent", "snap", "snap_at")

    def __init__(self, window: int) -> None:
        self.recent: deque[float] = deque(maxlen=window)
        self.added = 0
        self.snap: list[float] = []
        self.snap_at = 0
        self.index: dict[int, tuple[float, int]] = {}  # grid level -> (index, samples above the level)

    def add(self, x: float) -> None:
        self.recent.append(x)
        self.added += 1
        if self.added >= self.snap_at + max(1, self.snap_at // 8):
            self.snap = sorted(self.recent)
            self.snap_at = self.added
            self.index.clear()

    def gittins(self, level: int, a: float) -> tuple[float, int]:
        """(Gittins index at attained ``a``, samples above ``a``) of the snapshot: max over Δ of
        P(S − a ≤ Δ | S > a) / E[min(S − a, Δ) | S > a], Δ ranging over the samples (0, 0 if none is above)."""
        got = self.index.get(level)
        if got is not None:
            return got
        snap = self.snap
        first = bisect_right(snap, a)
        k = len(snap) - first
        best = 0.0
        if k:
            done = 0.0  # Σ (s_j − a) over the samples up to i
            for i in range(first, len(snap)):
                r = snap[i] - a
                done += r
                n = i - first + 1
                cost = done + (k - n) * r
                if cost > 0:
                    best = max(best, n / cost)
                else:
                    best = math.inf
        got = (best, k)
        self.index[level] = got
        return got


class Predictor:
    """Online size model: GPU-time of finished jobs by submission-time group (module docstring, rule 1)."""

    def __init__(self, window: int, min_samples: int, use_user: bool = True, use_model: bool = True) -> None:
        self.window, self.min_samples = window, min_samples
        self.use_user, self.use_model = use_user, use_model
        self.groups: dict[GroupKey, _Group] = {}
        self.users: set[str] = set()
        self.models: set[str] = set()
        self.seen = 0

    def clear(self) -> None:
        self.groups.clear()
        self.users.clear()
        self.models.clear()
        self.seen = 0

    def keys(self, job: JobView) -> list[GroupKey]:
        """The job's groups, most specific first (a missing user or a model shared by every job adds nothing)."""
        g = job.num_gpus
        user = job.user if self.use_user else None
        model = job.model_name if self.use_model else None
        self.seen += 1
        if user is not None:
            self.users.add(user)
        if model is not None:
            self.models.add(model)
        out: list[GroupKey] = []
        if user is not None and model is not None:
            out.append(("um", user, model, g))
        if user is not None:
            out += [("ug", user, g), ("u", user)]
        if model is not None:
            out.append(("mg", model, g))
        out += [("g", g), ("all",)]
        return out

    def observe(self, keys: Sequence[GroupKey], gpu_s: float) -> None:
        for key in keys:
            grp = self.groups.get(key)
            if grp is None:
                grp = self.groups[key] = _Group(self.window)
            grp.add(gpu_s)

    def index(self, keys: Sequence[GroupKey], level: int, a: float) -> float:
        """Gittins index at attained ``a`` from the most specific group with ``min_samples`` samples above it;
        0 when no group has (the caller then falls back to least attained service)."""
        for key in keys:
            grp = self.groups.get(key)
            if grp is None or len(grp.snap) < self.min_samples:
                continue
            idx, above = grp.gittins(level, a)
            if above >= self.min_samples:
                return idx
        return 0.0

    def median(self, keys: Sequence[GroupKey]) -> tuple[float, float, float] | None:
        """Point prediction at submission: the median of the most specific group with ``min_samples`` samples,
        with that group's 10th and 90th percentiles (its 80 % interval, for the calibration counter)."""
        for key in keys:
            grp = self.groups.get(key)
            if grp is not None and len(grp.snap) >= self.min_samples:
                snap, n = grp.snap, len(grp.snap)
                return snap[n // 2], snap[n // 10], snap[min(n - 1, (9 * n) // 10)]
        return None


class HindsightOrdering(Ordering):
    """Gittins classes over the learned size distribution, with Tiresias' queue indexes (module docstring)."""

    name = "hindsight"
    description = "Gittins classes over GPU-time learned from finished jobs"
    preemptive = True

    def __init__(self, *, base_gpu_s: float, num_classes: int, hysteresis: int, max_preemptions: int,
                 starvation_factor: float, starve_after_s: float, predictor: Predictor, oracle: bool,
                 aging: bool = False) -> None:
        self.base, self.n = base_gpu_s, num_classes
        self.hysteresis, self.max_preemptions = hysteresis, max_preemptions
        self.starvation_factor, self.starve_after_s = starvation_factor, starve_after_s
        self.predictor, self.oracle, self.aging = predictor, oracle, aging
        self._edges = [base_gpu_s * _STEP ** i for i in range(400)]  # half-octaves: beyond any real job
        self._cache: dict[str, tuple[int, float, tuple[Any, ...]]] = {}
        self._keys: dict[str, list[GroupKey]] = {}
        self._boost: dict[str, float] = {}  # promoted job -> attained GPU-s until which it keeps class 0
        self._queued: QueuedByClass | None = None
        self._running: RunningByClass | None = None
        self.promotions = 0
        self.hetero = False  # service in fastest-type GPU-seconds (set by the policy from the cluster)
        self._seg: dict[str, tuple[float, float, float]] = {}  # job -> (service before, raw GPU-s at start, factor)

    def reset(self) -> None:
        self._cache.clear()
        self._keys.clear()
        self._boost.clear()
        self._seg.clear()
        self.hetero = False
        self._queued = self._running = None
        self.promotions = 0

    def keys(self, job: JobView) -> list[GroupKey]:
        got = self._keys.get(job.job_id)
        if got is None:
            got = self._keys[job.job_id] = self.predictor.keys(job)
        return got

    def forget(self, job_id: str) -> None:
        self._keys.pop(job_id, None)
        self._seg.pop(job_id, None)
        self._boost.pop(job_id, None)
        self._cache.pop(job_id, None)

    # ------------------------------------------------------------ service
    def service(self, job: JobView) -> tuple[float, float]:
        """(attained service, its rate per GPU per second while running now): GPU-seconds held, or on a
        heterogeneous cluster GPU-seconds on the job's fastest type (rule 1; ``hindsight_speed``)."""
        if not self.hetero:
            return job.attained_gpu_s, 1.0
        seg = self._seg.get(job.job_id)
        if seg is None:
            return job.attained_gpu_s, 1.0
        before, raw0, factor = seg
        return before + (job.attained_gpu_s - raw0) * factor, factor

    def start_segment(self, job: JobView, gpus: Sequence[int], cluster: Cluster) -> None:
        """A job starts on ``gpus``: close its last run's service and open one at this placement's speed."""
        if self.hetero:
            done = self.service(job)[0]
            self._seg[job.job_id] = (done, job.attained_gpu_s, speed_factor(job.profile, cluster, gpus))

    # ------------------------------------------------------------ classes
    def _level(self, a: float) -> tuple[int, float, float]:
        """(grid level, its lower edge, the next edge) of attained service ``a`` (the next edge lies beyond
        ``a + _TOL``, so the time to reach it is positive)."""
        k = bisect_right(self._edges, a + _TOL)
        return k, self._edges[k - 1] if k else 0.0, self._edges[k]

    def _class_of_size(self, size: float) -> int:
        if size < self.base:
            return 0
        return min(self.n - 1, 1 + int(math.log2(size / self.base)))

    def _queue_until(self, job: JobView) -> tuple[int, float]:
        now = job.now
        token = (job.status, job.preemptions, job.last_start)
        jid = job.job_id
        cached = self._cache.get(jid)
        if cached is not None and cached[2] == token and now < cached[1]:
            return cached[0], cached[1]
        running = job.status is JobStatus.RUNNING
        a, factor = self.service(job)
        rate = job.num_gpus * factor
        until = math.inf
        boost = self._boost.get(jid)
        size: float | None = None  # the remaining GPU-time the class stands for (none while promoted)
        if self.oracle:
            size = job.remaining_ideal_s * job.num_gpus
            q = self._class_of_size(size)
            if running and q:  # the class drops as the job runs: next edge
                edge = self.base * 2.0 ** (q - 1)
                until = now + max(0.0, job.remaining_ideal_s * job.num_gpus - edge) / rate + _TOL
        elif boost is not None and a < boost - _TOL:
            q = 0
            if running:
                until = now + (boost - a) / rate
        else:
            if boost is not None:
                del self._boost[jid]
            level, lo, nxt = self._level(a)
            idx = self.predictor.index(self.keys(job), level, lo)
            size = 1.0 / idx if idx > 0 else max(lo, self.base)
            q = self._class_of_size(size)
            if running:
                until = now + (nxt - a) / rate
        if self.aging and not running and q and size is not None and size > 0:
            # rule 4a, response-ratio aging: a queued job counts as size / (1 + GPUs × queued time / size), one
            # class better for each time its wait has grown by its own expected remaining time again
            w = job.queued_s
            n = job.num_gpus
            q = self._class_of_size(size / (1.0 + n * w / size))
            if q:
                edge = self.base * 2.0 ** (q - 1)  # the aged size at which the next class begins
                until = now + max(0.0, size * (size / edge - 1.0) / n - w) + _TOL
        if not running and q:
            executed = job.executed_s
            wait_for = max(self.starvation_factor * executed, self.starve_after_s)
            promote_at = now + wait_for - job.waiting_s
            if promote_at <= now + _TOL:
                self._boost[jid] = a + self.base
                self.promotions += 1
                q = 0
                until = math.inf
            else:
                until = min(until, promote_at)
        if until <= now:  # float rounding: never due again at the same instant
            until = now + _TOL
        self._cache[jid] = (q, until, token)
        return q, until

    def queue(self, job: JobView) -> int:
        return self._queue_until(job)[0]

    def promoted(self) -> dict[str, float]:
        """The jobs rule 4 promoted that have not yet received their quantum (job → attained GPU-s it ends at)."""
        return self._boost

    def key(self, job: JobView) -> Any:
        return (self.queue(job), job.seq)

    def preempt_class(self, job: JobView) -> Any:
        return self.queue(job)

    # ------------------------------------------------------------ indexes (as Tiresias)
    def _index(self, view: SchedulerView) -> QueuedByClass:
        if self._queued is None:
            self._queued = QueuedByClass(self.n, self._queue_until, self._cache)
        self._queued.sync(view)
        return self._queued

    def _running_index(self) -> RunningByClass:
        if self._running is None:
            self._running = RunningByClass(self.n, self._queue_until, self._cache)
        return self._running

    def pending_ranked(self, view: SchedulerView) -> Iterable[tuple[JobView, Any]]:
        # a queued job of class q may evict only running jobs of class ≥ q + hysteresis
        shift = self.hysteresis - 1
        return ((job, q + shift) for job, q in self._index(view).walk())

    def left_queue(self, job: JobView) -> None:
        if self._queued is not None:
            self._queued.left(job)
        self._running_index().started(job)

    def victims(self, view: SchedulerView, may_preempt: Callable[[JobView], bool]) -> Iterable[tuple[JobView, Any]]:
        cap = self.max_preemptions
        return self._running_index().worst_first(view.now, lambda j: j.preemptions < cap and may_preempt(j))

    def next_change(self, view: SchedulerView) -> float | None:
        running = self._running_index()
        running.sync(view.now)
        best = min(running.earliest_change(), self._index(view).earliest_change())
        return None if best == math.inf else best


@register
class Hindsight(OrderedPolicy):
    """Non-clairvoyant: Gittins classes over GPU-time learned online from finished jobs, bounded preemption,
    starvation guard, consolidated placement (module docstring; docs/policies/hindsight.md)."""

    name = "hindsight"
    description = ("non-clairvoyant: Gittins classes over GPU-time learned from finished jobs (user/model/GPUs), "
                   "bounded preemption, consolidated")
    family = "ddlsched"
    requirements = Requirements(preemptive=True)

    def __init__(self, base_gpu_s: PositiveFloat = 600.0, num_classes: PositiveInt = 16,
                 hysteresis: PositiveInt = 2, max_preemptions: NonNegativeInt = 32,
                 starvation_factor: PositiveFloat = 4.0, starve_after_s: NonNegativeFloat = 86400.0,
                 window: PositiveInt = 400, min_samples: PositiveInt = 8, use_user: bool = True,
                 use_model: bool = True, oracle: bool = False, aging: bool = False, reserve: bool = False) -> None:
        for label, v in (("base_gpu_s", base_gpu_s), ("starvation_factor", starvation_factor),
                         ("starve_after_s", starve_after_s)):
            if not math.isfinite(v):
                raise ValueError(f"{label} must be finite, got {v}")
        if num_classes < 2 or hysteresis >= num_classes:
            raise ValueError(f"need num_classes ≥ 2 and hysteresis < num_classes (got {num_classes}, {hysteresis})")
        self.predictor = Predictor(window, min_samples, use_user, use_model)
        ordering = HindsightOrdering(base_gpu_s=base_gpu_s, num_classes=num_classes, hysteresis=hysteresis,
                                     max_preemptions=max_preemptions, starvation_factor=starvation_factor,
                                     starve_after_s=starve_after_s, predictor=self.predictor, oracle=oracle,
                                     aging=aging)
        self.place = FastestTypeConsolidated()
        super().__init__(ordering, self.place, backfill=True, name="hindsight-oracle" if oracle else "hindsight")
        self.order: HindsightOrdering = ordering
        self.reserve = reserve
        self.reservations = 0  # starving jobs given a reservation (rule 4)
        self.oracle = oracle
        self.requirements = Requirements(preemptive=True, clairvoyant=oracle)
        self._live: dict[str, JobView] = {}  # jobs started by the policy and not seen stopped since
        self._free_after = -1  # free GPUs once the last pass's decisions are applied
        self._pred: dict[str, tuple[float, float, float]] = {}  # job -> (median, p10, p90) at its first start
        self._errors: list[float] = []  # |predicted − actual| / actual per finished job with a prediction
        self._log_ratios: list[float] = []  # log2(predicted / actual), same jobs
        self._covered = 0  # of those, how many finished inside their group's 10th–90th percentile

    def reset(self) -> None:
        super().reset()
        self.place.unreserve()
        self.reservations = 0
        self.predictor.clear()
        self._live.clear()
        self._free_after = -1
        self._pred.clear()
        self._errors.clear()
        self._log_ratios.clear()
        self._covered = 0

    def run_notes(self) -> list[str]:
        """Rule 1's groups a trace without users or model names leaves empty (the predictor falls back to the
        coarser groups)."""
        notes = []
        p = self.predictor
        if p.seen and not p.users:
            notes.append("hindsight: the trace has no user; the predictor's per-user groups were disabled")
        if p.seen and len(p.models) <= 1:
            notes.append("hindsight: the trace has no job name or model (at most one value); the predictor's "
                         "per-model groups were disabled")
        return notes

    def mechanisms(self) -> dict[str, float]:
        errs = sorted(self._errors)
        out = {"starvation_promotions": float(self.order.promotions), "predicted_jobs": float(len(errs)),
               "starvation_reservations": float(self.reservations)}
        if errs:
            out["predictor_median_rel_error"] = round(errs[len(errs) // 2], 6)
            logs = sorted(self._log_ratios)
            out["predictor_median_log2_ratio"] = round(logs[len(logs) // 2], 6)
            out["predictor_p10_p90_coverage"] = round(self._covered / len(errs), 6)
        return out

    def _keep_reservation(self, view: SchedulerView) -> None:
        """Rule 4's reservation: dropped once its job is no longer queued and promoted; else given to the earliest
        promoted queued job (the domain its placement needs: one server, or one rack; none beyond a rack)."""
        place, boost = self.place, self.order.promoted()
        held = place.reserved_for
        if held is not None:
            if held in boost and view.job(held).status is JobStatus.PENDING:
                return
            place.unreserve()
        waiting = [job for job in map(view.job, boost) if job.status is JobStatus.PENDING]
        if not waiting:
            return
        job = min(waiting, key=lambda j: j.seq)
        domain = self._domain(job, view)
        if domain:
            place.reserve(job.job_id, domain, view.cluster)
            self.reservations += 1

    def _domain(self, job: JobView, view: SchedulerView) -> list[int] | None:
        """The servers of the one-type server (or rack) where ``job`` would find the most GPUs free or held by
        jobs it may evict (the others drain: nothing new starts there); ties: its faster type, then the lower
        index."""
        cluster, n = view.cluster, job.num_gpus
        level = best_level(cluster, n)
        if level == L0:
            domains = [[s] for s in range(cluster.num_servers) if len(cluster.server_gpus[s]) >= n]
        elif level == L1:
            domains = [list(servers) for servers in cluster.rack_servers
                       if sum(len(cluster.server_gpus[s]) for s in servers) >= n]
        else:
            return None
        rank = {t: i for i, t in enumerate(self.place.type_order(job, cluster))}
        order, cap = self.order, self.order.max_preemptions
        best: tuple[int, int, int] | None = None
        chosen: list[int] | None = None
        for i, servers in enumerate(domains):
            types = {cluster.gpu_type[g] for s in servers for g in cluster.server_gpus[s]}
            if len(types) != 1:
                continue
            room = 0
            for s in servers:
                for g in cluster.server_gpus[s]:
                    holders = view.gpu_jobs(g)
                    if all(view.job(h).preemptions < cap and order.queue(view.job(h)) >= order.hysteresis
                           for h in holders):
                        room += 1
            key = (-room, rank[types.pop()], i)
            if best is None or key < best:
                best, chosen = key, servers
        return chosen

    def _learn(self, view: SchedulerView) -> None:
        """Record the GPU-time of the jobs that finished since the last pass (only after a pass that freed GPUs
        the policy did not free itself)."""
        done: list[str] = []
        for jid, job in self._live.items():
            if job.status is not JobStatus.RUNNING:
                done.append(jid)
        order, predictor = self.order, self.predictor
        for jid in done:
            job = self._live.pop(jid)
            if job.status is JobStatus.DONE:
                actual = order.service(job)[0]
                pred = self._pred.pop(jid, None)
                if pred is not None and actual > 0:
                    med, lo, hi = pred
                    self._errors.append(abs(med - actual) / actual)
                    self._log_ratios.append(math.log2(med / actual) if med > 0 else -math.inf)
                    self._covered += lo <= actual <= hi
                predictor.observe(order.keys(job), actual)
                order.forget(jid)

    def schedule(self, view: SchedulerView) -> Sequence[Decision]:
        if self._free_after >= 0 and view.num_free > self._free_after:
            self._learn(view)
        self.order.hetero = len(view.cluster.gpu_types) > 1
        if self.reserve:
            self._keep_reservation(view)
            # the pass's failure memo keys a placement answer by GPU count and model; a reservation makes it depend
            # on the job as well, so the memo is off while one holds
            self.memo = self.place.reserved_for is None
        out = super().schedule(view)
        free = view.num_free
        for d in out:
            if isinstance(d, Start):
                free -= len(d.gpus)
                job = view.job(d.job_id)
                self._live[d.job_id] = job
                self.order.start_segment(job, d.gpus, view.cluster)
                if job.job_id not in self._pred and not self.oracle and job.preemptions == 0:
                    pred = self.predictor.median(self.order.keys(job))
                    if pred is not None:
                        self._pred[job.job_id] = pred
            elif isinstance(d, Preempt):
                free += view.job(d.job_id).num_gpus
                self._live.pop(d.job_id, None)
        self._free_after = free
        return out
