"""Does the physics change the ranking? The luo2024 and sharma2024 set-ups under maxmin, phased and flat networks.

    PYTHONPATH=src python benchmarks/physics_rankings.py [--full] [--seeds 0] [--only luo2024|sharma2024]
        [--networks maxmin,phased,flat,maxmin-tcp]

The reproductions (``ddlsched reproduce luo2024|sharma2024``) fix their network physics (luo2024: maxmin, none and a
fast-NIC "flat" cluster; sharma2024: maxmin, nominal and congested) and take no perf-model override. This script
re-runs their workloads, clusters and policies unchanged — their own ``workload`` functions, the quick sizes (luo2024
30 jobs, sharma2024 60 jobs and 3 policies) unless ``--full`` — with the ``sharing`` perf model wrapping each of the
``maxmin``, ``phased`` (overlap 0) and ``flat`` network models, and prints avg JCT, p95 JCT, makespan and the
ranking by avg JCT per network (docs/reproductions.md "Physics model and rankings"). ``--only`` runs one set-up;
``--networks`` picks the columns (``maxmin-tcp``: ``maxmin`` with TCP-biased sharing, docs/physics.md §12).
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from typing import Any

from ddlsched.cluster import load_cluster
from ddlsched.cluster.topology import Cluster
from ddlsched.engine import SimConfig, run_simulation
from ddlsched.experiments import luo2024, sharma2024
from ddlsched.metrics import summarize
from ddlsched.policies import make_policy
from ddlsched.workload.jobspec import JobSpec

# label → the network the ``sharing`` model wraps (docs/physics.md §4, §11, §5, §12)
NETWORK_PARAMS: dict[str, dict[str, Any]] = {
    "maxmin": {"network": "maxmin"},
    "phased": {"network": "phased"},
    "flat": {"network": "flat"},
    "maxmin-tcp": {"network": "maxmin", "network_params": {"fairness": "tcp"}},
}
NETWORKS = ("maxmin", "phased", "flat")  # the default columns
SETUPS = ("luo2024", "sharma2024")


def run(cluster: Cluster, jobs: Sequence[JobSpec], policy: str, params: dict[str, Any], seed: int) -> dict[str, float]:
    """One run with the ``sharing`` model around ``params['network']``: avg/p95 JCT and makespan in hours."""
    cfg = SimConfig(perf_model="sharing", perf_params=params, seed=seed, record_timeseries=False)
    s = summarize(run_simulation(cluster, jobs, make_policy(policy), cfg))
    return {k: s[k] / 3600 for k in ("avg_jct_s", "p95_jct_s", "makespan_s")} | {"unfinished": s["jobs_unfinished"]}


def table(title: str, results: dict[str, dict[str, dict[str, float]]]) -> str:
    """Markdown: one row per policy, per network ``avg / p95 / makespan (rank by avg)``; results[network][policy]."""
    policies = list(next(iter(results.values())))
    head = ["policy"] + [f"{n}: avg / p95 / makespan h (rank)" for n in results]
    lines = [f"**{title}**", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    ranks = {n: _ranks({p: m["avg_jct_s"] for p, m in r.items()}) for n, r in results.items()}
    for p in policies:
        cells = [p]
        for n, r in results.items():
            m = r[p]
            cells.append(f"{m['avg_jct_s']:.2f} / {m['p95_jct_s']:.2f} / {m['makespan_s']:.1f} ({ranks[n][p]})"
                         + (f" [{m['unfinished']:.0f} unfinished]" if m["unfinished"] else ""))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _ranks(values: dict[str, float]) -> dict[str, str]:
    """Competition ranking (1 = smallest); values equal to 1e-9 relative share a rank, marked ``=``."""
    def same(x: float, y: float) -> bool:
        return abs(x - y) <= 1e-9 * max(abs(x), abs(y), 1e-12)

    out: dict[str, str] = {}
    for p, v in values.items():
        better = sum(1 for q, w in values.items() if q != p and w < v and not same(v, w))
        tied = any(q != p and same(v, w) for q, w in values.items())
        out[p] = f"{better + 1}{'=' if tied else ''}"
    return out


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.fmean(r[k] for r in rows) for k in rows[0]}


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--full", action="store_true", help="the reproductions' full sizes (100 / 300 jobs, 7 policies)")
    ap.add_argument("--seeds", default="0", help="comma-separated seeds (means over seeds are printed)")
    ap.add_argument("--only", choices=SETUPS, help="run only this set-up (default: both)")
    ap.add_argument("--networks", default=",".join(NETWORKS),
                    help=f"comma-separated columns, from {', '.join(NETWORK_PARAMS)} (default: %(default)s)")
    a = ap.parse_args(argv)
    seeds = [int(s) for s in a.seeds.split(",") if s.strip()]
    nets = tuple(n.strip() for n in a.networks.split(",") if n.strip())
    unknown = [n for n in nets if n not in NETWORK_PARAMS]
    if unknown or not nets:
        ap.error(f"--networks: unknown {', '.join(unknown) or '(empty)'}; choose from {', '.join(NETWORK_PARAMS)}")

    if a.only in (None, "luo2024"):
        _luo(seeds, a.full, a.seeds, nets)
    if a.only in (None, "sharma2024"):
        _sharma(seeds, a.full, a.seeds, nets)


def _luo(seeds: list[int], full: bool, label: str, nets: Sequence[str] = NETWORKS) -> None:
    """Print the luo2024 set-up's table (n8g8, the reproduction's six policies)."""
    cluster = load_cluster("n8g8")
    luo: dict[str, dict[str, dict[str, float]]] = {}
    for net in nets:
        luo[net] = {p: _mean([run(cluster, luo2024.workload(s, 100 if full else 30), p, NETWORK_PARAMS[net], s)
                              for s in seeds]) for p in luo2024.POLICIES}
    print(table(f"luo2024 set-up (n8g8, Muri traces, {100 if full else 30} jobs, seeds {label})", luo))
    print()


def _sharma(seeds: list[int], full: bool, label: str, nets: Sequence[str] = NETWORKS) -> None:
    """Print the sharma2024 set-up's tables, one per setting (rack256)."""
    cluster = load_cluster("rack256")
    policies = sharma2024.POLICIES if full else ("delay-sched", "strict-consolidation", "fifo+first_fit")
    for setting, extra in sharma2024.SETTINGS.items():
        res: dict[str, dict[str, dict[str, float]]] = {}
        for net in nets:
            res[net] = {p: _mean([run(cluster, sharma2024.workload(s, 300 if full else 60), p,
                                      {**NETWORK_PARAMS[net], **extra}, s) for s in seeds]) for p in policies}
        print(table(f"sharma2024 set-up, {setting} (rack256, {300 if full else 60} jobs, seeds {label})", res))
        print()


if __name__ == "__main__":
    main()
