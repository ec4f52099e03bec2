"""Placement-blind physics: a job runs at its reference iteration wherever it is placed (docs/physics.md §5).

Iteration = compute on its GPUs (the slowest worker's type paces the ring, as in every model) + the communication
its ring would have *alone on the consolidated placement* of its size (``Cluster.consolidated_gpus``), whatever
GPUs it actually got and whatever else runs. On a cluster of reference-speed GPUs a job therefore runs exactly
its trace duration: no slow-down for a ring split over servers or racks, no contention. This is the network
trace-driven simulators without a topology assume; compare ``none`` (no contention, but a split ring runs at its
slowest link, usually the NIC) and ``maxmin`` (contention too).
"""

from __future__ import annotations

from ddlsched.cluster.topology import Cluster
from ddlsched.perf.base import IterationTime, Placement, compute_time
from ddlsched.perf.nocontention import NoContention


class FlatNetwork(NoContention):
    """``none``'s rule applied to the consolidated placement of the job's size instead of its own GPUs."""

    name = "flat"
    description = "placement-blind: every ring communicates as if consolidated and alone (trace durations kept)"

    def __init__(self, cluster: Cluster) -> None:
        super().__init__(cluster)
        self._comm: dict[tuple[float, int], float] = {}

    def _time(self, p: Placement) -> IterationTime:
        n = p.num_gpus
        if n <= 1:
            return IterationTime(compute_time(self.cluster, p), 0.0)
        key = (p.profile.grad_bytes, n)
        comm = self._comm.get(key)
        if comm is None:
            gpus = self.cluster.consolidated_gpus(n)
            if gpus is None:  # more workers than GPUs: cannot be placed; keep the call total
                raise ValueError(f"a ring of {n} workers does not fit the cluster's {self.cluster.num_gpus} GPUs")
            comm = self._comm[key] = self._ring_comm(gpus, p.profile.grad_bytes)
        return IterationTime(compute_time(self.cluster, p), comm)
