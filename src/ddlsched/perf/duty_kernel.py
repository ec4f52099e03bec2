"""The expectation at the heart of the phased models, for many links at once (docs/physics.md §11).

For the rings on one link, with loads a_k and independent senders X_i ~ Bernoulli(d_i), every ring k needs

    E_k = E[1 / (a_k + Σ_{i≠k} a_i X_i)] = ∫₀¹ z^(a_k − 1) · Π_{i≠k} (1 − d_i + d_i z^(a_i)) dz

(the integral form: 1/x = ∫₀¹ z^(x−1) dz, and the X_i are independent). Two exact evaluations:

* **integer loads** (equal weights, or loads on an integer grid): the integrand is a polynomial of degree W − 1,
  W = Σ a_i, so Gauss–Legendre quadrature with ⌈W/2⌉ nodes is exact. The leave-one-out products come from
  prefix and suffix products (no division), and every term is positive: no cancellation;
* **real loads on a few rings** (unequal TCP weights, ≤ 8 rings): the sum over the 2^(n−1) sets of other
  senders, term by term.

A :class:`DutyBatches` holds the links of one component grouped by shape (rings, nodes), with everything that
does not change between rounds of the fixed point precomputed; :meth:`DutyBatches.shares` evaluates every link
in a few array operations per shape. A link's result depends on its own rings, loads and duty cycles and on its
shape alone, never on which other links share its batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

EXACT_SETS_MAX = 8  # rings on a link with real loads: the sum over sets of senders (2^(n−1) terms per ring)


@lru_cache(maxsize=64)
def _nodes(q: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Legendre nodes and weights on [0, 1], q of them."""
    x, w = np.polynomial.legendre.leggauss(q)
    return (x + 1.0) / 2.0, w / 2.0


@lru_cache(maxsize=16)
def _sets(n: int) -> np.ndarray:
    """All 2^n sets of n rings as a (2^n, n) boolean matrix."""
    return ((np.arange(2 ** n)[:, None] >> np.arange(n)[None, :]) & 1).astype(bool)


