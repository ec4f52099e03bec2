"""The ``ddlsched`` command line: simulate, compare, policies, traces, reproduce (+ optional groups)."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from ddlsched.errors import DdlschedError, InputError

err_console = Console(stderr=True)
console = Console() if Console().is_terminal else Console(width=160)


# ------------------------------------------------------------------ shared option parsing
def _parse_value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def parse_kv(pairs: tuple[str, ...], what: str) -> dict[str, Any]:
    """``key=value`` pairs → dict; values are JSON when they parse (numbers, lists, true/false)."""
    out: dict[str, Any] = {}
    for p in pairs:
        key, sep, val = p.partition("=")
        if not sep or not key:
            raise InputError(f"expected KEY=VALUE, got {p!r}", field=what)
        out[key.strip()] = _parse_value(val.strip())
    return out


def trace_options(f: Any) -> Any:
    opts = [
        click.option("--trace", "trace_path", required=True, type=click.Path(dir_okay=False),
                     help="Job trace file (format auto-detected)."),
        click.option("--format", "fmt", default=None, help="Trace format (see 'ddlsched traces formats')."),
        click.option("--column", "columns", multiple=True, metavar="FIELD=NAME",
                     help="generic_csv: map a field (job_id, arrival, duration, num_gpus, model, ...) to a column."),
        click.option("--time-unit", default=None, help="generic_csv/muri: unit of time columns (s, ms, min, h)."),
        click.option("--skip-invalid", is_flag=True, help="Skip invalid rows (they are counted and reported)."),
        click.option("--max-jobs", type=int, default=None, help="Use only the first N jobs by arrival."),
        click.option("--load-scale", type=float, default=1.0, show_default=True,
                     help="Divide inter-arrival times by this factor (>1 raises the offered load)."),
        click.option("--cluster", "cluster_spec", required=True, help="Cluster preset name or YAML/TOML file."),
        click.option("--perf-model", default="maxmin", show_default=True, help="Physics model (see 'policies')."),
        click.option("--perf-param", multiple=True, metavar="KEY=VALUE", help="Physics model parameter."),
        click.option("--restart-penalty", type=float, default=30.0, show_default=True,
                     help="Seconds lost on every restart after a preemption."),
        click.option("--seed", type=int, default=0, show_default=True, help="Seed for every random choice."),
        click.option("--parquet", is_flag=True, help="Write records as Parquet instead of CSV."),
        click.option("--quiet", is_flag=True, help="No progress bar."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def _load_inputs(kw: dict[str, Any]) -> tuple[Any, Any, list[str]]:
    from ddlsched.cluster import load_cluster
    from ddlsched.workload.loaders import load_trace
    from ddlsched.workload.transform import scale_arrivals

    opts: dict[str, Any] = {"seed": kw["seed"], "skip_invalid": kw["skip_invalid"]}
    if kw["columns"]:
        opts["columns"] = parse_kv(kw["columns"], "column")
    if kw["time_unit"]:
        opts["time_unit"] = kw["time_unit"]
    trace = load_trace(kw["trace_path"], kw["fmt"], **opts)
    notes = list(trace.notes)
    if trace.skipped:
        notes.append(f"skipped {trace.skipped} invalid row(s) of {kw['trace_path']}: "
                     + "; ".join(trace.skipped_reasons[:3]))
    jobs = trace.jobs
    if kw["max_jobs"] is not None:
        if kw["max_jobs"] < 1:
            raise InputError("must be >= 1", field="--max-jobs")
        jobs = jobs[: kw["max_jobs"]]
    if kw["load_scale"] != 1.0:
        jobs = scale_arrivals(jobs, kw["load_scale"])
    cluster = load_cluster(kw["cluster_spec"], seed=kw["seed"])
    return cluster, jobs, notes


def _run_one(policy_name: str, policy_params: dict[str, Any], cluster: Any, jobs: list[Any], kw: dict[str, Any],
             out: Path) -> dict[str, Any]:
    from ddlsched.engine import SimConfig, Simulator
    from ddlsched.metrics.output import write_run
    from ddlsched.policies import make_policy

    policy = make_policy(policy_name, policy_params)
    policy.reset()
    if getattr(policy, "engine", None) == "hare":  # task-level heterogeneous engine (ALGORITHMS.md §6)
        from ddlsched.engine.hare_tasks import HareConfig, HareSimulator

        result = HareSimulator(cluster, jobs, policy, HareConfig(seed=kw["seed"])).run()
        summary = write_run(result, out, parquet=kw["parquet"],
                            extra={"trace": str(kw["trace_path"]), "load_scale": kw["load_scale"]})
        summary["_wall_s"] = result.wall_s
        summary["_events"] = result.events
        return summary
    config = SimConfig(perf_model=kw["perf_model"], perf_params=parse_kv(kw["perf_param"], "perf-param"),
                       restart_penalty_s=kw["restart_penalty"], seed=kw["seed"])
    show = not kw["quiet"] and err_console.is_terminal
    if show:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn(f"[bold]{policy_name}"), BarColumn(), TextColumn("{task.completed}/{task.total} jobs"),
                      TextColumn("sim t={task.fields[t]:.0f}s"), TimeElapsedColumn(), console=err_console,
                      transient=True) as bar:
            task = bar.add_task("run", total=len(jobs), t=0.0)
            sim = Simulator(cluster, jobs, policy, config,
                            progress=lambda t, done, total: bar.update(task, completed=done, t=t))
            result = sim.run()
    else:
        result = Simulator(cluster, jobs, policy, config).run()
    summary = write_run(result, out, parquet=kw["parquet"],
                        extra={"trace": str(kw["trace_path"]), "load_scale": kw["load_scale"]})
    if result.rejected:
        err_console.print(f"[yellow]warning:[/] {len(result.rejected)} job(s) rejected as impossible on "
                          f"{cluster.name} (see {out / 'rejected.csv'}); first: {result.rejected[0]['reason']}")
    if result.unfinished:
        err_console.print(f"[yellow]warning:[/] {len(result.unfinished)} job(s) never finished under "
                          f"{policy_name}")
    summary["_wall_s"] = result.wall_s
    summary["_events"] = result.events
    return summary


def _summary_table(rows: list[dict[str, Any]], title: str) -> Table:
    t = Table(title=title)
    cols = [("policy", "policy", "{}"), ("done", "jobs_completed", "{:d}"), ("avg JCT h", "avg_jct_s", "h"),
            ("median JCT h", "median_jct_s", "h"), ("p99 JCT h", "p99_jct_s", "h"), ("makespan h", "makespan_s", "h"),
            ("avg queue h", "avg_queueing_s", "h"), ("comm ovh %", "comm_overhead_pct", "{:.1f}"),
            ("GPU util", "gpu_utilization", "{:.2f}"), ("preempt", "preemptions", "{:d}"), ("wall s", "_wall_s", "{:.1f}")]
    for name, *_ in cols:
        t.add_column(name, justify="left" if name == "policy" else "right")
    for r in rows:
        cells = []
        for _, key, fmt in cols:
            v = r.get(key)
            if v is None or (isinstance(v, float) and v != v):
                cells.append("-")
            elif fmt == "h":
                cells.append(f"{v / 3600:.2f}")
            else:
                cells.append(fmt.format(v))
        t.add_row(*cells)
    return t


# ------------------------------------------------------------------ commands
@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ddlsched")
def cli() -> None:
    """Compare scheduling policies for distributed deep-learning training on a shared GPU cluster."""


@cli.command()
@trace_options
@click.option("--policy", required=True, help="Policy name (see 'ddlsched policies').")
@click.option("--policy-param", multiple=True, metavar="KEY=VALUE", help="Policy parameter (JSON values).")
@click.option("--out", type=click.Path(file_okay=False), required=True, help="Output directory.")
def simulate(policy: str, policy_param: tuple[str, ...], out: str, **kw: Any) -> None:
    """Simulate one policy on a trace and cluster; write summary.json, records and a time series."""
    cluster, jobs, notes = _load_inputs(kw)
    for n in notes:
        err_console.print(f"note: {n}")
    summary = _run_one(policy, parse_kv(policy_param, "policy-param"), cluster, jobs, kw, Path(out))
    console.print(f"{cluster.describe()}; {len(jobs)} jobs; offered load {summary.get('offered_load', 0):.2f}")
    console.print(_summary_table([summary], f"{policy} on {cluster.name}"))
    console.print(f"results in {out}/")


@cli.command()
@trace_options
@click.option("--policies", required=True, help="Comma-separated policy names.")
@click.option("--out", type=click.Path(file_okay=False), required=True, help="Output directory.")
def compare(policies: str, out: str, **kw: Any) -> None:
    """Run several policies on the same trace and cluster; one row per policy."""
    names = [p.strip() for p in policies.split(",") if p.strip()]
    if not names:
        raise InputError("no policy given", field="--policies")
    from ddlsched.policies import make_policy

    for n in names:
        make_policy(n)  # fail fast on an unknown name, before any long run
    cluster, jobs, notes = _load_inputs(kw)
    for n in notes:
        err_console.print(f"note: {n}")
    rows = []
    for n in names:
        rows.append(_run_one(n, {}, cluster, jobs, kw, Path(out) / n.replace("/", "_")))
        if not kw["quiet"]:
            err_console.print(f"done: {n} ({rows[-1]['_wall_s']:.1f} s wall)")
    load = rows[0].get("offered_load") or 0.0
    console.print(f"{cluster.describe()}; {len(jobs)} jobs; offered load {load:.2f}")
    console.print(_summary_table(rows, f"policies on {cluster.name}"))
    from ddlsched.metrics.output import write_records

    write_records(Path(out) / "comparison.csv",
                  [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows])
    console.print(f"results in {out}/ (comparison.csv, one folder per policy)")


@cli.command("policies")
def policies_cmd() -> None:
    """List every policy with a one-line description, and the physics models."""
    from ddlsched.perf import PERF_MODELS
    from ddlsched.policies import list_policies

    t = Table(title="policies (ORDER+PLACEMENT composes a baseline; a bare ORDER uses consolidated)")
    t.add_column("name")
    t.add_column("description")
    for name, desc in list_policies():
        t.add_row(name, desc)
    console.print(t)
    m = Table(title="physics models (--perf-model)")
    m.add_column("name")
    m.add_column("description")
    for name, cls in PERF_MODELS.items():
        m.add_row(name, cls.description)
    console.print(m)


@cli.command()
@click.argument("name", required=False)
@click.option("--list", "list_", is_flag=True, help="List the available reproductions.")
@click.option("--seeds", default="0,1,2,3,4", show_default=True, help="Comma-separated seeds.")
@click.option("--quick", is_flag=True, help="A smaller, faster version (for tests).")
@click.option("--out", type=click.Path(file_okay=False), default=None, help="Output directory (default results/NAME).")
def reproduce(name: str | None, list_: bool, seeds: str, quick: bool, out: str | None) -> None:
    """Re-run a paper's headline experiments and write tables and plots."""
    from ddlsched.experiments.registry import reproductions, run_reproduction

    if list_ or not name:
        t = Table(title="reproductions")
        t.add_column("name")
        t.add_column("description")
        for r in reproductions().values():
            t.add_row(r.name, r.description)
        console.print(t)
        return
    try:
        seed_list = [int(s) for s in seeds.split(",") if s.strip()]
    except ValueError:
        raise InputError(f"seeds must be integers, got {seeds!r}", field="--seeds") from None
    out_dir = Path(out or f"results/{name}")
    text = run_reproduction(name, out_dir, seed_list, quick, progress=lambda m: err_console.print(m))
    console.print(text)


def _add_optional_groups() -> None:
    for module, attr in (("ddlsched.cli_traces", "traces"), ("ddlsched.cli_testbed", "testbed"),
                         ("ddlsched.cli_sweep", "sweep"), ("ddlsched.cli_report", "report")):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name == module:
                continue
            raise
        cli.add_command(getattr(mod, attr))


_add_optional_groups()


def main() -> None:
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        err_console.print("aborted")
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except DdlschedError as e:
        err_console.print(f"[red]error:[/] {e}")
        sys.exit(2)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
