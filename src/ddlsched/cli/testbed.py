"""``ddlsched testbed …``: the emulated-cluster testbed (see ``ddlsched.testbed`` and docs/validation.md).

The main CLI adds the :data:`testbed` group; run as ``ddlsched testbed …`` (needs root).
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import yaml

from ddlsched.cluster.presets import load_cluster
from ddlsched.cluster.topology import Cluster
from ddlsched.errors import DdlschedError
from ddlsched.perf import DEFAULT_PERF_MODEL, PERF_MODELS
from ddlsched.testbed.netns import leftovers, read_state, teardown
from ddlsched.testbed.scenarios import CAL_REPEATS, TCP_RULE_SCENARIOS, VAL_REPEATS

DEFAULT_OUT = "results/validation"
FAIR_CLASSES = 8


def _base_cluster(spec: str) -> Cluster:
    from ddlsched.testbed.scenarios import tb4, tb32

    return {"tb32": tb32, "tb4": tb4}[spec]() if spec in ("tb32", "tb4") else load_cluster(spec)


def _scaled(spec: str, nic_mbit: float, scale: float | None) -> tuple[Cluster, dict[str, Any]]:
    from ddlsched.testbed.fabric import scaled_cluster

    base = _base_cluster(spec)
    sc = scaled_cluster(base, scale=scale, nic_mbit=nic_mbit)
    eff_scale = sc.nic_Bps(0) / base.nic_Bps(0)
    fastest = max(sc.nic_Bps(s) for s in range(sc.num_servers)) * 8 / 1e6
    return sc, {"spec": spec, "scale": eff_scale, "nic_mbit": fastest}


@contextlib.contextmanager
def _session(spec: str, nic_mbit: float, scale: float | None, keep: bool,
             fair: int = 0) -> Iterator[tuple[Cluster, dict]]:
    """Use the testbed that is up (if it matches), else bring one up and take it down afterwards."""
    from ddlsched.testbed.fabric import testbed as tb_ctx

    state = read_state()
    if state is not None:
        if state.get("spec") != spec:
            raise click.ClickException(f"a testbed for {state.get('spec')!r} is up; run 'testbed down' first")
        sc, meta = _scaled(spec, state["nic_mbit"], None)
        yield sc, meta
        return
    sc, meta = _scaled(spec, nic_mbit, scale)
    click.echo(f"testbed up: {sc.describe()}")
    with tb_ctx(sc, keep=keep, meta=meta, fair_jobs=fair):
        yield sc, meta
    if not keep:
        left = leftovers()
        click.echo("testbed down: " + ("nothing left behind" if not any(left.values()) else f"LEFT: {left}"))


def _fail(e: Exception) -> None:
    raise click.ClickException(str(e)) from e


cluster_opt = click.option("--cluster", "spec", default="tb32", show_default=True,
                           help="preset, YAML/TOML cluster file, or tb32/tb4 (the testbed's own clusters)")
nic_opt = click.option("--nic-mbit", default=100.0, show_default=True,
                       help="emulated rate of the fastest NIC; every capacity is scaled by the same factor")
scale_opt = click.option("--scale", type=float, default=None, help="explicit capacity scale (overrides --nic-mbit)")
cal_repeats_opt = click.option(
    "--cal-repeats", type=click.IntRange(min=1), default=CAL_REPEATS, show_default=True,
    help=f"run the TCP rule's calibration scenarios ({', '.join(TCP_RULE_SCENARIOS)}) this many times and fit "
         "γ, κ on all repeats (docs/validation.md, 'Calibration')")
val_repeats_opt = click.option(
    "--val-repeats", type=click.IntRange(min=1), default=VAL_REPEATS, show_default=True,
    help="run every validation scenario this many times (interleaved: all once, then all again, …) and score the "
         "models against each job's mean over its runs (docs/validation.md, 'Measurement protocol'); with "
         "--reuse every saved repeat is loaded instead")
fair_opt = click.option("--fair", "fair", flag_value=FAIR_CLASSES, default=0,
                        help="control experiment: share every link fairly between jobs (per-job htb classes) "
                             "instead of FIFO")


@click.group()
def testbed() -> None:
    """Emulated cluster (network namespaces, bridges, tc) running real ring all-reduce jobs."""


@testbed.command()
@cluster_opt
@nic_opt
@scale_opt
@fair_opt
@click.option("--ray", "with_ray", is_flag=True,
              help="Also start a Ray node in every server namespace (head in ddl-s0) for live runs "
                   "(docs/live-ray.md); 'testbed down' stops them.")
def up(spec: str, nic_mbit: float, scale: float | None, fair: int, with_ray: bool) -> None:
    """Build the emulated cluster and leave it up."""
    from ddlsched.testbed.fabric import bring_up

    try:
        sc, meta = _scaled(spec, nic_mbit, scale)
        fab = bring_up(sc, meta, fair)
    except DdlschedError as e:
        _fail(e)
    click.echo(f"up: {sc.describe()} — {len(fab.namespaces)} namespaces (scale {meta['scale']:g})")
    if with_ray:
        from ddlsched.testbed.rayup import start_ray

        try:
            address = start_ray(fab)
        except (DdlschedError, OSError, subprocess.SubprocessError) as e:
            teardown()
            _fail(DdlschedError(f"{e} (the testbed was taken down)"))
        click.echo(f"ray: {sc.num_servers} nodes, head {address}; a driver runs inside a server namespace: "
                   f"ip netns exec ddl-s0 ddlsched live run --executor ray --executor-opt address={address} …")


@testbed.command()
def down() -> None:
    """Remove every testbed namespace, link and worker process (also leftovers of a crashed run)."""
    removed = teardown()
    left = leftovers()
    click.echo(f"removed {len(removed)}: {' '.join(removed) or '-'}")
    if any(left.values()):
        raise click.ClickException(f"left behind: {left}")
    click.echo("nothing left behind")


@testbed.command()
def status() -> None:
    """Show the testbed that is up (if any) and any leftovers."""
    state = read_state()
    click.echo(json.dumps({"state": state, "present": leftovers()}, indent=1))


def _load_schedule(path: str) -> tuple[dict[str, Any], list[Any]]:
    from ddlsched.testbed.predict import JobRun

    data = yaml.safe_load(Path(path).read_text())
    return data, [JobRun(str(j["id"]), tuple(j.get("gpus", ())), float(j.get("grad_mb", 0.0)), int(j["iters"]),
                         float(j.get("compute_ms", 0.0)), float(j.get("start_s", 0.0))) for j in data["jobs"]]


@testbed.command()
@click.option("--schedule", "schedule_path", default=None, type=click.Path(exists=True),
              help="YAML: cluster, nic_mbit, jobs: [{id, gpus|num_gpus, grad_mb|model, iters, compute_ms, start_s}]")
@click.option("--policy", default=None, help="simulate --trace/--workload under this ddlsched policy and replay "
                                               "its schedule (instead of --schedule)")
@click.option("--policy-param", multiple=True, metavar="KEY=VALUE", help="policy parameter (JSON values)")
@click.option("--trace", "trace_path", default=None, type=click.Path(exists=True, dir_okay=False),
              help="job trace (any format ddlsched reads); use --max-jobs/--time-scale to make it small")
@click.option("--workload", default=None, help="built-in testbed workload (see ddlsched.testbed.policy_run): "
                                                 "place4, queue3")
@click.option("--cluster", "spec", default="tb4", show_default=True, help="cluster of a --policy run")
@click.option("--nic-mbit", default=100.0, show_default=True, help="emulated rate of the fastest NIC (--policy)")
@click.option("--max-jobs", type=int, default=None, help="first N jobs of --trace")
@click.option("--time-scale", type=float, default=1.0, show_default=True,
              help="multiply --trace arrivals and job lengths by this")
@click.option("--perf-model", default=DEFAULT_PERF_MODEL, show_default=True,
              help="physics of the simulation (--policy)")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--calibration", type=click.Path(exists=True), default=None)
@click.option("--backend", type=click.Choice(["socket", "torch"]), default="socket", show_default=True)
@click.option("--compute", type=click.Choice(["sleep", "train"]), default="sleep", show_default=True,
              help="compute phase: sleep compute_ms, or a real small CPU training step (torch)")
@click.option("--out", default="results/testbed-run", show_default=True)
def run(schedule_path: str | None, policy: str | None, policy_param: tuple[str, ...], trace_path: str | None,
        workload: str | None, spec: str, nic_mbit: float, max_jobs: int | None, time_scale: float, perf_model: str,
        seed: int, calibration: str | None, backend: str, compute: str, out: str) -> None:
    """Run a given schedule, or the schedule a policy chose in simulation, for real; compare with the models."""
    if policy is not None:
        if schedule_path or (trace_path is None) == (workload is None):
            raise click.UsageError("--policy needs exactly one of --trace and --workload (and no --schedule)")
        try:
            _run_policy(policy, policy_param, trace_path, workload, spec, nic_mbit, max_jobs, time_scale,
                        perf_model, seed, calibration, backend, compute, out)
        except DdlschedError as e:
            _fail(e)
        return
    if schedule_path is None:
        raise click.UsageError("give --schedule PATH, or --policy NAME with --trace/--workload")
    _run_schedule(schedule_path, calibration, backend, compute, out)


def _run_policy(policy: str, policy_param: tuple[str, ...], trace_path: str | None, workload: str | None,
                spec: str, nic_mbit: float, max_jobs: int | None, time_scale: float, perf_model: str, seed: int,
                calibration: str | None, backend: str, compute: str, out: str) -> None:
    from ddlsched.cli.common import parse_kv
    from ddlsched.testbed.calibrate import calibrated_cluster, load_calibration
    from ddlsched.testbed.executor import run_gated
    from ddlsched.testbed.fabric import cleanup_on_signals
    from ddlsched.testbed.policy_run import emulated_catalog, gated_jobs, simulate_schedule, time_scaled, write_outputs
    from ddlsched.testbed.policy_run import workload as builtin_workload
    from ddlsched.testbed.predict import model_params

    params = parse_kv(policy_param, "policy-param")
    cal = load_calibration(calibration) if calibration else None
    if trace_path is not None:
        from ddlsched.experiments.runner import load_workload

        jobs, _, _ = load_workload(trace_path, seed=seed, max_jobs=max_jobs)
        jobs = time_scaled(jobs, time_scale)
    else:
        jobs = builtin_workload(str(workload))
    sc, meta = _scaled(spec, nic_mbit, None)
    catalog = emulated_catalog(meta["scale"])
    sim_cluster = calibrated_cluster(sc, cal)
    sim = simulate_schedule(sim_cluster, jobs, policy, params, catalog, perf_model=perf_model,
                            perf_params=model_params(perf_model, cal), seed=seed)
    click.echo(f"simulated {policy} on {sc.describe()}: " + "; ".join(
        f"{s.job_id} on GPUs {list(s.gpus)} at {s.sim_start_s:.2f} s ({s.trigger})" for s in sim.schedule))
    gated = gated_jobs(sim_cluster, sim, catalog)
    with cleanup_on_signals(), _session(spec, nic_mbit, None, False) as (tb_cluster, _):
        res = run_gated(tb_cluster, gated, Path(out) / "runs", backend=backend, compute=compute)
    run_meta = {"policy": policy, "policy_params": params, "cluster": spec, "testbed": meta,
                "perf_model": perf_model, "calibration": calibration, "seed": seed,
                "workload": workload or trace_path}
    _, table = write_outputs(Path(out), sim_cluster, sim, res, run_meta)
    click.echo(f"CPU: workers {100 * res.worker_cpu:.0f} %, host {100 * res.cpu_util:.0f} %; start lag "
               f"max {max(m.start_lag_s for m in res.jobs.values()):.3f} s")
    click.echo(table)
    click.echo(f"wrote {out}/simulated, {out}/measured, {out}/side_by_side.csv|md, {out}/schedule.json")


def _run_schedule(schedule_path: str, calibration: str | None, backend: str, compute: str, out: str) -> None:
    from dataclasses import replace

    from ddlsched.testbed.calibrate import calibrated_cluster, load_calibration
    from ddlsched.testbed.executor import free_placement, run_schedule
    from ddlsched.testbed.predict import predict
    from ddlsched.workload.profiles import default_catalog

    data, jobs = _load_schedule(schedule_path)
    cal = load_calibration(calibration) if calibration else None
    try:
        with _session(str(data.get("cluster", "tb32")), float(data.get("nic_mbit", 100.0)), None, False) as (sc, meta):
            busy: set[int] = set()
            placed = []
            catalog = None
            for raw, j in zip(data["jobs"], jobs, strict=True):
                if not j.gpus:
                    j = replace(j, gpus=free_placement(sc, int(raw["num_gpus"]), busy))
                if "model" in raw:
                    catalog = catalog or default_catalog()
                    j = replace(j, grad_mb=catalog[raw["model"]].grad_mb * meta["scale"])
                busy |= set(j.gpus)
                placed.append(j)
            res = run_schedule(sc, placed, out, backend=backend, compute=compute)
            executed = res.as_executed(placed)
            if compute == "train":  # predict with the measured compute time of the real training step
                executed = [replace(j, compute_ms=1e3 * res.jobs[j.job_id].compute_s) for j in executed]
            cluster = calibrated_cluster(sc, cal)
            click.echo(f"CPU: workers {100 * res.worker_cpu:.0f} %, host {100 * res.cpu_util:.0f} %")
            for m in PERF_MODELS:
                p = predict(cluster, executed, m, cal)
                for j in executed:
                    mj = res.jobs[j.job_id]
                    click.echo(f"{m:>8} {j.job_id}: comm meas {mj.comm_s:.3f} pred {p[j.job_id].comm_s:.3f} | "
                               f"JCT meas {mj.jct_s:.2f} pred {p[j.job_id].jct_s:.2f}")
    except DdlschedError as e:
        _fail(e)


@testbed.command()
@cluster_opt
@nic_opt
@scale_opt
@click.option("--out", default=f"{DEFAULT_OUT}/calibration.json", show_default=True)
@click.option("--keep", is_flag=True, help="leave the testbed up")
@fair_opt
@cal_repeats_opt
def calibrate(spec: str, nic_mbit: float, scale: float | None, out: str, keep: bool, fair: int,
              cal_repeats: int) -> None:
    """Fit α, link efficiency, the TCP rule's γ/κ and the per-NIC β/η from the calibration suite; save a profile."""
    try:
        _calibrate(spec, nic_mbit, scale, out, keep, fair, cal_repeats)
    except DdlschedError as e:
        _fail(e)


