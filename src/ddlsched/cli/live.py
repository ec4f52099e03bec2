"""``ddlsched live run``: run policies live (the digital twin or Ray) on a trace's jobs, at their scaled arrival
times, and write the same result folder as ``simulate`` plus ``live.json`` (docs/live.md).

With one policy, ``--out`` is a run folder; with several (comma-separated), one run folder per policy under
``--out`` and a ``comparison.csv``. ``--compare-sim`` also simulates the same jobs on the same cluster and writes
``sim_summary.json``/``sim_records.csv`` beside each run, ``jobs_comparison.csv`` (per job) and ``comparison.csv``
(per policy: avg JCT and makespan live and simulated, |1 − live/sim|, rankings).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from ddlsched.cli.common import (
    console,
    err_console,
    finite_float,
    load_run_inputs,
    measurement_window,
    parse_kv,
    plugin_option,
    summary_table,
    trace_options,
)
from ddlsched.cli.run import OVERWRITE_HELP, run_inputs
from ddlsched.errors import ConfigError, InputError

EXECUTORS = ("sim", "ray")


def _note(line: str) -> None:
    err_console.print(f"note: {line}")


@click.group()
def live() -> None:
    """Run policies live: the same policies and core, with an executor carrying out their decisions."""


@live.command("run")
@trace_options
@plugin_option
@click.option("--policy", required=True, help="Policy name, or several comma-separated (see 'ddlsched policies').")
@click.option("--policy-param", multiple=True, metavar="[POLICY:]KEY=VALUE",
              help="Policy parameter (JSON values); POLICY:KEY=VALUE applies to that policy of --policy only.")
@click.option("--time-scale", type=finite_float(0.0, 1e9, min_open=True), default=1.0, show_default=True,
              help="Run seconds per wall second (100: a trace hour runs in 36 s of wall time).")
@click.option("--executor", "executor_name", type=click.Choice(EXECUTORS), default="sim", show_default=True,
              help="sim: the digital twin (the simulator's physics in wall time); ray: Ray core (see docs, live-ray).")
@click.option("--executor-opt", multiple=True, metavar="KEY=VALUE",
              help="Executor option (twin: report_every_s, checkpoint_s, checkpoint_every_s, start_s, actuation).")
@click.option("--grace", "grace_s", type=finite_float(0.0, 1e9), default=30.0, show_default=True,
              help="Run seconds a revoked job has to checkpoint before it is killed.")
@click.option("--compare-sim", is_flag=True, help="Also simulate the same jobs and write the side-by-side.")
@click.option("--out", type=click.Path(file_okay=False), required=True,
              help="Output directory (new or empty; see --overwrite).")
@click.option("--overwrite", is_flag=True, help=OVERWRITE_HELP)
def live_run(policy: str, policy_param: tuple[str, ...], time_scale: float, executor_name: str,
             executor_opt: tuple[str, ...], grace_s: float, compare_sim: bool, out: str, overwrite: bool,
             **kw: Any) -> None:
    """Run POLICY live on the trace's jobs (submitted at their arrival times ÷ --time-scale) and write the results."""
    from ddlsched.metrics.atomic import staged
    from ddlsched.metrics.interrupts import interrupts_raise

    params = parse_kv(policy_param, "policy-param")
    ex_opts = parse_kv(executor_opt, "executor-opt")
    names = [p.strip() for p in policy.split(",") if p.strip()]
    if not names:
        raise InputError("no policy given", field="--policy")
    per_policy = _params_per_policy(names, params)
    policies = _check_policies(names, per_policy)  # every refusal before anything is loaded or started
    with interrupts_raise(), staged(Path(out), overwrite=overwrite, note=_note) as st:
        cluster, w = load_run_inputs(kw)
        for n in w.notes:
            _note(n)
        jobs = _from_zero(w.jobs)
        rows, comparisons = [], []
        for folder, (name, resolved) in policies.items():
            target = st.tmp if len(policies) == 1 else st.tmp / folder
            target.mkdir(parents=True, exist_ok=True)
            row, cmp_rows = _run_policy(name, per_policy[name], resolved, cluster, w, jobs, kw, target, time_scale,
                                        executor_name, ex_opts, grace_s, compare_sim)
            rows.append(row)
            comparisons += cmp_rows
            if len(policies) > 1:
                from ddlsched.metrics.manifest import write_manifest

                write_manifest(target, "run", run_inputs(kw, folder, per_policy[name]))
        if compare_sim:
            _write_comparison(st.tmp, rows, comparisons)
        inputs = run_inputs(kw, ",".join(policies), params)
        inputs.update({"live": True, "time_scale": time_scale, "executor": executor_name,
                       "executor_opts": ex_opts, "grace_s": grace_s, "compare_sim": compare_sim})
        st.commit("run" if len(policies) == 1 else "live-compare", inputs)
    console.print(f"{cluster.describe()}; {len(jobs)} jobs; live on the {executor_name} executor at "
                  f"time scale {time_scale:g}")
    console.print(summary_table(rows, f"live: {', '.join(policies)} on {cluster.name}"))
    for r in rows:
        lat = r["_live"]["sched_latency"]
        cpu = r["_live"]
        hop = cpu.get("sched_latency_dispatched")
        hop_s = (f" (→ {cpu['executor']} asked: median {_ms(hop['median_ms'])}, p95 {_ms(hop['p95_ms'])})"
                 if hop else "")
        console.print(f"{r['policy']}: scheduling latency (finish → next launch) median "
                      f"{_ms(lat['median_ms'])}, p95 {_ms(lat['p95_ms'])}{hop_s} over {lat['count']} launches; "
                      f"wall {cpu['wall_s']:.1f} s, loop CPU {_pct(cpu['cpu_busy_loop'])}, "
                      f"machine CPU {_pct(cpu['cpu_busy_system'])} of {cpu['cpu_cores']} cores")
    if compare_sim:
        for c in _policy_rows(rows):
            console.print(f"{c['policy']}: avg JCT live/sim {c['live_avg_jct_s']:.1f}/{c['sim_avg_jct_s']:.1f} s "
                          f"(|1 − live/sim| {c['avg_jct_err']:.4f}), makespan {c['live_makespan_s']:.1f}/"
                          f"{c['sim_makespan_s']:.1f} s ({c['makespan_err']:.4f})")
    console.print(f"results in {out}/")


