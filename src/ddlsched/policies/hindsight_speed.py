"""Heterogeneous clusters for ``hindsight`` (docs/policies/hindsight.md, rules 1 and 5): service measured in
GPU-seconds on the job's fastest GPU type, and placement on the fastest type that has a consolidated slot.

A job's speed on a GPU type is its model profile's (``ModelProfile.speed_on``, the GPU type's default speed where the
profile has none) — known at submission, like its GPU count. A synchronous job on mixed types runs at its slowest
GPU's pace. On a cluster of one GPU type none of this changes anything: the factor is 1 and the placement is
``consolidated``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ddlsched.cluster.topology import Cluster
from ddlsched.engine.allocation import FreeIndex, MemoryFiltered
from ddlsched.engine.jobview import JobView
from ddlsched.engine.view import SchedulerView
from ddlsched.policies.locality import best_level, tightest
from ddlsched.policies.placement import PlacementStrategy
from ddlsched.workload.profiles import ModelProfile


def type_speeds(profile: ModelProfile, cluster: Cluster) -> dict[str, float]:
    """The model's speed on each of the cluster's GPU types, relative to its fastest type there (1.0)."""
    raw = {t: profile.speed_on(t, gt.speed) for t, gt in cluster.gpu_types.items()}
    top = max(raw.values())
    return {t: (v / top if top > 0 else 1.0) for t, v in raw.items()}


def speed_factor(profile: ModelProfile, cluster: Cluster, gpus: tuple[int, ...] | list[int]) -> float:
    """GPU-seconds on the job's fastest type per GPU-second held on ``gpus`` (its slowest GPU paces it)."""
    speeds = type_speeds(profile, cluster)
    return min(speeds[cluster.gpu_type[g]] for g in gpus) if gpus else 1.0


class FastestTypeConsolidated(PlacementStrategy):
    """``consolidated`` restricted to one GPU type at a time, the job's fastest type first (ties: type name); on a
    cluster of one type, or when no single type has a consolidated slot, the unrestricted ``consolidated`` answer.
    Jobs are placed in rank order, so the best-ranked (predicted smallest) jobs get the fastest GPUs — the rule of
    Gavel's and Hare's heterogeneity-aware allocation, without their throughput LP."""

    name = "fastest-type-consolidated"
    description = "consolidated on the job's fastest free GPU type (then slower types)"
    free_only = False  # the answer depends on the job's model, not only on its GPU count

    def __init__(self) -> None:
        self.reserved_for: str | None = None  # a starving job the GPUs of ``_reserved`` are kept for
        self._reserved: dict[int, frozenset[int]] = {}  # server → its GPUs hidden from every other job
        self._levels: dict[tuple[int, int], int] = {}
        self._hide: dict[tuple[int, str], dict[int, frozenset[int]]] = {}  # (id(cluster), type) → other GPUs
        self._order: dict[tuple[int, str], list[str]] = {}  # (id(cluster), model) → types, fastest first

    def type_order(self, job: JobView, cluster: Cluster) -> list[str]:
        """The cluster's GPU types, the job's fastest first (ties: type name)."""
        return self._types(job, cluster)

    def _types(self, job: JobView, cluster: Cluster) -> list[str]:
        key = (id(cluster), job.model_name)
        got = self._order.get(key)
        if got is None:
            speeds = type_speeds(job.profile, cluster)
            got = self._order[key] = sorted(speeds, key=lambda t: (-speeds[t], t))
        return got

    def _hidden(self, cluster: Cluster, gpu_type: str) -> dict[int, frozenset[int]]:
        key = (id(cluster), gpu_type)
        got = self._hide.get(key)
        if got is None:
            got = self._hide[key] = {s: frozenset(gs) for s, gs in enumerate(cluster.server_gpus)
                                     if cluster.gpu_type[gs[0]] != gpu_type}
        return got

    def reserve(self, job_id: str, servers: Sequence[int], cluster: Cluster) -> None:
        """Keep every GPU of ``servers`` for ``job_id``: no other job is placed there until :meth:`unreserve`."""
        self.reserved_for = job_id
        self._reserved = {s: frozenset(cluster.server_gpus[s]) for s in servers}

    def unreserve(self) -> None:
        self.reserved_for = None
        self._reserved = {}

    def reserved_servers(self) -> list[int]:
        return sorted(self._reserved)

    def memo_key(self, job: JobView, view: SchedulerView) -> tuple[Any, ...] | None:
        """The GPU count, and on several GPU types the model (its type order; ``_types`` is cached by model name,
        so the answer reads nothing else of the job)."""
        if len(view.cluster.gpu_types) > 1:
            return (job.num_gpus, job.model_name)
        return (job.num_gpus,)

    def place(self, job: JobView, alloc: FreeIndex, view: SchedulerView) -> list[int] | None:
        n = job.num_gpus
        if self.reserved_for is not None and job.job_id != self.reserved_for:
            alloc = MemoryFiltered(alloc, self._reserved)
        if n > alloc.num_free:
            return None
        cluster = view.cluster
        key = (id(cluster), n)
        level = self._levels.get(key)
        if level is None:
            level = self._levels[key] = best_level(cluster, n)
        if len(cluster.gpu_types) > 1:
            for t in self._types(job, cluster):
                sub = MemoryFiltered(alloc, self._hidden(cluster, t))
                if n > sub.num_free:
                    continue
                got = tightest(sub, n, level, cluster)
                if got is not None:
                    return got[0]
        got = tightest(alloc, n, level, cluster)
        return got[0] if got is not None else None
