"""Fairness metrics of a run whose cluster has tenants (names and meanings: ``ddlsched.vocabulary.FAIRNESS_FIELDS``;
formulations: ``docs/policies/fairness.md``). Computed from the per-job records only, so a run read back from its
folder gives the same figures.

* per tenant: jobs, avg and p95 JCT (over the measured jobs), GPU-time received and entitled (whole run);
* the share-over-time table (``tenant_shares.csv``): per time bucket and tenant, GPUs demanded, entitled and
  received;
* Jain's index over the tenants' normalised shares (received ÷ entitled);
* per job ρ = jct_s ÷ isolated_s (``fairness.csv``), with its max and the fraction of jobs with ρ > 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ddlsched.engine.result import Records

BUCKETS = 100
"""The whole run (first arrival to last finish) is cut into this many equal buckets for the share-over-time table."""
RHO_TOL = 1e-9
"""ρ counts as > 1 only above 1 + this (float noise of a job that ran exactly its isolated time)."""


def water_fill(capacity: float, demand: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Weighted max-min fair split of ``capacity`` among claimants with ``demand`` (each gets at most its demand;
    the rest is split in proportion to ``weight`` among those still unsatisfied)."""
    out = np.zeros_like(demand, dtype=float)
    left = float(capacity)
    active = [i for i in range(len(demand)) if demand[i] > 0]
    while active and left > 0:
        level = left / sum(float(weight[i]) for i in active)
        sated = [i for i in active if demand[i] <= level * weight[i]]
        if not sated:
            for i in active:
                out[i] = level * weight[i]
            break
        for i in sated:
            out[i] = demand[i]
            left -= float(demand[i])
        active = [i for i in active if i not in set(sated)]
    return out


def jain(x: Sequence[float]) -> float:
    """Jain's index (Σx)² ÷ (n Σx²): 1 when every x is equal, 1/n when one holds everything."""
    a = np.asarray(x, dtype=float)
    if a.size == 0 or not np.any(a):
        return math.nan
    return float(a.sum() ** 2 / (a.size * float((a * a).sum())))


