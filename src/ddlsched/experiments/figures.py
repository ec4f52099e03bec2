"""Tables and figures of the reproductions, in one style.

Every reproduction reports a metric over seeds the same way (``docs/reproductions.md``, "How results are shown"):

* **tables** give the mean, the half-width of the Student-t 95 % confidence interval of the mean
  (``ddlsched.metrics.stats.mean_ci95``; empty with one seed), the minimum and maximum over seeds;
* **figures** draw the mean (a bar or a line), its 95 % t-interval (only with ≥ 2 seeds, clipped at the metric's
  range, e.g. 0 for times), every seed as a point, a categorical axis where the variable is categorical (κ, a
  policy, a setting), and the paper's figure as a red diamond where the paper gives one. The caption under each
  figure states "mean, 95 % t-CI over n seeds, dots = seeds". Figures are 7.5 × 4.2 in at 110 dpi (825 × 462 px),
  fonts ≥ 10 pt.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ddlsched.metrics.stats import mean_ci95

SIZE_IN, DPI, FONT = (7.5, 4.2), 110, 10


# ------------------------------------------------------------------ numbers
def seed_stats(values: Sequence[float]) -> tuple[float, float, float, float]:
    """(mean, 95 % t-CI half-width — NaN with one seed —, min, max) over seeds."""
    vals = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    if not vals:
        return math.nan, math.nan, math.nan, math.nan
    mean, half, _ = mean_ci95(vals)
    return mean, half, min(vals), max(vals)


def aggregate(rows: Sequence[Mapping[str, Any]], group: Sequence[str], metrics: Sequence[str]
              ) -> list[dict[str, Any]]:
    """Per group (first-seen order): ``seeds``, and for every metric its mean and ``<metric>_ci95``."""
    by: dict[tuple, list[Mapping[str, Any]]] = {}
    for r in rows:
        by.setdefault(tuple(r[g] for g in group), []).append(r)
    out = []
    for k, rs in by.items():
        row: dict[str, Any] = dict(zip(group, k, strict=True))
        row["seeds"] = len(rs)
        for m in metrics:
            mean, half, _, _ = seed_stats([float(r[m]) for r in rs if r.get(m) is not None])
            row[m], row[m + "_ci95"] = mean, half
        out.append(row)
    return out


# ------------------------------------------------------------------ tables
def _cell(v: object) -> str:
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:.6g}"
    return str(v)


def write_csv(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """Rows of dicts as CSV (floats with 6 significant digits, NaN as empty)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    cols = list(rows[0]) if rows else []
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: _cell(v) for k, v in r.items()})


def markdown(rows: Sequence[Mapping[str, Any]], cols: Sequence[tuple[str, str, Callable[[Any], str]]]) -> str:
    """A Markdown table: ``cols`` = (header, key, formatter)."""
    head = "| " + " | ".join(c[0] for c in cols) + " |"
    sep = "|" + "|".join("---" for _ in cols) + "|"
    body = ["| " + " | ".join(fmt(r.get(key)) for _, key, fmt in cols) + " |" for r in rows]
    return "\n".join([head, sep, *body]) + "\n"


