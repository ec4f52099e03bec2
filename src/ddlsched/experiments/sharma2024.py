"""Reproduction of Sharma et al. 2024 (network-sensitive scheduling; docs/policies/delay-sched.md §8, a
reconstruction [I]).

Setup: ``rack256`` (4 racks × 8 servers × 8 GPUs, 25 Gb/s, 4:1 uplinks) under two network settings:
*nominal* (congestion 1) and *congested* (``sharing`` perf model with ``congestion`` = 2 for multi-server rings
and ``rack_congestion`` = 2 on top for cross-rack rings, i.e. c = 2 / 4 — background traffic,
docs/policies/delay-sched.md §2 [I]).
Workload per seed: ``n_jobs`` jobs with the Philly job-size mix of docs/policies/sjf-bco.md §7 (``philly_mix``: 50 %
1-GPU, up to
32 GPUs), models uniform from the Muri model mix (4 network-sensitive: vgg16, vgg19, bert, gpt2; 4 insensitive:
resnet18, shufflenet, a2c, dqn), iterations uniform in [2000, 20000], Poisson arrivals scaled to an offered load
of ``target_load`` (1.0). (A window of the real Philly trace was tried first: 97 % of its jobs use one GPU, so
on 256 GPUs nothing ever queued and every policy tied — see docs/reproductions.md.)
Policies: delay-sched, delay-sched-autotune (search tuner), strict-consolidation, tiresias-cc, gandiva-pack,
fifo+first_fit, fifo+random. Improvements are reported against the best and the worst consolidation-based
baseline (strict-consolidation, tiresias-cc) — the paper's "prevailing consolidation-based schedulers".
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ddlsched.cluster import load_cluster
from ddlsched.experiments.figures import aggregate, hours, markdown, pct, plot_bars, write_csv
from ddlsched.experiments.grid import METRICS, run_one
from ddlsched.experiments.registry import register_reproduction
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import default_catalog
from ddlsched.workload.synthetic import philly_mix
from ddlsched.workload.transform import scale_arrivals

MIX = {"vgg16": 1.0, "vgg19": 1.0, "bert": 1.0, "gpt2": 1.0, "resnet18": 1.0, "shufflenet_v2_x1_0": 1.0,
       "a2c": 1.0, "dqn": 1.0}
POLICIES = ("delay-sched", "delay-sched-autotune", "strict-consolidation", "tiresias-cc", "gandiva-pack",
            "fifo+first_fit", "fifo+random")
CONSOLIDATION = ("strict-consolidation", "tiresias-cc")
SETTINGS = {"nominal": {}, "congested": {"congestion": 2.0, "rack_congestion": 2.0}}


def workload(seed: int, n_jobs: int, *, target_load: float = 1.0,
             iterations: tuple[int, int] = (2000, 20000), num_gpus: int = 256) -> list[JobSpec]:
    """The Philly job-size mix (docs/policies/sjf-bco.md §7) with the Muri model mix, Poisson arrivals scaled to
    ``target_load``
    (work estimated as GPUs × iterations × 1-GPU compute time)."""
    jobs = philly_mix(n_jobs, seed=seed, rate_per_s=1.0 / 60.0, models=tuple(MIX), iterations=iterations).jobs
    cat = default_catalog()
    span = max(j.arrival_s for j in jobs) - min(j.arrival_s for j in jobs)
    work = sum(j.num_gpus * (j.iterations or 0.0) * cat[j.model].compute_s for j in jobs)
    return scale_arrivals(jobs, target_load / (work / (num_gpus * span)))


@register_reproduction("sharma2024", "Sharma et al. 2024: delay scheduling vs consolidation on rack256, "
                                     "nominal and congested network (docs/policies/delay-sched.md)")
def run(*, out_dir: Path, seeds: list[int], quick: bool, progress: Callable[[str], None]) -> str:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    n_jobs = 60 if quick else 300
    policies = ("delay-sched", "strict-consolidation", "fifo+first_fit") if quick else POLICIES
    seeds = seeds[:1] if quick else seeds
    cluster = load_cluster("rack256")
    rows: list[dict[str, Any]] = []
    for seed in seeds:
        jobs = workload(seed, n_jobs)
        for setting, params in SETTINGS.items():
            for p in policies:
                r = run_one(cluster, jobs, p, params, seed)
                r["setting"] = setting
                rows.append(r)
            progress(f"sharma2024: seed {seed} {setting} done")
    write_csv(out_dir / "runs.csv", [{k: v for k, v in r.items() if k != "mechanisms"} for r in rows])
    agg = aggregate(rows, ("setting", "policy"), METRICS)
    for setting in SETTINGS:
        ours = {r["policy"]: r for r in agg if r["setting"] == setting}
        ref = [ours[c] for c in CONSOLIDATION if c in ours]
        for r in agg:
            if r["setting"] != setting:
                continue
            for m in ("makespan_s", "avg_jct_s", "comm_overhead_s"):
                vals = [(r[m] - b[m]) / b[m] * 100 if b[m] else float("nan") for b in ref]
                r[f"{m}_vs_best_cons_pct"] = max(vals) if vals else float("nan")
                r[f"{m}_vs_worst_cons_pct"] = min(vals) if vals else float("nan")
    write_csv(out_dir / "summary.csv", agg)
    cols = [("setting", "setting", str), ("policy", "policy", str), ("seeds", "seeds", str),
            ("avg JCT h", "avg_jct_s", hours), ("makespan h", "makespan_s", hours),
            ("avg queue h", "avg_queueing_s", hours), ("comm ovh h/job", "comm_overhead_s", hours),
            ("comm ovh %", "comm_overhead_pct", lambda v: f"{v:.1f}"), ("preempt", "preemptions", lambda v: f"{v:.0f}"),
            ("JCT vs worst cons.", "avg_jct_s_vs_worst_cons_pct", pct),
            ("makespan vs worst cons.", "makespan_s_vs_worst_cons_pct", pct),
            ("comm ovh vs worst cons.", "comm_overhead_s_vs_worst_cons_pct", pct)]
    md = markdown(agg, cols)
    (out_dir / "summary.md").write_text(f"# sharma2024 ({len(seeds)} seed(s), {n_jobs} jobs, rack256)\n\n{md}")
    names = list(policies)
    for m, label in (("avg_jct_s", "average JCT (h)"), ("makespan_s", "makespan (h)"),
                     ("comm_overhead_s", "communication overhead per job (h)")):
        series = {s: [[r[m] / 3600 for r in rows if r["setting"] == s and r["policy"] == p] for p in names]
                  for s in SETTINGS}
        plot_bars(out_dir / f"{m.removesuffix('_s')}.png", names, series, label, f"sharma2024: {label}, rack256")
    return md
