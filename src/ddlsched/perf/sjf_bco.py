"""SJF-BCO's contention model (Yu et al. MobiHoc'22; docs/policies/sjf-bco.md §2 eqs. 6–8) as an incremental PerfModel.

For job j with w_j workers and gradient m_j, placed with y_js GPUs on server s::

    p_j = max_{s : 0 < y_js < w_j} #{multi-server jobs j' with 0 < y_j's < w_j'}      (6)  (0 for 1 server)
    k_j = max(1, ξ1 · p_j)                                                            (7)  (clamp [I])
    B_j = b_i                      if j uses one server
        = b_e / f(α, k_j),  f(α, k) = k + α(k − 1)   otherwise
    γ_j = ξ2 · #servers(j)
    τ_j = (m_j/w_j)·2(w_j − 1)/B_j + (m_j/w_j)(w_j − 1)/C + γ_j + compute_j           (8)

Units (ours, [I]): bytes and seconds. ``b_e`` is the smallest NIC capacity among the job's servers
(``Cluster.nic_Bps``), ``b_i`` the intra-server link (``Cluster.intra_gbps``) unless ``b_i_Bps`` is given;
``C`` (``reduce_Bps``) is the GPU's reduction throughput in bytes/s; ``ξ2`` (``xi2_s``) is seconds of
overhead per server spanned; compute_j is :func:`~ddlsched.perf.base.compute_time` (Δf·M + Δb in eq. 8).
A single-worker job has no ring term (w − 1 = 0) but still pays γ = ξ2·1, as eq. (8) writes it.

Contention in this model is *static*: every running multi-server job counts as a contender all the time;
the ξ1 < 1 discount is how the paper accounts for jobs alternating compute and communication.
"""

from __future__ import annotations

from typing import Any

from ddlsched.cluster.topology import GBIT, Cluster
from ddlsched.perf.base import IterationTime, Placement, compute_time
from ddlsched.perf.per_server import PerServerContention


def degradation(alpha: float, k: float) -> float:
    """f(α, k) = k + α(k − 1): f(α, 1) = 1, increasing in k (docs/policies/sjf-bco.md §2, the paper's example form)."""
    return k + alpha * (k - 1.0)


class SjfBcoContention(PerServerContention):
    name = "sjf_bco"
    description = "Yu et al. 2022 eq. (8): multi-server rings get b_e/f(α,k), k = ξ1·#contenders; γ = ξ2·#servers"

    def __init__(self, cluster: Cluster, xi1: float = 1.0, xi2_s: float = 0.0, alpha: float = 0.1,
                 reduce_Bps: float = 100e9, b_i_Bps: float | None = None) -> None:
        super().__init__(cluster)
        if not 0 < xi1 <= 1:
            raise ValueError("xi1 must be in (0, 1]")
        if xi2_s < 0 or alpha < 0 or reduce_Bps <= 0:
            raise ValueError("xi2_s and alpha must be >= 0 and reduce_Bps > 0")
        self.xi1, self.xi2_s, self.alpha, self.reduce_Bps = xi1, xi2_s, alpha, reduce_Bps
        self.b_i_Bps = b_i_Bps if b_i_Bps is not None else cluster.intra_gbps * GBIT

    def params(self) -> dict[str, Any]:
        return {"xi1": self.xi1, "xi2_s": self.xi2_s, "alpha": self.alpha, "reduce_Bps": self.reduce_Bps,
                "b_i_Bps": self.b_i_Bps}

    # ------------------------------------------------------------------ formulas
    def contention_degree(self, job_id: str) -> int:
        """p_j of eq. (6) for a placed job (0 for a single-server job)."""
        return self.busiest_nic(job_id)

    def iteration_time(self, p: Placement, degree: int) -> IterationTime:
        """τ_j of eq. (8) for placement ``p`` at contention degree p_j = ``degree``."""
        servers = sorted(self.cluster.servers_of(p.gpus))
        w = p.num_gpus
        m = p.profile.grad_bytes
        if len(servers) <= 1:
            bw = self.b_i_Bps
        else:
            k = max(1.0, self.xi1 * degree)
            bw = min(self.cluster.nic_Bps(s) for s in servers) / degradation(self.alpha, k)
        comm = 0.0
        if w > 1:
            comm = (m / w) * 2 * (w - 1) / bw + (m / w) * (w - 1) / self.reduce_Bps
        comm += self.xi2_s * len(servers)
        return IterationTime(compute_time(self.cluster, p), comm)

    # ------------------------------------------------------------------ protocol
    def job_time(self, placement: Placement) -> IterationTime:
        return self.iteration_time(placement, self.contention_degree(placement.job_id))
