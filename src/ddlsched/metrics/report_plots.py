"""The figures of ``ddlsched report``, one scenario each, in the project's figure style
(``ddlsched.experiments.figures``: 825 × 462 px, one title, mean ± 95 % t-CI only with ≥ 2 seeds and clipped at the
metric's range, seeds as dots, a grey caption saying what is drawn).

Each ``plot_*`` function draws one PNG and returns the series it drew (JSON-able, in the plotted units), which
the report saves beside the PNG so a reader can check every mark against the run files.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ddlsched.experiments.figures import FONT, SIZE_IN, _pyplot, _save
from ddlsched.metrics.report_data import SMOOTH_SHARE, H

LOAD_SMOOTH_SHARE = 0.1  # the offered load's rolling mean spans this share of the arrival span
LEGEND_CHARS = 125  # legend entries per row: as many as fit this many characters across the figure
STYLES = ("-", "--", "-.", ":")  # policies that coincide stay visible as different dashes


def colors(policies: Sequence[str]) -> dict[str, Any]:
    import matplotlib

    cmap = matplotlib.colormaps["tab10" if len(policies) <= 10 else "tab20"]
    return {p: cmap(i % cmap.N) for i, p in enumerate(policies)}


def interval(values: Sequence[float], lower: float | None, upper: float | None) -> dict[str, Any]:
    """Mean, t-CI half-width (NaN with < 2 values) and the interval clipped to [lower, upper] (never past the
    mean, so a mean outside the range keeps a zero-length error bar)."""
    from ddlsched.metrics.stats import mean_ci95

    mean, half, n = mean_ci95(list(values))
    if n < 2 or math.isnan(half):
        return {"mean": mean, "ci95": None, "n": n, "lo": mean, "hi": mean}
    lo, hi = mean - half, mean + half
    if lower is not None:
        lo = max(lo, min(lower, mean))
    if upper is not None:
        hi = min(hi, max(upper, mean))
    return {"mean": mean, "ci95": half, "n": n, "lo": lo, "hi": hi}


def _top(fig: Any, ax: Any, title: str, legend: bool = True) -> None:
    """The figure's one title, and the legend in a row (or two) between it and the axes, clear of the data."""
    fig.suptitle(title, fontsize=FONT + 1)
    handles, labels = ax.get_legend_handles_labels()
    if legend and handles:
        widest = max(len(x) for x in labels) + 6  # characters of one entry, its line or patch included
        ncol = max(1, min(len(handles), LEGEND_CHARS // widest))
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=ncol, frameon=False, fontsize=FONT - 2,
                  borderaxespad=0.3)


def _caption(fig: Any, text: str) -> None:
    fig.text(0.01, 0.012, text, fontsize=FONT - 2, color="0.35")


def _seeds_note(ns: Sequence[int]) -> str:
    lo, hi = min(ns, default=0), max(ns, default=0)
    if hi < 2:
        return "one seed: no interval"
    over = f"{lo}" if lo == hi else f"{lo}–{hi}"
    return f"mean over {over} seeds, bars = 95 % t-CI, dots = seeds"


def _fmt(v: float) -> str:
    a = abs(v)
    return f"{v:.0f}" if a >= 100 else f"{v:.1f}" if a >= 10 else f"{v:.2f}"


def _xticks(ax: Any, labels: Sequence[str]) -> None:
    long = max((len(s) for s in labels), default=0) * len(labels) > 100  # would overlap at 10 pt
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(list(labels), rotation=15 if long else 0, ha="right" if long else "center")


def plot_bars(path: Path, title: str, ylabel: str, caption: str, values: Mapping[str, Sequence[float]],
              cols: Mapping[str, Any], *, lower: float | None = 0.0, upper: float | None = None) -> dict[str, Any]:
    """One bar per policy: the mean of its per-seed ``values`` (plotted units), CI, seeds as dots, value on top."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=SIZE_IN)
    series: dict[str, Any] = {}
    top = 0.0
    for i, (p, vals) in enumerate(values.items()):
        st = interval(vals, lower, upper)
        series[p] = st
        if math.isnan(st["mean"]):
            continue
        err = [[st["mean"] - st["lo"]], [st["hi"] - st["mean"]]] if st["ci95"] is not None else None
        ax.bar(i, st["mean"], 0.65, color=cols[p], alpha=0.85, yerr=err, capsize=5, ecolor="0.2")
        ax.plot([i] * len(vals), list(vals), "o", ms=3.5, color="black", alpha=0.6, zorder=3)
        y = max([st["hi"], *vals])
        ax.annotate(_fmt(st["mean"]), (i, y), xytext=(0, 3), textcoords="offset points", ha="center",
                    va="bottom", fontsize=FONT - 1)
        top = max(top, y)
    _xticks(ax, list(values))
    if top > 0:
        ax.set_ylim(0 if (lower is not None and lower >= 0) else None, top * 1.12)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    _top(fig, ax, title, legend=False)
    _caption(fig, caption + " · " + _seeds_note([s["n"] for s in series.values()]))
    _save(fig, plt, path)
    return series


def plot_grouped(path: Path, title: str, ylabel: str, caption: str, groups: Sequence[str],
                 values: Mapping[str, Mapping[str, Sequence[float]]], cols: Mapping[str, Any], *,
                 lower: float | None = 0.0, base: float = 0.0) -> dict[str, Any]:
    """Grouped bars: ``values[policy][group]`` holds per-seed values; one colour per policy, groups on x. Bars
    rise from ``base`` (1 for a slowdown: the ideal), so the axis starts there."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=SIZE_IN)
    k = max(1, len(values))
    width = 0.8 / k
    series: dict[str, Any] = {}
    ns: list[int] = []
    top = base
    for i, (p, per_group) in enumerate(values.items()):
        series[p] = {}
        for g, group in enumerate(groups):
            vals = list(per_group.get(group, []))
            st = interval(vals, lower, None)
            series[p][group] = st
            if not vals:
                continue
            ns.append(st["n"])
            x = g + (i - (k - 1) / 2) * width
            err = [[st["mean"] - st["lo"]], [st["hi"] - st["mean"]]] if st["ci95"] is not None else None
            ax.bar(x, st["mean"] - base, width * 0.92, bottom=base, color=cols[p], alpha=0.85, yerr=err, capsize=3,
                   ecolor="0.2", label=p if g == min(j for j, gg in enumerate(groups) if per_group.get(gg)) else None)
            ax.plot([x] * len(vals), vals, "o", ms=2.5, color="black", alpha=0.6, zorder=3)
            top = max(top, st["hi"], *vals)
    every = [v for pg in values.values() for vs in pg.values() for v in vs]
    bottom = min([base, *every])
    if base and every and all(abs(v - base) < 1e-9 for v in every):
        ax.text(0.5, 0.5, f"every class of every policy at {base:g}", transform=ax.transAxes, ha="center",
                color="0.35")
    ax.set_ylim(bottom, top + max(0.08 * (top - bottom), 0.02 * max(abs(base), 1.0)))
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(list(groups))
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    _top(fig, ax, title)
    _caption(fig, caption + " · " + _seeds_note(ns))
    _save(fig, plt, path)
    return series


def plot_cdf(path: Path, title: str, caption: str, cdfs: Mapping[str, Mapping[str, list[float]]],
             cols: Mapping[str, Any]) -> dict[str, Any]:
    """Empirical CDF of JCT (hours, log x) per policy."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=SIZE_IN)
    series: dict[str, Any] = {}
    for i, (p, d) in enumerate(cdfs.items()):
        ax.step(d["x_h"], d["y"], where="post", label=p, color=cols[p], ls=STYLES[i % len(STYLES)], lw=1.6)
        series[p] = {"x": d["x_h"], "y": d["y"]}
    if any(x > 0 for d in cdfs.values() for x in d["x_h"]):
        ax.set_xscale("log")  # JCTs span orders of magnitude (heavy tail)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("JCT (h, log scale)")
    ax.set_ylabel("fraction of jobs")
    ax.grid(alpha=0.3)
    _top(fig, ax, title)
    _caption(fig, caption)
    _save(fig, plt, path)
    return series


def _window_marks(ax: Any, meta: Mapping[str, Any]) -> None:
    """Dashed lines at the measurement window's ends when warm-up/cool-down jobs were left out."""
    lo, hi = meta.get("window_start_s"), meta.get("window_end_s")
    if meta.get("jobs_measured") == meta.get("jobs_completed") or not isinstance(lo, float) or math.isnan(lo):
        return
    t0 = meta["active_start_s"]
    for j, t in enumerate((lo, hi)):
        ax.axvline((t - t0) / H, color="0.3", ls="--", lw=1, label="measurement window" if j == 0 else None)


def _time_axis(ax: Any, meta: Mapping[str, Any]) -> None:
    span_h = (meta["active_end_s"] - meta["active_start_s"]) / H
    if span_h > 0:
        ax.set_xlim(0, span_h)
    ax.set_xlabel("time since the first arrival (h)")


def plot_timeline(path: Path, title: str, ylabel: str, caption: str, lines: Mapping[str, Mapping[str, Any]],
                  meta: Mapping[str, Any], cols: Mapping[str, Any], *, ymax: float | None = None
                  ) -> dict[str, Any]:
    """Smoothed time series per policy (``report_data.smoothed``) over the active period, hours on x."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=SIZE_IN)
    t0 = meta["active_start_s"]
    series: dict[str, Any] = {}
    for i, (p, d) in enumerate(lines.items()):
        x = [(t - t0) / H for t in d["t_s"]]
        ax.plot(x, d["value"], color=cols[p], ls=STYLES[i % len(STYLES)], lw=1.6, label=p)
        series[p] = {"x": x, "y": d["value"], "seed": d["seed"], "t0_s": t0, "width_h": d["width_s"] / H}
    _window_marks(ax, meta)
    _time_axis(ax, meta)
    top = max((v for d in lines.values() for v in d["value"]), default=0.0)
    ax.set_ylim(0, ymax if ymax is not None else max(1.0, top * 1.05))
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    _top(fig, ax, title)
    width_h = (meta["active_end_s"] - t0) * SMOOTH_SHARE / H
    seeds = sorted({d["seed"] for d in lines.values()})
    _caption(fig, f"{caption} · rolling mean over 1/{round(1 / SMOOTH_SHARE)} of the active period "
                  f"({_fmt(width_h)} h) · lowest seed of each policy ({', '.join(map(str, seeds))})")
    _save(fig, plt, path)
    return series


def rolling(values: Sequence[float], k: int) -> list[float]:
    """Centred moving average over ``k`` values (fewer at the ends)."""
    v = np.asarray(values, dtype=float)
    if k <= 1 or v.size == 0:
        return v.tolist()
    c = np.concatenate(([0.0], np.cumsum(v)))
    i = np.arange(v.size)
    lo, hi = np.maximum(0, i - k // 2), np.minimum(v.size, i - k // 2 + k)
    return ((c[hi] - c[lo]) / (hi - lo)).tolist()


def plot_load(path: Path, title: str, caption: str, meta: Mapping[str, Any], window_load: float, col: Any
              ) -> dict[str, Any]:
    """Offered load per bucket of ``load.csv`` (light steps), its rolling mean, and the busy share of one policy."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=SIZE_IN)
    rows = meta["load"]
    t0 = meta["active_start_s"]
    x = [r["t_h"] for r in rows] + [(rows[-1]["end_s"] - t0) / H]
    load = [r["offered_load"] for r in rows]
    busy = [r["busy_share"] for r in rows]
    bucket_h = (rows[0]["end_s"] - rows[0]["start_s"]) / H
    per = {1.0: "hour", 24.0: "day", 168.0: "week"}.get(round(bucket_h, 6), f"{_fmt(bucket_h)} h")
    k = max(1, round(LOAD_SMOOTH_SHARE * len(rows)))
    smooth = rolling(load, k)
    mid = [r["t_h"] + bucket_h / 2 for r in rows]
    ax.fill_between(x, [*load, load[-1]], step="post", color="0.75", alpha=0.6, lw=0, label=f"offered load per {per}")
    ax.plot(mid, smooth, color="black", lw=2, label=f"offered load, rolling mean over {k} {per}{'s' if k > 1 else ''}")
    ax.plot(mid, busy, color=col, lw=1.6, label=f"busy share ({meta['load_policy']})")
    if math.isfinite(window_load):
        ax.axhline(window_load, color="black", ls=":", lw=1, label=f"offered load over the window {window_load:.2f}")
    ax.axhline(1.0, color="firebrick", lw=0.8, alpha=0.6)
    _window_marks(ax, meta)
    ax.set_xlim(0, x[-1])
    ax.set_xlabel("time since the first arrival (h; arrival span)")
    top = max([1.0, *smooth, *[b for b in busy if math.isfinite(b)], window_load if math.isfinite(window_load) else 0])
    ax.set_ylim(0, top * 1.25)
    clipped = max(load) > top * 1.25
    ax.set_ylabel("share of cluster GPUs")
    ax.grid(alpha=0.3)
    _top(fig, ax, title)
    _caption(fig, caption + (f" · per-{per} offered load up to {max(load):.1f} clipped" if clipped else "")
             + f" · lowest seed ({meta['seed_shown']})")
    _save(fig, plt, path)
    return {"policy": meta["load_policy"], "t_h": [r["t_h"] for r in rows], "bucket_h": bucket_h,
            "offered_load": load, "busy_share": busy, "rolling": smooth, "rolling_buckets": k,
            "window_load": window_load}


__all__ = ["colors", "interval", "plot_bars", "plot_cdf", "plot_grouped", "plot_load", "plot_timeline", "rolling"]
