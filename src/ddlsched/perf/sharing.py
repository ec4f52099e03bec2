"""GPU sharing, gradient accumulation and network congestion on top of any network model
(docs/policies/gpu-sharing.md §2 ξ and g(s); docs/policies/delay-sched.md §2 congestion factor c).

``SharingPerf`` wraps a registered network model (``network``, default ``DEFAULT_PERF_MODEL``) and rewrites each job's
iteration time:

    τ_j = ξ_j · g(s_j) · compute_j + c_j · comm_j            (xi_scope="compute", the default)
    τ_j = ξ_j · ( g(s_j) · compute_j + c_j · comm_j )        (xi_scope="iteration", the behaviour before 2026-11-25)

* compute_j, comm_j: the wrapped network model's figures (contention included);
* g(s) = 1 + accum_penalty·(s − 1) for s = ``accum_steps`` gradient-accumulation steps [I];
* ξ_j = max over the jobs k sharing any of j's GPUs of ξ[model_j][model_k] (the slowest worker paces the
  ring), 1 when j shares no GPU (``ddlsched.perf.interference``); two share jobs packed on a GPU by their shares
  (``Placement.share`` > 0 for both, docs/traces.md "Fractional GPUs and GPU sharing") do not count as partners:
  each runs at the speed its trace recorded on its share. By default ξ scales the compute part only:
  the bundled ξ values are Gavel's *single-GPU* pair measurements, which contain no communication, and under
  time-slicing one job's all-reduce overlaps its partner's kernels; two sharing jobs that also share a link are
  already slowed by the wrapped network model. ``xi_scope="iteration"`` scales the whole iteration, as a table
  profiled on whole multi-GPU iterations (the authors' per-GPU-count table) would
  (docs/policies/gpu-sharing.md §2);
* c_j — network congestion [I] (docs/policies/delay-sched.md §2 "global congested-network multiplier", emulating
background traffic):
  1 for a job inside one server, ``congestion`` for a job spanning servers of one rack,
  ``congestion · rack_congestion`` for a job spanning racks. Defaults 1 (no congestion).

A job that starts sharing a GPU or whose partner leaves is re-timed (returned by ``add``/``remove``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from ddlsched.cluster.topology import Cluster
from ddlsched.perf.base import DEFAULT_PERF_MODEL, IterationTime, PerfModel, Placement
from ddlsched.perf.interference import ACCUM_PENALTY, Interference, accum_slowdown


class SharingPerf(PerfModel):
    name = "sharing"
    description = ("wraps a network model (param network=...) with GPU-sharing slowdown ξ (Gavel-derived), "
                   "gradient-accumulation g(s) and a congestion factor for multi-server jobs")

    def __init__(self, cluster: Cluster, network: str = DEFAULT_PERF_MODEL,
                 network_params: dict[str, Any] | None = None,
                 congestion: float = 1.0, rack_congestion: float = 1.0, accum_penalty: float = ACCUM_PENALTY,
                 interference: dict[str, Any] | None = None,
                 xi_scope: Literal["compute", "iteration"] = "compute") -> None:
        super().__init__(cluster)
        from ddlsched.perf import make_perf_model

        if network == self.name:
            raise ValueError("the sharing model cannot wrap itself")
        if congestion < 1 or rack_congestion < 1 or accum_penalty < 0:
            raise ValueError("congestion and rack_congestion must be >= 1, accum_penalty >= 0")
        if xi_scope not in ("compute", "iteration"):
            raise ValueError(f"xi_scope must be 'compute' or 'iteration', got {xi_scope!r}")
        self.xi_scope = xi_scope
        self.network, self.network_params = network, dict(network_params or {})
        self.congestion, self.rack_congestion, self.accum_penalty = congestion, rack_congestion, accum_penalty
        self.interference_params = dict(interference or {})
        self.inner = make_perf_model(network, cluster, **self.network_params)
        self.xi_table = Interference(**self.interference_params)
        self._raw: dict[str, IterationTime] = {}
        self._gpu_jobs: dict[int, list[str]] = {}
        self._cfactor: dict[str, float] = {}

    def params(self) -> dict[str, Any]:
        return {"network": self.network, "network_params": self.network_params, "congestion": self.congestion,
                "rack_congestion": self.rack_congestion, "accum_penalty": self.accum_penalty,
                "interference": self.interference_params, "xi_scope": self.xi_scope}

    # ------------------------------------------------------------------ helpers
    def congestion_factor(self, gpus: tuple[int, ...]) -> float:
        c = self.cluster
        if len(c.servers_of(gpus)) <= 1:
            return 1.0
        if len(c.racks_of(gpus)) <= 1:
            return self.congestion
        return self.congestion * self.rack_congestion

    def partners(self, job_id: str) -> list[str]:
        out: list[str] = []
        for g in self._placements[job_id].gpus:
            for k in self._gpu_jobs.get(g, ()):
                if k != job_id and k not in out:
                    out.append(k)
        return out

    def xi_of(self, job_id: str) -> float:
        """ξ of the job: the largest over its partners, except partners that are, like it, share jobs packed by
        share (both ``Placement.share`` > 0): their trace speed was measured on that share, so no slowdown."""
        p = self._placements[job_id]
        model = p.profile.name
        return max((self.xi_table.xi(model, q.profile.name) for q in map(self._placements.__getitem__,
                                                                           self.partners(job_id))
                    if not (p.share > 0.0 and q.share > 0.0)), default=1.0)

    def _final(self, job_id: str) -> IterationTime:
        raw = self._raw[job_id]
        p = self._placements[job_id]
        xi = self.xi_of(job_id)
        t = IterationTime(xi * accum_slowdown(p.accum_steps, self.accum_penalty) * raw.compute_s,
                          (xi if self.xi_scope == "iteration" else 1.0) * self._cfactor[job_id] * raw.comm_s)
        self._times[job_id] = t
        return t

    # ------------------------------------------------------------------ protocol
    def add(self, placement: Placement) -> Mapping[str, IterationTime]:
        jid = placement.job_id
        if jid in self._placements:
            raise ValueError(f"job {jid} is already placed")
        changed_raw = self.inner.add(placement)
        self._placements[jid] = placement
        self._cfactor[jid] = self.congestion_factor(placement.gpus)
        self._raw.update(changed_raw)
        for g in placement.gpus:
            self._gpu_jobs.setdefault(g, []).append(jid)
        touched = set(changed_raw) | {jid} | set(self.partners(jid))
        return {j: self._final(j) for j in sorted(touched)}

    def remove(self, job_id: str) -> Mapping[str, IterationTime]:
        partners = self.partners(job_id)
        for g in self._placements[job_id].gpus:
            jobs = self._gpu_jobs[g]
            jobs.remove(job_id)
            if not jobs:
                del self._gpu_jobs[g]
        changed_raw = self.inner.remove(job_id)
        self._placements.pop(job_id)
        self._times.pop(job_id)
        self._raw.pop(job_id)
        self._cfactor.pop(job_id)
        self._raw.update(changed_raw)
        touched = (set(changed_raw) | set(partners)) - {job_id}
        return {j: self._final(j) for j in sorted(touched)}

    def advance(self, now: float) -> Mapping[str, IterationTime]:
        changed_raw = self.inner.advance(now)
        self._raw.update(changed_raw)
        return {j: self._final(j) for j in sorted(changed_raw)}

    def next_change(self) -> float:
        return self.inner.next_change()

    def alone(self, job_id: str) -> IterationTime:
        raw = self.inner.alone(job_id)
        return IterationTime(raw.compute_s, self._cfactor[job_id] * raw.comm_s)

    def isolated(self, placement: Placement) -> IterationTime:
        raw = self.inner.isolated(placement)
        return IterationTime(accum_slowdown(placement.accum_steps, self.accum_penalty) * raw.compute_s,
                             self.congestion_factor(placement.gpus) * raw.comm_s)
