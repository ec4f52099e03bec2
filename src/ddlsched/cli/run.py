"""``ddlsched simulate`` and ``ddlsched compare``: run policies on a trace and cluster, write result files.

Result folders are complete or absent (docs/outputs.md): ``--out`` is checked before anything is simulated,
each run is written beside its place and renamed in with a ``manifest.json`` written last.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import click

from ddlsched.cli.common import (
    console,
    err_console,
    load_run_inputs,
    paper_scale_warning,
    parse_kv,
    plugin_option,
    run_one,
    summary_table,
    trace_options,
)
from ddlsched.errors import InputError

OVERWRITE_HELP = "Replace a non-empty --out; the old results are removed only once the new run is complete."


def _note(line: str) -> None:
    err_console.print(f"note: {line}")


def run_inputs(kw: dict[str, Any], policy: str, params: dict[str, Any]) -> dict[str, Any]:
    """Everything that determines a run's results (stored in its manifest; ``compare --resume`` compares it)."""
    from ddlsched import __version__
    from ddlsched.metrics.manifest import file_digest

    def digest(path: str) -> str | None:
        p = Path(path)
        return file_digest(p)["sha256"] if p.is_file() else None

    return {"ddlsched": __version__, "policy": policy, "policy_params": params, "plugins": list(kw["plugins"]),
            "trace": str(kw["trace_path"]), "trace_sha256": digest(kw["trace_path"]), "format": kw["fmt"],
            "columns": list(kw["columns"]), "time_unit": kw["time_unit"], "skip_invalid": kw["skip_invalid"],
            "max_jobs": kw["max_jobs"], "load_scale": kw["load_scale"], "cluster": kw["cluster_spec"],
            "cluster_sha256": digest(kw["cluster_spec"]), "perf_model": kw["perf_model"],
            **({"tenants": kw["tenants_file"], "tenants_sha256": digest(kw["tenants_file"]),
                "tenant_column": kw.get("tenant_column")} if kw.get("tenants_file") or kw.get("tenant_column") else {}),
            "perf_params": parse_kv(kw["perf_param"], "perf-param"),
            "model_params": parse_kv(kw["model_param"], "model-param"), "restart_penalty_s": kw["restart_penalty"],
            "seed": kw["seed"], "parquet": kw["parquet"], "states": kw.get("states"),
            "gpus_from": kw.get("gpus_from"), "missing": kw.get("missing")}


def input_paths(kw: dict[str, Any]) -> list[str | None]:
    """The files a run reads (trace, cluster file, models, plug-ins): ``--overwrite`` must never delete them."""
    return [kw.get("trace_path"), kw.get("cluster_spec"), kw.get("models"), kw.get("tenants_file"),
            *kw.get("plugins", ())]


def _rows_line(summary: dict[str, Any]) -> None:
    """``rows read N = J jobs + filtered (by reason)`` when the loader filtered rows (Slurm, Kubernetes)."""
    if "rows_read" not in summary:
        return
    by = ", ".join(f"{v:,} {k}" for k, v in summary["rows_filtered"].items())
    console.print(f"rows read {summary['rows_read']:,} = {summary['jobs']:,} jobs (simulated + invalid skipped) "
                  f"+ filtered: {by}", highlight=False)


@click.command()
@trace_options
@plugin_option
@click.option("--policy", required=True, help="Policy name (see 'ddlsched policies').")
@click.option("--policy-param", multiple=True, metavar="KEY=VALUE", help="Policy parameter (JSON values).")
@click.option("--out", type=click.Path(file_okay=False), required=True,
              help="Output directory (new or empty; see --overwrite).")
