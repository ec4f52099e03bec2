"""Step 1 of Hare's offline Algorithm 1: a relaxation that gives every round of every job a start time x̂
(docs/policies/hare.md §9).

The paper relaxes the per-GPU non-overlap constraint into a Queyranne-type (quadratic) inequality and solves a
mixed-integer quadratic program with a commercial solver. We solve instead a *time-indexed linear* relaxation of the
same problem at the level of (job, GPU type, time interval) [I], with HiGHS (``highspy``, the optional extra
``ddlsched[lp]``):

* variables u[j,k,l] ≥ 0: tasks of job j run on GPUs of type k during interval l (fractional);
* every task is done: Σ_{k,l} u[j,k,l] = W_j = (rounds left) × n_j;
* GPU capacity: Σ_j u[j,k,l] · p[j,k] ≤ N_k · |l|;
* a job uses at most n_j GPUs at once: Σ_k u[j,k,l] · p[j,k] ≤ n_j · a[j,l], and the round barrier bounds its rate:
  Σ_k u[j,k,l] ≤ a[j,l] · n_j / (p_best_j + s_j), where a[j,l] is the part of interval l after j's release;
* objective: min Σ_j (w_j / W_j) Σ_{k,l} u[j,k,l] · (midpoint of l), the weighted mean busy time (a standard
  surrogate for weighted completion time).

Intervals: ``intervals`` equal steps up to an estimate of the makespan (last release + total work on the whole
cluster at each job's best speed), plus one open-ended interval that keeps the program feasible.

**Fallback** (no ``highspy``, or ``solver="greedy"``): the same interval program filled greedily — jobs in Smith's
rule order (w_j over the job's stand-alone time on the whole cluster, as ``hare-offline``), each taking, interval by
interval from its release, the fastest types' capacity left, up to its width and rate bounds. The result is a
feasible point of the LP, not its optimum. :func:`relax` says which one ran.

x̂ of round r of job j = the time its fractional schedule has done r · n_j tasks (tasks spread evenly over the part
of each interval after its release).
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ddlsched.errors import ConfigError


@dataclass(frozen=True)
class RelaxJob:
    """What the relaxation needs of a job (times in seconds)."""

    job_id: str
    release: float
    weight: float
    n: int
    rounds: int
    task_s: Mapping[str, float]
    sync_s: float = 0.0


def highs_available() -> bool:
    try:
        import highspy  # noqa: F401
    except ImportError:
        return False
    return True


def _grid(jobs: Sequence[RelaxJob], counts: Mapping[str, int], intervals: int) -> np.ndarray:
    """Interval boundaries: ``intervals`` equal steps up to a makespan estimate, then one open-ended interval."""
    t0 = min(j.release for j in jobs)
    cap = sum(counts.values())
    work = sum(j.n * j.rounds * min(j.task_s[k] for k in counts) for j in jobs)
    longest = max(j.rounds * (min(j.task_s[k] for k in counts) + j.sync_s) for j in jobs)
    end = max(j.release for j in jobs) + max(work / cap, longest)
    steps = np.linspace(t0, t0 + (end - t0) * 1.0, intervals + 1) if end > t0 else np.array([t0, t0 + 1.0])
    # a safe upper bound: every job after the others, one task at a time at its rate bound
    serial = sum(j.n * j.rounds * max(max(j.task_s[k] for k in counts), (min(j.task_s.values()) + j.sync_s) / j.n)
                 for j in jobs)
    return np.append(steps, steps[-1] + serial + longest + 1.0)


def _avail(jobs: Sequence[RelaxJob], b: np.ndarray) -> np.ndarray:
    """a[j,l]: seconds of interval l after job j's release."""
    rel = np.array([j.release for j in jobs])[:, None]
    return np.clip(b[1:][None, :] - np.maximum(b[:-1][None, :], rel), 0.0, None)


def relax(jobs: Sequence[RelaxJob], counts: Mapping[str, int], intervals: int = 40,
          solver: str = "auto") -> tuple[dict[str, list[float]], str]:
    """x̂ (start time of every round) per job, and the method that produced it: "lp" (HiGHS) or "greedy".

    ``solver``: "auto" (HiGHS if installed, else greedy), "highs" (fail if not installed) or "greedy".
    """
    if solver not in ("auto", "highs", "greedy"):
        raise ConfigError(f"solver must be auto, highs or greedy, not {solver!r}", field="solver")
    if solver == "highs" and not highs_available():
        raise ConfigError("solver='highs' needs the optional package highspy (pip install 'ddlsched[lp]')",
                          field="solver")
    jobs = [j for j in jobs if j.rounds > 0]
    if not jobs:
        return {}, "none"
    types = sorted(counts)
    b = _grid(jobs, counts, intervals)
    a = _avail(jobs, b)
    use_lp = solver == "highs" or (solver == "auto" and highs_available())
    u = _solve_lp(jobs, types, counts, b, a) if use_lp else None
    method = "lp"
    if u is None:
        u, method = _greedy(jobs, types, counts, b, a), "greedy"
    return {j.job_id: _round_starts(j, u[i].sum(axis=0), b, a[i]) for i, j in enumerate(jobs)}, method


def _rate(j: RelaxJob) -> float:
    return j.n / (min(j.task_s.values()) + j.sync_s)