def _ms(x: Any) -> str:
    return "-" if x is None else f"{x:.2f} ms"


def _pct(x: Any) -> str:
    return "-" if x is None else f"{100 * x:.0f} %"


def _params_per_policy(names: list[str], params: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each policy's parameters: the plain ``KEY`` ones and its own ``POLICY:KEY`` ones (the policy named as in
    ``--policy``). A scope naming no policy of ``--policy`` is an error naming the flag."""
    plain = {k: v for k, v in params.items() if ":" not in k}
    out: dict[str, dict[str, Any]] = {n: dict(plain) for n in names}
    for key, value in params.items():
        if ":" not in key:
            continue
        scope, _, name = key.partition(":")
        scope, name = scope.strip(), name.strip()
        if scope not in out:
            raise InputError(f"{key!r}: {scope!r} is not one of the policies given ({', '.join(names)})",
                             field="--policy-param")
        if not name:
            raise InputError(f"{key!r}: no parameter name after {scope + ':'!r}", field="--policy-param")
        if name in out[scope]:
            raise InputError(f"{name!r} given for {scope!r} twice (plain and scoped)", field="--policy-param")
        out[scope][name] = value
    return out


def _check_policies(names: list[str], per_policy: dict[str, dict[str, Any]]) -> dict[str, tuple[str, Any]]:
    """Folder name → (name as given, policy), each checked to be runnable live (ConfigError with the reason)."""
    from ddlsched.live.model import refusal
    from ddlsched.policies import make_policy

    out: dict[str, tuple[str, Any]] = {}
    for n in names:
        p = make_policy(n, per_policy[n])
        why = refusal(p)
        if why:
            raise ConfigError(f"cannot run live: {why}", field="--policy")
        folder = p.name.replace("/", "_")
        if folder in out:
            raise InputError(f"{out[folder][0]!r} and {n!r} are the same policy ({folder})", field="--policy")
        out[folder] = (n, p)
    return out


def _from_zero(jobs: list[Any]) -> list[Any]:
    """The jobs with arrivals shifted so that the first is at run second 0 (a live run starts at once)."""
    if not jobs:
        return jobs
    first = min(j.arrival_s for j in jobs)
    return jobs if first == 0 else [replace(j, arrival_s=j.arrival_s - first) for j in jobs]


def _executor(name: str, opts: dict[str, Any], catalog: Any, kw: dict[str, Any], penalty: float) -> Any:
    if name == "sim":
        from ddlsched.live.sim_executor import SimExecutor

        allowed = {"report_every_s", "checkpoint_s", "checkpoint_every_s", "start_s", "actuation"}
        bad = sorted(set(opts) - allowed)
        if bad:
            raise InputError(f"unknown twin option(s) {bad} (allowed: {', '.join(sorted(allowed))})",
                             field="--executor-opt")
        return SimExecutor(catalog, perf_model=kw["perf_model"], perf_params=parse_kv(kw["perf_param"], "perf-param"),
                           restart_s=penalty, **opts)
    try:
        from ddlsched.live.ray_executor import RayExecutor  # type: ignore[import-not-found, unused-ignore]
    except ModuleNotFoundError as e:
        if e.name and e.name.startswith("ddlsched"):
            raise ConfigError("the Ray executor (ddlsched.live.ray_executor) is not part of this installation",
                              field="--executor") from None
        raise
    if "models" not in opts and "catalog" not in opts:
        opts = {**opts, "catalog": catalog}  # the profile job follows the run's model profiles (--models)
    return RayExecutor(**opts)


def _run_policy(name: str, params: dict[str, Any], policy: Any, cluster: Any, w: Any, jobs: list[Any],
                kw: dict[str, Any], out: Path, time_scale: float, executor_name: str, ex_opts: dict[str, Any],
                grace_s: float, compare_sim: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from ddlsched.engine import SimConfig
    from ddlsched.engine.run import DEFAULT_RESTART_PENALTY_S
    from ddlsched.live.run import LiveRun
    from ddlsched.metrics.output import write_json, write_records, write_run

    penalty = DEFAULT_RESTART_PENALTY_S if kw["restart_penalty"] is None else kw["restart_penalty"]
    config = SimConfig(perf_model=kw["perf_model"], perf_params=parse_kv(kw["perf_param"], "perf-param"),
                       model_params=parse_kv(kw["model_param"], "model-param"),
                       restart_penalty_s=kw["restart_penalty"], seed=kw["seed"])
    executor = _executor(executor_name, ex_opts, w.catalog, kw, penalty)
    catalog = w.catalog
    scales = (float(ex_opts.get("grad_scale", 1.0)), float(ex_opts.get("compute_scale", 1.0)))
    if executor_name == "ray" and not ex_opts.get("entrypoint") and scales != (1.0, 1.0):
        from ddlsched.live.calibration import scaled_catalog

        # the profile job runs the scaled profiles: the live model's ideal and the simulation follow them
        catalog = scaled_catalog(w.catalog, *scales)
        _note(f"{name}: the profile job runs the profiles with the gradient × {scales[0]:g} and the compute × "
              f"{scales[1]:g}; the run's accounts{' and the simulation' if compare_sim else ''} use the same")
    show = not kw["quiet"]
    bar = _Bar(name, len(jobs), time_scale) if show else None
    run = LiveRun(cluster, policy, executor, time_scale=time_scale, config=config, catalog=catalog, jobs=jobs,
                  checkpoint_grace_s=grace_s, progress=bar.update if bar is not None else None)
    if run.core.rejected:  # a job that can never run: refuse before anything starts
        first = run.core.rejected[0]
        raise InputError(f"{len(run.core.rejected)} job(s) can never run on {cluster.name}; first: job "
                         f"{first['job_id']} ({first['source'] or 'trace'}): {first['reason']}", field="--trace")
    try:
        result = run.run()
    finally:
        if bar is not None:
            bar.close()
    summary = write_run(result, out, parquet=kw["parquet"],
                        extra={"trace": str(kw["trace_path"]), "load_scale": kw["load_scale"],
                               "jobs_submitted": result.submitted, "jobs_failed": len(result.failed),
                               "jobs_cancelled": len(result.cancelled)},
                        window=measurement_window(kw))
    if result.failed:
        write_records(out / "failed.csv", result.failed)
    if result.cancelled:
        write_records(out / "cancelled.csv", result.cancelled)
    costs = None
    if hasattr(executor, "startups"):  # the Ray executor measures where its starts went
        from ddlsched.live.calibration import start_costs

        costs = start_costs(executor.startups, executor.drains, time_scale)
        result.live["start_costs"] = costs
        result.live["startups"] = list(executor.startups)
    write_json(out / "live.json", {**result.live, "policy": result.policy, "jobs_submitted": result.submitted,
                                   "jobs_completed": len(result.records), "jobs_failed": len(result.failed),
                                   "jobs_cancelled": len(result.cancelled), "jobs_unfinished": len(result.unfinished),
                                   "jobs_rejected": len(result.rejected), "mechanisms": result.mechanisms})
    summary["_wall_s"], summary["_events"], summary["_live"] = result.wall_s, result.events, result.live
    if result.unfinished:
        err_console.print(f"[yellow]warning:[/] {len(result.unfinished)} job(s) never finished under {name}")
    if result.failed:
        err_console.print(f"[yellow]warning:[/] {len(result.failed)} job(s) failed under {name} (see failed.csv); "
                          f"first: {result.failed[0]['reason']}")
    cmp_rows: list[dict[str, Any]] = []
    if compare_sim:
        from ddlsched.engine import run_simulation
        from ddlsched.metrics.summary import summarize
        from ddlsched.policies import make_policy

        sim_config = config
        if costs is not None and kw["restart_penalty"] is None:  # charge the restart the live run measured
            from ddlsched.live.calibration import sim_restart_penalty

            pen = sim_restart_penalty(costs)
            if pen is not None:
                sim_config = replace(config, restart_penalty_s=pen)
                _note(f"{name}: the simulation charges the measured restart, {pen:.3f} s per restart "
                      f"(--restart-penalty to override); start-up {costs['startup_s']} s and drain "
                      f"{costs['drain_s']} s (medians) have no simulator knob")
        sim = run_simulation(cluster, jobs, make_policy(name, params), sim_config, catalog=catalog)
        sim_summary = summarize(sim, measurement_window(kw))
        sim_pen = sim_config.restart_penalty_s
        sim_summary["restart_penalty_s"] = penalty if sim_pen is None else sim_pen
        write_json(out / "sim_summary.json", sim_summary)
        write_records(out / "sim_records.csv", sim.records)
        summary["_sim"] = sim_summary
        sim_jct = {r["job_id"]: r["jct_s"] for r in sim.records}
        for r in result.records:
            s = sim_jct.get(r["job_id"])
            cmp_rows.append({"policy": result.policy, "job_id": r["job_id"], "live_jct_s": r["jct_s"],
                             "sim_jct_s": s if s is not None else math.nan,
                             "rel_err": abs(1 - r["jct_s"] / s) if s else math.nan})
    return summary, cmp_rows


def _policy_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        s = r.get("_sim") or {}
        la, sa, lm, sm = r.get("avg_jct_s"), s.get("avg_jct_s"), r.get("makespan_s"), s.get("makespan_s")
        out.append({"policy": r["policy"], "live_avg_jct_s": la, "sim_avg_jct_s": sa,
                    "avg_jct_err": abs(1 - la / sa) if la is not None and sa else math.nan,
                    "live_makespan_s": lm, "sim_makespan_s": sm,
                    "makespan_err": abs(1 - lm / sm) if lm is not None and sm else math.nan,
                    "live_jobs_completed": r.get("jobs_completed"), "sim_jobs_completed": s.get("jobs_completed")})
    for key, rank in (("live_avg_jct_s", "live_rank"), ("sim_avg_jct_s", "sim_rank")):
        order = sorted(range(len(out)), key=lambda i: (out[i][key] if out[i][key] is not None else math.inf))
        for k, i in enumerate(order, 1):
            out[i][rank] = k
    return out


def _write_comparison(out: Path, rows: list[dict[str, Any]], jobs: list[dict[str, Any]]) -> None:
    import numpy as np

    from ddlsched.metrics.output import write_json, write_records

    per_policy = _policy_rows(rows)
    for c in per_policy:
        errs = np.array([j["rel_err"] for j in jobs if j["policy"] == c["policy"] and not math.isnan(j["rel_err"])])
        c["job_jct_err_median"] = float(np.median(errs)) if errs.size else math.nan
        c["job_jct_err_p95"] = float(np.percentile(errs, 95)) if errs.size else math.nan
        c["job_jct_err_max"] = float(errs.max()) if errs.size else math.nan
    write_records(out / "comparison.csv", per_policy)
    write_records(out / "jobs_comparison.csv", jobs)
    same = [c["live_rank"] for c in per_policy] == [c["sim_rank"] for c in per_policy]
    write_json(out / "comparison.json", {"policies": json.loads(json.dumps(per_policy, default=str)),
                                         "same_ranking": same})


class _Bar:
    """A progress line on stderr (jobs completed, run clock) for long runs, at most every 0.5 s."""

    def __init__(self, name: str, total: int, time_scale: float) -> None:
        self.name, self.total, self.scale = name, total, time_scale
        self.last = 0.0
        self.live = err_console.is_terminal
        self.every = 0.5 if self.live else 10.0  # a log gets a line every 10 s
        self.shown = -1

    def update(self, now: float, done: int, total: int) -> None:
        t = time.perf_counter()
        if (t - self.last < self.every and done < total) or (done == total and self.shown == done):
            return
        self.last, self.shown = t, done
        text = f"{self.name}: {done}/{total} jobs done, run clock {now:.0f} s"
        err_console.print(text, end="\r" if self.live else "\n")

    def close(self) -> None:
        if self.live:
            err_console.print(" " * 60, end="\r")


__all__ = ["live"]
