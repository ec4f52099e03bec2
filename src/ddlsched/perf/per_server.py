"""Shared bookkeeping of the per-server contention models (``abe``, ``sjf_bco``).

Both models count, for each server, the *multi-server* jobs placed on it (docs/policies/sjf-bco.md §2 eq. 6,
docs/policies/adadual.md §2):
a job's contention is the largest such count over its servers (its busiest NIC). When a job starts or
leaves, only the jobs sharing one of its servers can change, so only they are re-timed.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from typing import Any

from ddlsched.cluster.topology import Cluster
from ddlsched.perf.base import IterationTime, PerfModel, Placement


class PerServerContention(PerfModel):
    """Index server → multi-server jobs; subclasses give :meth:`job_time` from :meth:`busiest_nic`."""

    def __init__(self, cluster: Cluster, **params: Any) -> None:
        super().__init__(cluster, **params)
        self._server_multi: dict[int, set[str]] = {}  # server -> multi-server jobs on it
        self._servers: dict[str, tuple[int, ...]] = {}

    def busiest_nic(self, job_id: str) -> int:
        """Multi-server jobs on the job's busiest server, itself included (0 for a single-server job)."""
        servers = self._servers[job_id]
        if len(servers) <= 1:
            return 0
        return max(len(self._server_multi[s]) for s in servers)

    @abstractmethod
    def job_time(self, placement: Placement) -> IterationTime:
        """The job's iteration time with the current index (its busiest NIC via :meth:`busiest_nic`)."""

    def _neighbours(self, servers: tuple[int, ...]) -> set[str]:
        out: set[str] = set()
        for s in servers:
            out |= self._server_multi.get(s, set())
        return out

    def _refresh(self, jobs: set[str]) -> dict[str, IterationTime]:
        out: dict[str, IterationTime] = {}
        for j in sorted(jobs):
            t = self.job_time(self._placements[j])
            if self._times.get(j) != t:
                self._times[j] = t
                out[j] = t
        return out

    def add(self, placement: Placement) -> Mapping[str, IterationTime]:
        jid = placement.job_id
        if jid in self._placements:
            raise ValueError(f"job {jid} is already placed")
        servers = tuple(sorted(self.cluster.servers_of(placement.gpus)))
        self._placements[jid] = placement
        self._servers[jid] = servers
        affected = {jid}
        if len(servers) > 1:
            for s in servers:
                self._server_multi.setdefault(s, set()).add(jid)
            affected |= self._neighbours(servers)
        changed = self._refresh(affected)
        changed[jid] = self._times[jid]
        return changed

    def remove(self, job_id: str) -> Mapping[str, IterationTime]:
        self._placements.pop(job_id)
        self._times.pop(job_id)
        servers = self._servers.pop(job_id)
        if len(servers) <= 1:
            return {}
        for s in servers:
            self._server_multi[s].discard(job_id)
        return self._refresh(self._neighbours(servers))
