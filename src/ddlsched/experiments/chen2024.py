"""``ddlsched reproduce chen2024``: Hare / HLAS on heterogeneous GPUs (docs/policies/hare.md §7) [A][I].

Setup (reconstructed [I]; the paper's exact traces, cluster and baselines are unknown):

* cluster: the ``hetero`` preset (8 × V100, P100, T4, K80; 32 GPUs); per-model speeds from Gavel/Sia profiles
  (:func:`ddlsched.workload.gpu_speeds.catalog_with_gpu_speeds`);
* jobs: per seed, a window of ``n_jobs`` consecutive jobs (by arrival) of the bundled Philly trace
  (``data/traces/philly_pollux/philly.csv``) starting at a seeded random position; GPU counts as in the trace;
  durations clipped to [``min_dur_s``, ``max_dur_s``] (the trace's multi-day tail would make one job dominate a
  60-job sample); inter-arrival times rescaled so the offered load is ``load`` =
  Σ n_j·D_j / (Σ_g speed_g × arrival span), where D_j is the stand-alone time on the reference GPU (V100) and
  speed_g the GPU type's default speed;
* trace → task conversion as in :mod:`ddlsched.engine.rounds` (R_j from the duration, n_j = GPUs);
* policies: ``hlas`` (online Hare), ``hare-offline``, baselines ``gavel-het``, ``tiresias-het``, ``srtf-het``,
  ablations ``hare-gang``, ``hare-naive-switch``;
* experiments: (1) main: hetero cluster at load 1.0; (2) gain vs load (0.5, 1.0, 1.5); (3) gain vs heterogeneity
  at load 1.0: 32 × V100, 16 V100 + 16 K80, the 4-type preset. ``--quick``: 16 jobs, experiment 1 only.

Headline target [A]: HLAS ≈ 2.94× better average JCT than the best baseline.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ddlsched.cluster.presets import GPU_TYPES, load_cluster
from ddlsched.cluster.topology import Cluster, ServerSpec
from ddlsched.engine import SimConfig, run_simulation
from ddlsched.experiments.figures import plot_bars, plot_lines, seed_stats, write_csv
from ddlsched.experiments.registry import register_reproduction
from ddlsched.metrics.summary import summarize
from ddlsched.policies import make_policy
from ddlsched.workload.gpu_speeds import catalog_with_gpu_speeds
from ddlsched.workload.jobspec import JobSpec

POLICIES = ["hlas", "hare-offline", "gavel-het", "tiresias-het", "srtf-het", "hare-gang", "hare-naive-switch"]
BASELINES = ["gavel-het", "tiresias-het", "srtf-het"]
TRACE = Path(__file__).resolve().parents[3] / "data" / "traces" / "philly_pollux" / "philly.csv"
PAPER_GAIN = 2.94


def _cluster(kind: str) -> Cluster:
    if kind == "hetero":
        return load_cluster("hetero")
    if kind == "homog":
        return Cluster.build("32xV100", [[ServerSpec(4, "V100", 10.0) for _ in range(8)]],
                             {"V100": GPU_TYPES["V100"]})
    if kind == "two":
        servers = [ServerSpec(4, t, 10.0) for t in ("V100", "K80") for _ in range(4)]
        return Cluster.build("16xV100+16xK80", [servers], {t: GPU_TYPES[t] for t in ("V100", "K80")})
    raise ValueError(kind)


def sample_jobs(all_jobs: list[JobSpec], seed: int, n_jobs: int, cluster: Cluster, load: float,
                min_dur_s: float = 60.0, max_dur_s: float = 4 * 3600.0) -> list[JobSpec]:
    """A seeded window of Philly jobs, durations clipped, arrivals rescaled to offered ``load`` (see module doc)."""
    import random

    fits = [j for j in all_jobs if j.num_gpus <= cluster.num_gpus and j.duration_s is not None]
    rng = random.Random(f"chen2024-window-{seed}")
    start = rng.randrange(0, len(fits) - n_jobs)
    win = fits[start:start + n_jobs]
    win = [j.with_(duration_s=min(max(float(j.duration_s), min_dur_s), max_dur_s)) for j in win]  # type: ignore[arg-type]
    capacity = sum(cluster.gpu_types[cluster.gpu_type[g]].speed for g in range(cluster.num_gpus))
    work = sum(j.num_gpus * float(j.duration_s) for j in win)  # type: ignore[arg-type]
    t0 = win[0].arrival_s
    span = win[-1].arrival_s - t0
    target_span = work / (capacity * load)
    f = target_span / span if span > 0 else 0.0
    out = []
    for i, j in enumerate(win):
        arr = (j.arrival_s - t0) * f if span > 0 else i * target_span / max(1, n_jobs - 1)
        out.append(j.with_(arrival_s=arr))
    return out


def _run(cluster: Cluster, jobs: list[JobSpec], policy: str, seed: int, catalog: Any) -> dict[str, Any]:
    res = run_simulation(cluster, jobs, make_policy(policy), SimConfig(seed=seed, record_timeseries=False),
                         catalog=catalog)
    s = summarize(res)
    return {"avg_jct_s": s["avg_jct_s"], "makespan_s": s["makespan_s"], "jobs_completed": s["jobs_completed"],
            "unfinished": len(res.unfinished) + len(res.rejected), "events": res.events}


@register_reproduction("chen2024", "Hare on heterogeneous GPUs: the HPDC'22 setup (Algorithm 1 vs Gavel_FIFO, SRTF, "
                                   "Sched_Homo, AlloX; weighted JCT) and the TCC/HLAS setup (docs/policies/hare.md)")
def run(*, out_dir: Path, seeds: list[int], quick: bool, progress: Callable[[str], None]) -> str:
    """Both setups: HPDC'22 under ``out_dir/hpdc``, TCC/HLAS under ``out_dir/tcc``."""
    from ddlsched.experiments.chen2024_run import run_hpdc

    hpdc = run_hpdc(out_dir=out_dir / "hpdc", seeds=seeds, quick=quick, progress=progress)
    tcc = run_tcc(out_dir=out_dir / "tcc", seeds=seeds, quick=quick, progress=progress)
    return hpdc + "\n\n" + tcc