def _calibrate(spec: str, nic_mbit: float, scale: float | None, out: str, keep: bool,
               fair: int = 0, repeats: int = CAL_REPEATS) -> dict[str, Any]:
    from ddlsched.testbed.calibrate import fit, save_calibration
    from ddlsched.testbed.scenarios import calibration_suite
    from ddlsched.testbed.validate import run_suite

    suite = calibration_suite(repeats)
    with _session(spec, nic_mbit, scale, keep, fair) as (sc, meta):
        click.echo(f"calibration suite ({len(suite)} runs; the TCP rule's scenarios × {repeats}):")
        results = run_suite(sc, suite, Path(out).parent / "calibration-runs", log=click.echo)
        prof = fit(sc, [(r.scenario, r.run) for r in results], nic_mbit=meta["nic_mbit"], scale=meta["scale"])
    save_calibration(prof, out)
    click.echo(f"calibrated: α = {1e3 * prof['hop_latency_s']:.2f} ms/hop-step; {_fmt_models(prof)}; "
               f"{_fmt_tcp(prof)}; ring-cost fit on bandwidth-bound rows: median |err| "
               f"{100 * prof['fit']['median_rel_err']:.1f} %, max {100 * prof['fit']['max_rel_err']:.1f} % → {out}")
    return prof


