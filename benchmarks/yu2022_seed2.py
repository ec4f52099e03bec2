"""Why SJF-BCO does not have the lowest makespan in yu2022 seed 2 (docs/reproductions.md, Yu et al. MobiHoc'22).

    PYTHONPATH=src python benchmarks/yu2022_seed2.py [--seed 2] [--sizing k1]

Diagnostic only: every run is the reproduction's own set-up (``ddlsched.experiments.yu2022.run_one``: T = 1200,
160 jobs, plan executed in the fluid engine with the ``sjf_bco`` perf model). Variants swap one piece of the
planner at a time, through a stand-in for ``ddlsched.policies.sjf_bco.plan`` used by this script only (the
stand-in with the default order and the bisection is checked to reproduce the library's plan exactly):

(a) job order: the same placement rules (SJF-BCO's FA-FFP/LBSGF with its κ search, FF, LS) fed the jobs smallest
    G_j first (SJF-BCO's order), in arrival order (FF's and LS's order), largest G_j first, or longest ρ̂_j first;
(b) the cap: θ bisected (the algorithm) vs θ = ∞ (no U_g cap), per κ;
(c) planned (the planner's snapshot estimate) vs executed makespan, for every row;
(d) the tail of the executed schedules: the jobs that finish last, when the largest jobs start, GPU use;
(e) a counterfactual workload: the longest of the largest jobs given the (τ⁰, F) of the shortest of them;
(f) the same facts across seeds.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any
from unittest import mock

from ddlsched.cluster.presets import yu2022 as yu_cluster
from ddlsched.engine import SimConfig, run_simulation
from ddlsched.experiments import yu2022 as Y
from ddlsched.metrics.summary import summarize
from ddlsched.policies import sjf_bco
from ddlsched.policies.sjf_bco import Plan, PlanJob, kappa_classes, planned_policy
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import ModelProfile, default_catalog

HORIZON = 1200.0
ORDERS: dict[str, Callable[[PlanJob], Any] | None] = {
    "smallest G first (SJF)": lambda j: (j.num_gpus, j.seq),
    "arrival": lambda j: j.seq,
    "largest G first": lambda j: (-j.num_gpus, j.seq),
    "longest rho first": lambda j: (-j.rho_hat, j.seq),
}


def stand_in(order_key: Callable[[PlanJob], Any] | None, theta: float | None) -> Callable[..., Plan]:
    """``sjf_bco.plan`` with the job order and/or θ replaced (None: the library's choice)."""
    library = sjf_bco.plan

    def _plan(cluster: Any, jobs: Sequence[PlanJob], *, algorithm: str = "sjf-bco", horizon: float | None = None,
              u: float = 1.15, lam: float = 1.0, kappa: int | None = None, model: Any = None,
              busy_until: Sequence[float] | None = None, t0: float = 0.0, seed: int = 0) -> Plan:
        if algorithm == "rand":
            return library(cluster, jobs, algorithm=algorithm, horizon=horizon, u=u, lam=lam, kappa=kappa,
                           model=model, busy_until=busy_until, t0=t0, seed=seed)
        busy = list(busy_until) if busy_until is not None else [t0] * cluster.num_gpus
        assert horizon is not None and model is not None
        key = order_key or ((lambda j: (j.num_gpus, j.seq)) if algorithm == "sjf-bco" else (lambda j: j.seq))
        order = sorted(jobs, key=key)
        sizes = [j.num_gpus for j in order]
        kappas = ([kappa] if kappa is not None else kappa_classes(sizes, max(sizes))) if algorithm == "sjf-bco" \
            else [0]
        best = Plan(algorithm, [], horizon, None, None, False)
        left, right = 1, math.ceil(horizon)
        while left <= right:  # the library's bisection; a fixed θ is one pass
            th = theta if theta is not None else (left + right) // 2
            m_th, y_th, k_th = horizon, None, None
            for k in kappas:
                m, entries = sjf_bco._run_trial(cluster, model, order, algorithm, th, k, lam, u, busy, t0, horizon,
                                                None, cutoff=m_th)
                if m < m_th:
                    m_th, y_th, k_th = m, entries, k
            if m_th < best.makespan and y_th is not None:
                best = Plan(algorithm, y_th, m_th, th, k_th if algorithm == "sjf-bco" else None, True)
                right = th - 1
            else:
                left = th + 1
            if theta is not None:
                break
        return best

    return _plan


CALLS: list[tuple[Any, list[PlanJob], dict[str, Any]]] = []  # the planner calls of the last run (cluster, jobs, kw)


@contextmanager
def planner(order_key: Callable[[PlanJob], Any] | None = None, theta: float | None = None) -> Iterator[None]:
    """Run with the stand-in planner (records its calls in ``CALLS``)."""
    inner = stand_in(order_key, theta)

    def _plan(cluster: Any, jobs: Sequence[PlanJob], **kw: Any) -> Plan:
        CALLS.append((cluster, list(jobs), kw))
        return inner(cluster, jobs, **kw)

    CALLS.clear()
    with mock.patch.object(sjf_bco, "plan", _plan):
        yield


def shortened_workload(seed: int) -> Callable[..., Any]:
    """``yu2022.workload`` with the longest of the largest jobs given the (τ⁰, F) of the shortest of them."""
    library = Y.workload

    def _workload(s: int, cluster: Any, n_jobs: int = 160, sizing: str = Y.DEFAULT_SIZING) -> Any:
        jobs, profiles, xi2 = library(s, cluster, n_jobs, sizing)
        long_j, short_j = extremes(jobs, profiles)
        jobs = [replace(j, model=short_j.model, iterations=short_j.iterations) if j is long_j else j for j in jobs]
        return jobs, profiles, xi2

    return _workload


def extremes(jobs: Sequence[JobSpec], profiles: Sequence[ModelProfile]) -> tuple[JobSpec, JobSpec]:
    """The longest and the shortest (by ρ̂ = τ⁰·F) of the jobs with the most GPUs."""
    tau = {p.name: p.compute_ms / 1000.0 for p in profiles}
    g = max(j.num_gpus for j in jobs)
    big = sorted((j for j in jobs if j.num_gpus == g), key=lambda j: (tau[j.model] * j.iterations, j.job_id))
    return big[-1], big[0]


def execute(seed: int, sizing: str, algorithm: str, *, kappa: int | None = None,
            order_key: Callable[[PlanJob], Any] | None = None, theta: float | None = None,
            shorten: bool = False, n_jobs: int = 160) -> dict[str, Any]:
    """One run of the reproduction's set-up; the plan, its executed metrics and the per-job records."""
    cluster = yu_cluster(seed=seed)
    with mock.patch.object(Y, "workload", shortened_workload(seed) if shorten else Y.workload):
        jobs, profiles, xi2 = Y.workload(seed, cluster, n_jobs, sizing)
    params = {"xi1": Y.XI1, "xi2_s": xi2, "alpha": Y.ALPHA}
    policy = planned_policy(algorithm, kappa=kappa, horizon_s=HORIZON, **params)
    with planner(order_key, theta):
        res = run_simulation(cluster, jobs, policy, SimConfig(perf_model="sjf_bco", perf_params=params, seed=seed,
                                                              record_timeseries=False),
                             catalog=default_catalog().with_profiles(profiles))
    s = summarize(res)
    p = policy.first_plan
    assert p is not None
    tau = {pr.name: pr.compute_ms / 1000.0 for pr in profiles}
    recs = [{**r, "rho": tau[r["model"]] * float(r["iterations"])} for r in res.records]
    long_id = extremes(jobs, profiles)[0].job_id
    return {"makespan": s["makespan_s"], "avg_jct": s["avg_jct_s"], "planned": p.makespan, "kappa": p.kappa,
            "theta": p.theta, "entries": p.entries, "records": recs, "gpus": cluster.num_gpus,
            "long": by_id(recs, long_id), "multi": sum(1 for r in recs if int(r["servers"]) > 1)}


def by_id(recs: Sequence[dict[str, Any]], job_id: str) -> dict[str, Any]:
    return next(r for r in recs if r["job_id"] == job_id)


def fmt(x: Any) -> str:
    return "-" if x is None else (f"{x:.1f}" if isinstance(x, float) else str(x))


HEAD = ("| run | κ | θ | planned makespan | executed makespan | planned − executed | avg JCT | multi-server jobs "
        "| longest largest job: start → end |\n|---|---|---|---|---|---|---|---|---|")


def row(label: str, r: dict[str, Any]) -> str:
    gap = 100.0 * (r["planned"] - r["makespan"]) / r["makespan"]
    lj = r["long"]
    return (f"| {label} | {fmt(r['kappa'])} | {fmt(r['theta'])} | {r['planned']:.1f} | {r['makespan']:.1f} | "
            f"{gap:+.1f} % | {r['avg_jct']:.1f} | {r['multi']} | {float(lj['first_start_s']):.0f} → "
            f"{float(lj['finish_s']):.0f} |")


def busy_share(recs: Sequence[dict[str, Any]], a: float, b: float, gpus: int) -> float:
    """Busy GPU-time in [a, b] as % of gpus × (b − a)."""
    used = sum(x["num_gpus"] * max(0.0, min(b, float(x["finish_s"])) - max(a, float(x["first_start_s"])))
               for x in recs)
    return 100.0 * used / (gpus * (b - a))


def tail(r: dict[str, Any], n: int) -> list[str]:
    """The ``n`` jobs that finish last, when the two largest sizes start, and GPU use over the run."""
    recs = sorted(r["records"], key=lambda x: (-float(x["finish_s"]), x["job_id"]))
    m = r["makespan"]
    out = [f"  last start {max(float(x['first_start_s']) for x in recs):.0f}; busy GPUs over the run "
           f"{busy_share(recs, 0.0, m, r['gpus']):.1f} %, over its last quarter "
           f"{busy_share(recs, 0.75 * m, m, r['gpus']):.1f} %"]
    big = sorted((x for x in recs if x["num_gpus"] >= 16), key=lambda x: float(x["first_start_s"]))
    out.append("  16/32-GPU jobs start at (G): " + ", ".join(f"{float(x['first_start_s']):.0f} ({x['num_gpus']})"
                                                             for x in big))
    out.append("  last to finish (job G ρ̂ start finish servers): " + "; ".join(
        f"{x['job_id']} {x['num_gpus']} {x['rho']:.0f} {float(x['first_start_s']):.0f} {float(x['finish_s']):.0f} "
        f"{x['servers']}" for x in recs[:n]))
    return out


def theta_grid(seed: int, sizing: str, kappas: Sequence[int]) -> list[str]:
    """Per κ: over θ = 240, 250, …, 1200, how many θ give a plan, and whether any differs from θ = ∞'s."""
    execute(seed, sizing, "sjf-bco", kappa=kappas[0], theta=math.inf)
    cluster, jobs, kw = CALLS[0]
    lo = math.ceil(max(j.rho_hat for j in jobs) / kw.get("u", 1.15) / 10.0) * 10
    out = [f"| κ | feasible θ (of {len(range(lo, 1201, 10))}, θ = {lo}..1200 step 10) | smallest feasible θ "
           "| plans ≠ θ = ∞'s plan |", "|---|---|---|---|"]
    for k in kappas:
        kw_k = {**kw, "kappa": k}
        free = stand_in(None, math.inf)(cluster, jobs, **kw_k).entries
        feas, diff = [], 0
        for th in range(lo, 1201, 10):
            p = stand_in(None, float(th))(cluster, jobs, **kw_k)
            if p.feasible:
                feas.append(th)
                diff += p.entries != free
        out.append(f"| {k} | {len(feas)} | {feas[0] if feas else '-'} | {diff} |")
    return out


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--seed", type=int, default=2)
    ap.add_argument("--sizing", default=Y.DEFAULT_SIZING)
    ap.add_argument("--seeds", default="0,1,2,3,4", help="seeds of the cross-seed table (e)")
    a = ap.parse_args(argv)
    seed, z = a.seed, a.sizing
    cluster = yu_cluster(seed=seed)
    jobs, profiles, _ = Y.workload(seed, cluster, 160, z)
    tau = {p.name: p.compute_ms / 1000.0 for p in profiles}
    long_j, short_j = extremes(jobs, profiles)
    print(f"seed {seed}, sizing {z}: {cluster.num_gpus} GPUs on {cluster.num_servers} servers; Σ G·ρ̂ / #GPUs = "
          f"{sum(j.num_gpus * j.iterations * tau[j.model] for j in jobs) / cluster.num_gpus:.1f}, max ρ̂ = "
          f"{max(j.iterations * tau[j.model] for j in jobs):.1f}; largest jobs ({long_j.num_gpus} GPUs): "
          f"longest {long_j.job_id} ρ̂ = {long_j.iterations * tau[long_j.model]:.1f}, shortest {short_j.job_id} "
          f"ρ̂ = {short_j.iterations * tau[short_j.model]:.1f}\n")

    base = {lb: execute(seed, z, algo) for algo, lb in Y.ALGOS[:3]}
    for algo, lb in Y.ALGOS[:3]:  # every run below goes through the stand-in; it must match the library
        lib = Y.run_one(seed, algo, horizon=HORIZON, sizing=z)
        assert (lib["makespan"], lib["avg_jct"]) == (base[lb]["makespan"], base[lb]["avg_jct"]), lb
    kappas = kappa_classes([j.num_gpus for j in jobs], max(j.num_gpus for j in jobs))
    print("(c) the reproduction's runs, and SJF-BCO at each fixed κ (θ bisected); planned = the planner's "
          "estimate\n" + HEAD)
    for lb, r in base.items():
        print(row(lb, r))
    for k in kappas:
        print(row(f"SJF-BCO κ = {k}", execute(seed, z, "sjf-bco", kappa=k)))

    print("\n(a) job order × placement rule (θ bisected; SJF-BCO searches κ on its estimate)\n" + HEAD)
    for name, key in ORDERS.items():
        for algo, lb in Y.ALGOS[:3]:
            print(row(f"{lb}, {name}", execute(seed, z, algo, order_key=key)))

    print("\n(b) the U_g cap: executed runs with θ = ∞ (no cap), then the planner alone over a θ grid\n" + HEAD)
    print(row("SJF-BCO, θ = ∞", execute(seed, z, "sjf-bco", theta=math.inf)))
    for algo, lb in Y.ALGOS[1:3]:
        print(row(f"{lb}, θ = ∞", execute(seed, z, algo, theta=math.inf)))
    print()
    print("\n".join(theta_grid(seed, z, kappas)))

    print("\n(d) tails of the executed schedules")
    for lb, r in [*base.items(), ("SJF-BCO κ = 1", execute(seed, z, "sjf-bco", kappa=1)),
                  ("SJF-BCO, arrival order", execute(seed, z, "sjf-bco", order_key=ORDERS["arrival"]))]:
        print(f"{lb}: makespan {r['makespan']:.1f}")
        print("\n".join(tail(r, 5)))

    print(f"\n(e) counterfactual: {long_j.job_id} given {short_j.job_id}'s (τ⁰, F) (changes the workload)\n" + HEAD)
    for algo, lb in Y.ALGOS[:3]:
        print(row(lb, execute(seed, z, algo, shorten=True)))
    for k in kappas:
        print(row(f"SJF-BCO κ = {k}", execute(seed, z, "sjf-bco", kappa=k, shorten=True)))

    print("\n(f) across seeds: ρ̂ of the largest jobs, SJF-BCO's start of the longest, makespans\n"
          "| seed | GPUs | ρ̂ of the largest jobs | SJF-BCO: longest largest job start → end | SJF-BCO | "
          "SJF-BCO, arrival order | FF | LS |\n|---|---|---|---|---|---|---|---|")
    for s in [int(x) for x in a.seeds.split(",")]:
        c_s = yu_cluster(seed=s)
        js, ps, _ = Y.workload(s, c_s, 160, z)
        t_s = {p.name: p.compute_ms / 1000.0 for p in ps}
        g = max(j.num_gpus for j in js)
        rhos = sorted((round(j.iterations * t_s[j.model]) for j in js if j.num_gpus == g), reverse=True)
        r = execute(s, z, "sjf-bco")
        ms = [r["makespan"], *(execute(s, z, algo, order_key=key)["makespan"]
                               for algo, key in (("sjf-bco", ORDERS["arrival"]), ("ff", None), ("ls", None)))]
        print(f"| {s} | {c_s.num_gpus} | {', '.join(map(str, rhos))} | {float(r['long']['first_start_s']):.0f} → "
              f"{float(r['long']['finish_s']):.0f} | " + " | ".join(f"{m:.1f}" for m in ms) + " |")


if __name__ == "__main__":
    main()
