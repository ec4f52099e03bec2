"""Placement strategies: which GPUs a job gets (docs/policies/sjf-bco.md §6, docs/policies/delay-sched.md §3,
docs/policies/delay-sched.md §7; Tiresias/YARN consolidation).

Each strategy answers ``place(job, alloc, view) -> list[int] | None`` on a tentative
:class:`~ddlsched.engine.allocation.Allocation`; ``None`` means "cannot place now".

| name          | rule                                                                                        |
|---------------|---------------------------------------------------------------------------------------------|
| first_fit     | lowest-numbered free GPUs, server by server (packs; the "bp" picker, docs/policies/adadual.md §3) |
| consolidated  | one server if any can hold the job (best fit: fewest free GPUs that suffice), else the       |
|               | fewest servers, inside one rack when possible (most-free servers first)                      |
| random        | n free GPUs drawn uniformly with the policy's seeded RNG                                     |
| least_loaded  | emptiest servers first (most free GPUs), as many GPUs from each as it has (worst fit)        |
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from ddlsched.engine.allocation import Allocation
from ddlsched.engine.jobview import JobView
from ddlsched.engine.view import SchedulerView


class PlacementStrategy(ABC):
    name: ClassVar[str]
    description: ClassVar[str]

    @abstractmethod
    def place(self, job: JobView, alloc: Allocation, view: SchedulerView) -> list[int] | None: ...


class FirstFit(PlacementStrategy):
    name = "first_fit"
    description = "lowest-numbered free GPUs"

    def place(self, job: JobView, alloc: Allocation, view: SchedulerView) -> list[int] | None:
        n = job.num_gpus
        if n > alloc.num_free:
            return None
        out: list[int] = []
        for s in alloc.servers_with_free():
            out.extend(alloc.free_gpus(s)[: n - len(out)])
            if len(out) == n:
                return out
        return None


def fewest_servers(alloc: Allocation, n: int, view: SchedulerView) -> list[int] | None:
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


class Consolidated(PlacementStrategy):
    name = "consolidated"
    description = "one server (best fit) if possible, else fewest servers within one rack"

    def place(self, job: JobView, alloc: Allocation, view: SchedulerView) -> list[int] | None:
        n = job.num_gpus
        s = alloc.best_fit_server(n)
        if s is not None:
            return alloc.free_gpus(s)[:n]
        return fewest_servers(alloc, n, view)


class RandomPlacement(PlacementStrategy):
    name = "random"
    description = "uniformly random free GPUs (seeded)"

    def place(self, job: JobView, alloc: Allocation, view: SchedulerView) -> list[int] | None:
        n = job.num_gpus
        if n > alloc.num_free:
            return None
        return sorted(view.rng.sample(alloc.all_free_gpus(), n))


class LeastLoaded(PlacementStrategy):
    name = "least_loaded"
    description = "emptiest servers first (worst fit)"

    def place(self, job: JobView, alloc: Allocation, view: SchedulerView) -> list[int] | None:
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
    cls.name: cls for cls in (FirstFit, Consolidated, RandomPlacement, LeastLoaded)
}