def run_tcc(*, out_dir: Path, seeds: list[int], quick: bool, progress: Callable[[str], None]) -> str:
    """The TCC/HLAS setup (module docstring)."""
    from ddlsched.workload.loaders import load_trace

    out_dir.mkdir(parents=True, exist_ok=True)
    n_jobs = 16 if quick else 60
    experiments: list[tuple[str, str, float]] = [("main", "hetero", 1.0)]
    if not quick:
        experiments += [("load", "hetero", 0.5), ("load", "hetero", 1.5), ("hetero", "homog", 1.0),
                        ("hetero", "two", 1.0)]
    progress(f"chen2024: loading {TRACE.name}")
    all_jobs = sorted(load_trace(TRACE).jobs, key=lambda j: (j.arrival_s, j.job_id))
    catalog = catalog_with_gpu_speeds()
    rows: list[dict[str, Any]] = []
    for exp, ckind, load in experiments:
        cluster = _cluster(ckind)
        for seed in seeds:
            jobs = sample_jobs(all_jobs, seed, n_jobs, cluster, load)
            for pol in POLICIES:
                r = _run(cluster, jobs, pol, seed, catalog)
                rows.append({"experiment": exp, "cluster": cluster.name, "load": load, "seed": seed,
                             "policy": pol, **r})
            progress(f"chen2024: {exp} {cluster.name} load {load} seed {seed} done")
    write_csv(out_dir / "runs.csv", rows)

    # aggregate: per (cluster, load, policy) mean and 95 % t-CI of avg JCT; gain = best baseline / policy (per seed)
    configs = sorted({(r["cluster"], r["load"]) for r in rows}, key=lambda c: (c[0], c[1]))
    table: list[dict[str, Any]] = []
    for cname, load in configs:
        sub = [r for r in rows if r["cluster"] == cname and r["load"] == load]
        best_base = {s: min(r["avg_jct_s"] for r in sub if r["seed"] == s and r["policy"] in BASELINES)
                     for s in seeds}
        for pol in POLICIES:
            pr = [r for r in sub if r["policy"] == pol]
            jct_h = [r["avg_jct_s"] / 3600 for r in pr]
            gains = [best_base[r["seed"]] / r["avg_jct_s"] for r in pr]
            mean, half, _, _ = seed_stats(jct_h)
            table.append({"cluster": cname, "load": load, "policy": pol,
                          "avg_jct_h": round(mean, 3), "ci95_h": round(half, 3),
                          "gain_vs_best_baseline": round(seed_stats(gains)[0], 3),
                          "unfinished": sum(r["unfinished"] for r in pr), "jct_h_per_seed": jct_h,
                          "gain_per_seed": gains})
    write_csv(out_dir / "summary.csv", [{k: v for k, v in t.items() if not k.endswith("_per_seed")} for t in table])
    md = ["| cluster | load | policy | avg JCT (h), mean ± 95 % t-CI over seeds | gain vs best baseline |",
          "|---|---|---|---|---|"]
    md += [f"| {t['cluster']} | {t['load']} | {t['policy']} | {t['avg_jct_h']:.3f} ± "
           f"{'–' if math.isnan(t['ci95_h']) else format(t['ci95_h'], '.3f')} | "
           f"{t['gain_vs_best_baseline']:.2f}× |" for t in table]
    md.append("")
    md.append(f"{n_jobs} Philly jobs per seed, seeds {seeds}; paper [A]: ≈{PAPER_GAIN}× better average JCT than "
              "the best baseline. Gain = (best baseline's avg JCT in the same seed) / (policy's avg JCT), averaged "
              "over seeds.")
    (out_dir / "summary.md").write_text("\n".join(md) + "\n")
    _plots(out_dir, table)
    main = [t for t in table if t["cluster"] == "hetero" and t["load"] == 1.0]
    lines = [f"chen2024 ({n_jobs} jobs, seeds {seeds}) on hetero, load 1.0:"]
    lines += [f"  {t['policy']:18s} avg JCT {t['avg_jct_h']:.3f} h  gain vs best baseline "
              f"{t['gain_vs_best_baseline']:.2f}x" for t in main]
    lines.append(f"paper: ~{PAPER_GAIN}x (HLAS vs best baseline). Files in {out_dir}/")
    return "\n".join(lines)


