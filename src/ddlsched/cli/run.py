"""``ddlsched simulate`` and ``ddlsched compare``: run policies on a trace and cluster, write result files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ddlsched.cli.common import (
    console,
    err_console,
    load_inputs,
    parse_kv,
    run_one,
    summary_table,
    trace_options,
)
from ddlsched.errors import InputError


@click.command()
@trace_options
@click.option("--policy", required=True, help="Policy name (see 'ddlsched policies').")
@click.option("--policy-param", multiple=True, metavar="KEY=VALUE", help="Policy parameter (JSON values).")
@click.option("--out", type=click.Path(file_okay=False), required=True, help="Output directory.")
@click.option("--report", "make_report", is_flag=True, help="Also write report.html/report.md in --out.")
def simulate(policy: str, policy_param: tuple[str, ...], out: str, make_report: bool, **kw: Any) -> None:
    """Simulate one policy on a trace and cluster; write summary.json, records and a time series."""
    cluster, jobs, notes = load_inputs(kw)
    for n in notes:
        err_console.print(f"note: {n}")
    summary = run_one(policy, parse_kv(policy_param, "policy-param"), cluster, jobs, kw, Path(out))
    console.print(f"{cluster.describe()}; {len(jobs)} jobs; offered load {summary.get('offered_load', 0):.2f}")
    console.print(summary_table([summary], f"{policy} on {cluster.name}"))
    console.print(f"results in {out}/")
    _maybe_report(make_report, out)


@click.command()
@trace_options
@click.option("--policies", required=True, help="Comma-separated policy names.")
@click.option("--out", type=click.Path(file_okay=False), required=True, help="Output directory.")
@click.option("--report", "make_report", is_flag=True, help="Also write report.html/report.md in --out.")
def compare(policies: str, out: str, make_report: bool, **kw: Any) -> None:
    """Run several policies on the same trace and cluster; one row per policy."""
    names = [p.strip() for p in policies.split(",") if p.strip()]
    if not names:
        raise InputError("no policy given", field="--policies")
    from ddlsched.policies import make_policy

    for n in names:
        make_policy(n)  # fail fast on an unknown name, before any long run
    cluster, jobs, notes = load_inputs(kw)
    for n in notes:
        err_console.print(f"note: {n}")
    rows = []
    for n in names:
        rows.append(run_one(n, {}, cluster, jobs, kw, Path(out) / n.replace("/", "_")))
        if not kw["quiet"]:
            err_console.print(f"done: {n} ({rows[-1]['_wall_s']:.1f} s wall)")
    load = rows[0].get("offered_load") or 0.0
    console.print(f"{cluster.describe()}; {len(jobs)} jobs; offered load {load:.2f}")
    console.print(summary_table(rows, f"policies on {cluster.name}"))
    from ddlsched.metrics.output import write_records

    write_records(Path(out) / "comparison.csv",
                  [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows])
    console.print(f"results in {out}/ (comparison.csv, one folder per policy)")
    _maybe_report(make_report, out)


def _maybe_report(make_report: bool, out: str) -> None:
    if make_report:
        from ddlsched.metrics.report import write_report

        console.print(f"report: {write_report(out)}")
