"""Baseline policies composed from an ordering and a placement (docs/policies/baselines.md).

Non-preemptive pass: walk the queue in order and start every job that can be placed; ``backfill=False``
stops at the first job that cannot (strict head-of-line FIFO), ``backfill=True`` skips it.

Preemptive pass (SRTF, Tiresias): rank running and pending jobs together by (priority class, running
first, key). Each pending job, best first, is placed on free GPUs; if it does not fit, running jobs of a
strictly worse class are preempted, lowest-ranked first, until it does. If it still cannot be placed
(fragmentation) the tentative preemptions are undone, so no job is evicted for nothing, and a job is
never evicted for one of its own class (no thrashing inside a Tiresias queue).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ddlsched._mypyc import mypyc_attr
from ddlsched.engine.allocation import GPUMemory
from ddlsched.engine.decisions import Decision, Preempt, Start, WakeAt
from ddlsched.engine.jobview import JobView
from ddlsched.engine.model import Requirements
from ddlsched.engine.view import SchedulerView
from ddlsched.policies.base import Policy
from ddlsched.policies.ordering import Ordering
from ddlsched.policies.placement import PlacementStrategy


@mypyc_attr(allow_interpreted_subclasses=True)
class OrderedPolicy(Policy):
    """An ordering + a placement (+ backfill); preemptive iff the ordering is."""

    def __init__(self, ordering: Ordering, placement: PlacementStrategy, *, backfill: bool = True,
                 name: str | None = None) -> None:
        self.ordering = ordering
        self.placement = placement
        self.backfill = backfill
        self.requirements = Requirements(preemptive=ordering.preemptive, clairvoyant=ordering.clairvoyant)
        self.name = name or f"{ordering.name}+{placement.name}"
        # strict FIFO whose head found no place: (free-GPU changes, head) at that pass (see _non_preemptive)
        self._blocked: tuple[int, str] | None = None
        self._free_only_of: tuple[type, bool] | None = None  # (placement class, answers_from_free_gpus)
        self._lazy_victims_of: tuple[type, bool] | None = None  # (own class, victims drawn lazily)
        self._memoable_of: tuple[type, bool] | None = None  # (placement class, its memo_key trusted)
        self.memo = True  # the preemptive pass skips attempts that provably fail (off: every attempt is made)
        self.memo_skips = 0  # placement calls and whole attempts the memo skipped (tests read it)
        self._keys: dict[str, tuple[Any, ...]] = {}  # job → its memo key (() : none), for the run's cluster
        self._keys_of: object = None  # the cluster those keys are for

    def _free_only(self) -> bool:
        known = self._free_only_of
        kind = type(self.placement)
        if known is None or known[0] is not kind:
            known = self._free_only_of = (kind, answers_from_free_gpus(self.placement))
        return known[1]

    def _memoable(self) -> bool:
        known = self._memoable_of
        kind = type(self.placement)
        if known is None or known[0] is not kind:
            known = self._memoable_of = (kind, keys_its_answers(self.placement))
        return known[1]

    def _lazy_victims(self) -> bool:
        """Whether a pass may draw victims only as far as it needs: not when a subclass overrides
        :meth:`may_preempt`, which may read a job's progress — and reading progress advances the job's accounts to
        now, so which jobs it is asked about would change float rounding downstream. Such a policy gets every
        victim ranked at the first need, as it always did."""
        known = self._lazy_victims_of
        kind = type(self)
        if known is None or known[0] is not kind:
            lazy = True
            for klass in kind.__mro__:
                if klass is OrderedPolicy:
                    break
                if "may_preempt" in vars(klass):
                    lazy = False
                    break
            known = self._lazy_victims_of = (kind, lazy)
        return known[1]

    def reset(self) -> None:
        self.ordering.reset()
        self._blocked = None
        self._keys.clear()
        self._keys_of = None

    def _memo_key(self, job: JobView, view: SchedulerView, memory: GPUMemory) -> tuple[Any, ...]:
        """The job's key for the pass memo (() : none): what the placement reads from the job, and the job's memory
        need where it hides some GPUs (equal keys, the same GPUs seen). Fixed for a job in a run: read once."""
        jid = job.job_id
        got = self._keys.get(jid)
        if got is None:
            own = self.placement.memo_key(job, view)
            if own is None:
                got = ()
            else:
                mem = job.mem_mb
                got = (*own, mem if memory.hides_any(mem) else None)
            self._keys[jid] = got
        return got

    def may_preempt(self, job: JobView) -> bool:
        """Whether a running job may be chosen as a victim at all (subclasses restrict it)."""
        return True

    def schedule(self, view: SchedulerView) -> Sequence[Decision]:
        if self.requirements.preemptive:
            return self._preemptive(view)
        return self._non_preemptive(view)

    def _non_preemptive(self, view: SchedulerView) -> list[Decision]:
        order = self.ordering
        fifo = order.name == "fifo"
        # Strict FIFO stops at a head that finds no place. Until the free GPUs change or another job heads the
        # queue (arrivals join at the back), asking again gives the same answer — if the placement answers from
        # the job and the free GPUs alone — so the pass is skipped: the same decisions, none of the work.
        memo = fifo and not self.backfill and self._free_only()
        if memo and self._blocked is not None:
            pending = view.pending
            if pending and self._blocked == (view.free_changes, pending[0].job_id):
                return []
        alloc = view.allocation()
        out: list[Decision] = []
        if fifo:
            queue: Sequence[JobView] = view.pending  # the engine keeps the queue in arrival order
        elif order.static:
            queue = view.pending_sorted(order.key)  # engine-maintained index: no sort per pass
        else:
            queue = sorted(view.pending, key=order.key)
        for job in queue:
            if alloc.num_free == 0:
                break
            gpus = self.placement.place(job, alloc.for_mem(job.mem_mb), view) \
                if job.num_gpus <= alloc.num_free else None
            if gpus is None:
                if self.backfill:
                    continue
                if memo and not out:
                    self._blocked = (view.free_changes, job.job_id)
                break
            alloc.take(gpus)
            out.append(Start(job.job_id, tuple(gpus)))
        return out

    def _preemptive(self, view: SchedulerView) -> list[Decision]:
        if not view.pending:
            return []  # preemption only ever makes room for a queued job
        order = self.ordering
        placement = self.placement
        memo = self.memo and self._memoable()
        if memo and view.cluster is not self._keys_of:
            self._keys.clear()
            self._keys_of = view.cluster
        # Failed attempts since the last commit (Start or Preempt): placement key → how many victims from ``first``
        # were released, one by one, without making room (0: the plain placement failed). The allocation and the
        # victims are the same until the next commit, and a job of any class evicts a prefix of the same victims,
        # so a job with an equal key would fail on those prefixes again: it skips them (docs/policies/baselines.md
        # "What a pass costs"). Invariant: every answer skipped is one that was computed and was None.
        failed: dict[tuple[Any, ...], int] = {}
        victims: _Victims | None = None  # running jobs worst first, drawn on first need and only as far as needed
        first = 0  # victims before it are already taken
        keys = self._keys
        skips = 0
        alloc = view.allocation()
        memory = alloc.memory()
        out: list[Decision] = []
        started: list[JobView] = []
        waiting = False
        for job, job_class in order.pending_ranked(view):
            known = -1
            key: tuple[Any, ...] = ()
            if failed:  # only non-empty with the memo on; until an attempt fails no job needs its key
                got = keys.get(job.job_id)
                key = got if got is not None else self._memo_key(job, view, memory)
                if key:
                    known = failed.get(key, -1)
            if known >= 0:
                gpus = None
                skips += 1
            else:
                gpus = placement.place(job, alloc.for_mem(job.mem_mb), view) \
                    if job.num_gpus <= alloc.num_free else None
            if gpus is None:
                if victims is None:
                    source = order.victims(view, self.may_preempt)
                    victims = _Victims(source if self._lazy_victims() else list(source))
                # victims come worst class first: the eligible ones (strictly worse class) are a prefix
                if alloc.num_free == 0 and not victims.worse(first, job_class):
                    waiting = True
                    break  # nothing free and nobody this job (or any later one) may evict
                if known < 0:
                    known = 0
                    if memo and not key:
                        got = keys.get(job.job_id)
                        key = got if got is not None else self._memo_key(job, view, memory)
                    if key:
                        failed[key] = 0
                elif not victims.worse(first + known, job_class):
                    waiting = True  # every prefix of its eligible victims already failed for an equal key
                    skips += 1
                    continue
                if not victims.enough(first, job_class, job.num_gpus - alloc.num_free):
                    waiting = True
                    continue
                taken = first
                freed: list[int] | None = None
                while victims.worse(taken, job_class):
                    alloc.release(victims.jobs[taken].gpus)
                    taken += 1
                    if taken - first <= known:
                        skips += 1
                        continue  # this prefix already failed for an equal key
                    freed = placement.place(job, alloc.for_mem(job.mem_mb), view)
                    if freed is not None:
                        break
                if freed is None:  # fragmentation: undo the tentative preemptions
                    for v in victims.jobs[first:taken]:
                        alloc.take(v.gpus)
                    if key:
                        failed[key] = taken - first
                    waiting = True
                    continue
                out.extend(Preempt(v.job_id) for v in victims.jobs[first:taken])
                first = taken
                gpus = freed
            alloc.take(gpus)
            out.append(Start(job.job_id, tuple(gpus)))
            started.append(job)
            if failed:
                failed = {}  # the allocation changed: what failed may fit now
        self.memo_skips += skips
        if waiting:
            wake = order.next_change(view)
            if wake is not None and wake > view.now:
                out.append(WakeAt(wake))
        for job in started:
            order.left_queue(job)
        return out


class _Victims:
    """The running jobs a pass may evict, worst first with their class, drawn from the ordering's iterable only as
    far as the pass asks (a pass usually evicts one job or none; ranking them all cost a list per pass)."""

    def __init__(self, source: Iterable[tuple[JobView, Any]]) -> None:
        self._source: Iterator[tuple[JobView, Any]] | None = iter(source)
        self.jobs: list[JobView] = []
        self._classes: list[Any] = []

    def worse(self, i: int, job_class: Any) -> bool:
        """Whether victim ``i`` exists and is of a strictly worse class than ``job_class``."""
        jobs = self.jobs
        while i >= len(jobs):
            source = self._source
            if source is None:
                return False
            nxt = next(source, None)
            if nxt is None:
                self._source = None
                return False
            jobs.append(nxt[0])
            self._classes.append(nxt[1])
        return bool(self._classes[i] > job_class)

    def enough(self, first: int, job_class: Any, need: int) -> bool:
        """Whether the eligible victims from ``first`` on hold at least ``need`` GPUs together."""
        got, i = 0, first
        while got < need and self.worse(i, job_class):
            got += self.jobs[i].num_gpus
            i += 1
        return got >= need


def answers_from_free_gpus(placement: PlacementStrategy) -> bool:
    """Whether ``placement`` declares ``free_only`` in the class that defines its ``place`` (a subclass that
    overrides ``place`` without declaring it again is not trusted with its parent's declaration)."""
    for klass in type(placement).__mro__:
        own = vars(klass)
        if "place" in own:
            return bool(own.get("free_only", False))
    return False


def keys_its_answers(placement: PlacementStrategy) -> bool:
    """Whether ``placement``'s ``memo_key`` is defined by the class that defines its ``place`` or a subclass of it
    (a subclass that overrides ``place`` and inherits ``memo_key`` is not trusted with its parent's key)."""
    for klass in type(placement).__mro__:
        own = vars(klass)
        if "memo_key" in own:
            return True
        if "place" in own:
            return False
    return False
