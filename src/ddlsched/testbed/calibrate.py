"""Fit the physics parameters to testbed measurements and save them as a calibration profile (JSON).

Each parameter is fitted on the calibration rows that isolate it (docs/validation.md, "Calibration"):

* **link efficiency e** of the ring cost ``comm = V/(e·r) + 2(n−1)·α`` (docs/physics.md §2; ``V/r`` is the
  max-min model's time at e = 1, α = 0): weighted least squares (rows weighted by 1/measured) over the
  *bandwidth-bound lone* rows only — scenarios with one job whose ring steps are long against the shaper's bucket
  (:func:`row_role`). Latency-bound rows are left out because the token-bucket shaper lets the first bucket of
  every ring step through at line rate, so a short transfer runs faster than the shaped rate and would pull e up;
  shared rows are left out because they also depend on the sharing rule;
* **per-hop latency α ≥ 0** from the *latency-bound lone* rows' residual after e (weighted least squares of
  ``measured − V/(e·r)`` on ``2(n−1)``, clipped at 0: a negative residual is the shaper's burst, not a latency);
* **the TCP rule's γ and κ** (``tcp_exponent``, ``tcp_own_queue``, docs/physics.md §12) on the *shared* rows:
  a grid search, then a pattern search from its best point, minimising the mean squared relative communication
  error of ``phased[exact,fairness=tcp]`` predictions (with the fitted e, α) over the scenarios with two jobs or
  more; saved under ``tcp`` and used by every calibrated ``fairness=tcp`` variant. A parameter no calibration
  row depends on keeps its default;
* every other model in ``PERF_MODELS`` that has an entry in :data:`FREE_PARAMS` (the per-NIC alpha-beta-eta
  model's β, η in ms/MB at 10 GbE-equivalent with ``scale_by_nic``; SJF-BCO's ξ2 and α) by the same pattern
  search on its own replayed predictions over the whole calibration suite. Models without an entry are reported
  uncalibrated.

The profile is loaded with :func:`load_calibration`; :func:`calibrated_cluster` sets α on a cluster and
:func:`ddlsched.testbed.predict.model_params` hands each model the keys its constructor accepts. α is in the
emulation's seconds (it includes the worker's per-step software overhead) — on another cluster, refit it.
"""

from __future__ import annotations

import itertools
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ddlsched.cluster.topology import Cluster
from ddlsched.perf import PERF_MODELS
from ddlsched.perf.tcp_share import DEFAULT_EXPONENT, DEFAULT_OWN_QUEUE
from ddlsched.testbed.executor import RunResult
from ddlsched.testbed.predict import JobRun, predict
from ddlsched.testbed.scenarios import Scenario, base_name, repeat_index


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


# the testbed shaper's bucket, in seconds at the link rate (ddlsched.testbed.fabric: 0.5 ms, ≥ 4 kB)
SHAPER_BUCKET_S = 0.0005
# a lone row is latency-bound when one bucket per ring step is at least this share of its line-rate time
LATENCY_BOUND_SHARE = 0.02


# how the TCP-rule loss combines the repeats of a scenario (docs/validation.md, "Calibration"): "mean" — a job's
# repeats' squared errors averaged; "median" — per job, the median over its repeats of the relative error
TCP_AGGREGATES = ("mean", "median")
TCP_AGGREGATE = "mean"
SPLIT_GRID: tuple[float, ...] = tuple(round(0.025 * k, 3) for k in range(17))  # σ = 0, 0.025, …, 0.4


def row_role(x_bw: float, x_lat: float, jobs_in_scenario: int) -> str:
    """Which parameter a calibration row informs: ``"shared"`` (two jobs or more: the sharing rule's γ, κ),
    ``"latency"`` (one job whose 2(n−1) ring steps × one shaper bucket ≥ :data:`LATENCY_BOUND_SHARE` of its
    line-rate time ``x_bw``: α) or ``"bandwidth"`` (one job otherwise: e)."""
    if jobs_in_scenario > 1:
        return "shared"
    return "latency" if x_lat * SHAPER_BUCKET_S >= LATENCY_BOUND_SHARE * x_bw else "bandwidth"


