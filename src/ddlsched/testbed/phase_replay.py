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
import random
from collections.abc import Sequence

from ddlsched.cluster.topology import Cluster
from ddlsched.perf.base import Placement
from ddlsched.perf.phased_exact import PhaseClock, PhasedJob, phased_job
from ddlsched.perf.tcp_share import DEFAULT_EXPONENT, DEFAULT_OWN_QUEUE, check_params
from ddlsched.testbed.predict import JobPrediction, JobRun

_TINY = 1e-12
SPLIT_DRAWS = 128  # replays averaged when the uneven split is on (docs/physics.md §14)


def replay_phases(cluster: Cluster, jobs: Sequence[JobRun], *, efficiency: float = 1.0,
                  overlap: float = 0.0, fairness: str = "ring",
                  tcp_exponent: float = DEFAULT_EXPONENT,
                  tcp_own_queue: float = DEFAULT_OWN_QUEUE, split_noise: float = 0.0,
                  split_draws: int = SPLIT_DRAWS) -> dict[str, JobPrediction]:
    """Simulate every phase of every iteration of ``jobs`` on ``cluster`` (link capacities × ``efficiency``;
    ``overlap`` is ω for jobs whose profile sets none; the rings sending at once share links max-min per ring, or
    TCP-biased with ``fairness="tcp"`` and its γ, κ, docs/physics.md §12). Exact up to float rounding: rates
    change only at phase ends, starts and finishes, which are the events. With ``split_noise`` σ > 0 every
    communication phase's share is scaled by a random exp(σ·z) (docs/physics.md §14) and the prediction is the
    mean over ``split_draws`` replays seeded 0, 1, … (so it is deterministic)."""
    if not 0 < efficiency <= 1:
        raise ValueError("efficiency must be in (0, 1]")
    if fairness not in ("ring", "tcp"):
        raise ValueError(f"the exact phase replay shares links per 'ring' or 'tcp', not {fairness!r}")
    check_params(tcp_exponent, tcp_own_queue)
    if not split_noise:
        return _replay(cluster, jobs, efficiency, overlap, fairness, tcp_exponent, tcp_own_queue, 0.0, None)
    if isinstance(split_draws, bool) or not isinstance(split_draws, int) or split_draws < 1:
        raise ValueError(f"split_draws must be a positive integer, not {split_draws!r}")
    runs = [_replay(cluster, jobs, efficiency, overlap, fairness, tcp_exponent, tcp_own_queue, split_noise,
                    random.Random(f"split-{d}")) for d in range(split_draws)]
    out = {}
    for j in jobs:
        k = j.job_id
        out[k] = JobPrediction(j.start_s, finish_s=sum(r[k].finish_s for r in runs) / split_draws,
                               comm_total_s=sum(r[k].comm_total_s for r in runs) / split_draws, iters=j.iters)
    return out


def _replay(cluster: Cluster, jobs: Sequence[JobRun], efficiency: float, overlap: float, fairness: str,
            tcp_exponent: float, tcp_own_queue: float, split_noise: float,
            rng: random.Random | None) -> dict[str, JobPrediction]:
    cap = [link.capacity_Bps * efficiency for link in cluster.links]
    spec: dict[str, PhasedJob] = {
        j.job_id: phased_job(cluster, Placement(j.job_id, tuple(j.gpus), j.profile()), cap, overlap) for j in jobs}
    preds = {j.job_id: JobPrediction(j.start_s, iters=j.iters) for j in jobs}
    left = {j.job_id: j.iters for j in jobs}
    clock = PhaseClock(cap, tcp_exponent if fairness == "tcp" else None, tcp_own_queue, split_noise, rng)
    iter_start: dict[str, float] = {}
    pending = sorted(jobs, key=lambda j: (j.start_s, j.job_id))
    i, now = 0, 0.0
    while i < len(pending) or clock.jobs:
        while i < len(pending) and pending[i].start_s <= now + _TINY:
            k = pending[i].job_id
            i += 1
            if left[k] <= 0:
                preds[k].finish_s = now
                continue
            clock.add(spec[k])
            iter_start[k] = now
        dt, finished = clock.step(pending[i].start_s - now if i < len(pending) else math.inf)
        if dt == math.inf:
            break
        now += dt
        for k in finished:
            preds[k].comm_total_s += max(0.0, now - iter_start[k] - spec[k].compute_s)
            left[k] -= 1
            iter_start[k] = now
            if left[k] == 0:
                preds[k].finish_s = now
                clock.remove(k)
    return preds
