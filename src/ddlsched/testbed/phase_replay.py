"""Exact phase-level replay of a testbed schedule (the ``phased[exact]`` row of the fidelity table).

The same phase physics as ``ddlsched.perf.phased_exact`` (docs/physics.md §11) — every iteration a compute-only
phase of ``c − h``, then a communication phase whose ring sends ``V`` bytes per hop while the hidden compute
``h`` runs, the senders of the moment sharing links by weighted max-min — but for a *schedule*: each job starts
at its (measured) start time, runs its fixed number of iterations and leaves. ``phased_exact.simulate_phases``
answers the steady state of jobs running forever; the testbed needs finite jobs that come and go.

Per job it reports the mean exposed communication per iteration (iteration end − compute end, what the worker
measures as ``comm_s``) and the JCT (first iteration start → last iteration end).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ddlsched.cluster.topology import Cluster
from ddlsched.perf.base import Placement
from ddlsched.perf.phased_exact import PhasedJob, maxmin_rates, phased_job
from ddlsched.testbed.predict import JobPrediction, JobRun

_TINY = 1e-12


def replay_phases(cluster: Cluster, jobs: Sequence[JobRun], *, efficiency: float = 1.0,
                  overlap: float = 0.0) -> dict[str, JobPrediction]:
    """Simulate every phase of every iteration of ``jobs`` on ``cluster`` (link capacities × ``efficiency``;
    ``overlap`` is ω for jobs whose profile sets none). Exact up to float rounding: rates change only at
    phase ends, starts and finishes, which are the events."""
    if not 0 < efficiency <= 1:
        raise ValueError("efficiency must be in (0, 1]")
    cap = [link.capacity_Bps * efficiency for link in cluster.links]
    spec: dict[str, PhasedJob] = {
        j.job_id: phased_job(cluster, Placement(j.job_id, tuple(j.gpus), j.profile()), cap, overlap) for j in jobs}
    preds = {j.job_id: JobPrediction(j.start_s, iters=j.iters) for j in jobs}
    left = {j.job_id: j.iters for j in jobs}
    # per running job: phase 0 = compute only (t_left), 1 = communicating (bytes, latency, hidden compute left)
    phase: dict[str, int] = {}
    t_left: dict[str, float] = {}
    bytes_left: dict[str, float] = {}
    lat_left: dict[str, float] = {}
    hide_left: dict[str, float] = {}
    iter_start: dict[str, float] = {}
    pending = sorted(jobs, key=lambda j: (j.start_s, j.job_id))
    i, now = 0, 0.0

    def begin_iteration(k: str) -> None:
        phase[k], iter_start[k], t_left[k] = 0, now, spec[k].compute_s - spec[k].hidden_s

    while i < len(pending) or phase:
        while i < len(pending) and pending[i].start_s <= now + _TINY:
            k = pending[i].job_id
            i += 1
            if left[k] <= 0:
                preds[k].finish_s = now
                continue
            begin_iteration(k)
        sending = [spec[k] for k in sorted(phase) if phase[k] == 1 and bytes_left[k] > 0]
        rates = maxmin_rates(sending, cap) if sending else {}
        dt = pending[i].start_s - now if i < len(pending) else math.inf
        for k in phase:
            if phase[k] == 0:
                dt = min(dt, t_left[k])
                continue
            if bytes_left[k] > 0:
                dt = min(dt, bytes_left[k] / rates[k])
            elif lat_left[k] > 0:
                dt = min(dt, lat_left[k])
            if hide_left[k] > 0:
                dt = min(dt, hide_left[k])
        if dt == math.inf:
            break
        dt = max(dt, 0.0)
        now += dt
        for k in sorted(phase):
            j = spec[k]
            if phase[k] == 0:
                t_left[k] -= dt
                if t_left[k] <= _TINY:
                    phase[k] = 1
                    bytes_left[k] = j.bytes_per_hop if j.use else 0.0
                    lat_left[k], hide_left[k] = j.latency_s, j.hidden_s
            else:
                if bytes_left[k] > 0:
                    bytes_left[k] -= rates[k] * dt
                    if bytes_left[k] <= 1e-9 * max(j.bytes_per_hop, 1.0):
                        bytes_left[k] = 0.0
                elif lat_left[k] > 0:
                    lat_left[k] = lat_left[k] - dt if lat_left[k] - dt > _TINY else 0.0
                if hide_left[k] > 0:
                    hide_left[k] = hide_left[k] - dt if hide_left[k] - dt > _TINY else 0.0
            if phase[k] == 1 and bytes_left[k] == 0 and lat_left[k] == 0 and hide_left[k] == 0:
                preds[k].comm_total_s += max(0.0, now - iter_start[k] - j.compute_s)
                left[k] -= 1
                if left[k] == 0:
                    preds[k].finish_s = now
                    del phase[k]
                else:
                    begin_iteration(k)
    return preds
