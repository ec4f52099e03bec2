"""Ada-SRSF's per-NIC contention model (Wang et al. 2020; docs/policies/adadual.md §2) for the fluid engine.

A multi-server job's all-reduce of M MB occupies the NIC of every server it spans. With k concurrent
transfers on its busiest NIC, the transfer runs at speed(k) = 1 / ((k − 1)·η + k·β) MB/ms, so it takes

    t_k(M) = M · (k·β + (k − 1)·η)  ms          (α = 0; no 2(n−1)/n factor: the ring constant is in β)

A job on one server communicates for free (the authors' simulator). Compute is
:func:`~ddlsched.perf.base.compute_time`; iteration = compute + t_k (no overlap).

**Fluid simplification (ours):** the fluid engine has no compute/communication phases, so every running
multi-server job is treated as communicating *always* — k on a NIC is the number of multi-server jobs using
it. This is pessimistic; ``ddlsched.engine.tasklevel`` models each transfer and its k exactly.

Constants: ``beta``/``eta`` in ms/MB. Defaults are the paper's 10 GbE values (β = 0.856, η = 0.235) [C];
``profile="abe_fit"`` loads the least-squares fit to the authors' measured table (``data/profiles/abe_fit.json``,
made by :func:`ddlsched.perf.abe_fit.fit_beta_eta`). ``scale_by_nic=True`` rescales β and η by
10 Gb/s ÷ (slowest NIC of the job) so the constants follow the cluster's NIC speed [I].
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from ddlsched.cluster.topology import GBIT, Cluster
from ddlsched.perf.base import IterationTime, Placement, compute_time
from ddlsched.perf.per_server import PerServerContention

PAPER_BETA_MS_PER_MB = 0.856
PAPER_ETA_MS_PER_MB = 0.235


def transfer_ms(size_mb: float, k: int, beta: float, eta: float) -> float:
    """t_k(M) = M·(kβ + (k−1)η) ms for a transfer done entirely under k-way contention."""
    return size_mb * (k * beta + (k - 1) * eta)


def speed_mb_per_ms(k: int, beta: float, eta: float) -> float:
    """speed(k) = 1 / ((k−1)η + kβ) MB/ms."""
    return 1.0 / ((k - 1) * eta + k * beta)


def load_profile(name: str) -> dict[str, Any]:
    """A fitted β/η profile shipped in ``ddlsched/data/profiles/NAME.json``."""
    text = resources.files("ddlsched").joinpath("data", "profiles", f"{name}.json").read_text()
    return json.loads(text)


class AbeContention(PerServerContention):
    name = "abe"
    description = "Wang et al. 2020: k transfers on the busiest NIC take M·(kβ+(k−1)η) ms (always-on comm)"

    def __init__(self, cluster: Cluster, beta: float | None = None, eta: float | None = None,
                 profile: str | None = None, scale_by_nic: bool = False) -> None:
        super().__init__(cluster)
        if profile is not None:
            prof = load_profile(profile)
            beta = prof["beta_ms_per_mb"] if beta is None else beta
            eta = prof["eta_ms_per_mb"] if eta is None else eta
        self.beta = PAPER_BETA_MS_PER_MB if beta is None else float(beta)
        self.eta = PAPER_ETA_MS_PER_MB if eta is None else float(eta)
        if self.beta <= 0 or self.eta < 0:
            raise ValueError("beta must be > 0 and eta >= 0")
        self.profile = profile
        self.scale_by_nic = scale_by_nic

    def params(self) -> dict[str, Any]:
        return {"beta": self.beta, "eta": self.eta, "scale_by_nic": self.scale_by_nic}

    def k_of(self, job_id: str) -> int:
        """Concurrent transfers on the job's busiest NIC (0 for a single-server job)."""
        return self.busiest_nic(job_id)

    def _time(self, p: Placement, k: int) -> IterationTime:
        servers = self._servers[p.job_id]
        comm = 0.0
        if len(servers) > 1:
            scale = 1.0
            if self.scale_by_nic:
                scale = 10 * GBIT / min(self.cluster.nic_Bps(s) for s in servers)
            comm = transfer_ms(p.profile.grad_mb, k, self.beta * scale, self.eta * scale) / 1000.0
        return IterationTime(compute_time(self.cluster, p), comm)

    def job_time(self, placement: Placement) -> IterationTime:
        return self._time(placement, self.k_of(placement.job_id))