def _shape(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def _exclusive_products(f: np.ndarray) -> np.ndarray:
    """For every position k along axis 1 of ``f`` (3-D): the product over all other positions (prefix × suffix:
    no division, so a factor that underflows to 0 does no harm)."""
    n = f.shape[1]
    if n == 1:
        return np.ones_like(f)
    pre = np.cumprod(f, axis=1)
    suf = np.cumprod(f[:, ::-1], axis=1)[:, ::-1]
    out = np.empty_like(f)
    out[:, 0] = suf[:, 1]
    out[:, n - 1] = pre[:, n - 2]
    if n > 2:
        np.multiply(pre[:, :n - 2], suf[:, 2:], out=out[:, 1:n - 1])
    return out


class _IntegerBatch:
    """Links with integer loads, padded to N rings and Q nodes (a padded ring never sends: its factor is 1)."""

    def __init__(self, members: list[tuple[list[int], list[int], np.ndarray]], n: int, q: int, dummy: int) -> None:
        g = len(members)
        z, w = _nodes(q)
        loads = np.zeros((g, n), dtype=np.int64)
        self.idx = np.full((g, n), dummy, dtype=np.int64)
        self.factor = np.zeros((g, n))
        for i, (idx, ms, factor) in enumerate(members):
            loads[i, :len(ms)] = ms
            self.idx[i, :len(idx)] = idx
            self.factor[i, :len(ms)] = factor
        self.zm = z[None, None, :] ** loads[:, :, None]  # z^(a_i)
        self.wz = w[None, None, :] * z[None, None, :] ** np.maximum(loads - 1, 0)[:, :, None]  # w·z^(a_k − 1)

    def shares(self, duty: np.ndarray) -> np.ndarray:
        d = duty[self.idx][:, :, None]
        f = 1.0 - d + d * self.zm
        return self.factor * np.sum(_exclusive_products(f) * self.wz, axis=2)


class _SetBatch:
    """Links with real loads on n rings (n ≤ :data:`EXACT_SETS_MAX`): the sum over sets of other senders."""

    def __init__(self, members: list[tuple[list[int], list[float], np.ndarray]], n: int) -> None:
        self.idx = np.array([m[0] for m in members], dtype=np.int64)
        loads = np.array([m[1] for m in members], dtype=float)
        self.factor = np.array([m[2] for m in members], dtype=float)
        self.sets = _sets(n)  # (S, n)
        others = loads @ self.sets.T  # (g, S): the load of every set
        # 1 / (a_k + load of the set) where k is not in the set, else 0
        with np.errstate(divide="ignore"):
            inv = 1.0 / (loads[:, None, :] + others[:, :, None])
        self.inv = np.where(self.sets[None, :, :], 0.0, inv).transpose(0, 2, 1).copy()  # (g, n, S)

    def shares(self, duty: np.ndarray) -> np.ndarray:
        d = duty[self.idx][:, None, :]  # (g, 1, n)
        p = np.where(self.sets[None, :, :], d, 1.0 - d)  # (g, S, n): each ring's factor for each set
        excl = _exclusive_products(p.transpose(0, 2, 1))  # (g, n, S)
        return self.factor * np.sum(excl * self.inv, axis=2)


class DutyBatches:
    """The links of one component, each ``(ring indices, loads, factor per ring, exact)``: with integer loads
    (``exact`` false) ``factor_k · E_k`` uses the quadrature, with real loads the sum over sets. :meth:`shares`
    gives, for every ring, the smallest ``factor_k · E_k`` over its links (``inf`` where it is on none)."""

    def __init__(self, rings: int, links: Sequence[tuple[Sequence[int], Sequence[float], Sequence[float], bool]]):
        self.rings = rings
        by_shape: dict[tuple[str, int, int], list] = {}
        for idx, loads, factor, exact in links:
            n = len(idx)
            if exact:
                if n > EXACT_SETS_MAX:
                    raise ValueError(f"real loads on {n} rings: at most {EXACT_SETS_MAX} (put them on a grid)")
                by_shape.setdefault(("sets", n, 0), []).append((list(idx), [float(a) for a in loads],
                                                                 np.asarray(factor, dtype=float)))
            else:
                ms = [int(a) for a in loads]
                if any(m < 1 or m != a for m, a in zip(ms, loads, strict=True)):
                    raise ValueError(f"integer loads >= 1 expected, not {list(loads)}")
                q = _shape((sum(ms) + 1) // 2)
                by_shape.setdefault(("int", _shape(n), q), []).append((list(idx), ms, np.asarray(factor, float)))
        self.batches: list[_IntegerBatch | _SetBatch] = []
        self.targets: list[np.ndarray] = []
        for (kind, n, q), members in sorted(by_shape.items()):
            batch = _IntegerBatch(members, n, q, rings) if kind == "int" else _SetBatch(members, n)
            self.batches.append(batch)
            self.targets.append(batch.idx.ravel())

    def shares(self, duty: np.ndarray) -> np.ndarray:
        """``duty``: one duty cycle per ring. Returns the smallest share of every ring over its links."""
        padded = np.append(duty, 0.0)  # the padding ring (index ``rings``) never sends
        best = np.full(self.rings + 1, np.inf)
        for batch, target in zip(self.batches, self.targets, strict=True):
            np.minimum.at(best, target, batch.shares(padded).ravel())
        return best[:self.rings]


def leave_one_out(loads: Sequence[float], duty: Sequence[float], exact: bool = False) -> list[float]:
    """E_k for every ring of one link (integer loads unless ``exact``); see the module docstring."""
    n = len(loads)
    if n == 0:
        return []
    (batch,) = DutyBatches(n, [(range(n), loads, [1.0] * n, exact)]).batches
    return [float(x) for x in batch.shares(np.append(np.asarray(duty, dtype=float), 0.0))[0][:n]]
