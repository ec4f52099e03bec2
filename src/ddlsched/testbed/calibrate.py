"""Fit the physics parameters to testbed measurements and save them as a calibration profile (JSON).

Fitted (docs/physics.md §2 ring cost, docs/policies/adadual.md §2 alpha-beta-eta):

* per-hop latency α and link efficiency e of the ring cost ``comm = V/(e·r) + 2(n−1)·α``, where ``V/r`` is the
  max-min model's communication time at e = 1, α = 0 — a linear least-squares fit over every calibration job,
  rows weighted by 1/measured so short and long transfers count alike;
* every other model in ``PERF_MODELS`` that has an entry in :data:`FREE_PARAMS` (the per-NIC
  alpha-beta-eta model's β, η in ms/MB at 10 GbE-equivalent with ``scale_by_nic``; SJF-BCO's ξ2 and α) by a
  derivative-free search (log-scale pattern search) minimising the mean squared relative error of its own
  replayed predictions over the calibration suite. Models without an entry are reported uncalibrated.

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
from ddlsched.perf import PERF_MODELS
from ddlsched.testbed.executor import RunResult
from ddlsched.testbed.predict import JobRun, predict
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
    rel = [abs(r["fitted"] - r["measured"]) / r["measured"] for r in rows]
    models: dict[str, dict[str, Any]] = {"maxmin": {"efficiency": eff}}
    executed = [(res.as_executed(sc.jobs), {j: m.comm_s for j, m in res.jobs.items()}) for sc, res in runs]
    for name, spec in FREE_PARAMS.items():
        if name in PERF_MODELS:
            models[name] = fit_black_box(replace(cluster, hop_latency_s=alpha), executed, name, spec)
    return {
        "kind": "ddlsched-calibration",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "testbed": {"cluster": cluster.name, "nic_mbit": nic_mbit, "scale": scale},
        "hop_latency_s": alpha,
        "common": {"efficiency": eff},
        "models": models,
        "fit": {"rows": rows, "median_rel_err": float(np.median(rel)), "max_rel_err": float(np.max(rel))},
    }


def save_calibration(profile: Mapping[str, Any], path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(profile, indent=1))
    return p


# name → (fixed parameters, {free parameter: (initial value, lower bound, upper bound)})
FREE_PARAMS: dict[str, tuple[dict[str, Any], dict[str, tuple[float, float, float]]]] = {
    "abe": ({"scale_by_nic": True}, {"beta": (0.856, 1e-3, 100.0), "eta": (0.235, 0.0, 100.0)}),
    "sjf_bco": ({}, {"xi2_s": (0.01, 0.0, 5.0), "alpha": (0.1, 0.0, 10.0)}),
}

# defaults for the "raw" variant (uncalibrated) where the model's own defaults do not fit a scaled testbed
RAW_PARAMS: dict[str, dict[str, Any]] = {"abe": {"scale_by_nic": True}}


def fit_black_box(cluster: Cluster, executed: Sequence[tuple[Sequence[JobRun], Mapping[str, float]]], name: str,
                  spec: tuple[dict[str, Any], dict[str, tuple[float, float, float]]]) -> dict[str, Any]:
    """Pattern search over the free parameters of model ``name`` minimising mean squared relative comm error."""
    fixed, free = spec
    keys = list(free)
    x = {k: free[k][0] for k in keys}

    def loss(p: Mapping[str, float]) -> float:
        cal = {"models": {name: {**fixed, **p}}}
        err = []
        for jobs, meas in executed:
            pred = predict(cluster, jobs, name, cal)
            err.extend((pred[j].comm_s / meas[j] - 1) ** 2 for j in meas)
        return float(np.mean(err))

    best = loss(x)
    step = 1.0  # multiplicative step in log2 units, plus additive for parameters that may be 0
    while step > 1e-3:
        improved = False
        for k in keys:
            lo, hi = free[k][1], free[k][2]
            for cand in (x[k] * 2**step, x[k] / 2**step, x[k] + step * 0.01, x[k] - step * 0.01):
                cand = min(hi, max(lo, cand))
                if cand == x[k]:
                    continue
                trial = {**x, k: cand}
                val = loss(trial)
                if val < best:
                    best, x, improved = val, trial, True
        if not improved:
            step /= 2
    return {**fixed, **x, "fit_rmse_rel": best**0.5}
