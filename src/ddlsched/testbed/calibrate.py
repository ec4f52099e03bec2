"""Fit the physics parameters to testbed measurements and save them as a calibration profile (JSON).

Fitted (ALGORITHMS.md §1.5 ring cost, §3.2 alpha-beta-eta):

* per-hop latency α and link efficiency e of the ring cost ``comm = V/(e·r) + 2(n−1)·α``, where ``V/r`` is the
  max-min model's communication time at e = 1, α = 0 — a linear least-squares fit over every calibration job,
  rows weighted by 1/measured so short and long transfers count alike;
* the per-NIC alpha-beta-eta model's β = 1/(e·C_nic) (s/byte) and contention penalty η from the two jobs
  sharing NICs: t = V·(2β + η) + 2(n−1)α.

The profile is loaded with :func:`load_calibration`; :func:`calibrated_cluster` sets α on a cluster and
:func:`ddlsched.testbed.predict.model_params` hands each model the keys its constructor accepts. α is in the
emulation's seconds (it includes the worker's per-step software overhead) — on another cluster, refit it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ddlsched.cluster.topology import Cluster
from ddlsched.perf.base import ring_bytes_per_hop
from ddlsched.testbed.executor import RunResult
from ddlsched.testbed.predict import predict
from ddlsched.testbed.scenarios import Scenario


def load_calibration(path: str | Path) -> dict[str, Any]:
    data = json.loads(Path(path).read_text())
    if data.get("kind") != "ddlsched-calibration":
        raise ValueError(f"{path}: not a ddlsched calibration profile")
    return data


def calibrated_cluster(cluster: Cluster, calibration: Mapping[str, Any] | None) -> Cluster:
    """``cluster`` with the calibrated per-hop latency α (unchanged without a calibration)."""
    if not calibration:
        return cluster
    return replace(cluster, hop_latency_s=float(calibration["hop_latency_s"]))


def fit(cluster: Cluster, runs: Sequence[tuple[Scenario, RunResult]], *, nic_mbit: float,
        scale: float) -> dict[str, Any]:
    """Fit α, e, β, η from calibration runs on the (scaled, α = 0) ``cluster``."""
    base = replace(cluster, hop_latency_s=0.0)
    rows: list[dict[str, Any]] = []
    for sc, res in runs:
        executed = res.as_executed(sc.jobs)
        pred = predict(base, executed, "maxmin")
        for j in executed:
            rows.append({"scenario": sc.name, "job": j.job_id, "n": len(j.gpus), "grad_mb": j.grad_mb,
                         "x_bw": pred[j.job_id].comm_s, "x_lat": 2 * (len(j.gpus) - 1),
                         "measured": res.jobs[j.job_id].comm_s, "shared": len(sc.jobs) > 1})
    a = np.array([[r["x_bw"], r["x_lat"]] for r in rows])
    y = np.array([r["measured"] for r in rows])
    w = 1.0 / y
    coef, *_ = np.linalg.lstsq(a * w[:, None], y * w, rcond=None)
    inv_eff, alpha = float(coef[0]), float(coef[1])
    if alpha < 0:  # latency cannot be negative: refit bandwidth only
        alpha = 0.0
        inv_eff = float(np.sum(a[:, 0] * y * w * w) / np.sum(a[:, 0] ** 2 * w * w))
    eff = min(1.0, 1.0 / inv_eff)
    for r in rows:
        r["fitted"] = r["x_bw"] / eff + r["x_lat"] * alpha
    nic_Bps = nic_mbit * 1e6 / 8
    beta = 1.0 / (eff * nic_Bps)
    etas = []
    for sc, res in runs:
        if len(sc.jobs) != 2:
            continue
        for j in sc.jobs:
            v = ring_bytes_per_hop(j.grad_mb * 1e6, len(j.gpus))
            etas.append((res.jobs[j.job_id].comm_s - 2 * (len(j.gpus) - 1) * alpha) / v - 2 * beta)
    eta = float(np.mean(etas)) if etas else 0.0
    rel = [abs(r["fitted"] - r["measured"]) / r["measured"] for r in rows]
    return {
        "kind": "ddlsched-calibration",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "testbed": {"cluster": cluster.name, "nic_mbit": nic_mbit, "scale": scale},
        "hop_latency_s": alpha,
        "common": {"efficiency": eff},
        "models": {
            "maxmin": {"efficiency": eff},
            "abe": {"beta": beta, "eta": eta, "eta_over_beta": eta / beta, "alpha": alpha},
            "sjf_bco": {"efficiency": eff},
        },
        "fit": {"rows": rows, "median_rel_err": float(np.median(rel)), "max_rel_err": float(np.max(rel))},
    }


def save_calibration(profile: Mapping[str, Any], path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(profile, indent=1))
    return p