@testbed.command()
@cluster_opt
@nic_opt
@click.option("--calibration", type=click.Path(exists=True), default=None,
              help="use this profile instead of calibrating first")
@click.option("--out", default=DEFAULT_OUT, show_default=True)
@click.option("--doc", default=None,
              help="also rewrite this markdown file's fidelity block (e.g. docs/validation.md), its .json beside it "
                   "and the plot in its images/ folder; without it everything goes under --out only")
@click.option("--only", multiple=True, help="run only these scenarios")
@click.option("--backend", type=click.Choice(["socket", "torch"]), default="socket", show_default=True)
@click.option("--keep", is_flag=True, help="leave the testbed up")
@click.option("--reuse", type=click.Path(exists=True, file_okay=False), default=None,
              help="re-evaluate the runs saved in this --out directory (no testbed, no root): e.g. after new "
                   "perf models were added")
@fair_opt
@cal_repeats_opt
@val_repeats_opt
@click.option("--iterations-scale", type=click.IntRange(min=1), default=1, show_default=True,
              help="run every validation job this many times its iterations (the steady state of long jobs; "
                   "docs/validation.md, 'Longer jobs'); with --reuse, the factor the saved runs used")
def validate(spec: str, nic_mbit: float, calibration: str | None, out: str, doc: str | None, only: tuple[str, ...],
             backend: str, keep: bool, reuse: str | None, fair: int, cal_repeats: int, val_repeats: int,
             iterations_scale: int) -> None:
    """Calibrate, run the fidelity suite (each scenario --val-repeats times), write the table under --out (and into
    --doc when given), tear down."""
    from ddlsched.testbed.calibrate import load_calibration
    from ddlsched.testbed.scenarios import VALIDATION, longer

    scenarios = longer([s for s in VALIDATION if not only or s.name in only], iterations_scale)
    if reuse:
        from ddlsched.testbed.calibrate import fit, save_calibration
        from ddlsched.testbed.scenarios import CALIBRATION
        from ddlsched.testbed.validate import load_calibration_runs, load_validation_runs

        sc, meta = _scaled(spec, nic_mbit, None)
        cal_runs = load_calibration_runs(Path(reuse) / "calibration-runs")
        missing = sorted({s.name for s in CALIBRATION} - {r.scenario.name for r in cal_runs})
        if missing and not calibration:
            click.echo(f"calibration: no saved run for {', '.join(missing)} (fitting without them)")
        if not calibration:
            click.echo(f"calibration: {len(cal_runs)} saved runs (repeats found: "
                       f"{', '.join(r.scenario.name for r in cal_runs if '.r' in r.scenario.name) or 'none'})")
        cal = load_calibration(calibration) if calibration else fit(
            sc, [(r.scenario, r.run) for r in cal_runs], nic_mbit=meta["nic_mbit"], scale=meta["scale"])
        if not calibration:
            save_calibration(cal, f"{out}/calibration.json")
        results = load_validation_runs(scenarios, Path(reuse) / "runs")
        for r in results:
            for job in r.scenario.jobs:
                got = len(r.run.jobs[job.job_id].iterations)  # 0: saved without its per-iteration records
                if got and got != job.iters:
                    raise click.UsageError(f"--reuse {reuse}: the saved run {r.scenario.name}/{job.job_id} has {got} "
                                           f"iterations, the scenario {job.iters} at --iterations-scale "
                                           f"{iterations_scale}: pass the factor the run used")
        click.echo(f"validation: {len(results)} saved runs of {len(scenarios)} scenarios")
    else:
        cal, sc, meta, results = _run_validation(spec, nic_mbit, calibration, out, scenarios, backend, keep, fair,
                                                 cal_repeats, val_repeats)
    if iterations_scale != 1:
        meta = {**meta, "iterations_scale": iterations_scale}
    _report(sc, meta, cal, results, out, doc)