def _plots(out_dir: Path, table: list[dict[str, Any]]) -> None:
    main = [t for t in table if t["cluster"] == "hetero" and t["load"] == 1.0]
    plot_bars(out_dir / "avg_jct.png", [t["policy"] for t in main], {"avg JCT": [t["jct_h_per_seed"] for t in main]},
              "average JCT (h)", "hetero cluster (V100/P100/T4/K80 × 8), load 1.0")
    pols = ("hlas", "hare-offline", "hare-gang")
    loads = sorted({t["load"] for t in table if t["cluster"] == "hetero"})
    if len(loads) > 1:
        series = {p: [next(t["gain_per_seed"] for t in table if t["cluster"] == "hetero" and t["load"] == ld
                           and t["policy"] == p) for ld in loads] for p in pols}
        plot_lines(out_dir / "gain_vs_load.png", loads, series, "offered load", "gain vs best baseline (×)",
                   "gain vs load (hetero cluster)", categorical=True, paper={"HLAS": [PAPER_GAIN] * len(loads)})
    clusters = [c for c in ("32xV100", "16xV100+16xK80", "hetero") if any(t["cluster"] == c for t in table)]
    if len(clusters) > 1:
        series = {p: [next(t["gain_per_seed"] for t in table if t["cluster"] == c and t["load"] == 1.0
                           and t["policy"] == p) for c in clusters] for p in pols}
        plot_lines(out_dir / "gain_vs_heterogeneity.png", clusters, series, "cluster",
                   "gain vs best baseline (×)", "gain vs heterogeneity, load 1.0", categorical=True)