def _solve_lp(jobs: Sequence[RelaxJob], types: list[str], counts: Mapping[str, int], b: np.ndarray,
              a: np.ndarray) -> np.ndarray | None:
    """u[j,k,l] from HiGHS, or None if it did not reach an optimum."""
    import highspy

    J, K, L = len(jobs), len(types), len(b) - 1
    mid = (b[:-1] + b[1:]) / 2
    length = b[1:] - b[:-1]
    p = np.array([[j.task_s[k] for k in types] for j in jobs])
    idx = np.arange(J * K * L).reshape(J, K, L)
    cost = np.array([j.weight / (j.n * j.rounds) for j in jobs])[:, None, None] * mid[None, None, :]
    cost = np.broadcast_to(cost, (J, K, L)).ravel()
    ub = np.where(np.broadcast_to(a[:, None, :], (J, K, L)) > 0, np.inf, 0.0).ravel()
    h = _quiet_highs(highspy)
    h.setOptionValue("threads", 1)
    inf = highspy.kHighsInf
    h.addVars(J * K * L, np.zeros(J * K * L), np.where(np.isinf(ub), inf, ub))
    h.changeColsCost(J * K * L, np.arange(J * K * L, dtype=np.int32), cost)
    rows_lo, rows_hi, starts, index, value = [], [], [], [], []

    def row(lo: float, hi: float, cols: np.ndarray, vals: np.ndarray) -> None:
        starts.append(len(index))
        index.extend(cols.tolist())
        value.extend(vals.tolist())
        rows_lo.append(lo)
        rows_hi.append(hi)

    for i, j in enumerate(jobs):
        w = float(j.n * j.rounds)
        row(w, w, idx[i].ravel(), np.ones(K * L))
        rate = _rate(j)
        for l in range(L):
            if a[i, l] > 0:
                row(-inf, j.n * a[i, l], idx[i, :, l], p[i])
                row(-inf, rate * a[i, l], idx[i, :, l], np.ones(K))
    for k, t in enumerate(types):
        for l in range(L):
            row(-inf, counts[t] * length[l], idx[:, k, l], p[:, k])
    h.addRows(len(rows_lo), np.array(rows_lo), np.array(rows_hi), len(index), np.array(starts, dtype=np.int32),
              np.array(index, dtype=np.int32), np.array(value))
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    x = np.array(h.getSolution().col_value)
    return np.clip(x, 0.0, None).reshape(J, K, L)


def _quiet_highs(highspy: Any) -> Any:
    """A HiGHS instance without its start-up banner (printed by the C++ constructor on file descriptor 1)."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            h = highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    h.setOptionValue("output_flag", False)
    return h


def _smith(j: RelaxJob, counts: Mapping[str, int]) -> float:
    cap = sum(n / j.task_s[k] for k, n in counts.items())
    return j.weight / (j.rounds * (j.n / cap + j.sync_s))


def _greedy(jobs: Sequence[RelaxJob], types: list[str], counts: Mapping[str, int], b: np.ndarray,
            a: np.ndarray) -> np.ndarray:
    """Feasible fill of the interval program in Smith's-rule order (module docstring)."""
    J, K, L = len(jobs), len(types), len(b) - 1
    left = np.array([[counts[t] * (b[l + 1] - b[l]) for l in range(L)] for t in types])  # GPU-seconds per (k, l)
    u = np.zeros((J, K, L))
    order = sorted(range(J), key=lambda i: (-_smith(jobs[i], counts), jobs[i].release, jobs[i].job_id))
    for i in order:
        j = jobs[i]
        need = float(j.n * j.rounds)
        ks = sorted(range(K), key=lambda k: (j.task_s[types[k]], types[k]))
        rate = _rate(j)
        for l in range(L):
            if need <= 1e-12:
                break
            if a[i, l] <= 0:
                continue
            gpu_s, tasks = j.n * a[i, l], rate * a[i, l]
            if l == L - 1:  # the open-ended interval takes whatever is left
                gpu_s = tasks = math.inf
            for k in ks:
                p = j.task_s[types[k]]
                x = min(need, tasks, gpu_s / p, left[k, l] / p if l < L - 1 else math.inf)
                if x <= 0:
                    continue
                u[i, k, l] += x
                need -= x
                tasks -= x
                gpu_s -= x * p
                left[k, l] -= x * p
                if need <= 1e-12:
                    break
    return u


def _round_starts(j: RelaxJob, per_interval: np.ndarray, b: np.ndarray, a: np.ndarray) -> list[float]:
    """Time at which the fractional schedule has done r · n tasks, r = 0 .. rounds − 1."""
    cum = np.concatenate([[0.0], np.cumsum(per_interval)])
    out = []
    for r in range(j.rounds):
        target = r * j.n
        l = int(np.searchsorted(cum, target, side="right")) - 1
        l = min(max(l, 0), len(per_interval) - 1)
        while l < len(per_interval) - 1 and per_interval[l] <= 1e-12:
            l += 1
        start = b[l + 1] - a[l]  # the part of the interval after the release
        frac = (target - cum[l]) / per_interval[l] if per_interval[l] > 1e-12 else 0.0
        out.append(float(max(j.release, start + min(max(frac, 0.0), 1.0) * a[l])))
    return out
