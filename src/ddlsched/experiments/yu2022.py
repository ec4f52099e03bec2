"""Reproduction of Yu et al. MobiHoc'22 (SJF-BCO), docs/policies/sjf-bco.md §7–§8.

Setup per seed: the ``yu2022`` cluster (20 servers, GPUs/server ~ U{4,8,16,32}, seeded), 160 Philly-mix jobs
all at t = 0, F_j ~ U{1000..6000} and contention-free τ⁰_j ~ U[0.01, 0.05] s (1 time slot = 1 s), a pair being
redrawn until ρ̂_j = τ⁰_j·F_j ∈ [50, 300] slots as docs/policies/sjf-bco.md §7 states (rejection sampling, i.e.
(τ⁰, F) uniform on the part of the rectangle inside that band [I]; the paper gives the three ranges, not how they
were drawn).

Gradient sizing (the paper's "extra time within 15 % of the actual execution time", read as a statement about
realised extra time, docs/policies/sjf-bco.md §7) [I]: gradient M_j is sized so that the ring exchange at
contention degree k adds 7.5 % of τ⁰_j, ``M_j = 0.075·τ⁰_j·b_e·w_j / (2(w_j − 1)·f(α, ξ1·k))``. ``sizing``
names k: ``"k1"`` (default: k = 1, a multi-server job without contenders), ``"worst_k"`` (the former rule,
k = max O_s), or ``"k<N>"``. ξ2 = 0.075·min τ⁰/max G per server spanned (≤ 7.5 %) under every rule.
ξ1 = 1, α = 0.1, u = 1.15, λ = 1 [I]. Plans are made with the planner's snapshot estimate; the reported makespan
and JCT come from executing the plan in the fluid engine with the ``sjf_bco`` perf model (contention recomputed
at every start/finish). The realised extra time (communication ÷ run time, split into contention above k = 1,
per-server overhead γ and the rest) is measured from the run's records and reported per seed.

Figures: (4) makespan and avg JCT of SJF-BCO vs FF, LS, RAND at T = 1200; (5) makespan vs κ = 1..32
(fixed κ; κ values with the same job-size split give identical runs and are computed once);
(6) makespan vs #servers 10..20 at T = 1500; (7) makespan vs λ ∈ {1,2,4,8} at κ = 1. Sensitivity: the sizing
rule (``SIZINGS``) × Fig. 4's headline and Fig. 5's κ curve.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ddlsched.cluster.presets import yu2022 as yu_cluster
from ddlsched.cluster.topology import Cluster
from ddlsched.engine import SimConfig, run_simulation
from ddlsched.errors import ConfigError
from ddlsched.experiments.figures import plot_bars, plot_lines, seed_stats, write_table
from ddlsched.experiments.registry import register_reproduction
from ddlsched.metrics.summary import summarize
from ddlsched.perf.sjf_bco import degradation
from ddlsched.policies.sjf_bco import kappa_classes, planned_policy
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import ModelProfile, default_catalog
from ddlsched.workload.synthetic import philly_sizes

ALPHA, XI1, EXTRA = 0.1, 1.0, 0.075
# docs/policies/sjf-bco.md §7 (the paper's ranges); drawing them jointly is ours
TAU_RANGE, ITER_RANGE, RHO_RANGE = (0.01, 0.05), (1000, 6000), (50.0, 300.0)
ALGOS = (("sjf-bco", "SJF-BCO"), ("ff", "FF"), ("ls", "LS"), ("rand", "RAND"))
DEFAULT_SIZING = "k1"
SIZINGS = ("k1", "worst_k")  # swept by the reproduction: the default first


def sizing_degree(sizing: str, kmax: int) -> int:
    """The contention degree k at which ``sizing`` makes the ring exchange add 7.5 % of τ⁰ (module docstring)."""
    if sizing == "worst_k":
        return kmax
    if sizing.startswith("k") and sizing[1:].isdigit() and int(sizing[1:]) >= 1:
        return int(sizing[1:])
    raise ConfigError(f"unknown gradient sizing {sizing!r}: use 'k1', 'worst_k' or 'k<N>' (N >= 1)",
                      field="sizing")


def grad_bytes(tau0: float, workers: int, b_e: float, k: float) -> float:
    """Gradient M (bytes) whose ring exchange (m/w)·2(w − 1)/(b_e/f(α, ξ1·k)) equals EXTRA·τ⁰ (0 for 1 worker)."""
    if workers <= 1:
        return 0.0
    return EXTRA * tau0 * b_e * workers / (2 * (workers - 1) * degradation(ALPHA, max(1.0, XI1 * k)))


def draw_job_time(rng: random.Random) -> tuple[float, int]:
    """(τ⁰_j, F_j) uniform on τ ∈ TAU_RANGE, F ∈ ITER_RANGE (integers), redrawn until τ·F ∈ RHO_RANGE [I]."""
    while True:
        tau0 = rng.uniform(*TAU_RANGE)
        iters = rng.randint(*ITER_RANGE)
        if RHO_RANGE[0] <= tau0 * iters <= RHO_RANGE[1]:
            return tau0, iters


def workload(seed: int, cluster: Cluster, n_jobs: int = 160, sizing: str = DEFAULT_SIZING
             ) -> tuple[list[JobSpec], list[ModelProfile], float]:
    """Jobs, their per-job profiles and ξ2 (s per server) for one seed (see module docstring).

    The jobs' sizes, τ⁰ and F do not depend on ``sizing``; only the gradients do."""
    rng = random.Random(f"yu2022-jobs-{seed}")
    sizes = philly_sizes(n_jobs)
    rng.shuffle(sizes)
    k = sizing_degree(sizing, max(len(g) for g in cluster.server_gpus))
    b_e = min(cluster.nic_Bps(s) for s in range(cluster.num_servers))
    jobs, profiles = [], []
    tau_min, g_max = TAU_RANGE[0], max(sizes)
    for i, w in enumerate(sizes):
        tau0, iters = draw_job_time(rng)
        name = f"yu{seed}-{i}"
        profiles.append(ModelProfile(name, grad_bytes(tau0, w, b_e, k) / 1e6, tau0 * 1000.0, 1, 1000.0,
                                     source="yu2022 reproduction (synthetic, docs/policies/sjf-bco.md §7)"))
        jobs.append(JobSpec(job_id=f"j{i}", arrival_s=0.0, num_gpus=w, model=name, iterations=float(iters),
                            source=f"yu2022:{seed}:{i}"))
    return jobs, profiles, EXTRA * tau_min / g_max


