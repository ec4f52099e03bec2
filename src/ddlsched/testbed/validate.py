"""The fidelity suite: run the scenarios for real, predict them with every physics model, report errors.

For each model in ``ddlsched.perf.PERF_MODELS`` two variants are reported: ``raw`` (default parameters,
α = 0) and ``calibrated`` (the profile from ``ddlsched testbed calibrate``). Every scenario may have been run
several times (``validation_suite``: ``nic4``, ``nic4.r2``, …); a job's measured communication time per iteration
and JCT are the arithmetic means over its runs, its predicted ones the means of the predictions for each run's
executed schedule, and its error = predicted mean / measured mean − 1. The table gives the median, 90th
percentile and worst |error| over all jobs of the suite, and which job is worst; the measurement spread of a job
is (max − min) / mean of its measured communication time over its runs.
:func:`plot_comm` draws predicted against measured communication time per job, grouped by scenario.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np

from ddlsched.cluster.topology import Cluster
from ddlsched.perf import PERF_MODELS
from ddlsched.testbed.calibrate import RAW_PARAMS, calibrated_cluster
from ddlsched.testbed.executor import JobMeasurement, RunResult, run_schedule
from ddlsched.testbed.predict import JobRun, predict
from ddlsched.testbed.scenarios import (
    TCP_RULE_SCENARIOS,
    Scenario,
    base_name,
    calibration_suite,
    repeat_index,
    validation_suite,
)


@dataclass
class ScenarioResult:
    scenario: Scenario
    run: RunResult


def run_suite(cluster: Cluster, scenarios: Sequence[Scenario], out_dir: str | Path, *, backend: str = "socket",
              log: Any = print) -> list[ScenarioResult]:
    out: list[ScenarioResult] = []
    for sc in scenarios:
        res = run_schedule(cluster, sc.jobs, Path(out_dir) / sc.name, backend=backend)
        (Path(out_dir) / sc.name / "run.json").write_text(json.dumps(res.as_json()))
        out.append(ScenarioResult(sc, res))
        log(f"  {sc.name:<10} {res.wall_s:5.1f} s, CPU workers {100 * res.worker_cpu:3.0f} % host "
            f"{100 * res.cpu_util:3.0f} %: " + ", ".join(
            f"{j}: comm {m.comm_s:.3f} s JCT {m.jct_s:.2f} s" for j, m in res.jobs.items()))
    return out


def load_suite(scenarios: Sequence[Scenario], out_dir: str | Path, *, missing_ok: bool = False) -> list[ScenarioResult]:
    """The results :func:`run_suite` saved (``<out_dir>/<scenario>/run.json``), to re-evaluate without a testbed;
    with ``missing_ok`` scenarios without a saved run are skipped (e.g. a suite saved before they existed)."""
    out = []
    for sc in scenarios:
        path = Path(out_dir) / sc.name / "run.json"
        if missing_ok and not path.exists():
            continue
        data = json.loads(path.read_text())
        jobs = {k: JobMeasurement(**v) for k, v in data["jobs"].items()}
        out.append(ScenarioResult(sc, RunResult(jobs, data["cpu_util"], data["wall_s"], data.get("worker_cpu", 0.0))))
    return out


def load_calibration_runs(out_dir: str | Path) -> list[ScenarioResult]:
    """The calibration runs saved in ``out_dir`` (``<out_dir>/<scenario>/run.json``) with every repeat found there
    (``cal-park.r2``, …: as many as the directory holds); scenarios without a saved run are skipped, so a
    directory saved before repeats (or before a scenario) existed still loads."""
    found = [repeat_index(p.parent.name) for p in Path(out_dir).glob("*/run.json")
             if base_name(p.parent.name) in TCP_RULE_SCENARIOS]
    return load_suite(calibration_suite(max(found, default=1)), out_dir, missing_ok=True)


def load_validation_runs(scenarios: Sequence[Scenario], out_dir: str | Path) -> list[ScenarioResult]:
    """The validation runs saved in ``out_dir`` with every repeat found there (``nic4.r2``, …: as many as the
    directory holds, in :func:`validation_suite`'s interleaved order). The first run of every scenario must be
    there; a directory saved before repeats existed (one run per scenario) loads as one repeat."""
    names = {s.name for s in scenarios}
    found = [repeat_index(p.parent.name) for p in Path(out_dir).glob("*/run.json")
             if base_name(p.parent.name) in names]
    suite = validation_suite(max(found, default=1), tuple(scenarios))
    first = load_suite([s for s in suite if repeat_index(s.name) == 1], out_dir)
    later = load_suite([s for s in suite if repeat_index(s.name) > 1], out_dir, missing_ok=True)
    by_name = {r.scenario.name: r for r in (*first, *later)}
    return [by_name[s.name] for s in suite if s.name in by_name]


def group_repeats(results: Sequence[ScenarioResult]) -> list[tuple[Scenario, list[ScenarioResult]]]:
    """The runs of each scenario together, in the order scenarios first appear: (the scenario under its own
    name, its runs in repeat order)."""
    groups: dict[str, list[ScenarioResult]] = {}
    for r in results:
        groups.setdefault(base_name(r.scenario.name), []).append(r)
    out = []
    for name, runs in groups.items():
        runs.sort(key=lambda r: repeat_index(r.scenario.name))
        jobs = runs[0].scenario.jobs
        if any(r.scenario.jobs != jobs for r in runs):
            raise ValueError(f"the runs of scenario {name!r} do not have the same jobs")
        out.append((Scenario(name, runs[0].scenario.what, jobs), runs))
    return out


def spread(values: Sequence[float]) -> float:
    """(max − min) / mean: the range of one job's measurements over its runs (0 for one run)."""
    return (max(values) - min(values)) / (sum(values) / len(values))


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def evaluate(cluster: Cluster, results: Sequence[ScenarioResult], calibration: Mapping[str, Any] | None,
             labels: Sequence[str] | None = None, kinds: Sequence[str] = ("raw", "calibrated")) -> dict[str, Any]:
    """Per-job predictions of every model/variant (or of ``labels`` only, in the ``kinds`` of parameters asked
    for) and the summary error table; the runs of a scenario (repeats) are scored together: measured = mean over
    the runs, predicted = mean of each run's prediction."""
    variants: list[tuple[str, str, Cluster, Mapping[str, Any] | None]] = []
    for name in model_labels() if labels is None else labels:
        if "raw" in kinds:
            variants.append((name, "raw", cluster, {"raw": RAW_PARAMS}))
        if calibration and "calibrated" in kinds:
            variants.append((name, "calibrated", calibrated_cluster(cluster, calibration), calibration))
    jobs: list[dict[str, Any]] = []
    for scen, runs in group_repeats(results):
        executed = [r.run.as_executed(scen.jobs) for r in runs]
        preds = {f"{m}/{v}": [predict(c, ex, _split(m)[0], cal, extra=_split(m)[1]) for ex in executed]
                 for m, v, c, cal in variants}
        for j in scen.jobs:
            meas = [r.run.jobs[j.job_id] for r in runs]
            comm_runs, jct_runs = [m.comm_s for m in meas], [m.jct_s for m in meas]
            comm, jct = _mean(comm_runs), _mean(jct_runs)
            row: dict[str, Any] = {
                "scenario": scen.name, "job": j.job_id, "gpus": list(j.gpus), "grad_mb": j.grad_mb,
                "iters": j.iters, "start_s": round(_mean([m.start_s for m in meas]), 3),
                "measured": {"comm_s": comm, "jct_s": jct, "runs": len(runs), "comm_s_runs": comm_runs,
                             "jct_s_runs": jct_runs, "comm_spread": spread(comm_runs)},
                "predicted": {}}
            for key, per_run in preds.items():
                pc, pt = _mean([p[j.job_id].comm_s for p in per_run]), _mean([p[j.job_id].jct_s for p in per_run])
                row["predicted"][key] = {"comm_s": pc, "jct_s": pt, "comm_err": pc / comm - 1, "jct_err": pt / jct - 1}
            jobs.append(row)
    summary = [{"model": m, "variant": v, **error_summary(jobs, f"{m}/{v}")} for m, v, _, _ in variants]
    cpu = {r.scenario.name: r.run.cpu_util for r in results}
    wcpu = {r.scenario.name: r.run.worker_cpu for r in results}
    return {"summary": summary, "measurement_spread": spread_summary(jobs), "jobs": jobs, "cpu_util": cpu,
            "worker_cpu": wcpu}


def error_summary(jobs: Sequence[Mapping[str, Any]], key: str) -> dict[str, Any]:
    """Median, 90th percentile and largest |predicted ÷ measured − 1| of communication and JCT over ``jobs`` (report
    rows) for the model variant ``key`` (``model/variant``), with the largest error's sign and job."""
    entry: dict[str, Any] = {}
    for metric in ("comm", "jct"):
        errs = [(abs(j["predicted"][key][f"{metric}_err"]), j) for j in jobs]
        worst = max(errs, key=lambda e: e[0])
        entry[f"{metric}_median"] = median(e for e, _ in errs)
        entry[f"{metric}_p90"] = float(np.percentile([e for e, _ in errs], 90))
        entry[f"{metric}_worst"] = worst[0]
        entry[f"{metric}_worst_at"] = f"{worst[1]['scenario']}/{worst[1]['job']}"
        entry[f"{metric}_signed_worst"] = worst[1]["predicted"][key][f"{metric}_err"]
    return entry


def spread_summary(jobs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Median, 90th percentile and worst measurement spread of communication time over the jobs, with the runs
    per job (fewest, most)."""
    sp = [(j["measured"]["comm_spread"], f"{j['scenario']}/{j['job']}") for j in jobs]
    runs = [j["measured"]["runs"] for j in jobs]
    worst = max(sp, key=lambda e: e[0])
    return {"comm_median": median(v for v, _ in sp), "comm_p90": float(np.percentile([v for v, _ in sp], 90)),
            "comm_worst": worst[0], "comm_worst_at": worst[1], "runs_min": min(runs), "runs_max": max(runs)}


def spread_line(report: Mapping[str, Any]) -> str:
    """One sentence: the noise floor of the measurements beside the models' errors."""
    s = report["measurement_spread"]
    if s["runs_max"] < 2:
        return "Measurement spread: one run per scenario, not measured."
    runs = f"{s['runs_min']}" if s["runs_min"] == s["runs_max"] else f"{s['runs_min']}–{s['runs_max']}"
    return (f"Measurement spread ((max − min) / mean of a job's comm. time over its {runs} runs): median "
            f"{_pct(s['comm_median'])}, p90 {_pct(s['comm_p90'])}, worst {_pct(s['comm_worst'])} "
            f"({s['comm_worst_at']}).")


# the phased model's exact phase-level mode (docs/physics.md §11) and maxmin's fairness options (§12) are
# validated as models of their own
EXTRA_VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "phased[exact]": ("phased", {"exact": True}),  # every phase of every iteration (testbed/phase_replay.py)
    "maxmin[fairness=flow]": ("maxmin", {"fairness": "flow"}),
    "maxmin[fairness=flow-rtt]": ("maxmin", {"fairness": "flow-rtt"}),
    "maxmin[fairness=tcp]": ("maxmin", {"fairness": "tcp"}),
    "phased[exact,fairness=tcp]": ("phased", {"exact": True, "fairness": "tcp"}),
    # the same with TCP's uneven split as calibrated noise on the shares (docs/physics.md §14)
    "phased[exact,fairness=tcp,split]": ("phased", {"exact": True, "fairness": "tcp", "split": True}),
    # plain `phased_tcp` is the default as `simulate` runs it (given the clock: rings of equal period locked to
    # their offsets for their first 6 iterations, the split calibrated, then random phases; docs/physics.md §15);
    # these are its two limits: random phases throughout, and locked for the component's whole life
    "phased_tcp[phase_lock=false]": ("phased_tcp", {"phase_lock": False}),
    "phased_tcp[lock_iterations=1e9]": ("phased_tcp", {"lock_iterations": 1e9}),
    # and the locked replay without TCP's uneven split (the default until 2026-11-29)
    "phased_tcp[split_noise=0]": ("phased_tcp", {"split_noise": 0.0}),
}


def model_labels() -> list[str]:
    """Every physics model, then the extra variants."""
    return [*PERF_MODELS, *EXTRA_VARIANTS]


def _split(label: str) -> tuple[str, dict[str, Any]]:
    return EXTRA_VARIANTS.get(label, (label, {}))


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def markdown_table(report: Mapping[str, Any]) -> str:
    lines = ["| model | params | comm. median abs. error | comm. p90 | comm. worst error (where) | "
             "JCT median abs. error | JCT p90 | JCT worst error (where) |", "|---|---|---:|---:|---|---:|---:|---|"]
    for e in report["summary"]:
        lines.append(f"| `{e['model']}` | {e['variant']} | {_pct(e['comm_median'])} | {_pct(e['comm_p90'])} | "
                     f"{_pct(e['comm_signed_worst'])} ({e['comm_worst_at']}) | {_pct(e['jct_median'])} | "
                     f"{_pct(e['jct_p90'])} | {_pct(e['jct_signed_worst'])} ({e['jct_worst_at']}) |")
    return "\n".join(lines)


_MARKERS = "os^vD<>Pp*Xh"


def plot_comm(report: Mapping[str, Any], path: str | Path, variant: str = "calibrated") -> Path:
    """Two panels over every job of the suite, grouped by scenario: measured and predicted communication time
    per iteration (top), prediction error (bottom, clipped to ±100 %); one marker per model."""
    from ddlsched.experiments.figures import _pyplot

    jobs = report["jobs"]
    keys = [f"{m}/{variant}" for m in model_labels() if f"{m}/{variant}" in jobs[0]["predicted"]]
    if not keys:
        variant = "raw"
        keys = [f"{m}/raw" for m in model_labels() if f"{m}/raw" in jobs[0]["predicted"]]
    xs: list[float] = []
    ticks: list[tuple[float, str]] = []
    x, prev = 0.0, None
    for j in jobs:
        if j["scenario"] != prev:
            if prev is not None:
                x += 0.8
            ticks.append((x, j["scenario"]))
            prev = j["scenario"]
        xs.append(x)
        x += 1.0
    plt = _pyplot()
    cmap = plt.get_cmap("tab10")
    fig, (top, bot) = plt.subplots(2, 1, figsize=(17, 8.5), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    runs = [j["measured"].get("comm_s_runs", [j["measured"]["comm_s"]]) for j in jobs]
    top.scatter(xs, [j["measured"]["comm_s"] for j in jobs], marker="_", s=260, color="black", linewidths=2.5,
                label="measured (mean of its runs)", zorder=3)
    if any(len(r) > 1 for r in runs):
        top.vlines(xs, [min(r) for r in runs], [max(r) for r in runs], color="black", lw=1.0, zorder=3,
                   label="measured: min … max of its runs")
    for i, k in enumerate(keys):
        dx = (i - (len(keys) - 1) / 2) * 0.06
        col, mk = cmap(i % 10), _MARKERS[i % len(_MARKERS)]
        top.scatter([v + dx for v in xs], [j["predicted"][k]["comm_s"] for j in jobs], marker=mk, s=22,
                    color=col, alpha=0.85, label=k.split("/")[0])
        bot.scatter([v + dx for v in xs], [max(-100.0, min(100.0, 100 * j["predicted"][k]["comm_err"]))
                                           for j in jobs], marker=mk, s=22, color=col, alpha=0.85)
    top.set_ylabel("communication time per iteration (s)")
    top.set_ylim(bottom=0)
    top.set_title(f"Predicted ({variant}) vs measured communication time per job, by scenario "
                  f"(testbed {report.get('testbed', {}).get('spec', '?')})")
    top.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=8, borderaxespad=0.0)
    bot.axhline(0, color="black", lw=0.8)
    for lim in (-15, 15):
        bot.axhline(lim, color="grey", lw=0.6, ls="--")
    bot.set_ylabel("error (%), clipped to ±100")
    bot.set_ylim(-105, 105)
    for ax in (top, bot):
        for t, _ in ticks[1:]:
            ax.axvline(t - 0.9, color="#dddddd", lw=0.8, zorder=0)
    bot.set_xticks([t + (xs[[n for n, j in enumerate(jobs) if j["scenario"] == name][-1]] - t) / 2
                    for t, name in ticks])
    bot.set_xticklabels([name for _, name in ticks], rotation=45, ha="right")
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return out


def markdown_detail(report: Mapping[str, Any], variant: str = "calibrated") -> str:
    keys = [f"{m}/{variant}" for m in model_labels() if f"{m}/{variant}" in report["jobs"][0]["predicted"]]
    if not keys:
        variant = "raw"
        keys = [f"{m}/raw" for m in model_labels() if f"{m}/raw" in report["jobs"][0]["predicted"]]
    head = ("| scenario | job | measured comm s (mean) | comm spread (runs) | "
            + " | ".join(f"`{k.split('/')[0]}` comm s (err)" for k in keys))
    head += " | measured JCT s (mean) | " + " | ".join(f"`{k.split('/')[0]}` JCT s (err)" for k in keys) + " |"
    lines = [head, "|" + "---|" * (5 + 2 * len(keys))]
    for j in report["jobs"]:
        p, m = j["predicted"], j["measured"]
        comm = " | ".join(f"{p[k]['comm_s']:.3f} ({100 * p[k]['comm_err']:+.0f} %)" for k in keys)
        jct = " | ".join(f"{p[k]['jct_s']:.2f} ({100 * p[k]['jct_err']:+.0f} %)" for k in keys)
        sp = f"{100 * m['comm_spread']:.1f} % ({m['runs']})" if "runs" in m else "–"
        lines.append(f"| {j['scenario']} | {j['job']} | {m['comm_s']:.3f} | {sp} | {comm} | "
                     f"{m['jct_s']:.2f} | {jct} |")
    return "\n".join(lines)


def save_report(report: Mapping[str, Any], path: str | Path) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(report, indent=1))


