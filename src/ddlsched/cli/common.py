"""What every command shares: consoles, KEY=VALUE parsing, the trace/cluster options, the summary table."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from ddlsched.errors import InputError

err_console = Console(stderr=True, soft_wrap=True)  # soft wrap: a file path in a message stays on one line
console = Console() if Console().is_terminal else Console(width=160)


# ------------------------------------------------------------------ shared option parsing
class InputErrorExit(click.ClickException):
    """Bad input found while a command reads its inputs: ``error: <message>`` on stderr, exit status 2 (the same
    as ``ddlsched.cli.main`` gives an InputError), also under ``click.testing.CliRunner``."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.message}", err=True)


class FiniteFloat(click.ParamType):
    """A float option that must be finite (no nan/inf, no overflow such as 1e400) and inside [min, max]."""

    name = "number"

    def __init__(self, min: float | None = None, max: float | None = None, *, min_open: bool = False) -> None:
        self.min, self.max, self.min_open = min, max, min_open

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            x = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(x):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        if self.min is not None and (x <= self.min if self.min_open else x < self.min):
            self.fail(f"{value!r} must be {'>' if self.min_open else '>='} {self.min:g}", param, ctx)
        if self.max is not None and x > self.max:
            self.fail(f"{value!r} must be <= {self.max:g}", param, ctx)
        return x

    def __repr__(self) -> str:
        return f"FiniteFloat({self.min}, {self.max})"


def finite_float(min: float | None = None, max: float | None = None, *, min_open: bool = False) -> FiniteFloat:
    """Click type for a finite float in [min, max] (``min_open``: > min)."""
    return FiniteFloat(min, max, min_open=min_open)


def _json_float(what: str) -> Any:
    def parse(s: str) -> float:
        x = float(s)
        if not math.isfinite(x):
            raise InputError(f"{s} is not a finite number", field=what)
        return x
    return parse


def _parse_value(raw: str, what: str) -> Any:
    def bad_constant(name: str) -> Any:
        raise InputError(f"{name} is not a finite number", field=what)

    def parse_int(s: str) -> int:
        if len(s.lstrip("-")) > 30:
            raise InputError(f"{s[:20]}... is too large a number", field=what)
        return int(s)

    try:
        return json.loads(raw, parse_constant=bad_constant, parse_float=_json_float(what), parse_int=parse_int)
    except json.JSONDecodeError:
        return raw


def parse_kv(pairs: tuple[str, ...], what: str) -> dict[str, Any]:
    """``key=value`` pairs → dict; values are JSON when they parse (numbers, lists, true/false); non-finite
    numbers (NaN, Infinity, 1e400) and a key given twice are errors naming the flag."""
    out: dict[str, Any] = {}
    for p in pairs:
        key, sep, val = p.partition("=")
        if not sep or not key.strip():
            raise InputError(f"expected KEY=VALUE, got {p!r}", field=what)
        if key.strip() in out:
            raise InputError(f"key {key.strip()!r} given twice", field=what)
        out[key.strip()] = _parse_value(val.strip(), what)
    return out


def parse_columns(pairs: tuple[str, ...]) -> dict[str, str]:
    """``--column FIELD=NAME`` pairs → {field: column name} (names kept as text; an empty NAME unmaps)."""
    out: dict[str, str] = {}
    for p in pairs:
        key, sep, val = p.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InputError(f"expected FIELD=NAME, got {p!r}", field="--column")
        if key in out:
            raise InputError(f"field {key!r} mapped twice ({out[key]!r} and {val.strip()!r})", field="--column")
        out[key] = val.strip()
    return out