def fit_ring_cost(rows: Sequence[Mapping[str, Any]]) -> tuple[float, float]:
    """(e, α) from calibration rows (``x_bw``, ``x_lat``, ``measured``, ``role``), rows weighted by 1/measured:
    u = 1/e solves the weighted least-squares normal equation of the bandwidth rows and α that of the latency rows
    (``measured ≈ u·x_bw + α·x_lat`` on both; a 2 × 2 system); if α comes out negative — a latency row running
    faster than the shaped rate — α = 0 and u from the bandwidth rows alone. e is capped at 1. Raises ValueError
    without a bandwidth row."""
    bw = [r for r in rows if r["role"] == "bandwidth"]
    lat = [r for r in rows if r["role"] == "latency"]
    if not bw:
        raise ValueError("calibration: no bandwidth-bound lone-ring row to fit the link efficiency on")

    def normal(rs: Sequence[Mapping[str, Any]], on: str) -> tuple[float, float, float]:
        """Σ w²·z·x_bw, Σ w²·z·x_lat, Σ w²·z·measured with z = the row's ``on`` column."""
        w2 = [1.0 / r["measured"] ** 2 for r in rs]
        return (sum(w * r[on] * r["x_bw"] for w, r in zip(w2, rs, strict=True)),
                sum(w * r[on] * r["x_lat"] for w, r in zip(w2, rs, strict=True)),
                sum(w * r[on] * r["measured"] for w, r in zip(w2, rs, strict=True)))

    b_u, b_a, b_y = normal(bw, "x_bw")
    u, alpha = b_y / b_u, 0.0
    if lat:
        l_u, l_a, l_y = normal(lat, "x_lat")
        det = b_u * l_a - b_a * l_u
        if det != 0:
            u2, a2 = (b_y * l_a - b_a * l_y) / det, (b_u * l_y - l_u * b_y) / det
            if a2 > 0:
                u, alpha = u2, a2
    return min(1.0, 1.0 / u), alpha


