"""One policy on one job list under the GPU-sharing physics, reduced to the metrics the sharma2024 and luo2024
reproductions tabulate (one row per policy × seed; ``figures.aggregate`` turns rows into means and t-CIs)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ddlsched.cluster.topology import Cluster
from ddlsched.engine import SimConfig, run_simulation
from ddlsched.metrics import summarize
from ddlsched.policies import make_policy
from ddlsched.workload.jobspec import JobSpec

METRICS = ("avg_jct_s", "p99_jct_s", "makespan_s", "avg_queueing_s", "comm_overhead_s", "comm_overhead_pct",
           "preemptions")


def run_one(cluster: Cluster, jobs: Sequence[JobSpec], policy: str, perf_params: dict[str, Any],
            seed: int, policy_params: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run ``policy`` (with ``policy_params``) under the ``sharing`` performance model; its row: policy, seed, job
    counts and METRICS."""
    cfg = SimConfig(perf_model="sharing", perf_params=perf_params, seed=seed, record_timeseries=False)
    res = run_simulation(cluster, jobs, make_policy(policy, policy_params), cfg)
    s = summarize(res)
    return {"policy": policy, "seed": seed, "jobs": s["jobs"], "unfinished": s["jobs_unfinished"],
            "offered_load": s.get("offered_load"), **{m: s.get(m) for m in METRICS},
            "mechanisms": s.get("mechanisms", {})}