def mapping_options(f: Any) -> Any:
    """How to read a trace: the options shared by ``simulate``/``compare`` and ``traces info``."""
    from ddlsched.workload.loaders import FORMATS
    from ddlsched.workload.loaders._common import FRACTIONAL_RULES, TIME_UNITS, UNKNOWN_MODEL_RULES
    from ddlsched.workload.loaders.generic_csv import FIELDS, GPU_UNITS

    opts = [
        click.option("--format", "fmt", type=click.Choice(sorted(FORMATS)), default=None,
                     help="Trace format (detected from the first line; --column implies generic_csv)."),
        click.option("--column", "columns", multiple=True, metavar="FIELD=NAME",
                     help=f"generic_csv: read FIELD from column NAME (empty NAME: leave FIELD unmapped). "
                          f"Fields: {', '.join(FIELDS)}. See docs/traces.md."),
        click.option("--time-unit", type=click.Choice([*TIME_UNITS, "auto"]), default=None,
                     help="generic_csv/muri: unit of plain-number times (clock and ISO-8601 values carry their own)."),
        click.option("--duration-unit", type=click.Choice(list(TIME_UNITS)), default=None,
                     help="generic_csv: unit of plain-number durations (default: --time-unit)."),
        click.option("--gpu-unit", type=click.Choice(list(GPU_UNITS)), default=None,
                     help="generic_csv: what the num_gpus column counts (default gpus)."),
        click.option("--fractional-gpus", type=click.Choice(list(FRACTIONAL_RULES)), default=None,
                     help="generic_csv/kubernetes: a fractional GPU request is rounded up (ceil, default; "
                          "JobSpec.gpu_request keeps the share), an error, or, below 1 GPU, kept as a share of one "
                          "GPU (keep): GPU-sharing policies (sjf-bsbf, ...) pack shares summing to <= 1 on a GPU, "
                          "others give each a whole GPU, with a note (docs/traces.md)."),
        click.option("--states", default=None, metavar="STATE,...|all",
                     help="slurm/kubernetes: end states simulated (default slurm: completed,timeout,failed,"
                          "out_of_memory,node_fail; kubernetes: succeeded,failed). Other rows are counted by reason."),
        click.option("--gpus-from", default=None, metavar="COLUMN:KEY|COLUMN~REGEX",
                     help="generic_csv: read the GPU count from a column's text, e.g. AllocTRES:gres/gpu "
                          "(key=value list) or 'Gres~gpu:(\\d+)'."),
        click.option("--missing", default=None, metavar="VALUE,...",
                     help="generic_csv: values that mean 'no value' besides an empty field (case-insensitive; "
                          "default unknown,none,null,n/a,na,nan,<none>; '' for none). Missing in a required field "
                          "is an error, in model/batch_size/user/gpu_type the field is absent."),
        click.option("--models", "models", type=click.Path(dir_okay=False), default=None, metavar="FILE.csv",
                     help="Extra model profiles (name,grad_mb,compute_ms,fw_ms,bw_ms,batch_size,mem_mb,source)."),
        click.option("--unknown-models", type=click.Choice(list(UNKNOWN_MODEL_RULES)), default=None,
                     help="A model name not in the catalogue: error (default) or map to a seeded default model."),
        click.option("--skip-invalid", is_flag=True, help="Skip invalid rows (they are counted and reported)."),
        click.option("--tenant-column", default=None, metavar="NAME",
                     help="generic_csv: read each job's tenant (user, VC, team) from column NAME (= --column "
                          "user=NAME; docs/policies/fairness.md)."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def trace_options(f: Any) -> Any:
    from ddlsched.workload.limits import LOAD_SCALE_RANGE, MAX_RESTART_PENALTY_S

    opts = [
        click.option("--trace", "trace_path", required=True, type=click.Path(),
                     help="Job trace file, or a folder of trace files loaded as one trace."),
        mapping_options,
        click.option("--window", default=None, metavar="START:END",
                     help="Use only the jobs arriving START to END after the first arrival (durations: 3600, 90m, "
                          "12h, 55d), e.g. a steady stretch of a long trace; applied before --max-jobs."),
        click.option("--max-jobs", type=click.IntRange(min=1), default=None,
                     help="Use only the first N jobs by arrival."),
        click.option("--load-scale", type=finite_float(*LOAD_SCALE_RANGE), default=1.0, show_default=True,
                     help="Divide inter-arrival times by this factor (>1 raises the offered load; 1e-6 to 1e6)."),
        click.option("--cluster", "cluster_spec", required=True, help="Cluster preset name or YAML/TOML file."),
        click.option("--tenants", "tenants_file", type=click.Path(dir_okay=False), default=None, metavar="FILE",
                     help="Tenants file (weights, quotas, cohorts; replaces the cluster file's tenants: section; "
                          "docs/policies/fairness.md)."),
        click.option("--perf-model", default=None,
                     help="Physics model (see 'policies'); default: the execution model's (fluid and rounds: "
                          "phased_tcp, docs/validation.md; task DAG: abe)."),
        click.option("--perf-param", multiple=True, metavar="KEY=VALUE", help="Physics model parameter."),
        click.option("--model-param", multiple=True, metavar="KEY=VALUE",
                     help="Execution-model parameter (task DAG: max_task_iters; rounds: max_rounds, switch_frac, "
                          "switch_s)."),
        click.option("--restart-penalty", type=finite_float(0.0, MAX_RESTART_PENALTY_S), default=None,
                     help="Seconds lost on every restart after a preemption (0 to 1e9; fluid model; default 30)."),
        click.option("--seed", type=click.IntRange(0, 2**63 - 1), default=0, show_default=True,
                     help="Seed for every random choice."),
        click.option("--warmup", default=None, metavar="DURATION|Njobs",
                     help="Leave the jobs arriving in the first DURATION (3600, 30m, 12h, 2d) or the first N jobs "
                          "(500jobs) out of the per-job metrics; they still run (docs/metrics.md)."),
        click.option("--cooldown", default=None, metavar="DURATION|Njobs",
                     help="Likewise for the jobs arriving in the last DURATION or the last N jobs."),
        click.option("--parquet", is_flag=True, help="Write records as Parquet instead of CSV."),
        click.option("--quiet", is_flag=True, help="No progress bar."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def _load_plugins(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    from ddlsched.policies.registry import load_plugin

    for spec in value:
        load_plugin(spec)
    return value


plugin_option = click.option(
    "--plugin", "plugins", multiple=True, metavar="FILE.py|MODULE", is_eager=True, expose_value=True,
    callback=_load_plugins, help="Import a policy plug-in (a .py file or a module) before anything else; repeatable "
                                 "(docs/adding-a-policy.md).")


def load_options(kw: dict[str, Any]) -> dict[str, Any]:
    """Loader options from the parsed :func:`mapping_options` (only the flags that were given)."""
    opts: dict[str, Any] = {"skip_invalid": bool(kw.get("skip_invalid"))}
    if kw.get("columns"):
        opts["columns"] = parse_columns(kw["columns"])
    if kw.get("tenant_column"):
        cols = opts.setdefault("columns", {})
        if cols.get("user", kw["tenant_column"]) != kw["tenant_column"]:
            raise InputError(f"--tenant-column {kw['tenant_column']!r} and --column user={cols['user']!r} disagree",
                             field="--tenant-column")
        cols["user"] = kw["tenant_column"]
    for key in ("time_unit", "duration_unit", "gpu_unit", "fractional_gpus", "unknown_models", "states",
                "gpus_from", "missing"):
        if kw.get(key) is not None:
            opts[key] = kw[key]
    return opts


def load_run_inputs(kw: dict[str, Any]) -> tuple[Any, Any]:
    """(cluster, :class:`~ddlsched.workload.inputs.Workload`) from the options of ``simulate``/``compare``.

    The cluster is loaded first so a GPU-type column can be checked against it. The workload's ``catalog``
    holds the bundled profiles plus ``--models``; the simulator must be given it. Errors exit with status 2."""
    from ddlsched.errors import DdlschedError
    from ddlsched.experiments.runner import load_cluster_for
    from ddlsched.workload.inputs import load_workload_and_models

    measurement_window(kw)  # a bad --warmup/--cooldown fails before anything is loaded or simulated
    try:
        cluster = load_cluster_for(kw["cluster_spec"], seed=kw["seed"])
        if kw.get("tenants_file"):
            from ddlsched.cluster.tenants import attach, load_tenants_file

            cluster = attach(cluster, load_tenants_file(kw["tenants_file"], cluster))
        w = load_workload_and_models(kw["trace_path"], seed=kw["seed"], fmt=kw["fmt"], options=load_options(kw),
                                     max_jobs=kw["max_jobs"], load_scale=kw["load_scale"], models=kw.get("models"),
                                     gpu_types=list(cluster.gpu_types), window=kw.get("window"))
    except DdlschedError as e:
        raise InputErrorExit(str(e)) from None
    if cluster.tenants is not None:  # jobs whose user is no tenant count under the default tenant: say so
        line = cluster.tenants.note([j.user for j in w.jobs])
        if line:
            w.notes.append(line)
    return cluster, w


def measurement_window(kw: dict[str, Any]) -> Any:
    """The :class:`~ddlsched.metrics.window.Window` of ``--warmup``/``--cooldown`` (checked before simulating)."""
    from ddlsched.errors import DdlschedError
    from ddlsched.metrics.window import Window

    try:
        return Window.parse(kw.get("warmup"), kw.get("cooldown"))
    except DdlschedError as e:
        raise InputErrorExit(str(e)) from None


def paper_scale_warning(policy_name: str, policy_params: dict[str, Any], jobs: int) -> str:
    """A one-line warning when ``policy_name`` is paper-scale only (``Policy.paper_scale_jobs``) and the run has
    more jobs than that; printed on stderr. Empty otherwise."""
    from ddlsched.policies import make_policy

    policy = make_policy(policy_name, policy_params)
    limit = policy.paper_scale_jobs
    if limit is None or jobs <= limit:
        return ""
    text = (f"{policy.name} is paper-scale only: above {limit:,} jobs a run was measured to take over a minute "
            f"(this one has {jobs:,}; docs/policies/README.md, 'Paper-scale policies')")
    err_console.print(f"[yellow]warning:[/] {text}")
    return text


def run_one(policy_name: str, policy_params: dict[str, Any], cluster: Any, workload: Any, kw: dict[str, Any],
             out: Path, shown_as: Path | None = None) -> dict[str, Any]:
    """Simulate ``workload`` (a :class:`~ddlsched.workload.inputs.Workload`) and write the run into ``out``."""
    from ddlsched.experiments.runner import simulate_run
    from ddlsched.metrics.output import write_run

    jobs = workload.jobs
    whole = kw["max_jobs"] is None and kw.get("window") is None  # invalid rows count only against the whole trace
    skipped = workload.trace.skipped if workload.trace is not None and whole else 0
    sim_kw = {"perf_model": kw["perf_model"], "perf_params": parse_kv(kw["perf_param"], "perf-param"),
              "model_params": parse_kv(kw["model_param"], "model-param"),
              "restart_penalty_s": kw["restart_penalty"], "seed": kw["seed"], "catalog": workload.catalog,
              "skipped": skipped}
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
    from ddlsched.workload.inputs import row_accounting

    rows = row_accounting(workload.trace if whole else None, result.jobs)
    summary = write_run(result, out, parquet=kw["parquet"],
                        extra={"trace": str(kw["trace_path"]), "load_scale": kw["load_scale"], **rows},
                        window=measurement_window(kw))
    if not kw["quiet"]:
        for note in result.notes:  # the engine's and the policy's (Policy.run_notes: a mechanism it disabled)
            err_console.print(f"note: {note}")
    if result.rejected:
        err_console.print(f"[yellow]warning:[/] {len(result.rejected)} job(s) rejected as impossible on "
                          f"{cluster.name} (see {(shown_as or out) / 'rejected.csv'}); "
                          f"first: {result.rejected[0]['reason']}")
    if result.unfinished:
        err_console.print(f"[yellow]warning:[/] {len(result.unfinished)} job(s) never finished under "
                          f"{policy_name}")
    from ddlsched.metrics.warnings import queue_warnings, record_warnings

    lo, hi = summary["window_start_s"], summary["window_end_s"]
    summary["_warnings"] = (queue_warnings(result.timeseries, lo, hi)
                            + record_warnings(result.records.subset(
                                [lo <= a <= hi for a in result.records.column("arrival_s")])))
    summary["_wall_s"] = result.wall_s
    summary["_events"] = result.events
    return summary


def summary_table(rows: list[dict[str, Any]], title: str) -> Table:
    t = Table(title=title)
    cols = [("policy", "policy", "{}"), ("done", "jobs_completed", "{:d}"), ("avg JCT h", "avg_jct_s", "h"),
            ("median JCT h", "median_jct_s", "h"), ("p99 JCT h", "p99_jct_s", "h"), ("makespan h", "makespan_s", "h"),
            ("avg queue h", "avg_queueing_s", "h"), ("comm ovh %", "comm_overhead_pct", "{:.1f}"),
            ("realised load", "gpu_utilization_window", "{:.2f}"), ("run/ideal p50 p95", "_slowdowns", "{}"),
            ("preempt", "preemptions", "{:d}"), ("clairvoyant", "_clairvoyant", "{}"), ("wall s", "_wall_s", "{:.1f}")]
    for name, *_ in cols:
        t.add_column(name, justify="left" if name == "policy" else "right", no_wrap=name == "policy")
    for r in rows:
        cells = []
        for _, key, fmt in cols:
            v = r.get(key)
            if key == "_slowdowns":
                lo, hi = r.get("median_slowdown"), r.get("p95_slowdown")
                v = f"{lo:.2f} {hi:.2f}" if isinstance(lo, float) and isinstance(hi, float) else None
            elif key == "_clairvoyant":  # Requirements.clairvoyant of the policy as run (may it know durations)
                from ddlsched.policies.registry import clairvoyant
                flag = clairvoyant(str(r.get("policy")), r.get("policy_params") or {})
                v = "?" if flag is None else "yes" if flag else "no"
            if v is None or (isinstance(v, float) and v != v):
                cells.append("-")
            elif fmt == "h":
                cells.append(f"{v / 3600:.2f}")
            else:
                cells.append(fmt.format(v))
        t.add_row(*cells)
    return t


