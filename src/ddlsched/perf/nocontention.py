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

    def _ring_comm(self, gpus: tuple[int, ...] | list[int], grad_bytes: float) -> float:
        """A ring over ``gpus`` alone on the network: 2(w−1)/w·M at its slowest link's capacity, plus latency."""
        c, n = self.cluster, len(gpus)
        bottleneck = min(c.links[lid].capacity_Bps for hop in c.ring_hops(gpus) for lid in hop)
        return ring_bytes_per_hop(grad_bytes, n) / bottleneck + 2 * (n - 1) * c.hop_latency_s

    def _time(self, p: Placement) -> IterationTime:
        comm = 0.0 if p.num_gpus <= 1 else self._ring_comm(p.gpus, p.profile.grad_bytes)
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