def rescore_report(cluster: Cluster, report: Mapping[str, Any], labels: Sequence[str],
                   variants: Sequence[str] = ("raw", "calibrated")) -> dict[str, Any]:
    """Score models on a saved fidelity report (``fidelity.json`` or ``docs/validation.json``) when the raw runs
    are gone: each scenario's schedule is rebuilt from its definition with every job's *mean* measured start
    (``start_s`` of the report), predicted once per model, and compared with the report's measured means.
    An approximation of :func:`evaluate`, which predicts every run's own schedule and averages; the
    ``check`` entry gives, for the models the report already scored, the largest difference between the
    report's error and the rescored one (percentage points), so the approximation's size is stated beside it."""
    from ddlsched.testbed.scenarios import VALIDATION, longer

    by_name = {s.name: s for s in longer(VALIDATION, int((report.get("testbed") or {}).get("iterations_scale", 1)))}
    cal = report.get("calibration") or None
    rows: dict[str, list[dict[str, Any]]] = {}
    for r in report["jobs"]:
        rows.setdefault(r["scenario"], []).append(r)
    jobs: list[dict[str, Any]] = []
    for scen_name, saved in rows.items():
        if scen_name not in by_name:
            raise ValueError(f"the report's scenario {scen_name!r} is not in the validation suite")
        starts = {r["job"]: r["start_s"] for r in saved}
        sched = [JobRun(j.job_id, j.gpus, j.grad_mb, j.iters, j.compute_ms, starts[j.job_id], j.overlap)
                 for j in by_name[scen_name].jobs]
        preds: dict[str, Any] = {}
        for label in labels:
            for v in variants:
                c, prof = ((calibrated_cluster(cluster, cal), cal) if v == "calibrated" and cal
                           else (cluster, {"raw": RAW_PARAMS}))
                if v == "calibrated" and not cal:
                    continue
                m, extra = _split(label)
                preds[f"{label}/{v}"] = predict(c, sched, m, prof, extra=extra)
        for r in saved:
            comm, jct = r["measured"]["comm_s"], r["measured"]["jct_s"]
            row = {"scenario": scen_name, "job": r["job"], "measured": r["measured"], "predicted": {},
                   "report": {k: r["predicted"][k] for k in preds if k in r["predicted"]}}
            for key, p in preds.items():
                pc, pt = p[r["job"]].comm_s, p[r["job"]].jct_s
                row["predicted"][key] = {"comm_s": pc, "jct_s": pt, "comm_err": pc / comm - 1,
                                         "jct_err": pt / jct - 1}
            jobs.append(row)
    summary = []
    check: dict[str, float] = {}
    for key in jobs[0]["predicted"]:
        m, v = key.split("/")
        summary.append({"model": m, "variant": v, **error_summary(jobs, key)})
        if all(key in j["report"] for j in jobs):
            check[key] = max(abs(j["predicted"][key][f"{mt}_err"] - j["report"][key][f"{mt}_err"])
                             for j in jobs for mt in ("comm", "jct"))
    return {"summary": summary, "jobs": jobs, "check": check, "source_command": report.get("command"),
            "calibration": cal, "testbed": report.get("testbed")}