def _overlap(lo: np.ndarray, hi: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Per interval (row) and bucket (column): the length of [lo, hi] ∩ [edges[k], edges[k+1]]."""
    cum = np.clip(edges[None, :] - lo[:, None], 0.0, (hi - lo)[:, None])  # length of [lo, min(t, hi)]
    return np.diff(cum, axis=1)


def jobs_in_system_avg(arrival: np.ndarray, finish: np.ndarray) -> np.ndarray:
    """Per job: the time-average, over [its arrival, its finish], of the number of jobs in the system (arrived,
    not finished; the job itself included)."""
    n = arrival.size
    if n == 0:
        return np.zeros(0)
    times = np.concatenate([arrival, finish])
    steps = np.concatenate([np.ones(n), -np.ones(n)])
    order = np.lexsort((-steps, times))  # at one instant, arrivals before finishes (a job is never at 0 jobs)
    t, s = times[order], steps[order]
    count = np.cumsum(s)  # jobs in the system from t[k] on
    area = np.concatenate([[0.0], np.cumsum(count[:-1] * np.diff(t))])  # ∫ count from t[0] to t[k]

    def integral(x: np.ndarray) -> np.ndarray:
        k = np.searchsorted(t, x, side="right") - 1
        return area[k] + count[k] * (x - t[k])

    span = finish - arrival
    total = integral(finish) - integral(arrival)
    return np.divide(total, span, out=np.ones(n), where=span > 0)


def tenant_of_records(records: Records, tenants: Any) -> list[str]:
    return [tenants.of(u or None) for u in records.column("user")]


def fairness(records: Sequence[dict[str, Any]], tenants: Any, cluster_gpus: int,
             measured: np.ndarray | None = None) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """(the summary's fairness keys, the per-job ρ rows, the share-over-time rows) of a run's completed jobs.

    ``measured`` selects the jobs of the measurement window (per-job figures); shares are over the whole run."""
    recs = Records.of(records)
    names = tenants.names
    empty = {"tenants": {n: _tenant_row(np.zeros(0), 0.0, 0.0) for n in names}, "jain_index": None,
             "rho_max": None, "rho_gt1_frac": None, "share_bucket_s": None}
    if not len(recs):
        return empty, [], []
    gpus, arrival, start, finish, jct, run, ideal = recs.float_columns(
        ("num_gpus", "arrival_s", "first_start_s", "finish_s", "jct_s", "run_s", "ideal_run_s"))
    owner = tenant_of_records(recs, tenants)
    idx = {n: i for i, n in enumerate(names)}
    who = np.array([idx[o] for o in owner], dtype=np.int64)
    sel = np.ones(len(recs), dtype=bool) if measured is None else measured

    # per job ρ (Themis): isolated = ideal run time × average number of jobs in the system over its lifetime
    n_avg = jobs_in_system_avg(arrival, finish)
    isolated = ideal * n_avg
    rho = np.divide(jct, isolated, out=np.ones_like(jct), where=isolated > 0)
    ids = recs.column("job_id")
    rho_rows = [{"job_id": ids[i], "tenant": owner[i], "jct_s": float(jct[i]), "ideal_run_s": float(ideal[i]),
                 "jobs_in_system_avg": float(n_avg[i]), "isolated_s": float(isolated[i]), "rho": float(rho[i])}
                for i in np.flatnonzero(sel)]

    # shares over time
    t0, t1 = float(arrival.min()), float(finish.max())
    edges = np.linspace(t0, t1, BUCKETS + 1) if t1 > t0 else np.array([t0, t0 + 1.0])
    width = np.diff(edges)
    held = np.maximum(finish - start, 0.0)
    rate = np.divide(gpus * run, held, out=np.zeros_like(gpus), where=held > 0)  # GPUs held, spread evenly
    received = _overlap(start, finish, edges) * rate[:, None]
    demanded = _overlap(arrival, finish, edges) * gpus[:, None]
    k = len(names)
    rec_t = np.zeros((k, width.size))
    dem_t = np.zeros((k, width.size))
    np.add.at(rec_t, who, received)
    np.add.at(dem_t, who, demanded)
    weights = np.array([tenants.tenants[n].weight for n in names])
    ent_t = np.stack([water_fill(cluster_gpus, dem_t[:, b] / width[b], weights) * width[b]
                      for b in range(width.size)], axis=1)
    share_rows = [{"bucket_start_s": float(edges[b]), "bucket_s": float(width[b]), "tenant": names[i],
                   "demand_gpus": float(dem_t[i, b] / width[b]), "entitled_gpus": float(ent_t[i, b] / width[b]),
                   "received_gpus": float(rec_t[i, b] / width[b])}
                  for b in range(width.size) for i in range(k)]
    got = gpus * run  # exact per job: the spread above only decides when
    per: dict[str, Any] = {}
    shares = []
    for i, n in enumerate(names):
        mine = who == i
        row = _tenant_row(jct[mine & sel], float(got[mine].sum()), float(ent_t[i].sum()))
        per[n] = row
        if row["gpu_s_entitled"] > 0:
            shares.append(row["normalised_share"])
    j = jain(shares)
    measured_rho = rho[sel]
    out = {"tenants": per, "jain_index": None if math.isnan(j) else j,
           "rho_max": float(measured_rho.max()) if measured_rho.size else None,
           "rho_gt1_frac": float(np.mean(measured_rho > 1 + RHO_TOL)) if measured_rho.size else None,
           "share_bucket_s": float(width[0])}
    return out, rho_rows, share_rows


def _tenant_row(jct: np.ndarray, received: float, entitled: float) -> dict[str, Any]:
    return {"jobs": int(jct.size), "avg_jct_s": float(jct.mean()) if jct.size else None,
            "p95_jct_s": float(np.percentile(jct, 95)) if jct.size else None,
            "gpu_s_received": received, "gpu_s_entitled": entitled,
            "normalised_share": received / entitled if entitled > 0 else None}
