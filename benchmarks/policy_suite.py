"""Every policy on a fixed set of traces × clusters × offered loads, several seeds, with confidence intervals, the
rank of each policy per cell and whether ``hindsight`` meets its targets there (issue 30; docs/policies/hindsight.md).

A cell is (trace slice, cluster, offered load); by default each slice runs on the clusters it is sized for (the
400–2,000-job slices on 64, 108 and 256 GPUs, 20,000 Philly jobs on 2,048; ``--clusters`` overrides). The load
is reached by scaling the slice's inter-arrival times (``load_scale`` = target ÷ the slice's offered load
unscaled, Σ GPUs × ideal run time ÷ GPUs × arrival span, measured once per slice and cluster with
``fifo+first_fit``). Seeds change the model assigned to jobs of traces without one
(and the policies' random choices). Per cell and policy: mean and 95 % confidence interval (Student t over seeds) of
avg JCT, p99 JCT, makespan and max slowdown (JCT ÷ ideal run time); rank by mean avg JCT; the policy's
``clairvoyant`` flag and execution model; for ``hindsight`` the predictor's median |predicted − actual| / actual and
the worst tenant's average slowdown. The verdict is given against every policy and, where that field's best differ,
against the policies of hindsight's own execution model (``fluid``): the ``rounds`` model (Hare's policies) lets a
job's tasks share fewer GPUs than it asks for, so the same job has a shorter ideal run there (docs/engine.md).

Targets (cells at offered load ≥ 0.7): hindsight's avg JCT ≥ 10 % below the best non-clairvoyant seed policy and
within 10 % of the best clairvoyant one. Policies whose ``paper_scale_jobs`` is below a cell's jobs are skipped
there, with the reason printed. Results go to ``--out`` (default ``benchmarks/results/policy_suite``):
``runs.jsonl`` (one line per run, with the physics it ran under; an existing file is resumed, and refused if its
runs used another physics than ``--perf-model``: runs saved without the field ran under ``maxmin``, the default
before 2026-11-28), ``cells.csv``, ``suite.md``, ``suite.png``.

    python benchmarks/policy_suite.py --quick             # make test: 1 small cell, 2 seeds, a policy per family
    python benchmarks/policy_suite.py                     # the full suite (hours on 2 cores; resumable)
    python benchmarks/policy_suite.py --policies hindsight,tiresias,srtf --loads 0.9 --seeds 0,1,2
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import signal
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "data" / "traces"


@dataclass(frozen=True)
class Slice:
    """A fixed piece of a bundled trace: the first ``jobs`` jobs (of ``window``, if given), loaded with ``options``
    (the loader's options: ``trace_options=`` of ``ddlsched.simulate``)."""

    name: str
    path: str
    jobs: int
    window: str | None = None
    options: tuple[tuple[str, Any], ...] = ()
    clusters: tuple[str, ...] | None = None  # the default clusters it runs on (None: the suite's list)

    def trace_options(self) -> dict[str, Any] | None:
        return dict(self.options) or None


SMALL = ("n8g8", "rack256", "gavel_hetero")  # 64, 256 and 108 GPUs (one type; one type; V100/P100/K80)
SLICES = {
    "philly-w": Slice("philly-w", "philly_pollux/philly.csv", 2000, "66.75d:78.5d", clusters=SMALL),  # users: VCs
    "gavel-6214e9": Slice("gavel-6214e9", "gavel_philly_vc/seed0/6214e9.trace", 2000, clusters=SMALL),  # model names
    "muri-1": Slice("muri-1", "muri/trace1.csv", 1494, clusters=SMALL),  # model names, 1–32 GPUs
    "elasticflow": Slice("elasticflow", "elasticflow_philly/philly_103959.csv", 876, clusters=SMALL),
    # Tiresias' duration list: 1-GPU jobs, no arrivals in the file (sorted by duration): seeded Poisson arrivals
    # handed to the rows in a seeded order (the rate only sets the unscaled load; the cell's load scale does the rest),
    # hashed models
    "tiresias-yarn": Slice("tiresias-yarn", "tiresias/yarn-gput5000.csv", 2000,
                           options=(("arrival_rate_per_s", 0.01), ("shuffle", True)), clusters=SMALL),
    # Sia's Helios-Saturn-derived workload at its highest arrival rate (400 jobs; durations from GPU-hours)
    "sia-saturn": Slice("sia-saturn", "sia_workloads/scale/rate_50/workload-1.csv", 400, clusters=SMALL),
    # 2,048 GPUs need a trace of that scale for a steady load: 20,000 Philly jobs from the same window's start
    "philly-20k": Slice("philly-20k", "philly_pollux/philly.csv", 20000, "66.75d:400d", clusters=("philly2048",)),
}
# not in the default: tiresias-yarn (its durations' top 1 % holds 57–68 % of the GPU-time and outlasts the arrival
# span, so at offered load ≤ 0.9 nothing ever queues and every policy gives the same JCTs; BENCHMARKS.md)
FULL = {"slices": ["philly-w", "gavel-6214e9", "muri-1", "elasticflow", "sia-saturn", "philly-20k"],
        "clusters": ["n8g8", "rack256", "gavel_hetero", "philly2048"],
        "loads": [0.5, 0.7, 0.9], "seeds": [0, 1, 2]}
QUICK = {"slices": ["quick"], "clusters": ["n8g8"], "loads": [0.9], "seeds": [0, 1]}
SLICES["quick"] = Slice("quick", "elasticflow_philly/philly_103959.csv", 300)
QUICK_POLICIES = ["hindsight", "hindsight-oracle", "fifo+consolidated", "sjf+consolidated", "srtf+consolidated",
                  "tiresias+consolidated", "delay-sched", "gandiva-pack", "tiresias-cc", "gavel-fifo"]
VARIANTS = {"hindsight-oracle": ("hindsight", {"oracle": True})}
"""Suite names for a policy with parameters: the perfect-predictor variant of hindsight."""
OURS = "hindsight"
METRICS = ("avg_jct_s", "p99_jct_s", "makespan_s", "max_slowdown")


def all_policies() -> list[str]:
    """Every named policy, the four orderings with consolidated placement, and hindsight's oracle variant."""
    from ddlsched.policies.registry import entries

    names = [f"{o}+consolidated" for o in ("fifo", "sjf", "srtf", "tiresias")]
    names += [e.name for e in entries()]
    return names + list(VARIANTS)


def resolve(name: str) -> tuple[str, dict[str, Any]]:
    return VARIANTS.get(name, (name, {}))


def clairvoyant(name: str) -> bool | None:
    from ddlsched.policies.registry import clairvoyant as flag

    base, params = resolve(name)
    return flag(base, params)


def execution_model(name: str) -> str:
    """The execution model the policy runs in (``fluid``: a job is a fixed gang of its GPUs; ``rounds``: Hare's
    model, whose jobs' tasks may share fewer GPUs, so its ideal run times are shorter; docs/engine.md)."""
    from ddlsched.policies import make_policy

    base, params = resolve(name)
    try:
        return str(make_policy(base, params).requirements.model)
    except Exception:  # a saved run of a policy that cannot be built here (a plug-in not loaded): a table's label
        return "?"


def paper_scale(name: str) -> int | None:
    from ddlsched.policies import make_policy

    base, params = resolve(name)
    return make_policy(base, params).paper_scale_jobs


def network_physics(ran: str, asked: str | None) -> str:
    """The network physics a run used: the summary's (``ran``; "" for a run cut or refused, which has none), except
    that a GPU-sharing policy's ``sharing`` physics wraps the network physics asked for (or the default), which the
    summary does not name."""
    from ddlsched.perf import DEFAULT_PERF_MODEL

    return (asked or DEFAULT_PERF_MODEL) if ran in ("sharing", "") else ran


class Cut(Exception):
    pass


def _stop(signum: int, frame: object) -> None:
    raise Cut


def offered_unscaled(sl: Slice, cluster: str) -> float:
    import ddlsched

    r = ddlsched.simulate(TRACES / sl.path, cluster, "fifo+first_fit", max_jobs=sl.jobs, window=sl.window,
                          trace_options=sl.trace_options(), timeseries=False)
    return float(r.summary["offered_load"])


def run_one(name: str, sl: Slice, cluster: str, scale: float, seed: int, limit: float,
            perf_model: str | None = None) -> dict[str, Any]:
    """One run's row: the metrics, or ``status`` error/timeout. ``perf_model`` None: the execution model's default
    physics (the task-level model has only its own)."""
    import ddlsched
    from ddlsched.errors import DdlschedError

    base, params = resolve(name)
    t0 = time.perf_counter()
    signal.signal(signal.SIGALRM, _stop)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        r = ddlsched.simulate(TRACES / sl.path, cluster, base, policy_params=params, max_jobs=sl.jobs,
                              window=sl.window, load_scale=scale, seed=seed, trace_options=sl.trace_options(),
                              timeseries=False, perf_model=perf_model)
    except Cut:
        return {"status": f"timeout > {limit:g} s", "perf_model": network_physics("", perf_model)}
    except DdlschedError as e:
        return {"status": f"error: {str(e)[:200]}", "perf_model": network_physics("", perf_model)}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    s = r.summary
    recs = r.records
    jct, ideal, users = recs.column("jct_s"), recs.column("ideal_run_s"), recs.column("user")
    slow = [j / i for j, i in zip(jct, ideal, strict=True) if i > 0]
    per_user: dict[str, list[float]] = {}
    for u, j, i in zip(users, jct, ideal, strict=True):
        if u and i > 0:
            per_user.setdefault(u, []).append(j / i)
    row = {"status": "ok" if not s["jobs_unfinished"] else f"{s['jobs_unfinished']} unfinished",
           "jobs": s["jobs"], "completed": s["jobs_completed"], "offered": round(s["offered_load"], 3),
           "avg_jct_s": s["avg_jct_s"], "p99_jct_s": s["p99_jct_s"], "makespan_s": s["makespan_s"],
           "max_slowdown": max(slow, default=math.nan), "preemptions": s["preemptions"],
           "perf_model": network_physics(s["perf_model"], perf_model),
           "wall_s": round(time.perf_counter() - t0, 2)}
    if len(per_user) > 1:
        row["worst_tenant_slowdown"] = max(statistics.fmean(v) for v in per_user.values())
    mech = s.get("mechanisms", {})
    for key, name in (("predictor_median_rel_error", "predictor_err"),
                      ("predictor_median_log2_ratio", "predictor_bias"),
                      ("predictor_p10_p90_coverage", "predictor_coverage")):
        if mech.get(key) is not None:
            row[name] = mech[key]
    return row


def ci95(xs: list[float]) -> float:
    """Half-width of the 95 % confidence interval of the mean (Student t; 0 for one value)."""
    n = len(xs)
    if n < 2:
        return 0.0
    t = {2: 12.706, 3: 4.303, 4: 3.182, 5: 2.776}.get(n, 1.96)
    return t * statistics.stdev(xs) / math.sqrt(n)


def aggregate(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (cell, policy): means, CI half-widths, rank, clairvoyance, targets for hindsight."""
    by: dict[tuple[str, str, float], dict[str, list[dict[str, Any]]]] = {}
    for r in runs:
        by.setdefault((r["slice"], r["cluster"], r["load"]), {}).setdefault(r["policy"], []).append(r)
    rows: list[dict[str, Any]] = []
    for (sl, cl, load), pols in sorted(by.items()):
        cell: list[dict[str, Any]] = []
        for pol, rs in pols.items():
            ok = [r for r in rs if r["status"] == "ok"]
            row: dict[str, Any] = {"slice": sl, "cluster": cl, "load": load, "policy": pol,
                                   "clairvoyant": rs[0]["clairvoyant"], "seeds": len(ok),
                                   "model": rs[0].get("model") or execution_model(pol),
                                   "status": "ok" if len(ok) == len(rs) else rs[[r["status"] for r in rs].index(
                                       next(r["status"] for r in rs if r["status"] != "ok"))]["status"]}
            for m in METRICS:
                xs = [r[m] for r in ok if isinstance(r.get(m), float) and math.isfinite(r[m])]
                row[m] = statistics.fmean(xs) if xs else math.nan
                row[m + "_ci"] = ci95(xs) if xs else math.nan
            for extra in ("predictor_err", "predictor_bias", "predictor_coverage", "worst_tenant_slowdown",
                          "preemptions", "wall_s"):
                xs = [r[extra] for r in ok if extra in r]
                row[extra] = statistics.fmean(xs) if xs else ""
            cell.append(row)
        done = sorted((r for r in cell if r["status"] == "ok"), key=lambda r: r["avg_jct_s"])
        for i, r in enumerate(done):
            r["rank"] = i + 1
        ours = next((r for r in done if r["policy"] == OURS), None)
        seeds = [r for r in done if r["policy"] not in (OURS, *VARIANTS)]
        blind = [r for r in seeds if r["clairvoyant"] is False]
        seer = [r for r in seeds if r["clairvoyant"] is True]
        for r in cell:
            r.setdefault("rank", "")
            r["target"] = r["target_same_model"] = r["why"] = ""
        if ours is not None and blind and seer:
            ours["target"] = verdict(ours, blind, seer, load)
            ours["why"] = why(ours, done, blind[0], seer[0], load)
            same = [r for r in seeds if r["model"] == ours["model"]]
            sb, sc = [r for r in same if r["clairvoyant"] is False], [r for r in same if r["clairvoyant"] is True]
            if sb and sc and (sb[0] is not blind[0] or sc[0] is not seer[0]):
                ours["target_same_model"] = verdict(ours, sb, sc, load)
        rows.extend(sorted(cell, key=lambda r: (r["rank"] == "", r["rank"] or 0, r["policy"])))
    return rows


def verdict(ours: dict[str, Any], blind: list[dict[str, Any]], seer: list[dict[str, Any]], load: float) -> str:
    """The target against the best (first) of ``blind`` (non-clairvoyant) and of ``seer`` (clairvoyant)."""
    b, c = blind[0], seer[0]
    vs_blind = ours["avg_jct_s"] / b["avg_jct_s"] - 1
    vs_seer = ours["avg_jct_s"] / c["avg_jct_s"] - 1
    met = vs_blind <= -0.10 and vs_seer <= 0.10
    return (f"{'MET' if met else 'missed'}{'' if load >= 0.7 else ' (load < 0.7: not judged)'}: "
            f"{vs_blind:+.1%} vs best non-clairvoyant {b['policy']}, {vs_seer:+.1%} vs best clairvoyant {c['policy']}")


def why(ours: dict[str, Any], done: list[dict[str, Any]], blind: dict[str, Any], seer: dict[str, Any],
        load: float) -> str:
    """Why the target is met or missed in a cell, from its runs: is any policy measured (clairvoyant ones and the
    perfect-predictor variant included) 10 % below the best non-clairvoyant one, and, where hindsight is, does it
    trail the best clairvoyant one because of its prediction (the perfect-predictor variant is within 10 %) or its
    mechanisms (that variant is not)."""
    if load < 0.7:
        return "not judged (load < 0.7)"
    best = done[0]
    gain = best["avg_jct_s"] / blind["avg_jct_s"] - 1
    vs_blind = ours["avg_jct_s"] / blind["avg_jct_s"] - 1
    vs_seer = ours["avg_jct_s"] / seer["avg_jct_s"] - 1
    if vs_blind <= -0.10 and vs_seer <= 0.10:
        return "met"
    oracle = next((r for r in done if r["policy"] == "hindsight-oracle"), None)
    perfect = (f"; the perfect-predictor variant is {oracle['avg_jct_s'] / seer['avg_jct_s'] - 1:+.1%} vs "
               f"{seer['policy']}" if oracle is not None else "")
    if gain > -0.10:
        if best is blind:
            return (f"out of reach of every policy measured: the best non-clairvoyant seed policy, {label(best)}, is "
                    f"best of all {len(done)}")
        return (f"out of reach of every policy measured: the best of all, {label(best)}, is only {gain:+.1%} vs "
                f"the best non-clairvoyant one, {label(blind)}")
    if vs_blind <= -0.10:
        cause = ("prediction" if oracle is not None and oracle["avg_jct_s"] <= 1.10 * seer["avg_jct_s"]
                 else "mechanisms")
        return f"trails the clairvoyant {label(seer)} by {vs_seer:+.1%} ({cause}{perfect})"
    return f"{label(best)} is {gain:+.1%} vs the best non-clairvoyant one, hindsight {vs_blind:+.1%}{perfect}"


def target(ours: dict[str, Any]) -> str:
    """The verdict against every policy, and against the policies of hindsight's execution model where that
    field's best differ."""
    same = ours.get("target_same_model")
    return (ours["target"] or "-") + (f"; among {ours['model']}-model policies: {same}" if same else "")


def label(r: dict[str, Any]) -> str:
    return r["policy"] + ("" if r.get("model", "fluid") == "fluid" else f" ({r['model']} model)")


def _h(x: Any, ci: Any = None) -> str:
    if not isinstance(x, float) or not math.isfinite(x):
        return "-"
    return f"{x / 3600:.2f}" + (f" ± {ci / 3600:.2f}" if isinstance(ci, float) and ci > 0 else "")


def markdown(rows: list[dict[str, Any]], command: str) -> str:
    out = [f"Command: `{command}`", "",
           "Hours; ± is the 95 % confidence half-width over seeds. Rank by mean avg JCT. c = clairvoyant (reads "
           "true durations). Target (load ≥ 0.7): hindsight ≥ 10 % below the best non-clairvoyant seed policy and "
           "within 10 % of the best clairvoyant one.", ""]
    cells: dict[tuple[str, str, float], list[dict[str, Any]]] = {}
    for r in rows:
        cells.setdefault((r["slice"], r["cluster"], r["load"]), []).append(r)
    summary = ["| cell | hindsight rank | target | why | predictor median rel. error (log2 bias, p10–p90 coverage) | "
               "hindsight-oracle avg JCT h | p99 JCT vs Tiresias | max slowdown (Tiresias) |",
               "|---|---|---|---|---|---|---|---|"]
    for (sl, cl, load), rs in cells.items():
        ours = next((r for r in rs if r["policy"] == OURS), None)
        oracle = next((r for r in rs if r["policy"] == "hindsight-oracle"), None)
        if ours is not None:
            err, bias, cov = (ours.get(k) for k in ("predictor_err", "predictor_bias", "predictor_coverage"))
            calib = f" ({bias:+.2f}, {cov:.2f})" if isinstance(bias, float) and isinstance(cov, float) else ""
            reason = ours.get("why") or "-"
            summary.append(f"| {sl} / {cl} / {load} | {ours['rank']} of {sum(1 for r in rs if r['rank'] != '')} | "
                           f"{target(ours)} | {reason} | {err:.2f}{calib} |" if isinstance(err, float) else
                           f"| {sl} / {cl} / {load} | {ours['rank']} | {target(ours)} | {reason} | - |")
            summary[-1] += f" {_h(oracle['avg_jct_s']) if oracle else '-'} |"
            las = next((r for r in rs if r["policy"] == "tiresias+consolidated" and r["rank"] != ""), None)
            summary[-1] += (f" {ours['p99_jct_s'] / las['p99_jct_s'] - 1:+.1%} | {ours['max_slowdown']:.1f} "
                            f"({las['max_slowdown']:.1f}) |" if las and ours["rank"] != "" else " - | - |")
    out += ["## Targets cell by cell", "", *summary, ""]
    for (sl, cl, load), rs in cells.items():
        out += [f"## {sl} on {cl}, offered load {load}", "",
                "| rank | policy | c | avg JCT h | p99 JCT h | makespan h | max slowdown | worst tenant slowdown | "
                "preempt | wall s | status |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in rs:
            ms = r["max_slowdown"]
            wt = r.get("worst_tenant_slowdown")
            out.append(f"| {r['rank']} | {label(r)} | {'yes' if r['clairvoyant'] else 'no'} | "
                       f"{_h(r['avg_jct_s'], r['avg_jct_s_ci'])} | {_h(r['p99_jct_s'], r['p99_jct_s_ci'])} | "
                       f"{_h(r['makespan_s'], r['makespan_s_ci'])} | "
                       f"{ms:.1f} | {wt:.2f} |".replace("nan", "-") if isinstance(wt, float) else
                       f"| {r['rank']} | {label(r)} | {'yes' if r['clairvoyant'] else 'no'} | "
                       f"{_h(r['avg_jct_s'], r['avg_jct_s_ci'])} | {_h(r['p99_jct_s'], r['p99_jct_s_ci'])} | "
                       f"{_h(r['makespan_s'], r['makespan_s_ci'])} | {ms:.1f} | - |".replace("nan", "-"))
            pre, wall = r.get("preemptions"), r.get("wall_s")
            out[-1] += (f" {pre:.0f} | {wall:.1f} | {r['status']} |" if isinstance(pre, float) and
                        isinstance(wall, float) else f" - | - | {r['status']} |")
        out.append("")
    return "\n".join(out)


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r["rank"] != "":
            cells.setdefault(f"{r['slice']} / {r['cluster']} / {r['load']}", []).append(r)
    if not cells:
        return
    fig, axes = plt.subplots(len(cells), len(METRICS), figsize=(4.2 * len(METRICS), 0.28 * 40 * len(cells) / 3 + 2),
                             squeeze=False)
    for row_ax, (title, rs) in zip(axes, cells.items(), strict=True):
        rs = sorted(rs, key=lambda r: r["avg_jct_s"])
        names = [r["policy"] for r in rs]
        colors = ["tab:red" if n.startswith(OURS) else "tab:blue" if r["clairvoyant"] else "tab:gray"
                  for n, r in zip(names, rs, strict=True)]
        for ax, m in zip(row_ax, METRICS, strict=True):
            scale = 1.0 if m == "max_slowdown" else 3600.0
            vals = [r[m] / scale for r in rs]
            errs = [(r[m + "_ci"] if math.isfinite(r[m + "_ci"]) else 0.0) / scale for r in rs]
            ax.barh(range(len(rs)), vals, xerr=errs, color=colors)
            ax.set_yticks(range(len(rs)), names, fontsize=6)
            ax.invert_yaxis()
            ax.set_title(f"{title}: {m}", fontsize=8)
    fig.tight_layout()
    tmp = path.with_name(path.name + ".tmp")
    fig.savefig(tmp, dpi=80, format="png")
    plt.close(fig)
    tmp.replace(path)  # complete or absent


def write_csv(rows: list[dict[str, Any]], path: Path) -> None:
    cols = ["slice", "cluster", "load", "policy", "clairvoyant", "rank", "seeds", "status"]
    cols += [c for m in METRICS for c in (m, m + "_ci")]
    cols += ["predictor_err", "predictor_bias", "predictor_coverage", "worst_tenant_slowdown", "preemptions", "wall_s",
             "model", "target", "target_same_model", "why"]
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="one small cell, two seeds, one policy per family")
    ap.add_argument("--policies", default="", help="comma-separated (default: every policy; --quick: a few)")
    ap.add_argument("--slices", default="", help=f"comma-separated of {', '.join(s for s in SLICES if s != 'quick')}")
    ap.add_argument("--clusters", default="")
    ap.add_argument("--loads", default="")
    ap.add_argument("--seeds", default="")
    ap.add_argument("--timeout", type=float, default=300.0, help="wall-clock limit per run, seconds")
    ap.add_argument("--perf-model", default=None,
                    help="physics of the fluid and rounds policies (default: the simulator's default; the task-level "
                         "policies keep their own)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "policy_suite"))
    ap.add_argument("--tabulate", action="store_true",
                    help="write the tables from --out's runs.jsonl and run nothing: every cell it holds, or those "
                         "--slices/--clusters/--loads/--seeds/--policies select")
    a = ap.parse_args(argv)
    base = QUICK if a.quick else FULL

    def pick(text: str, default: list[Any], conv: Any, flag: str, allowed: Any = None) -> list[Any]:
        if not text:
            return list(default)
        try:
            vals = [conv(x.strip()) for x in text.split(",") if x.strip()]
        except ValueError:
            ap.error(f"{flag}: cannot read {text!r}")
        bad = [v for v in vals if allowed is not None and v not in allowed]
        if bad or not vals:
            ap.error(f"{flag}: unknown {bad or text!r}")
        return vals

    slices = pick(a.slices, base["slices"], str, "--slices", SLICES)
    clusters = pick(a.clusters, base["clusters"], str, "--clusters")
    loads = pick(a.loads, base["loads"], float, "--loads")
    if any(not (0 < x <= 2) for x in loads):
        ap.error("--loads: each in (0, 2]")
    seeds = pick(a.seeds, base["seeds"], int, "--seeds")
    known = all_policies()
    policies = pick(a.policies, QUICK_POLICIES if a.quick else known, str, "--policies", known)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "runs.jsonl"
    runs = [json.loads(x) for x in log.read_text().splitlines() if x.strip()] if log.exists() else []
    if a.tabulate:
        chosen_runs = [r for r in runs if (not a.slices or r["slice"] in slices)
                       and (not a.clusters or r["cluster"] in clusters) and (not a.loads or r["load"] in loads)
                       and (not a.seeds or r["seed"] in seeds) and (not a.policies or r["policy"] in policies)]
        if not chosen_runs:
            ap.error(f"--tabulate: no saved run in {log} matches")
        return write_tables(chosen_runs, out, argv)
    from ddlsched.perf import DEFAULT_PERF_MODEL, PERF_MODELS

    if a.perf_model is not None and a.perf_model not in PERF_MODELS:
        ap.error(f"--perf-model: unknown {a.perf_model!r} (one of {', '.join(PERF_MODELS)})")
    wanted = a.perf_model or DEFAULT_PERF_MODEL
    # runs saved before the field existed ran under maxmin, the default physics then; "sharing" was saved for the
    # GPU-sharing policies before network_physics, and names no network, and a run cut or refused was saved without
    # the field: those rows are not checked
    other = sorted({r.get("perf_model", "maxmin") for r in runs if r.get("model") != "taskdag"
                    and (r["status"] == "ok" or "perf_model" in r)} - {wanted, "sharing"})
    if other:
        ap.error(f"--perf-model: {log} holds runs under {', '.join(other)}, not {wanted}: name that physics with "
                 "--perf-model or pick another --out")
    have = {(r["slice"], r["cluster"], r["load"], r["policy"], r["seed"]) for r in runs}
    flags = {p: clairvoyant(p) for p in policies}
    models = {p: execution_model(p) for p in policies}
    limits = {p: paper_scale(p) for p in policies}
    for sl_name in slices:
        sl = SLICES[sl_name]
        for cluster in clusters:
            if not a.clusters and sl.clusters is not None and cluster not in sl.clusters:
                continue  # the default pairs each slice with the clusters it is sized for
            offered = offered_unscaled(sl, cluster)
            for load in loads:
                scale = load / offered
                for p in policies:
                    if limits[p] is not None and limits[p] < sl.jobs:
                        print(f"skip {p} on {sl_name}/{cluster}/{load}: paper-scale (measured over a minute above "
                              f"{limits[p]:,} jobs; this cell has {sl.jobs:,})", flush=True)
                        continue
                    for seed in seeds:
                        key = (sl_name, cluster, load, p, seed)
                        if key in have:
                            continue
                        row = run_one(p, sl, cluster, scale, seed, a.timeout,
                                      None if models[p] == "taskdag" else a.perf_model)
                        row.update(dict(zip(("slice", "cluster", "load", "policy", "seed"), key, strict=True)),
                                   clairvoyant=flags[p], model=models[p], load_scale=round(scale, 4))
                        runs.append(row)
                        with log.open("a") as f:
                            f.write(json.dumps(row) + "\n")
                        print(f"{sl_name}/{cluster}/{load} {p} seed {seed}: {row['status']} "
                              f"avg JCT {row.get('avg_jct_s', math.nan) / 3600:.3f} h ({row.get('wall_s', '-')} s)",
                              flush=True)
    chosen = {(s, c, x) for s in slices for c in clusters for x in loads
              if a.clusters or SLICES[s].clusters is None or c in SLICES[s].clusters}
    return write_tables([r for r in runs if (r["slice"], r["cluster"], r["load"]) in chosen
                         and r["policy"] in policies and r["seed"] in seeds], out, argv)


def write_tables(runs: list[dict[str, Any]], out: Path, argv: list[str] | None) -> int:
    """cells.csv, suite.md and suite.png in ``out`` from ``runs``; the table is printed too."""
    rows = aggregate(runs)
    write_csv(rows, out / "cells.csv")
    command = "python benchmarks/policy_suite.py " + " ".join(sys.argv[1:] if argv is None else argv)
    md = markdown(rows, command.strip())
    tmp = out / "suite.md.tmp"
    tmp.write_text(md + "\n")
    tmp.replace(out / "suite.md")
    plot(rows, out / "suite.png")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