def _run_validation(spec: str, nic_mbit: float, calibration: str | None, out: str, scenarios: list[Any],
                    backend: str, keep: bool, fair: int = 0, repeats: int = CAL_REPEATS,
                    val_repeats: int = VAL_REPEATS) -> tuple[Any, Cluster, dict[str, Any], list[Any]]:
    from ddlsched.testbed.calibrate import load_calibration
    from ddlsched.testbed.fabric import cleanup_on_signals
    from ddlsched.testbed.scenarios import validation_suite
    from ddlsched.testbed.validate import run_suite

    suite = validation_suite(val_repeats, tuple(scenarios))

    try:
        with cleanup_on_signals():
            try:
                with _session(spec, nic_mbit, None, True, fair) as (sc, meta):
                    pass  # bring up once; calibration and the suite reuse it
                cal = load_calibration(calibration) if calibration else _calibrate(
                    spec, nic_mbit, None, f"{out}/calibration.json", True, repeats=repeats)
                meta = {**meta, "fair_jobs": fair}
                with _session(spec, nic_mbit, None, True) as (sc, meta):
                    click.echo(f"validation suite ({len(suite)} runs: {len(scenarios)} scenarios × {val_repeats}, "
                               "interleaved):")
                    results = run_suite(sc, suite, Path(out) / "runs", backend=backend, log=click.echo)
            finally:
                if not keep:
                    teardown()
                    left = leftovers()
                    click.echo("testbed down: " + ("nothing left behind" if not any(left.values())
                                                   else f"LEFT {left}"))
    except DdlschedError as e:
        _fail(e)
    return cal, sc, meta, results