@click.option("--overwrite", is_flag=True, help=OVERWRITE_HELP)
@click.option("--report", "make_report", is_flag=True, help="Also write report.html/report.md in --out.")
def simulate(policy: str, policy_param: tuple[str, ...], out: str, overwrite: bool, make_report: bool,
             **kw: Any) -> None:
    """Simulate one policy on a trace and cluster; write summary.json, records and a time series."""
    from ddlsched.metrics.atomic import staged
    from ddlsched.metrics.interrupts import interrupts_raise

    params = parse_kv(policy_param, "policy-param")
    with interrupts_raise(), staged(Path(out), overwrite=overwrite, note=_note, inputs=input_paths(kw)) as st:
        cluster, w = load_run_inputs(kw)
        jobs = w.jobs
        for n in w.notes:
            _note(n)
        paper_scale_warning(policy, params, len(jobs))
        # --- the simulation
        summary = run_one(policy, params, cluster, w, kw, st.tmp, shown_as=Path(out))
        # ---
        st.commit("run", run_inputs(kw, str(summary.get("policy", policy)), params))
    console.print(f"{cluster.describe()}; {len(jobs)} jobs; {_load_text(summary)}")
    console.print(summary_table([summary], f"{policy} on {cluster.name}"))
    _fairness_table([summary])
    _rows_line(summary)
    _window_note(summary)
    _warnings([summary])
    console.print(f"results in {out}/")
    _maybe_report(make_report, out)


@click.command()
@trace_options
@plugin_option
@click.option("--policies", required=True, help="Comma-separated policy names.")
@click.option("--out", type=click.Path(file_okay=False), required=True,
              help="Output directory (new or empty; see --overwrite, --resume).")
@click.option("--overwrite", is_flag=True, help=OVERWRITE_HELP)
@click.option("--resume", is_flag=True,
              help="Finish the compare in --out: keep policies whose folder is complete with the same inputs, "
                   "run the others.")
@click.option("--report", "make_report", is_flag=True, help="Also write report.html/report.md in --out.")
def compare(policies: str, out: str, overwrite: bool, resume: bool, make_report: bool, **kw: Any) -> None:
    """Run several policies on the same trace and cluster; one row per policy, one folder per policy.

    Folders and table rows use the resolved policy name (``fifo`` → ``fifo+consolidated``).
    """
    from ddlsched.metrics.atomic import pause_for_test
    from ddlsched.metrics.compare_out import open_compare
    from ddlsched.metrics.interrupts import interrupts_raise

    given = _resolve(policies)  # folder (resolved name) → name as given; fails fast on an unknown name
    folders = list(given)
    inputs = {f: run_inputs(kw, f, {}) for f in folders}
    shared = {k: v for k, v in inputs[folders[0]].items() if k not in ("policy", "policy_params")}
    rows = []
    with interrupts_raise(), open_compare(Path(out), folders, inputs, shared, overwrite=overwrite,
                                          resume=resume, note=_note, protect=input_paths(kw)) as target:
        cluster, w = load_run_inputs(kw)
        jobs = w.jobs
        for n in w.notes:
            _note(n)
        for f in folders:
            if target.is_done(f):
                rows.append(_done_row(target.root / f))
                _note(f"kept {f}: its folder is complete and has the same inputs (--resume)")
                continue
            paper_scale_warning(given[f], {}, len(jobs))
            with target.policy_dir(f) as st:
                # --- the simulation
                rows.append(run_one(given[f], {}, cluster, w, kw, st.tmp, shown_as=Path(out) / f))
                # ---
                target.commit_policy(st, f)
            if not kw["quiet"]:
                err_console.print(f"done: {f} ({rows[-1]['_wall_s']:.1f} s wall)")
            pause_for_test("policy-done")
        target.finish(shared)
    console.print(f"{cluster.describe()}; {len(jobs)} jobs; {_load_text(rows[0])}")
    console.print(summary_table(rows, f"policies on {cluster.name}"))
    _fairness_table(rows)
    _rows_line(rows[0])
    _window_note(rows[0])
    _warnings(rows)
    note = mixed_models_note(rows)
    if note:
        _note(note)
    console.print(f"results in {out}/ (comparison.csv, one folder per policy)")
    _maybe_report(make_report, out)


