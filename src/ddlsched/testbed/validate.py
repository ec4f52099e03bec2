"""The fidelity suite: run the scenarios for real, predict them with every physics model, report errors.

For each model in ``ddlsched.perf.PERF_MODELS`` two variants are reported: ``raw`` (default parameters,
α = 0) and ``calibrated`` (the profile from ``ddlsched testbed calibrate``). Error of a job =
(predicted − measured) / measured, for its mean communication time per iteration and its JCT; the table gives
the median, 90th percentile and worst |error| over all jobs of the suite, and which job is worst.
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
from ddlsched.testbed.predict import predict
from ddlsched.testbed.scenarios import TCP_RULE_SCENARIOS, Scenario, base_name, calibration_suite, repeat_index


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


def evaluate(cluster: Cluster, results: Sequence[ScenarioResult],
             calibration: Mapping[str, Any] | None) -> dict[str, Any]:
    """Per-job predictions of every model/variant and the summary error table."""
    variants: list[tuple[str, str, Cluster, Mapping[str, Any] | None]] = []
    for name in model_labels():
        variants.append((name, "raw", cluster, {"raw": RAW_PARAMS}))
        if calibration:
            variants.append((name, "calibrated", calibrated_cluster(cluster, calibration), calibration))
    jobs: list[dict[str, Any]] = []
    for r in results:
        executed = r.run.as_executed(r.scenario.jobs)
        preds = {f"{m}/{v}": predict(c, executed, _split(m)[0], cal, extra=_split(m)[1]) for m, v, c, cal in variants}
        for j in executed:
            meas = r.run.jobs[j.job_id]
            row: dict[str, Any] = {"scenario": r.scenario.name, "job": j.job_id, "gpus": list(j.gpus),
                                   "grad_mb": j.grad_mb, "iters": j.iters, "start_s": round(j.start_s, 3),
                                   "measured": {"comm_s": meas.comm_s, "jct_s": meas.jct_s}, "predicted": {}}
            for key, p in preds.items():
                pj = p[j.job_id]
                row["predicted"][key] = {"comm_s": pj.comm_s, "jct_s": pj.jct_s,
                                         "comm_err": pj.comm_s / meas.comm_s - 1, "jct_err": pj.jct_s / meas.jct_s - 1}
            jobs.append(row)
    summary = []
    for m, v, _, _ in variants:
        key = f"{m}/{v}"
        entry: dict[str, Any] = {"model": m, "variant": v}
        for metric in ("comm", "jct"):
            errs = [(abs(j["predicted"][key][f"{metric}_err"]), j) for j in jobs]
            worst = max(errs, key=lambda e: e[0])
            entry[f"{metric}_median"] = median(e for e, _ in errs)
            entry[f"{metric}_p90"] = float(np.percentile([e for e, _ in errs], 90))
            entry[f"{metric}_worst"] = worst[0]
            entry[f"{metric}_worst_at"] = f"{worst[1]['scenario']}/{worst[1]['job']}"
            entry[f"{metric}_signed_worst"] = worst[1]["predicted"][key][f"{metric}_err"]
        summary.append(entry)
    cpu = {r.scenario.name: r.run.cpu_util for r in results}
    wcpu = {r.scenario.name: r.run.worker_cpu for r in results}
    return {"summary": summary, "jobs": jobs, "cpu_util": cpu, "worker_cpu": wcpu}


# the phased model's exact phase-level mode (docs/physics.md §11) and maxmin's fairness options (§12) are
# validated as models of their own
EXTRA_VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "phased[exact]": ("phased", {"exact": True}),  # every phase of every iteration (testbed/phase_replay.py)
    "maxmin[fairness=flow]": ("maxmin", {"fairness": "flow"}),
    "maxmin[fairness=flow-rtt]": ("maxmin", {"fairness": "flow-rtt"}),
    "maxmin[fairness=tcp]": ("maxmin", {"fairness": "tcp"}),
    "phased[exact,fairness=tcp]": ("phased", {"exact": True, "fairness": "tcp"}),
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
    top.scatter(xs, [j["measured"]["comm_s"] for j in jobs], marker="_", s=260, color="black", linewidths=2.5,
                label="measured", zorder=3)
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
    head = "| scenario | job | measured comm s | " + " | ".join(f"`{k.split('/')[0]}` comm s (err)" for k in keys)
    head += " | measured JCT s | " + " | ".join(f"`{k.split('/')[0]}` JCT s (err)" for k in keys) + " |"
    lines = [head, "|" + "---|" * (4 + 2 * len(keys))]
    for j in report["jobs"]:
        p = j["predicted"]
        comm = " | ".join(f"{p[k]['comm_s']:.3f} ({100 * p[k]['comm_err']:+.0f} %)" for k in keys)
        jct = " | ".join(f"{p[k]['jct_s']:.2f} ({100 * p[k]['jct_err']:+.0f} %)" for k in keys)
        lines.append(f"| {j['scenario']} | {j['job']} | {j['measured']['comm_s']:.3f} | {comm} | "
                     f"{j['measured']['jct_s']:.2f} | {jct} |")
    return "\n".join(lines)


def save_report(report: Mapping[str, Any], path: str | Path) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(report, indent=1))