def _report(sc: Cluster, meta: dict[str, Any], cal: Any, results: list[Any], out: str, doc: str | None) -> None:
    from ddlsched.testbed.validate import (
        evaluate,
        markdown_detail,
        markdown_table,
        plot_comm,
        save_report,
        spread_line,
    )

    report = evaluate(sc, results, cal)
    report["command"] = " ".join(["ddlsched testbed validate", *sys.argv[1 + sys.argv.index("validate"):]]
                                 if "validate" in sys.argv else ["ddlsched testbed validate"])
    report["testbed"] = meta
    report["calibration"] = {k: cal[k] for k in ("hop_latency_s", "common", "models", "tcp") if k in cal}
    save_report(report, f"{out}/fidelity.json")
    table, detail = markdown_table(report), markdown_detail(report)
    click.echo(table)
    click.echo(spread_line(report))
    plots = [f"{out}/fidelity_comm.png"]
    if doc:
        plots.append(str(Path(doc).parent / "images" / "validation_comm.png"))
    try:
        for p in plots:
            plot_comm(report, p)
        report["plot"] = Path(plots[-1]).name
    except ImportError:
        click.echo("matplotlib not installed (pip install 'ddlsched[plots]'): no plot")
        plots = []
    Path(out).mkdir(parents=True, exist_ok=True)
    (Path(out) / "fidelity.md").write_text(_block(report, table, detail) + "\n")
    if doc:
        _update_doc(Path(doc), report, table, detail)
        save_report(report, Path(doc).with_suffix(".json"))
        click.echo(f"wrote {doc}, {Path(doc).with_suffix('.json')}, {out}/fidelity.json, {out}/fidelity.md" +
                   "".join(f", {p}" for p in plots))
    else:
        click.echo(f"wrote {out}/fidelity.json, {out}/fidelity.md" + "".join(f", {p}" for p in plots)
                   + " (no doc updated: pass --doc docs/validation.md to publish)")