def fit(cluster: Cluster, runs: Sequence[tuple[Scenario, RunResult]], *, nic_mbit: float,
        scale: float, tcp_aggregate: str = TCP_AGGREGATE, split_grid: Sequence[float] = SPLIT_GRID) -> dict[str, Any]:
    """Fit e, α (ring cost), γ, κ (TCP rule), σ (uneven split, on ``split_grid``), β, η, … from calibration runs on
    the (scaled, α = 0) ``cluster``; repeated scenarios (``scenarios.calibration_suite``) all enter the fits, their
    repeats combined in the TCP rule's loss as ``tcp_aggregate`` says (:func:`fit_tcp`)."""
    base = replace(cluster, hop_latency_s=0.0)
    rows: list[dict[str, Any]] = []
    for sc, res in runs:
        executed = res.as_executed(sc.jobs)
        pred = predict(base, executed, "maxmin")
        for j in executed:
            x_bw, x_lat = pred[j.job_id].comm_s, 2 * (len(j.gpus) - 1)
            rows.append({"scenario": sc.name, "job": j.job_id, "n": len(j.gpus), "grad_mb": j.grad_mb,
                         "x_bw": x_bw, "x_lat": x_lat, "measured": res.jobs[j.job_id].comm_s,
                         "shared": len(sc.jobs) > 1, "role": row_role(x_bw, x_lat, len(sc.jobs))})
    eff, alpha = fit_ring_cost(rows)
    for r in rows:
        r["fitted"] = r["x_bw"] / eff + r["x_lat"] * alpha
        r["rel_err"] = r["fitted"] / r["measured"] - 1
    used = [abs(r["rel_err"]) for r in rows if r["role"] == "bandwidth"]
    models: dict[str, dict[str, Any]] = {"maxmin": {"efficiency": eff}}
    executed = [(res.as_executed(sc.jobs), {j: m.comm_s for j, m in res.jobs.items()}) for sc, res in runs]
    cal_cluster = replace(cluster, hop_latency_s=alpha)
    for name, spec in FREE_PARAMS.items():
        if name in PERF_MODELS:
            models[name] = fit_black_box(cal_cluster, executed, name, spec)
    shared = [(e, sc.name) for e, (sc, _) in zip(executed, runs, strict=True) if len(sc.jobs) > 1]
    return {
        "kind": "ddlsched-calibration",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "testbed": {"cluster": cluster.name, "nic_mbit": nic_mbit, "scale": scale},
        "hop_latency_s": alpha,
        "common": {"efficiency": eff},
        "models": models,
        "tcp": _with_split(fit_tcp(cal_cluster, [e for e, _ in shared], eff, names=[n for _, n in shared],
                                   aggregate=tcp_aggregate), cal_cluster, shared, eff, split_grid),
        "fit": {"rule": f"e from bandwidth-bound lone rows, α from latency-bound lone rows (2(n−1) × "
                        f"{1e3 * SHAPER_BUCKET_S:g} ms ≥ {100 * LATENCY_BOUND_SHARE:g} % of the line-rate time), "
                        "γ and κ, then σ, from shared rows",
                "rows": rows, "median_rel_err": float(np.median(used)), "max_rel_err": float(np.max(used))},
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


def pattern_search(loss: Callable[[Mapping[str, float]], float], free: Mapping[str, tuple[float, float, float]],
                   additive: Mapping[str, float] | None = None,
                   start: Mapping[str, float] | None = None) -> tuple[dict[str, float], float]:
    """Minimise ``loss`` over the free parameters (initial value, lower, upper bound), from ``start`` if given:
    per parameter, try × and ÷ 2^step and ± step · additive scale (default 0.01, so parameters may reach 0); halve
    the step when nothing improves, stop below 1e-3. Deterministic; a local search (see :func:`grid_search`)."""
    keys = list(free)
    x = {k: (start or {}).get(k, free[k][0]) for k in keys}
    add = {k: (additive or {}).get(k, 0.01) for k in keys}
    best = loss(x)
    step = 1.0
    while step > 1e-3:
        improved = False
        for k in keys:
            lo, hi = free[k][1], free[k][2]
            for cand in (x[k] * 2**step, x[k] / 2**step, x[k] + step * add[k], x[k] - step * add[k]):
                cand = min(hi, max(lo, cand))
                if cand == x[k]:
                    continue
                trial = {**x, k: cand}
                val = loss(trial)
                if val < best:
                    best, x, improved = val, trial, True
        if not improved:
            step /= 2
    return x, best


def fit_black_box(cluster: Cluster, executed: Sequence[tuple[Sequence[JobRun], Mapping[str, float]]], name: str,
                  spec: tuple[dict[str, Any], dict[str, tuple[float, float, float]]]) -> dict[str, Any]:
    """Pattern search over the free parameters of model ``name`` minimising mean squared relative comm error."""
    fixed, free = spec

    def loss(p: Mapping[str, float]) -> float:
        cal = {"models": {name: {**fixed, **p}}}
        err = []
        for jobs, meas in executed:
            pred = predict(cluster, jobs, name, cal)
            err.extend((pred[j].comm_s / meas[j] - 1) ** 2 for j in meas)
        return float(np.mean(err))

    x, best = pattern_search(loss, free)
    return {**fixed, **x, "fit_rmse_rel": best**0.5}


def grid_search(loss: Callable[[Mapping[str, float]], float], free: Mapping[str, tuple[float, float, float]],
                points: int) -> dict[str, float]:
    """The best point of a regular grid of ``points`` values per parameter between its bounds (first found wins
    ties, in the order of the grid: smallest values first). Used before :func:`pattern_search` where the loss has
    plateaus a local search cannot leave (the TCP rule's κ changes nothing until a ring's weighted share drops
    below its own bottleneck's rate)."""
    keys = list(free)
    best, arg = math.inf, {k: free[k][0] for k in keys}
    for combo in itertools.product(*(np.linspace(free[k][1], free[k][2], points) for k in keys)):
        x = {k: float(v) for k, v in zip(keys, combo, strict=True)}
        val = loss(x)
        if val < best:
            best, arg = val, x
    return arg


# the TCP rule's free parameters (initial value = the documented default, bounds) and their additive steps
TCP_FREE: dict[str, tuple[float, float, float]] = {"tcp_exponent": (DEFAULT_EXPONENT, 0.0, 4.0),
                                                   "tcp_own_queue": (DEFAULT_OWN_QUEUE, 0.0, 1.0)}
TCP_STEP = {"tcp_exponent": 0.05, "tcp_own_queue": 0.025}
TCP_GRID = 41  # γ in steps of 0.1, κ of 0.025


def fit_tcp(cluster: Cluster, executed: Sequence[tuple[Sequence[JobRun], Mapping[str, float]]],
            efficiency: float, *, names: Sequence[str] | None = None,
            aggregate: str = TCP_AGGREGATE, grid: int = TCP_GRID) -> dict[str, Any]:
    """γ, κ of the TCP rule fitted on the shared calibration scenarios ``executed`` with the
    ``phased[exact,fairness=tcp]`` replay on the calibrated ``cluster`` (α set) and link ``efficiency``.

    ``names`` are the scenarios' saved names (repeats as ``scenarios.repeat_name`` gives them; default: all
    distinct). The loss is the mean over jobs of the squared relative communication error, a job's repeats
    combined as ``aggregate`` says (:data:`TCP_AGGREGATES`: mean of the squares, or square of the median), so
    every job of the suite weighs alike however often it was run. With repeats, γ, κ are also fitted on each
    repeat alone (its k-th run of every repeated scenario plus the scenarios run once) and reported under
    ``per_repeat``, with every job's measured communication time per repeat under ``measured``. A parameter that
    no row depends on (loss unchanged from its lower to its upper bound at the optimum of the other) keeps its
    default and is listed under ``not_identified``. ``grid``: points per parameter of the first search (tests use
    a coarser one)."""
    if aggregate not in TCP_AGGREGATES:
        raise ValueError(f"TCP-rule loss aggregate {aggregate!r}: expected one of {', '.join(TCP_AGGREGATES)}")
    if not executed:
        return {"tcp_exponent": DEFAULT_EXPONENT, "tcp_own_queue": DEFAULT_OWN_QUEUE,
                "not_identified": sorted(TCP_FREE), "rows": 0}
    names = list(names) if names is not None else [f"s{i}" for i in range(len(executed))]
    if len(names) != len(executed):
        raise ValueError(f"fit_tcp: {len(names)} names for {len(executed)} scenarios")

    cache: dict[tuple[int, tuple[tuple[str, float], ...]], dict[str, float]] = {}

    def predicted(i: int, p: Mapping[str, float]) -> dict[str, float]:
        """Scenario i's predicted comm. time per job (memoised: the per-repeat fits revisit the same grid)."""
        key = (i, tuple(sorted(p.items())))
        if key not in cache:
            pred = predict(cluster, executed[i][0], "phased", {"common": {"efficiency": efficiency}},
                           extra={"exact": True, "fairness": "tcp", **p})
            cache[key] = {j: v.comm_s for j, v in pred.items()}
        return cache[key]

    def errors(p: Mapping[str, float], idx: Sequence[int]) -> dict[tuple[str, str], list[float]]:
        """Relative comm. errors per (scenario, job), one per repeat, of the scenarios ``idx``."""
        out: dict[tuple[str, str], list[float]] = {}
        for i in idx:
            pred, meas = predicted(i, p), executed[i][1]
            for j in meas:
                out.setdefault((base_name(names[i]), j), []).append(pred[j] / meas[j] - 1)
        return out

    def make_loss(idx: Sequence[int]) -> Callable[[Mapping[str, float]], float]:
        def loss(p: Mapping[str, float]) -> float:
            errs = errors(p, idx)
            if aggregate == "median":
                return float(np.mean([float(np.median(e)) ** 2 for e in errs.values()]))
            return float(np.mean([np.mean(np.square(e)) for e in errs.values()]))
        return loss

    everything = range(len(executed))
    x, flat, loss = _fit_tcp_params(make_loss(everything), grid)
    default = loss({k: v[0] for k, v in TCP_FREE.items()})
    out: dict[str, Any] = {**x, "fit_rmse_rel": loss(x) ** 0.5, "default_rmse_rel": default ** 0.5,
                           "not_identified": flat, "rows": sum(len(meas) for _, meas in executed),
                           "aggregate": aggregate}
    counts: dict[str, int] = {}
    for n in names:
        counts[base_name(n)] = counts.get(base_name(n), 0) + 1
    repeats = max(counts.values())
    if repeats > 1:
        out["repeats"] = counts
        out["measured"] = {}
        for i in everything:
            for j, m in executed[i][1].items():
                out["measured"].setdefault(f"{base_name(names[i])}/{j}", []).append(m)
        out["per_repeat"] = []
        for k in range(1, repeats + 1):
            idx = [i for i in everything if repeat_index(names[i]) == k or counts[base_name(names[i])] == 1]
            xk, _, lk = _fit_tcp_params(make_loss(idx), grid)
            out["per_repeat"].append({"repeat": k, **xk, "fit_rmse_rel": lk(xk) ** 0.5,
                                      "scenarios": [names[i] for i in idx]})
    return out




def fit_split(cluster: Cluster, executed: Sequence[tuple[Sequence[JobRun], Mapping[str, float]]],
              efficiency: float, tcp: Mapping[str, float], *, names: Sequence[str] | None = None,
              grid: Sequence[float] = SPLIT_GRID) -> dict[str, Any]:
    """The uneven split σ (docs/physics.md §14) fitted on the shared calibration scenarios ``executed``, after and
    with the TCP rule's γ, κ (``tcp``): the σ of ``grid`` with the least mean squared relative communication
    error of the ``phased[exact,fairness=tcp]`` replay with split noise, a job's repeats averaged as in
    :func:`fit_tcp` (mean of the squares). Returns ``split_noise``, its rms error and the rms error at σ = 0."""
    names = list(names) if names is not None else [f"s{i}" for i in range(len(executed))]
    if not executed:
        return {"split_noise": 0.0, "split_rmse_rel": math.nan, "split_zero_rmse_rel": math.nan}

    def loss(sigma: float) -> float:
        errs: dict[tuple[str, str], list[float]] = {}
        for (jobs, meas), name in zip(executed, names, strict=True):
            pred = predict(cluster, jobs, "phased", {"common": {"efficiency": efficiency}},
                           extra={"exact": True, "fairness": "tcp", "split_noise": sigma,
                                  **{k: tcp[k] for k in TCP_FREE}})
            for j, m in meas.items():
                errs.setdefault((base_name(name), j), []).append(pred[j].comm_s / m - 1)
        return float(np.mean([np.mean(np.square(e)) for e in errs.values()]))

    losses = {sigma: loss(sigma) for sigma in grid}
    best = min(grid, key=lambda sigma: (losses[sigma], sigma))  # ties: the smaller σ
    return {"split_noise": best, "split_rmse_rel": losses[best] ** 0.5,
            "split_zero_rmse_rel": losses[grid[0]] ** 0.5 if grid[0] == 0 else loss(0.0) ** 0.5,
            "split_grid": {str(k): v ** 0.5 for k, v in losses.items()}}


def _with_split(tcp: dict[str, Any], cluster: Cluster, shared: Sequence[tuple[tuple[Sequence[JobRun],
                Mapping[str, float]], str]], efficiency: float, grid: Sequence[float]) -> dict[str, Any]:
    """``tcp`` (γ, κ fitted) with the uneven split σ fitted after it (:func:`fit_split`)."""
    return {**tcp, **fit_split(cluster, [e for e, _ in shared], efficiency, tcp, names=[n for _, n in shared],
                               grid=grid)}


def _fit_tcp_params(loss: Callable[[Mapping[str, float]], float], grid: int = TCP_GRID
                    ) -> tuple[dict[str, float], list[str], Callable[[Mapping[str, float]], float]]:
    """Grid search, then pattern search from its best point; parameters the loss does not depend on get their
    defaults. Returns (γ, κ), the names of those not identified, and ``loss`` itself."""
    x, _ = pattern_search(loss, TCP_FREE, TCP_STEP, start=grid_search(loss, TCP_FREE, grid))
    flat = [k for k in TCP_FREE if loss({**x, k: TCP_FREE[k][1]}) == loss({**x, k: TCP_FREE[k][2]})]
    for k in flat:
        x[k] = TCP_FREE[k][0]
    return x, flat, loss
