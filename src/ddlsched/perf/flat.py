"""Placement-blind physics: a job runs at its reference iteration wherever it is placed (docs/physics.md §5).

Iteration = compute on its GPUs (the slowest worker's type paces the ring, as in every model) + the communication
its ring would have *alone on the consolidated placement* of its size (``Cluster.consolidated_gpus``), whatever
GPUs it actually got and whatever else runs. On a cluster of reference-speed GPUs a job therefore runs exactly
its trace duration: no slow-down for a ring split over servers or racks, no contention. This is the network
trace-driven simulators without a topology assume; compare ``none`` (no contention, but a split ring runs at its
slowest link, usually the NIC) and ``maxmin`` (contention too).
"""

from __future__ import annotations

from collections.abc import Mapping

from ddlsched.cluster.topology import Cluster
from ddlsched.perf.base import IterationTime, PerfModel, Placement, compute_time, ring_bytes_per_hop


class FlatNetwork(PerfModel):
    name = "flat"
    description = "placement-blind: every ring communicates as if consolidated and alone (trace durations kept)"

    def __init__(self, cluster: Cluster) -> None:
        super().__init__(cluster)
        self._comm: dict[tuple[float, int], float] = {}

    def _consolidated_comm(self, grad_bytes: float, n: int) -> float:
        key = (grad_bytes, n)
        comm = self._comm.get(key)
        if comm is None:
            c = self.cluster
            gpus = c.consolidated_gpus(n)
            if gpus is None:  # more workers than GPUs: cannot be placed; keep the call total
                raise ValueError(f"a ring of {n} workers does not fit the cluster's {c.num_gpus} GPUs")
            bottleneck = min(c.links[lid].capacity_Bps for hop in c.ring_hops(gpus) for lid in hop)
            comm = ring_bytes_per_hop(grad_bytes, n) / bottleneck + 2 * (n - 1) * c.hop_latency_s
            self._comm[key] = comm
        return comm

    def _time(self, p: Placement) -> IterationTime:
        n = p.num_gpus
        comm = 0.0 if n <= 1 else self._consolidated_comm(p.profile.grad_bytes, n)
        return IterationTime(compute_time(self.cluster, p), comm)

    def add(self, placement: Placement) -> Mapping[str, IterationTime]:
        if placement.job_id in self._placements:
            raise ValueError(f"job {placement.job_id} is already placed")
        t = self._time(placement)
        self._placements[placement.job_id] = placement
        self._times[placement.job_id] = t
        return {placement.job_id: t}

    def remove(self, job_id: str) -> Mapping[str, IterationTime]:
        self._placements.pop(job_id)
        self._times.pop(job_id)
        return {}

    def isolated(self, placement: Placement) -> IterationTime:
        return self._time(placement)
