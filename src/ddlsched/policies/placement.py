"""Placement strategies: which GPUs a job gets (docs/policies/sjf-bco.md §6, docs/policies/delay-sched.md §3,
docs/policies/delay-sched.md §7; Tiresias/YARN consolidation).

Each strategy answers ``place(job, alloc, view) -> list[int] | None`` on a tentative
:class:`~ddlsched.engine.allocation.Allocation`; ``None`` means "cannot place now".

| name          | rule                                                                                    |
|---------------|-----------------------------------------------------------------------------------------|
| first_fit     | lowest-numbered free GPUs, server by server (packs; the "bp" picker, adadual.md §3)    |
| consolidated  | strict: a job that fits in one server runs on one server (best fit), one that fits in  |
|               | a rack on one rack (fewest servers), a larger one on the fewest racks; otherwise it    |
|               | waits (the ordering may start other jobs meanwhile)                                    |
| pack          | consolidate when a slot is free, never wait: one server (best fit), else the fewest    |
|               | servers in one rack, else the most-free servers anywhere (the old `consolidated`)      |
| random        | n free GPUs drawn uniformly with the policy's seeded RNG                                |
| least_loaded  | emptiest servers first (most free GPUs), as many GPUs from each as it has (worst fit)   |
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from ddlsched._mypyc import mypyc_attr
from ddlsched.engine.allocation import FreeIndex
from ddlsched.engine.jobview import JobView
from ddlsched.engine.view import SchedulerView
from ddlsched.policies.locality import best_level, tightest


@mypyc_attr(allow_interpreted_subclasses=True)
class PlacementStrategy(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    free_only: ClassVar[bool] = False
    """Whether :meth:`place` answers from the job and the free GPUs alone (no random draw, no other state), so
    the same job on the same free GPUs gets the same answer; a pass may then skip asking again
    (``OrderedPolicy``, docs/policies/baselines.md "What a pass costs")."""

    @abstractmethod
    def place(self, job: JobView, alloc: FreeIndex, view: SchedulerView) -> list[int] | None: ...

    def memo_key(self, job: JobView, view: SchedulerView) -> tuple[Any, ...] | None:
        """Everything :meth:`place` reads from the job (it sees only the GPUs with the job's memory; the pass keys on
        those apart), or ``None`` (the default) when the answer depends on more than that and the free GPUs (a
        random draw, other state). Jobs with equal keys get the same answer on the same free GPUs, so a preemptive
        pass skips asking again where an attempt already failed (``OrderedPolicy``, docs/policies/baselines.md
        "What a pass costs"). A key is read once per job and run. Trusted only from the class that defines
        ``place`` or a subclass of it (``baselines.keys_its_answers``)."""
        return None


@mypyc_attr(allow_interpreted_subclasses=True)
class FirstFit(PlacementStrategy):
    name = "first_fit"
    free_only = True
    description = "lowest-numbered free GPUs"

    def memo_key(self, job: JobView, view: SchedulerView) -> tuple[Any, ...] | None:
        return (job.num_gpus,)

    def place(self, job: JobView, alloc: FreeIndex, view: SchedulerView) -> list[int] | None:
        n = job.num_gpus
        if n > alloc.num_free:
            return None
        out: list[int] = []
        for s in alloc.servers_with_free():
            out.extend(alloc.free_gpus(s)[: n - len(out)])
            if len(out) == n:
                return out
        return None


def fewest_servers(alloc: FreeIndex, n: int, view: SchedulerView) -> list[int] | None:
    """GPUs on the fewest servers (most-free first), preferring a single rack; ``None`` if < n free."""
    if n > alloc.num_free:
        return None
    cluster = view.cluster
    best: tuple[int, int, list[int]] | None = None
    if cluster.num_racks > 1:
        for r, servers in enumerate(cluster.rack_servers):
            frees = sorted(((alloc.free_count(s), s) for s in servers if alloc.free_count(s)),
                           key=lambda x: (-x[0], x[1]))
            if sum(f for f, _ in frees) < n:
                continue
            acc, k = 0, 0
            while acc < n:
                acc += frees[k][0]
                k += 1
            if best is None or k < best[0]:
                best = (k, r, [s for _, s in frees[:k]])
    chosen = best[2] if best is not None else list(alloc.servers_by_most_free())
    out: list[int] = []
    for s in chosen:
        out.extend(alloc.free_gpus(s)[: n - len(out)])
        if len(out) == n:
            return out
    return None


@mypyc_attr(allow_interpreted_subclasses=True)
class Consolidated(PlacementStrategy):
    name = "consolidated"
    free_only = True
    description = ("strict: one server if the job fits in one (best fit), else one rack if it fits in one (fewest "
                   "servers), else the fewest racks; waits until such a slot is free")

    def __init__(self) -> None:
        self._levels: dict[tuple[int, int], int] = {}  # (id(cluster), n) → the job's best locality level

    def memo_key(self, job: JobView, view: SchedulerView) -> tuple[Any, ...] | None:
        return (job.num_gpus,)

    def place(self, job: JobView, alloc: FreeIndex, view: SchedulerView) -> list[int] | None:
        n = job.num_gpus
        if n > alloc.num_free:
            return None
        cluster = view.cluster
        key = (id(cluster), n)
        level = self._levels.get(key)
        if level is None:
            level = self._levels[key] = best_level(cluster, n)
        got = tightest(alloc, n, level, cluster)
        return got[0] if got is not None else None


@mypyc_attr(allow_interpreted_subclasses=True)
class Pack(PlacementStrategy):
    name = "pack"
    free_only = True
    description = ("consolidate when a slot is free, never wait: one server (best fit), else the fewest servers "
                   "in one rack, else the most-free servers anywhere")

    def memo_key(self, job: JobView, view: SchedulerView) -> tuple[Any, ...] | None:
        return (job.num_gpus,)

    def place(self, job: JobView, alloc: FreeIndex, view: SchedulerView) -> list[int] | None:
        n = job.num_gpus
        s = alloc.best_fit_server(n)
        if s is not None:
            return alloc.free_gpus(s)[:n]
        return fewest_servers(alloc, n, view)


@mypyc_attr(allow_interpreted_subclasses=True)
class RandomPlacement(PlacementStrategy):
    name = "random"
    description = "uniformly random free GPUs (seeded)"

    def place(self, job: JobView, alloc: FreeIndex, view: SchedulerView) -> list[int] | None:
        n = job.num_gpus
        if n > alloc.num_free:
            return None
        return sorted(view.rng.sample(alloc.all_free_gpus(), n))


@mypyc_attr(allow_interpreted_subclasses=True)
class LeastLoaded(PlacementStrategy):
    name = "least_loaded"
    free_only = True
    description = "emptiest servers first (worst fit)"

    def memo_key(self, job: JobView, view: SchedulerView) -> tuple[Any, ...] | None:
        return (job.num_gpus,)

    def place(self, job: JobView, alloc: FreeIndex, view: SchedulerView) -> list[int] | None:
        n = job.num_gpus
        if n > alloc.num_free:
            return None
        out: list[int] = []
        for s in alloc.servers_by_most_free():
            out.extend(alloc.free_gpus(s)[: n - len(out)])
            if len(out) == n:
                return out
        return None


PLACEMENTS: dict[str, type[PlacementStrategy]] = {
    cls.name: cls for cls in (FirstFit, Consolidated, Pack, RandomPlacement, LeastLoaded)
}