def realised(records: Sequence[dict[str, Any]], xi2: float) -> dict[str, float]:
    """Realised extra time of one run, as % of the jobs' total run time (the paper's "actual execution time").

    ``extra_pct`` = Σ comm_s / Σ run_s: in this workload compute is exactly τ⁰·F, so all communication
    (ring exchange, reduction, per-server overhead γ, contention) is extra time. Split: ``contention_pct``
    (excess over the same placement at k = 1), ``overhead_pct`` (γ = ξ2·#servers per iteration) and
    ``ring_pct`` (the rest: ring exchange and reduction at k = 1). Counters: ``multi_server_jobs`` (spanning
    > 1 server), ``contended_jobs`` (those that paid contention)."""
    run = sum(float(r["run_s"]) for r in records)
    comm = sum(float(r["comm_s"]) for r in records)
    cont = sum(float(r["contention_s"]) for r in records)
    ovh = sum(xi2 * int(r["servers"]) * float(r["iterations"]) for r in records)
    pct = 100.0 / run if run > 0 else 0.0
    return {"extra_pct": comm * pct, "contention_pct": cont * pct, "overhead_pct": ovh * pct,
            "ring_pct": (comm - cont - ovh) * pct,
            "multi_server_jobs": sum(1 for r in records if int(r["servers"]) > 1),
            "contended_jobs": sum(1 for r in records if float(r["contention_s"]) > 1e-12)}


