"""No contention: every job communicates as if alone on the network (docs/physics.md §5).

Not placement-blind: a ring split over servers still runs at its NIC (or rack uplink) speed; for a model where a
job runs at its trace duration wherever it is placed, use ``flat`` (``ddlsched.perf.flat``).

comm = 2(w−1)·α + 2(w−1)/w · M / B, with B the slowest link on the ring's path (intra-server egress for a
job inside one server, the NIC otherwise, a rack uplink across racks), each link taken at full capacity.
"""

from __future__ import annotations

from collections.abc import Mapping

from ddlsched.perf.base import IterationTime, PerfModel, Placement, compute_time, ring_bytes_per_hop


class NoContention(PerfModel):
    name = "none"
    description = ("no contention, but split rings run at NIC speed: each ring gets its slowest link's full capacity, "
                   "whatever else runs")

    def _time(self, p: Placement) -> IterationTime:
        n = p.num_gpus
        if n <= 1:
            return IterationTime(compute_time(self.cluster, p), 0.0)
        links = self.cluster.links
        bottleneck = min(links[lid].capacity_Bps for hop in self.cluster.ring_hops(p.gpus) for lid in hop)
        comm = ring_bytes_per_hop(p.profile.grad_bytes, n) / bottleneck + 2 * (n - 1) * self.cluster.hop_latency_s
        return IterationTime(compute_time(self.cluster, p), comm)

    def add(self, placement: Placement) -> Mapping[str, IterationTime]:
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
