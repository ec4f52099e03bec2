"""What a live run's starts and preemptions cost, from the executor's measurements, in run seconds — the figures
``ddlsched live run --compare-sim`` gives the simulation of the same jobs (docs/live-ray.md, "Where a start goes").

``startup_s``: median time from a first launch to the job's first step; ``resume_s``: the same for a relaunch after
a preemption or a lost worker (it includes loading the checkpoint); ``drain_s``: median time from a revoke to the
job's GPUs being free. The simulator's ``restart_penalty_s`` is the time a restarted job loses before it makes
progress again, which live is ``resume_s``; the first start-up and the drain have no simulator knob (the fluid model
starts a job and frees a preempted job's GPUs at once) and are reported beside the comparison instead.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ddlsched.workload.profiles import ModelCatalog


def _median(xs: Sequence[float]) -> float | None:
    return round(statistics.median(xs), 4) if xs else None


def start_costs(startups: Sequence[Mapping[str, Any]], drains: Sequence[float], time_scale: float) -> dict[str, Any]:
    """Medians (run seconds; None where nothing was measured) and counts of an executor's ``startups`` rows and
    ``drains`` (wall seconds)."""
    first = [float(r["total"]) * time_scale for r in startups if r.get("attempt") == 1 and r.get("total") is not None]
    again = [float(r["total"]) * time_scale for r in startups if r.get("attempt", 1) > 1 and r.get("total") is not None]
    return {"startup_s": _median(first), "startup_max_s": round(max(first), 4) if first else None,
            "starts": len(first), "resume_s": _median(again), "resumes": len(again),
            "drain_s": _median([d * time_scale for d in drains]), "drains": len(drains)}


def sim_restart_penalty(costs: Mapping[str, Any]) -> float | None:
    """The restart penalty the simulation should charge: the measured resume time, else (no relaunch measured) the
    measured first start-up (a relaunch does at least as much), else None."""
    for key in ("resume_s", "startup_s"):
        if costs.get(key) is not None:
            return float(costs[key])
    return None


def scaled_catalog(catalog: ModelCatalog, grad_scale: float, compute_scale: float) -> ModelCatalog:
    """The model profiles as the profile job runs them under ``grad_scale`` / ``compute_scale`` (the Ray
    executor's options): the all-reduce is ``grad_scale`` × the profile's gradient, the compute ``compute_scale`` ×
    its compute time. The simulation of a live run's jobs must model those, not the unscaled profiles."""
    if grad_scale == 1.0 and compute_scale == 1.0:
        return catalog

    def ms(x: float | None) -> float | None:
        return None if x is None else x * compute_scale

    return ModelCatalog([replace(p, grad_mb=p.grad_mb * grad_scale, compute_ms=p.compute_ms * compute_scale,
                                 fw_ms=ms(p.fw_ms), bw_ms=ms(p.bw_ms))
                         for p in (catalog[n] for n in catalog.names())])


__all__ = ["scaled_catalog", "sim_restart_penalty", "start_costs"]