BEGIN, END = "<!-- fidelity:begin -->", "<!-- fidelity:end -->"


def _fmt_models(cal: dict[str, Any]) -> str:
    parts = []
    for name, params in cal["models"].items():
        kv = ", ".join(f"{k} = {v:.4g}" for k, v in params.items() if isinstance(v, float))
        parts.append(f"`{name}`: {kv}")
    return "; ".join(parts)


def _fmt_tcp(cal: dict[str, Any]) -> str:
    t = cal.get("tcp")
    if not t:
        return "TCP rule: defaults (not calibrated)"
    out = f"TCP rule (`fairness=tcp`): γ = {t['tcp_exponent']:.3g}, κ = {t['tcp_own_queue']:.3g}"
    if "fit_rmse_rel" in t:
        out += (f" (fitted on {t['rows']} shared-scenario jobs: rms error {100 * t['fit_rmse_rel']:.1f} %, "
                f"{100 * t['default_rmse_rel']:.1f} % at the defaults γ = 1.5, κ = 0)")
    if t.get("per_repeat"):
        reps = t["per_repeat"]
        out += (f"; {len(reps)} repeats of {', '.join(k for k, n in t['repeats'].items() if n > 1)}, loss "
                f"aggregate {t.get('aggregate', 'mean')}; each repeat alone: γ = "
                + " / ".join(f"{r['tcp_exponent']:.3g}" for r in reps) + ", κ = "
                + " / ".join(f"{r['tcp_own_queue']:.3g}" for r in reps))
    if t.get("not_identified"):
        out += f"; not identified by the calibration rows, default kept: {', '.join(t['not_identified'])}"
    if "split_noise" in t:
        out += (f"; uneven split (`split`) σ = {t['split_noise']:.3g}, fitted after γ, κ on the same jobs (rms "
                f"error {100 * t['split_rmse_rel']:.1f} %, {100 * t['split_zero_rmse_rel']:.1f} % at σ = 0)")
    return out


