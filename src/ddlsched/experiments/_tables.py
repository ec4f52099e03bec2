"""Small helpers shared by the yu2022/wang2020 reproductions: mean ± spread tables (CSV + Markdown), plots."""

from __future__ import annotations

import csv
import statistics
from collections.abc import Sequence
from pathlib import Path


def stats(values: Sequence[float]) -> tuple[float, float, float, float]:
    """(mean, sample std, min, max) over seeds."""
    vals = [float(v) for v in values]
    sd = statistics.stdev(vals) if len(vals) > 1 else 0.0
    return statistics.fmean(vals), sd, min(vals), max(vals)


def write_table(out: Path, name: str, header: list[str], rows: list[list[object]], title: str) -> str:
    """Write ``name.csv`` and ``name.md``; return the Markdown text."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"{name}.csv", "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)

    def fmt(v: object) -> str:
        return f"{v:.4g}" if isinstance(v, float) else str(v)

    lines = [f"### {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(v) for v in r) + " |" for r in rows]
    md = "\n".join(lines) + "\n"
    (out / f"{name}.md").write_text(md)
    return md


def plot_lines(path: Path, xs: Sequence[float], series: dict[str, tuple[list[float], list[float]]], xlabel: str,
               ylabel: str, title: str, logx: bool = False) -> None:
    """One line per series with a ±1 std band (matplotlib Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for label, (mean, sd) in series.items():
        ax.plot(xs, mean, marker="o", ms=3, label=label)
        ax.fill_between(xs, [m - s for m, s in zip(mean, sd, strict=True)],
                        [m + s for m, s in zip(mean, sd, strict=True)], alpha=0.2)
    if logx:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_bars(path: Path, labels: Sequence[str], mean: Sequence[float], sd: Sequence[float], ylabel: str,
              title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    ax.bar(list(labels), list(mean), yerr=list(sd), capsize=4)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    plt.setp(ax.get_xticklabels(), rotation=20, ha="right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
