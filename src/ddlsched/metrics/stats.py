"""Confidence intervals over seeds: Student-t 95 % interval of the mean.

half-width = t_{0.975, n−1} · s / √n with s the sample standard deviation (ddof = 1). With one seed there
is no interval (half-width NaN). Quantiles for n−1 ≤ 30 are tabulated; above, the Cornish–Fisher
expansion of t around the normal quantile (error < 1e-4 for df > 30).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

# t_{0.975, df} for df = 1..30
_T975 = (12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004, 2.262157, 2.228139,
         2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905, 2.109816, 2.100922, 2.093024, 2.085963,
         2.079614, 2.073873, 2.068658, 2.063899, 2.059539, 2.055529, 2.051831, 2.048407, 2.045230, 2.042272)
_Z975 = 1.959964


def t975(df: int) -> float:
    """Two-sided 95 % Student-t quantile for ``df`` degrees of freedom."""
    if df < 1:
        raise ValueError("df must be >= 1")
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    return z + g1 / df + g2 / df**2 + g3 / df**3


def mean_ci95(values: Sequence[float]) -> tuple[float, float, int]:
    """(mean, half-width of the t-based 95 % CI, n); NaNs are ignored; half-width NaN when n < 2."""
    xs = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    n = len(xs)
    if n == 0:
        return math.nan, math.nan, 0
    mean = sum(xs) / n
    if n < 2:
        return mean, math.nan, n
    var = sum((x - mean) ** 2 for x in xs) / (n - 1)
    return mean, t975(n - 1) * math.sqrt(var / n), n