def analytic_extra(cluster: Cluster, profiles: Sequence[ModelProfile], jobs: Sequence[JobSpec], xi2: float
                   ) -> dict[str, float]:
    """Extra time over τ⁰ from eq. (8), in % of τ⁰, for the multi-GPU jobs: ``k1_2srv_pct`` mean over them of a
    placement on 2 servers at k = 1; ``worst_pct`` max over them of as many servers as GPUs at k = max O_s."""
    b_e = min(cluster.nic_Bps(s) for s in range(cluster.num_servers))
    kmax = max(len(g) for g in cluster.server_gpus)
    k1, worst = [], []
    for j, p in zip(jobs, profiles, strict=True):
        w = j.num_gpus
        if w <= 1:
            continue
        tau0 = p.compute_ms / 1000.0
        ring1 = p.grad_mb * 1e6 / w * 2 * (w - 1) / b_e
        k1.append(100.0 * (ring1 + 2 * xi2) / tau0)
        worst.append(100.0 * (ring1 * degradation(ALPHA, XI1 * kmax) + w * xi2) / tau0)
    return {"k1_2srv_pct": sum(k1) / len(k1) if k1 else 0.0, "worst_pct": max(worst, default=0.0)}


def run_one(seed: int, algorithm: str, *, horizon: float, num_servers: int = 20, kappa: int | None = None,
            lam: float = 1.0, n_jobs: int = 160, sizing: str = DEFAULT_SIZING) -> dict[str, Any]:
    """One planned run, executed in the fluid engine: headline metrics, the plan's facts, realised extra time."""
    cluster = yu_cluster(seed=seed, num_servers=num_servers)
    jobs, profiles, xi2 = workload(seed, cluster, n_jobs, sizing)
    params = {"xi1": XI1, "xi2_s": xi2, "alpha": ALPHA}
    policy = planned_policy(algorithm, kappa=kappa, lam=lam, horizon_s=horizon, **params)
    res = run_simulation(cluster, jobs, policy, SimConfig(perf_model="sjf_bco", perf_params=params, seed=seed,
                                                          record_timeseries=False),
                         catalog=default_catalog().with_profiles(profiles))
    s = summarize(res)
    p = policy.first_plan
    assert p is not None
    mech = s["mechanisms"]
    return {"makespan": s["makespan_s"], "avg_jct": s["avg_jct_s"], "plan_makespan": p.makespan,
            "feasible": p.feasible, "kappa": p.kappa, "theta": p.theta, "overhead_pct": s["comm_overhead_pct"],
            "plans": mech["plans"], "fa_ffp_jobs": mech.get("fa_ffp_starts", 0),
            "lbsgf_jobs": mech.get("lbsgf_starts", 0), "multi_server_starts": mech["multi_server_starts"],
            **realised(res.records, xi2), **analytic_extra(cluster, profiles, jobs, xi2)}


def curve_shape(values: Sequence[float]) -> dict[str, Any]:
    """Shape of a makespan-vs-κ curve (over the κ classes, ascending).

    ``signs``: one character per step (``-`` down, ``+`` up, ``=`` flat). ``drop``/``rise``/``dip``: a step down,
    a later step up, a step down after that (the order the paper describes, anywhere on the curve).
    ``interior``: the best κ is neither the first nor the last class. ``paper``: the paper's Fig. 5 shape read
    strictly — the first step drops, some later step rises, the last step (to the largest κ) dips, and the dip
    is slight (the best κ is interior)."""
    steps = [b - a for a, b in itertools.pairwise(values)]
    first_drop = next((i for i, d in enumerate(steps) if d < 0), None)
    rise = None if first_drop is None else next((i for i in range(first_drop + 1, len(steps)) if steps[i] > 0),
                                                None)
    dip = None if rise is None else next((i for i in range(rise + 1, len(steps)) if steps[i] < 0), None)
    best = min(range(len(values)), key=lambda i: (values[i], i)) if values else 0
    interior = 0 < best < len(values) - 1
    paper = bool(steps) and steps[0] < 0 and steps[-1] < 0 and any(d > 0 for d in steps[1:-1]) and interior
    return {"signs": "".join("-" if d < 0 else "+" if d > 0 else "=" for d in steps), "drop": first_drop is not None,
            "rise": rise is not None, "dip": dip is not None, "interior": interior, "paper": paper}