def _fairness_table(rows: list[dict[str, Any]]) -> None:
    """Runs with tenants: Jain's index, rho, and the least and most served tenant (docs/policies/fairness.md)."""
    from rich.table import Table

    fair = [r for r in rows if "tenants" in r]
    if not fair:
        return
    t = Table(title="fairness across tenants")
    for c in ("policy", "Jain", "max rho", "rho > 1 %", "least served (received ÷ entitled)", "most served"):
        t.add_column(c, justify="left" if c == "policy" else "right")
    for r in fair:
        shares = sorted((d["normalised_share"], n) for n, d in r["tenants"].items()
                        if d["normalised_share"] is not None)
        ends = [f"{n} {x:.2f}" for x, n in (shares[0], shares[-1])] if shares else ["-", "-"]
        frac = r.get("rho_gt1_frac")
        t.add_row(str(r.get("policy")), "-" if r.get("jain_index") is None else f"{r['jain_index']:.3f}",
                  "-" if r.get("rho_max") is None else f"{r['rho_max']:.2f}",
                  "-" if frac is None else f"{100 * frac:.1f}", *ends)
    console.print(t)


def mixed_models_note(rows: list[dict[str, Any]]) -> str:
    """A note when the rows come from different execution models (their physics differ; docs/engine.md)."""
    models: dict[str, list[str]] = {}
    for r in rows:
        models.setdefault(str(r.get("execution_model")), []).append(str(r.get("policy")))
    if len(models) < 2:
        return ""
    parts = "; ".join(f"{m}: {', '.join(p)}" for m, p in sorted(models.items()))
    return (f"these rows come from different execution models ({parts}); each models different things "
            "(see the table in docs/engine.md), so compare them with care")


def _resolve(policies: str) -> dict[str, str]:
    """Resolved policy name (also the folder name) → the name given; two names for one policy are an error."""
    from ddlsched.policies import make_policy

    names = [p.strip() for p in policies.split(",") if p.strip()]
    if not names:
        raise InputError("no policy given", field="--policies")
    folders: dict[str, str] = {}
    for n in names:
        f = make_policy(n).name.replace("/", "_")
        if f in folders:
            raise InputError(f"{folders[f]!r} and {n!r} are the same policy ({f})", field="--policies")
        folders[f] = n
    return folders


def _done_row(d: Path) -> dict[str, Any]:
    """The table row of a kept policy folder (its summary, wall time and events from run.json)."""
    row: dict[str, Any] = json.loads((d / "summary.json").read_text())
    run = json.loads((d / "run.json").read_text()) if (d / "run.json").is_file() else {}
    row["_wall_s"], row["_events"] = run.get("wall_s") or 0.0, run.get("events")
    return row


def _maybe_report(make_report: bool, out: str) -> None:
    if make_report:
        from ddlsched.metrics.report import write_report

        console.print(f"report: {write_report(out)}")


def _window_note(summary: dict) -> None:
    """Say which jobs the per-job metrics are over when --warmup/--cooldown left some out."""
    if summary.get("jobs_measured") != summary.get("jobs_completed"):
        console.print(f"per-job metrics over the {summary['jobs_measured']} of {summary['jobs_completed']} completed "
                      f"jobs arriving in [{summary['window_start_s']:.0f}, {summary['window_end_s']:.0f}] s "
                      f"(--warmup/--cooldown); GPU util over that window "
                      f"{summary['gpu_utilization_window']:.2f}, over the whole run {summary['gpu_utilization']:.2f}")


def _load_text(summary: dict) -> str:
    """'offered load 0.83 (quarters of the arrival window 0.79–0.85)', and a warning when it is not steady."""
    load, lo, hi = (summary.get(k) for k in ("offered_load", "offered_load_min_quarter", "offered_load_max_quarter"))
    if not isinstance(load, float) or math.isnan(load):
        return "offered load n/a"
    if math.isinf(load):
        return "offered load ∞ (every job arrives at one instant)"
    text = f"offered load {load:.2f}"
    if isinstance(lo, float) and isinstance(hi, float) and not math.isnan(lo):
        text += f" (quarters of the arrival window {lo:.2f}–{hi:.2f})"
    return text


def _warnings(rows: list[dict]) -> None:
    """The analyst's warnings (``metrics.warnings``): the load's once, each run's own prefixed by its policy."""
    from ddlsched.metrics.warnings import load_warnings, outcome_warnings

    for w in load_warnings(rows[0]):
        err_console.print(f"[yellow]warning:[/] {w}")
    for r in rows:
        for w in outcome_warnings(r) + r.get("_warnings", []):
            err_console.print(f"[yellow]warning:[/] {r.get('policy', '')}: {w}")
