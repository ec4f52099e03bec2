"""Per-job network sensitivity σ_j and its class, computed from the physics (docs/policies/delay-sched.md §2 [I]).

    σ_j = τ_j(worst placement) / τ_j(consolidated placement) − 1

τ is the perf model's *isolated* iteration time (``SchedulerView.estimate``), so the congestion factor of the
``sharing`` perf model and the topology's link speeds enter; the worst placement is one GPU per server dealt
over the racks (``locality.worst_gpus``), the consolidated one ``Cluster.consolidated_gpus``.

Classes: **high** if σ ≥ ``high`` (0.5), **medium** if σ ≥ ``medium`` (0.1), else **low** — thresholds
configurable [I]. Results are cached per (model, GPU count).
"""

from __future__ import annotations

from ddlsched.engine.jobview import JobView
from ddlsched.engine.view import SchedulerView
from ddlsched.policies.locality import worst_gpus

HIGH, MEDIUM, LOW = "high", "medium", "low"
CLASSES = (HIGH, MEDIUM, LOW)


class Sensitivity:
    def __init__(self, high: float = 0.5, medium: float = 0.1) -> None:
        if not 0 <= medium <= high:
            raise ValueError("need 0 <= medium <= high sensitivity thresholds")
        self.high, self.medium = high, medium
        self._cache: dict[tuple[str, int], float] = {}

    def reset(self) -> None:
        self._cache.clear()

    def sigma(self, job: JobView, view: SchedulerView) -> float:
        key = (job.profile.name, job.num_gpus)
        v = self._cache.get(key)
        if v is None:
            n = job.num_gpus
            best = view.cluster.consolidated_gpus(n)
            if n <= 1 or best is None:
                v = 0.0
            else:
                t_best = view.estimate(job, best).total_s
                t_worst = view.estimate(job, worst_gpus(view.cluster, n)).total_s
                v = max(0.0, t_worst / t_best - 1.0) if t_best > 0 else 0.0
            self._cache[key] = v
        return v

    def classify(self, sigma: float) -> str:
        return HIGH if sigma >= self.high else MEDIUM if sigma >= self.medium else LOW

    def cls(self, job: JobView, view: SchedulerView) -> str:
        return self.classify(self.sigma(job, view))