def _wins(res: dict[str, list[dict[str, Any]]], metric: str, label: str) -> int:
    """Seeds in which ``label`` has the strictly lowest ``metric`` among the algorithms of ``res``."""
    n = len(res[label])
    return sum(1 for i in range(n) if all(res[label][i][metric] < res[o][i][metric] for o in res if o != label))


def _suffix(sizing: str) -> str:
    return "" if sizing == DEFAULT_SIZING else f"_{sizing}"


def _fig4(out_dir: Path, seeds: list[int], n_jobs: int, sizing: str, progress: Callable[[str], None]
          ) -> tuple[dict[str, list[dict[str, Any]]], str]:
    res: dict[str, list[dict[str, Any]]] = {}
    for algo, label in ALGOS:
        res[label] = [run_one(s, algo, horizon=1200, n_jobs=n_jobs, sizing=sizing) for s in seeds]
        progress(f"yu2022 fig4 [{sizing}] {label} done")
    rows = []
    for label, rs in res.items():
        ms, ja = seed_stats([r["makespan"] for r in rs]), seed_stats([r["avg_jct"] for r in rs])
        rows.append([label, ms[0], ms[1], ms[2], ms[3], ja[0], ja[1], seed_stats([r["plan_makespan"] for r in rs])[0],
                     sum(r["feasible"] for r in rs), _wins(res, "makespan", label), _wins(res, "avg_jct", label),
                     seed_stats([r["extra_pct"] for r in rs])[0], seed_stats([r["contention_pct"] for r in rs])[0]])
    md = write_table(out_dir, f"fig4_makespan_jct{_suffix(sizing)}",
                     ["algorithm", "makespan_mean", "makespan_ci95", "makespan_min", "makespan_max", "avg_jct_mean",
                      "avg_jct_ci95", "planned_makespan_mean", "plans_within_T", "best_makespan_seeds",
                      "best_avg_jct_seeds", "realised_extra_pct", "of_which_contention_pct"],
                     rows, f"Fig. 4: makespan and average JCT (T = 1200, sizing {sizing})")
    return res, md


def _kappa_curve(seeds: list[int], n_jobs: int, sizing: str, progress: Callable[[str], None]
                 ) -> tuple[list[int], dict[int, dict[int, dict[str, Any]]]]:
    """κ classes and, per seed, the run (``run_one``) at each class's smallest κ."""
    classes = kappa_classes([j.num_gpus for j in workload(seeds[0], yu_cluster(seed=seeds[0]), n_jobs)[0]], 32)
    per_seed: dict[int, dict[int, dict[str, Any]]] = {}
    for s in seeds:
        sizes = [j.num_gpus for j in workload(s, yu_cluster(seed=s), n_jobs)[0]]
        assert kappa_classes(sizes, 32) == classes  # the size mix does not depend on the seed
        per_seed[s] = {k: run_one(s, "sjf-bco", horizon=1200, kappa=k, n_jobs=n_jobs, sizing=sizing)
                       for k in classes}
        progress(f"yu2022 fig5 [{sizing}] seed {s} done")
    return classes, per_seed


