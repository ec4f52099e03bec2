"""Shared helpers of the sharma2024/luo2024 reproductions: run a policy grid, aggregate, write CSV/Markdown/PNG."""

from __future__ import annotations

import csv
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ddlsched.cluster.topology import Cluster
from ddlsched.engine import SimConfig, run_simulation
from ddlsched.metrics import summarize
from ddlsched.policies import make_policy
from ddlsched.workload.jobspec import JobSpec

METRICS = ("avg_jct_s", "p99_jct_s", "makespan_s", "avg_queueing_s", "comm_overhead_s", "comm_overhead_pct",
           "preemptions")


def run_one(cluster: Cluster, jobs: Sequence[JobSpec], policy: str, perf_params: dict[str, Any],
            seed: int) -> dict[str, Any]:
    cfg = SimConfig(perf_model="sharing", perf_params=perf_params, seed=seed, record_timeseries=False)
    res = run_simulation(cluster, jobs, make_policy(policy), cfg)
    s = summarize(res)
    return {"policy": policy, "seed": seed, "jobs": s["jobs"], "unfinished": s["jobs_unfinished"],
            "offered_load": s.get("offered_load"), **{m: s.get(m) for m in METRICS}}


def aggregate(rows: list[dict[str, Any]], group: Sequence[str]) -> list[dict[str, Any]]:
    """Mean (and stdev) of every metric per group, in first-seen order."""
    keys: list[tuple] = []
    by: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        k = tuple(r[g] for g in group)
        if k not in by:
            keys.append(k)
            by[k] = []
        by[k].append(r)
    out = []
    for k in keys:
        rs = by[k]
        row: dict[str, Any] = dict(zip(group, k, strict=True))
        row["seeds"] = len(rs)
        for m in METRICS:
            vals = [float(r[m]) for r in rs if r[m] is not None]
            row[m] = statistics.fmean(vals) if vals else float("nan")
            row[m + "_sd"] = statistics.stdev(vals) if len(vals) > 1 else 0.0
        out.append(row)
    return out


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    cols = list(rows[0]) if rows else []
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})


def markdown(rows: list[dict[str, Any]], cols: Sequence[tuple[str, str, Callable[[Any], str]]]) -> str:
    head = "| " + " | ".join(c[0] for c in cols) + " |"
    sep = "|" + "|".join("---" for _ in cols) + "|"
    body = ["| " + " | ".join(fmt(r.get(key)) for _, key, fmt in cols) + " |" for r in rows]
    return "\n".join([head, sep, *body]) + "\n"


def hours(v: Any) -> str:
    return "-" if v is None else f"{float(v) / 3600:.2f}"


def pct(v: Any) -> str:
    return "-" if v is None else f"{float(v):+.1f} %"


def bar_plot(path: Path, groups: Sequence[str], series: dict[str, list[float]], ylabel: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(groups) * max(1, len(series))), 3.8))
    width = 0.8 / max(1, len(series))
    for i, (label, vals) in enumerate(series.items()):
        ax.bar([x + i * width for x in range(len(groups))], vals, width, label=label)
    ax.set_xticks([x + width * (len(series) - 1) / 2 for x in range(len(groups))])
    ax.set_xticklabels(groups, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    if len(series) > 1:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
