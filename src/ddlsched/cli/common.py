"""What every command shares: consoles, KEY=VALUE parsing, the trace/cluster options, the summary table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from ddlsched.errors import InputError

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
        click.option("--perf-model", default=None,
                     help="Physics model (see 'policies'); default: the execution model's (fluid: maxmin)."),
        click.option("--perf-param", multiple=True, metavar="KEY=VALUE", help="Physics model parameter."),
        click.option("--model-param", multiple=True, metavar="KEY=VALUE",
                     help="Execution-model parameter (task DAG: max_task_iters; rounds: max_rounds, switch_frac, "
                          "switch_s)."),
        click.option("--restart-penalty", type=float, default=None,
                     help="Seconds lost on every restart after a preemption (fluid model; default 30)."),
        click.option("--seed", type=int, default=0, show_default=True, help="Seed for every random choice."),
        click.option("--parquet", is_flag=True, help="Write records as Parquet instead of CSV."),
        click.option("--quiet", is_flag=True, help="No progress bar."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def load_inputs(kw: dict[str, Any]) -> tuple[Any, Any, list[str]]:
    from ddlsched.experiments.runner import load_cluster_for, load_workload

    opts: dict[str, Any] = {"skip_invalid": kw["skip_invalid"]}
    if kw["columns"]:
        opts["columns"] = parse_kv(kw["columns"], "column")
    if kw["time_unit"]:
        opts["time_unit"] = kw["time_unit"]
    jobs, notes, _ = load_workload(kw["trace_path"], seed=kw["seed"], fmt=kw["fmt"], options=opts,
                                   max_jobs=kw["max_jobs"], load_scale=kw["load_scale"])
    cluster = load_cluster_for(kw["cluster_spec"], seed=kw["seed"])
    return cluster, jobs, notes


def run_one(policy_name: str, policy_params: dict[str, Any], cluster: Any, jobs: list[Any], kw: dict[str, Any],
             out: Path, shown_as: Path | None = None) -> dict[str, Any]:
    from ddlsched.experiments.runner import simulate_run
    from ddlsched.metrics.output import write_run

    sim_kw = {"perf_model": kw["perf_model"], "perf_params": parse_kv(kw["perf_param"], "perf-param"),
              "model_params": parse_kv(kw["model_param"], "model-param"),
              "restart_penalty_s": kw["restart_penalty"], "seed": kw["seed"]}
    show = not kw["quiet"] and err_console.is_terminal
    if show:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn(f"[bold]{policy_name}"), BarColumn(), TextColumn("{task.completed}/{task.total} jobs"),
                      TextColumn("sim t={task.fields[t]:.0f}s"), TimeElapsedColumn(), console=err_console,
                      transient=True) as bar:
            task = bar.add_task("run", total=len(jobs), t=0.0)
            result = simulate_run(policy_name, policy_params, cluster, jobs, **sim_kw,
                                  progress=lambda t, done, total: bar.update(task, completed=done, t=t))
    else:
        result = simulate_run(policy_name, policy_params, cluster, jobs, **sim_kw)
    summary = write_run(result, out, parquet=kw["parquet"],
                        extra={"trace": str(kw["trace_path"]), "load_scale": kw["load_scale"]})
    if result.rejected:
        err_console.print(f"[yellow]warning:[/] {len(result.rejected)} job(s) rejected as impossible on "
                          f"{cluster.name} (see {(shown_as or out) / 'rejected.csv'}); "
                          f"first: {result.rejected[0]['reason']}")
    if result.unfinished:
        err_console.print(f"[yellow]warning:[/] {len(result.unfinished)} job(s) never finished under "
                          f"{policy_name}")
    summary["_wall_s"] = result.wall_s
    summary["_events"] = result.events
    return summary


def summary_table(rows: list[dict[str, Any]], title: str) -> Table:
    t = Table(title=title)
    cols = [("policy", "policy", "{}"), ("done", "jobs_completed", "{:d}"), ("avg JCT h", "avg_jct_s", "h"),
            ("median JCT h", "median_jct_s", "h"), ("p99 JCT h", "p99_jct_s", "h"), ("makespan h", "makespan_s", "h"),
            ("avg queue h", "avg_queueing_s", "h"), ("comm ovh %", "comm_overhead_pct", "{:.1f}"),
            ("GPU util", "gpu_utilization", "{:.2f}"), ("preempt", "preemptions", "{:d}"),
            ("wall s", "_wall_s", "{:.1f}")]
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