def _fig6(out_dir: Path, seeds: list[int], n_jobs: int, sizing: str, servers: list[int],
          progress: Callable[[str], None]) -> str:
    rows, series = [], {}
    for algo, label in ALGOS[:3]:
        per_n = []
        for n in servers:
            vals = [run_one(s, algo, horizon=1500, num_servers=n, n_jobs=n_jobs, sizing=sizing)["makespan"]
                    for s in seeds]
            per_n.append(vals)
            rows.append([label, n, *seed_stats(vals)])
        series[label] = per_n
        progress(f"yu2022 fig6 [{sizing}] {label} done")
    plot_lines(out_dir / f"fig6_makespan_vs_servers{_suffix(sizing)}.png", servers, series, "servers",
               "makespan (slots)", f"Fig. 6: makespan vs number of servers (sizing {sizing})")
    return write_table(out_dir, f"fig6_makespan_vs_servers{_suffix(sizing)}",
                       ["algorithm", "servers", "makespan_mean", "makespan_ci95", "makespan_min", "makespan_max"],
                       rows, f"Fig. 6: makespan vs number of servers (T = 1500, sizing {sizing})")


@register_reproduction("yu2022", "Yu et al. MobiHoc'22 SJF-BCO vs FF/LS/RAND; makespan vs κ, #servers, λ")
def run(*, out_dir: Path, seeds: list[int], quick: bool, progress: Callable[[str], None]) -> str:
    out_dir.mkdir(parents=True, exist_ok=True)
    n_jobs = 20 if quick else 160
    servers_sweep = [12] if quick else list(range(10, 21))
    lams = [1, 2] if quick else [1, 2, 4, 8]
    text: list[str] = [f"yu2022 reproduction: {n_jobs} jobs, seeds {seeds}, gradient sizing {DEFAULT_SIZING!r} "
                       f"(sensitivity: {', '.join(SIZINGS)}); mean, 95 % t-CI half-width, min and max over seeds "
                       "(1 slot = 1 s)\n"]
    fig4: dict[str, dict[str, list[dict[str, Any]]]] = {}
    curves: dict[str, dict[int, dict[int, dict[str, Any]]]] = {}
    per7: dict[str, list[list[float]]] = {}
    classes: list[int] = []
    fig67: list[str] = []
    for sizing in SIZINGS:  # every figure under every sizing rule; the default's tables carry the plain names
        fig4[sizing], md4 = _fig4(out_dir, seeds, n_jobs, sizing, progress)
        classes, curves[sizing] = _kappa_curve(seeds, n_jobs, sizing, progress)
        md6 = _fig6(out_dir, seeds, n_jobs, sizing, servers_sweep, progress)
        runs7 = [[run_one(s, "sjf-bco", horizon=1200, kappa=1, lam=lam, n_jobs=n_jobs, sizing=sizing)
                  for s in seeds] for lam in lams]
        per7[sizing] = [[r["makespan"] for r in rs] for rs in runs7]
        md7 = write_table(out_dir, f"fig7_makespan_vs_lambda{_suffix(sizing)}",
                          ["lambda", "makespan_mean", "makespan_ci95", "makespan_min", "makespan_max",
                           "realised_extra_pct_mean", "contention_pct_mean", "multi_server_jobs_mean"],
                          [[lam, *seed_stats(v), *[seed_stats([r[m] for r in rs])[0] for m in
                                                   ("extra_pct", "contention_pct", "multi_server_jobs")]]
                           for lam, v, rs in zip(lams, per7[sizing], runs7, strict=True)],
                          f"Fig. 7: makespan vs λ (κ = 1, T = 1200, sizing {sizing})")
        progress(f"yu2022 fig7 [{sizing}] done")
        if sizing == DEFAULT_SIZING:
            text.append(md4)
            fig67 = [md6, md7]

    bars = fig4[DEFAULT_SIZING]
    plot_bars(out_dir / "fig4_makespan.png", list(bars), {"makespan": [[r["makespan"] for r in v]
                                                                       for v in bars.values()]},
              "makespan (slots)", f"Fig. 4: makespan by algorithm (sizing {DEFAULT_SIZING})")
    plot_bars(out_dir / "fig4_avg_jct.png", list(bars), {"avg JCT": [[r["avg_jct"] for r in v]
                                                                     for v in bars.values()]},
              "avg JCT (slots)", f"Fig. 4: average JCT by algorithm (sizing {DEFAULT_SIZING})")
    write_table(out_dir, "fig4_per_seed",
                ["sizing", "seed", "algorithm", "makespan", "avg_jct", "planned_makespan", "kappa",
                 "realised_extra_pct", "contention_pct", "overhead_gamma_pct", "multi_server_jobs", "contended_jobs"],
                [[z, s, label, r["makespan"], r["avg_jct"], r["plan_makespan"], r["kappa"], r["extra_pct"],
                  r["contention_pct"], r["overhead_pct"], r["multi_server_jobs"], r["contended_jobs"]]
                 for z in SIZINGS for label, rs in fig4[z].items() for s, r in zip(seeds, rs, strict=True)],
                "Fig. 4 per seed and sizing rule")

    # realised extra time per seed (SJF-BCO, every sizing), beside the analytic figures
    rows_r = []
    for sizing in SIZINGS:
        for i, (s, r) in enumerate(zip(seeds, fig4[sizing]["SJF-BCO"], strict=True)):
            rows_r.append([sizing, s, r["k1_2srv_pct"], r["worst_pct"], r["extra_pct"], r["ring_pct"],
                           r["contention_pct"], r["overhead_pct"], r["multi_server_jobs"], r["contended_jobs"],
                           r["kappa"], r["fa_ffp_jobs"], r["lbsgf_jobs"],
                           max(rs[i]["extra_pct"] for rs in fig4[sizing].values())])
    text.append(write_table(out_dir, "realised_overhead",
                            ["sizing", "seed", "analytic_k1_2servers_pct_of_tau0", "analytic_worst_pct_of_tau0",
                             "realised_extra_pct_of_run", "ring_at_k1_pct", "contention_pct", "overhead_gamma_pct",
                             "multi_server_jobs", "contended_jobs", "kappa", "fa_ffp_jobs", "lbsgf_jobs",
                             "max_extra_pct_any_algorithm"],
                            rows_r, "Realised contention + overhead of SJF-BCO per seed (paper: within 15 % of the "
                            "actual execution time)"))

    # Fig. 5: makespan vs κ, one row per job-size split; both sizing rules on the figure
    ends = [*(c - 1 for c in classes[1:]), 32]
    spans = [str(a) if a == b else f"{a}-{b}" for a, b in zip(classes, ends, strict=True)]
    cur = curves[DEFAULT_SIZING]
    text.append(write_table(out_dir, "fig5_makespan_vs_kappa", ["kappa", "makespan_mean", "makespan_ci95",
                                                                "makespan_min", "makespan_max",
                                                                *[f"seed_{s}" for s in seeds], "planned_mean",
                                                                "realised_extra_pct_mean", "realised_extra_pct_max",
                                                                "contention_pct_mean", "multi_server_jobs_mean"],
                            [[sp, *seed_stats([cur[s][k]["makespan"] for s in seeds]),
                              *[cur[s][k]["makespan"] for s in seeds],
                              seed_stats([cur[s][k]["plan_makespan"] for s in seeds])[0],
                              *seed_stats([cur[s][k]["extra_pct"] for s in seeds])[::3],
                              seed_stats([cur[s][k]["contention_pct"] for s in seeds])[0],
                              seed_stats([cur[s][k]["multi_server_jobs"] for s in seeds])[0]]
                             for sp, k in zip(spans, classes, strict=True)],
                            f"Fig. 5: makespan vs κ (T = 1200, sizing {DEFAULT_SIZING}; κ values with the same "
                            "job-size split give the same run)"))
    plot_lines(out_dir / "fig5_makespan_vs_kappa.png", classes,
               {f"SJF-BCO, sizing {z}": [[curves[z][s][k]["makespan"] for s in seeds] for k in classes]
                for z in SIZINGS},
               "κ (smallest κ of each job-size split)", "makespan (slots)", "Fig. 5: makespan vs κ",
               categorical=True)

    # how the planner's κ choice compares with the best fixed κ as executed, per seed
    rows_k = []
    for z in SIZINGS:
        for s, r in zip(seeds, fig4[z]["SJF-BCO"], strict=True):
            c = curves[z][s]
            best = min(classes, key=lambda k, c=c: (c[k]["makespan"], k))
            base = min(fig4[z][lb][seeds.index(s)]["makespan"] for lb in fig4[z] if lb != "SJF-BCO")
            rows_k.append([z, s, r["kappa"], r["plan_makespan"], r["makespan"], best, c[best]["plan_makespan"],
                           c[best]["makespan"], base, curve_shape([c[k]["makespan"] for k in classes])["signs"]])
    text.append(write_table(out_dir, "kappa_choice",
                            ["sizing", "seed", "kappa_chosen", "planned_makespan", "executed_makespan",
                             "best_fixed_kappa_executed", "its_planned_makespan", "its_executed_makespan",
                             "best_baseline_makespan", "kappa_curve_steps"],
                            rows_k, "SJF-BCO's κ choice (on its planned estimate) vs the best fixed κ as executed"))

    # sensitivity: sizing rule × headline metrics and κ curve
    rows_z = []
    for z in SIZINGS:
        r4 = fig4[z]
        shapes = [curve_shape([curves[z][s][k]["makespan"] for k in classes]) for s in seeds]
        mean_curve = [seed_stats([curves[z][s][k]["makespan"] for s in seeds])[0] for k in classes]
        ms = curve_shape(mean_curve)
        rows_z.append([z, seed_stats([r["makespan"] for r in r4["SJF-BCO"]])[0],
                       seed_stats([r["avg_jct"] for r in r4["SJF-BCO"]])[0], _wins(r4, "makespan", "SJF-BCO"),
                       _wins(r4, "avg_jct", "SJF-BCO"), seed_stats([r["extra_pct"] for r in r4["SJF-BCO"]])[0],
                       " ".join(str(r["kappa"]) for r in r4["SJF-BCO"]),
                       sum(all((sh["drop"], sh["rise"], sh["dip"])) for sh in shapes),
                       sum(sh["paper"] for sh in shapes), sum(sh["interior"] for sh in shapes),
                       ms["signs"], "yes" if ms["paper"] else "no", *mean_curve])
    text.append(write_table(out_dir, "sizing_sensitivity",
                            ["sizing", "sjf_bco_makespan", "sjf_bco_avg_jct", "best_makespan_seeds",
                             "best_avg_jct_seeds", "realised_extra_pct", "kappa_chosen_per_seed",
                             "drop_rise_dip_seeds", "paper_shape_seeds", "interior_best_kappa_seeds",
                             "mean_curve_steps", "mean_curve_paper_shape", *[f"makespan_kappa_{k}" for k in classes]],
                            rows_z, f"Sensitivity: gradient sizing rule ({len(seeds)} seeds; κ columns = mean "
                            "makespan at each job-size split)"))

    text += fig67
    plot_lines(out_dir / "fig7_makespan_vs_lambda.png", lams, {f"SJF-BCO κ=1, sizing {z}": per7[z] for z in SIZINGS},
               "λ", "makespan (slots)", "Fig. 7: makespan vs λ (κ = 1)", categorical=True)
    summary = "\n".join(text)
    (out_dir / "summary.md").write_text(summary)
    return summary


__all__ = ["DEFAULT_SIZING", "SIZINGS", "analytic_extra", "curve_shape", "draw_job_time", "grad_bytes", "realised",
           "run", "run_one", "sizing_degree", "workload"]