def _block(report: dict[str, Any], table: str, detail: str) -> str:
    """The fidelity block (between the markers) that ``--doc`` writes into the doc and ``--out`` keeps as
    ``fidelity.md``."""
    from ddlsched.testbed.validate import spread_line

    cal = report["calibration"]
    cpu, wcpu = report["cpu_util"], report["worker_cpu"]
    sp = report["measurement_spread"]
    runs = (("one run per scenario" if sp["runs_max"] == 1 else f"each job's measured time = mean of its "
             f"{sp['runs_max']} runs") if sp["runs_min"] == sp["runs_max"] else
            f"each job's measured time = mean of its {sp['runs_min']}–{sp['runs_max']} runs")
    block = "\n".join([
        BEGIN,
        f"Generated by `{report['command']}` on testbed `{report['testbed']['spec']}` "
        f"(fastest NIC {report['testbed']['nic_mbit']:g} Mbit/s, scale {report['testbed']['scale']:g}).",
        "",
        f"Calibration: α = {1e3 * cal['hop_latency_s']:.2f} ms per ring step; {_fmt_models(cal)}; {_fmt_tcp(cal)}.",
        f"CPU: the workers used at most {100 * max(wcpu.values()):.0f} % of the host's CPUs (mean "
        f"{100 * sum(wcpu.values()) / len(wcpu):.0f} %); the host as a whole (other tenants included) was busy "
        f"{100 * min(cpu.values()):.0f}–{100 * max(cpu.values()):.0f} %.",
        "", f"### Summary (all {len(report['jobs'])} jobs of the suite; {runs})",
        "", table, "", spread_line(report),
        *(["", f"![predicted vs measured communication time per job]"
               f"(images/{report['plot']})"] if report.get("plot") else []),
        "", "### Per job (calibrated parameters)", "", detail, END])
    return block


def _update_doc(path: Path, report: dict[str, Any], table: str, detail: str) -> None:
    block = _block(report, table, detail)
    text = path.read_text() if path.exists() else f"# Validation of the contention physics\n\n{BEGIN}\n{END}\n"
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + block + text[text.index(END) + len(END):]
    else:
        text += "\n" + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@testbed.command()
@click.argument("report", type=click.Path(exists=True, dir_okay=False))
@click.option("--models", default="maxmin,phased,phased_tcp", show_default=True,
              help="comma-separated models or variants (as in the fidelity table, e.g. 'phased[exact]')")
@click.option("--out", default=f"{DEFAULT_OUT}/rescore.json", show_default=True, help="where to save the scores")
def rescore(report: str, models: str, out: str) -> None:
    """Score models on a saved fidelity report (fidelity.json or docs/validation.json) when its raw runs are gone:
    each scenario replayed once with its jobs' mean measured starts (no testbed, no root). Prints the summary table
    and how far the rescored errors of the models the report already scored are from the report's."""
    from ddlsched.testbed.validate import markdown_table, model_labels, rescore_report, save_report

    saved = json.loads(Path(report).read_text())
    labels = [m.strip() for m in re.split(r",(?![^\[]*\])", models) if m.strip()]  # commas inside [...] stay
    bad = [m for m in labels if m not in model_labels()]
    if bad:
        raise click.BadParameter(f"unknown model(s) {bad}; choose from {', '.join(model_labels())}",
                                 param_hint="--models")
    tb = saved.get("testbed") or {}
    try:
        sc, _ = _scaled(tb.get("spec", "tb32"), tb.get("nic_mbit", 100.0), None)
        scored = rescore_report(sc, saved, labels)
    except (KeyError, ValueError) as e:
        raise click.ClickException(f"{report}: not a fidelity report this version can rescore ({e})") from e
    save_report(scored, out)
    click.echo(f"rescored {len(scored['jobs'])} jobs of {report} (generated by `{saved.get('command')}`)")
    click.echo(markdown_table(scored))
    for key, d in scored["check"].items():
        click.echo(f"check: {key} differs from the report by at most {100 * d:.2f} points (comm. and JCT error)")
    click.echo(f"wrote {out}")


if __name__ == "__main__":
    testbed()
