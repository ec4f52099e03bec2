"""Least-squares fit of Ada-SRSF's β and η to the authors' measured contention table (docs/policies/adadual.md §2).

Model: t_k(M) = M·(kβ + (k − 1)η) ms. The fit minimises the squared *relative* error
Σ ((t_model − t_measured)/t_measured)² over all 18 cells of ``results_avg.csv`` (3 message sizes ×
k ∈ {1,2,3,4,8,16}) with no intercept (α = 0, as in the paper's simulator), subject to η ≥ 0.

Finding (reported, not hidden): the unconstrained fit gives η < 0 — measured latency grows slightly
*less* than k× from k = 1 to k = 16 on average (k = 2 costs 1.5–2.3× but k = 16 only ≈ 10.9–14.6×),
so the linear model cannot fit the whole table with a positive contention overhead. The non-negative
fit therefore lands on η = 0 (plain fair sharing); the unconstrained values and per-cell residuals are
kept in the profile for transparency.
Regenerate the shipped profile with ``python -m ddlsched.perf.abe_fit > src/ddlsched/data/profiles/abe_fit.json``.
"""

from __future__ import annotations

import json

import numpy as np

# Mean per-job all-reduce latency (ms) of k concurrent OSU MPI jobs, from HKBU-HPML/dl-scheduling
# offline/network_contention/results_avg.csv as reproduced in docs/policies/adadual.md §2 [C].
MEASURED_K = (1, 2, 3, 4, 8, 16)
MEASURED_MS: dict[float, tuple[float, ...]] = {
    10.0: (144, 219, 336, 406, 829, 1574),
    20.0: (211, 489, 650, 845, 1692, 3105),
    40.0: (422, 893, 1340, 1649, 3261, 6171),
}


def fit_beta_eta(table: dict[float, tuple[float, ...]] = MEASURED_MS,
                 ks: tuple[int, ...] = MEASURED_K) -> dict[str, object]:
    """Return β, η (ms/MB), per-cell residuals (model − measured, ms) and the RMS relative error."""
    rows, y, cells = [], [], []
    for m, times in sorted(table.items()):
        for k, t in zip(ks, times, strict=True):
            rows.append((m * k, m * (k - 1)))
            y.append(float(t))
            cells.append((m, k))
    a = np.array(rows, dtype=float)
    b = np.array(y)
    aw = a / b[:, None]  # relative-error weighting
    ones = np.ones_like(b)
    (beta_u, eta_u), *_ = np.linalg.lstsq(aw, ones, rcond=None)
    beta, eta = float(beta_u), float(eta_u)
    if eta < 0:  # active constraint: refit β alone with η = 0
        eta = 0.0
        beta = float(np.dot(aw[:, 0], ones) / np.dot(aw[:, 0], aw[:, 0]))
    pred = a @ np.array([beta, eta])
    resid = pred - b
    return {
        "beta_ms_per_mb": round(float(beta), 6),
        "eta_ms_per_mb": round(float(eta), 6),
        "fit": "relative least squares of t = M(k*beta + (k-1)*eta) over all cells, no intercept, eta >= 0",
        "unconstrained_beta_ms_per_mb": round(float(beta_u), 6),
        "unconstrained_eta_ms_per_mb": round(float(eta_u), 6),
        "source": "HKBU-HPML/dl-scheduling offline/network_contention/results_avg.csv (docs/policies/adadual.md §2)",
        "rms_residual_ms": round(float(np.sqrt(np.mean(resid ** 2))), 3),
        "rms_relative_error": round(float(np.sqrt(np.mean((resid / b) ** 2))), 4),
        "residuals_ms": [{"message_mb": m, "k": k, "measured_ms": t, "model_ms": round(float(p), 2),
                          "residual_ms": round(float(r), 2)}
                         for (m, k), t, p, r in zip(cells, y, pred, resid, strict=True)],
    }


if __name__ == "__main__":  # pragma: no cover
    print(json.dumps(fit_beta_eta(), indent=1))