def write_table(out: Path, name: str, header: Sequence[str], rows: Sequence[Sequence[object]], title: str) -> str:
    """Write ``name.csv`` and ``name.md`` (with ``title`` as its heading); return the Markdown text."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"{name}.csv", "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows([[_cell(v) for v in r] for r in rows])

    def fmt(v: object) -> str:
        if isinstance(v, float):
            return "–" if math.isnan(v) else f"{v:.4g}"
        return str(v)

    lines = [f"### {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(v) for v in r) + " |" for r in rows]
    md = "\n".join(lines) + "\n"
    (out / f"{name}.md").write_text(md)
    return md


def hours(v: Any) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{float(v) / 3600:.2f}"


def pct(v: Any) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{float(v):+.1f} %"


# ------------------------------------------------------------------ figures
def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": FONT, "axes.titlesize": FONT + 1, "legend.fontsize": FONT - 1})
    return plt


def _interval(values: Sequence[float], lower: float | None, upper: float | None) -> tuple[float, float, float]:
    """(mean, error below, error above) with the t-interval clipped to [lower, upper]; no interval with n < 2."""
    mean, half, _, _ = seed_stats(values)
    if math.isnan(half):
        return mean, 0.0, 0.0
    lo, hi = mean - half, mean + half
    if lower is not None:
        lo = max(lo, lower)
    if upper is not None:
        hi = min(hi, upper)
    return mean, mean - lo, hi - mean


def _caption(fig: Any, n: int, extra: str = "") -> None:
    what = f"mean, 95 % t-CI over {n} seeds, dots = seeds" if n >= 2 else "one seed: no interval"
    fig.text(0.01, 0.01, what + (f"; {extra}" if extra else ""), fontsize=FONT - 2, color="0.35")


def _save(fig: Any, plt: Any, path: Path) -> None:
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, metadata={"Software": None})
    plt.close(fig)


def plot_bars(path: Path, groups: Sequence[str], series: Mapping[str, Sequence[Sequence[float]]], ylabel: str,
              title: str, *, lower: float | None = 0.0, upper: float | None = None,
              paper: Mapping[str, float] | None = None) -> None:
    """Grouped bars: ``series[label][i]`` holds the per-seed values of group ``groups[i]``; ``paper`` maps a
    group to the paper's figure (a red diamond at the group's centre)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=SIZE_IN)
    k = max(1, len(series))
    width = 0.8 / k
    n_seeds = 0
    for i, (label, per_group) in enumerate(series.items()):
        xs = [g + (i - (k - 1) / 2) * width for g in range(len(groups))]
        stats = [_interval(v, lower, upper) for v in per_group]
        ax.bar(xs, [s[0] for s in stats], width * 0.92, label=label if k > 1 else None,
               yerr=[[s[1] for s in stats], [s[2] for s in stats]], capsize=3, alpha=0.85)
        for x, vals in zip(xs, per_group, strict=True):
            ax.plot([x] * len(vals), list(vals), "o", ms=3, color="black", alpha=0.6, zorder=3)
            n_seeds = max(n_seeds, len(vals))
    if paper:
        px = [groups.index(g) for g in paper if g in groups]
        ax.plot(px, [paper[g] for g in paper if g in groups], "D", color="red", ms=7, label="paper", zorder=4)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(list(groups), rotation=20 if max((len(g) for g in groups), default=0) > 8 else 0,
                       ha="right" if max((len(g) for g in groups), default=0) > 8 else "center")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if k > 1 or paper:
        ax.legend()
    _caption(fig, n_seeds)
    _save(fig, plt, path)


def plot_lines(path: Path, xs: Sequence[Any], series: Mapping[str, Sequence[Sequence[float]]], xlabel: str,
               ylabel: str, title: str, *, categorical: bool = False, logx: bool = False,
               lower: float | None = 0.0, upper: float | None = None,
               paper: Mapping[str, Sequence[float]] | None = None) -> None:
    """One line per series: ``series[label][i]`` holds the per-seed values at ``xs[i]``; a shaded 95 % t-band
    (n ≥ 2), seeds as dots. ``categorical`` spaces ``xs`` evenly and labels them (κ, policy names)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=SIZE_IN)
    pos = list(range(len(xs))) if categorical else [float(x) for x in xs]
    n_seeds = 0
    for label, per_x in series.items():
        stats = [_interval(v, lower, upper) for v in per_x]
        mean = [s[0] for s in stats]
        (line,) = ax.plot(pos, mean, marker="o", ms=4, label=label)
        if any(s[1] or s[2] for s in stats):
            ax.fill_between(pos, [m - s[1] for m, s in zip(mean, stats, strict=True)],
                            [m + s[2] for m, s in zip(mean, stats, strict=True)], alpha=0.2, color=line.get_color())
        for x, vals in zip(pos, per_x, strict=True):
            ax.plot([x] * len(vals), list(vals), ".", ms=4, color=line.get_color(), alpha=0.5)
            n_seeds = max(n_seeds, len(vals))
    for label, ys in (paper or {}).items():
        ax.plot(pos, list(ys), "D", color="red", ms=6, label=f"paper: {label}")
    if categorical:
        ax.set_xticks(pos)
        ax.set_xticklabels([str(x) for x in xs])
    elif logx:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    _caption(fig, n_seeds)
    _save(fig, plt, path)


__all__ = ["aggregate", "hours", "markdown", "pct", "plot_bars", "plot_lines", "seed_stats", "write_csv",
           "write_table"]
