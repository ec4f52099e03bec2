"""Policy-driven testbed runs: simulate a small workload under any (supported) ddlsched policy, replay the
schedule it chose on the emulated cluster, and put simulated and measured records side by side.

Steps (``ddlsched testbed run --policy …``):

1. **Simulate** the workload with the fluid engine on the testbed's *scaled* cluster (calibrated α / link
   efficiency if a profile is given). The policy is wrapped by :class:`StartRecorder`, which records every
   ``Start`` decision (time, job, GPUs) it returns; ``SimConfig(audit=True)`` gives the events (arrivals,
   finishes) at each decision instant. Jobs given by duration are turned into whole iterations (the
   testbed runs whole iterations): a first simulation computes them, a second (the one used) runs with
   ``iterations = max(1, round(…))``.
2. **Extract the schedule** (:func:`extract_schedule`). Each job gets its GPUs, its simulated start, and
   *dependencies*: (a) the jobs whose completion triggered the decision that started it (finish events at
   the same simulated instant), and (b) for every GPU it got, the job that last held that GPU before it.
   Its *exogenous time* is its arrival if (a) is non-empty, else the decision instant (its own or another
   job's arrival, or a policy ``WakeAt`` timer, e.g. delay scheduling).
3. **Replay** (:func:`ddlsched.testbed.executor.run_gated`): a job starts at
   ``max(exogenous time, actual testbed finish of every dependency)``. So the replay keeps the policy's
   *order and placement*, not its wall-clock times: if the testbed runs a job slower than the simulator
   predicted, what waited for it waits longer; GPUs are never double-booked. The policy itself is not
   consulted again (open-loop replay): with the measured finish times it might have decided differently.
4. **Record** the measured run in the simulator's record format (:func:`measured_records`,
   ``ddlsched.metrics.output.write_run``) and write the per-job comparison (:func:`side_by_side`).

Supported: non-preemptive policies of the fluid engine with exclusive GPUs (``fifo``/``sjf`` + any
placement, ``delay-sched`` with ``preemption=false``, ``strict-consolidation``, ``gandiva-pack``,
``sjf-bco`` and the Yu 2022 baselines). Refused with the reason: preemptive policies (a testbed worker cannot
checkpoint, stop and resume elsewhere), task-level/Hare engine policies (they schedule individual
compute/communication tasks, the workers run free-running whole jobs), GPU-sharing and gradient-accumulation
decisions (one worker per GPU; no co-location interference is emulated).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ddlsched.cluster.topology import Cluster
from ddlsched.engine import SimConfig, SimResult, run_simulation
from ddlsched.engine.decisions import Decision, Start
from ddlsched.engine.run import requirements_of
from ddlsched.errors import ConfigError, InputError
from ddlsched.perf.base import DEFAULT_PERF_MODEL, Placement, compute_time
from ddlsched.policies.base import Policy
from ddlsched.testbed.executor import GatedJob, RunResult
from ddlsched.testbed.predict import JobRun
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import ModelCatalog, ModelProfile, default_catalog

_EPS = 1e-9

# Profiles in *emulated* units (grad MB on the scaled cluster; compute ms real): one isolated 2-ring
# all-reduce of 4 MB over 100 Mbit/s NICs takes 0.32 s.
TESTBED_PROFILES: tuple[ModelProfile, ...] = (
    ModelProfile("tb-comm4", 4.0, 100.0, 32, 1000.0, source="testbed: 4 MB gradient, 100 ms compute"),
    ModelProfile("tb-comm2", 2.0, 100.0, 32, 1000.0, source="testbed: 2 MB gradient, 100 ms compute"),
    ModelProfile("tb-compute", 0.5, 300.0, 32, 1000.0, source="testbed: compute-bound, 0.5 MB gradient"),
)


def _place4() -> list[JobSpec]:
    """4 jobs on tb4 (4 servers × 2 GPUs) where first-fit and consolidated placement differ: after a 1-GPU
    job takes GPU 0, first fit spreads the 2-GPU jobs over server pairs (shared NICs), consolidated keeps
    them on one server each (loopback)."""
    return [JobSpec("a", 0.0, 1, "tb-compute", iterations=20),
            JobSpec("b", 0.2, 2, "tb-comm4", iterations=12),
            JobSpec("c", 0.4, 2, "tb-comm4", iterations=12),
            JobSpec("d", 0.6, 3, "tb-comm2", iterations=10)]


def _queue3() -> list[JobSpec]:
    """3 jobs on tb4 that do not all fit at once: the 6-GPU job waits for a finish (a dependency)."""
    return [JobSpec("a", 0.0, 4, "tb-comm2", iterations=6),
            JobSpec("b", 0.1, 2, "tb-comm4", iterations=5),
            JobSpec("c", 0.2, 6, "tb-comm2", iterations=4)]


WORKLOADS = {
    "place4": ("4 jobs (1, 2, 2, 3 GPUs) where placement decides NIC sharing (tb4)", _place4),
    "queue3": ("3 jobs (4, 2, 6 GPUs); the 6-GPU job must wait for a finish (tb4, CI)", _queue3),
}


def workload(name: str) -> list[JobSpec]:
    if name not in WORKLOADS:
        raise ConfigError(f"unknown testbed workload {name!r}; known: {', '.join(WORKLOADS)}", field="workload")
    return WORKLOADS[name][1]()


def emulated_catalog(scale: float) -> ModelCatalog:
    """Catalogue models with gradients × ``scale`` (so comm times on the scaled cluster equal the real ones),
    plus :data:`TESTBED_PROFILES` (already in emulated units)."""
    base = default_catalog()
    return ModelCatalog([replace(base[n], grad_mb=base[n].grad_mb * scale) for n in base.names()]
                        ).with_profiles(TESTBED_PROFILES)


def time_scaled(jobs: Sequence[JobSpec], factor: float) -> list[JobSpec]:
    """Arrivals and lengths × ``factor`` (to shrink a trace to seconds); iteration times are unchanged."""
    if not factor > 0:
        raise InputError(f"time scale must be > 0, got {factor}", field="time_scale")
    return [replace(j, arrival_s=j.arrival_s * factor,
                    iterations=None if j.iterations is None else max(1.0, round(j.iterations * factor)),
                    duration_s=None if j.duration_s is None else j.duration_s * factor) for j in jobs]


class StartRecorder(Policy):
    """Wraps a policy; records every ``Start`` it returns as ``(time, job_id, gpus, share, accum_steps)``."""

    def __init__(self, policy: Policy) -> None:
        self.inner = policy
        self.name = policy.name
        self.requirements = requirements_of(policy)
        self.starts: list[tuple[float, str, tuple[int, ...], bool, int]] = []

    def reset(self) -> None:
        self.inner.reset()
        self.starts = []

    def schedule(self, view: Any) -> list[Decision]:
        decisions = list(self.inner.schedule(view))
        for d in decisions:
            if isinstance(d, Start):
                self.starts.append((view.now, d.job_id, tuple(d.gpus), bool(d.share), int(d.accum_steps)))
        return decisions


def check_supported(policy: Policy, name: str) -> None:
    """Raise :class:`ConfigError` (with the reason) for policies the testbed cannot replay."""
    req = requirements_of(policy)
    if req.model != "fluid":
        raise ConfigError(f"policy {name!r} runs on the {req.model!r} execution model: it schedules individual "
                          "compute and communication tasks, while testbed workers run whole jobs with a free-running "
                          "ring all-reduce, so its decisions cannot be replayed on the testbed", field="policy")
    if req.preemptive:
        raise ConfigError(f"policy {name!r} is preemptive: testbed workers cannot checkpoint, stop and resume a "
                          "job elsewhere, so preemptions cannot be replayed (for delay-sched pass "
                          "--policy-param preemption=false)", field="policy")
    if req.jobs_per_gpu > 1:
        raise ConfigError(f"policy {name!r} shares GPUs between jobs: the testbed runs one worker per GPU and does "
                          "not emulate co-location interference", field="policy")


@dataclass(frozen=True)
class ScheduledJob:
    """One job of the extracted schedule (times in simulated seconds)."""

    job_id: str
    gpus: tuple[int, ...]
    sim_start_s: float
    exo_s: float  # earliest start independent of other jobs (arrival, or the decision instant)
    deps: tuple[str, ...]  # must actually finish first (trigger finishes + previous holders of its GPUs)
    trigger: str  # "finish:<ids>", "arrival", "event" (another job's arrival) or "wake"


def extract_schedule(starts: Sequence[tuple[float, str, tuple[int, ...], bool, int]],
                     audit: Sequence[tuple[float, str, str, float]],
                     arrivals: dict[str, float]) -> list[ScheduledJob]:
    """The replayable schedule of a non-preemptive, exclusive-GPU run (see module docstring, step 2)."""
    out: list[ScheduledJob] = []
    holder: dict[int, str] = {}
    seen: set[str] = set()
    for t, jid, gpus, share, accum in starts:
        if share or accum != 1:
            raise ConfigError(f"job {jid} was started with GPU sharing / gradient accumulation at t={t:g}: not "
                              "replayable on the testbed", field="policy")
        if jid in seen:
            raise ConfigError(f"job {jid} was started twice (preempted and restarted): not replayable on the "
                              "testbed", field="policy")
        seen.add(jid)
        at_t = [(kind, j) for (ta, kind, j, _) in audit if abs(ta - t) <= _EPS]
        finished = sorted({j for kind, j in at_t if kind == "finish"})
        arrived = {j for kind, j in at_t if kind == "arrive"}
        prev = {holder[g] for g in gpus if g in holder}
        deps = tuple(sorted(set(finished) | prev))
        if finished:
            trigger, exo = "finish:" + ",".join(finished), arrivals[jid]
        else:
            trigger = "arrival" if jid in arrived else ("event" if arrived else "wake")
            exo = t
        out.append(ScheduledJob(jid, tuple(gpus), t, exo, deps, trigger))
        for g in gpus:
            holder[g] = jid
    return out


@dataclass
class Simulated:
    result: SimResult
    schedule: list[ScheduledJob]
    jobs: list[JobSpec]
    notes: list[str] = field(default_factory=list)


def _simulate_once(cluster: Cluster, jobs: Sequence[JobSpec], policy_name: str, params: dict[str, Any],
                   catalog: ModelCatalog, perf_model: str, perf_params: dict[str, Any],
                   seed: int) -> tuple[SimResult, StartRecorder]:
    from ddlsched.policies import make_policy

    policy = make_policy(policy_name, params)
    check_supported(policy, policy_name)
    rec = StartRecorder(policy)
    config = SimConfig(perf_model=perf_model, perf_params=dict(perf_params), seed=seed, audit=True)
    return run_simulation(cluster, jobs, rec, config, catalog=catalog), rec


def simulate_schedule(cluster: Cluster, jobs: Sequence[JobSpec], policy_name: str, params: dict[str, Any],
                      catalog: ModelCatalog, *, perf_model: str = DEFAULT_PERF_MODEL,
                      perf_params: dict[str, Any] | None = None, seed: int = 0) -> Simulated:
    """Simulate ``jobs`` under the policy (whole iterations) and extract the replayable schedule."""
    notes: list[str] = []
    res, rec = _simulate_once(cluster, jobs, policy_name, params, catalog, perf_model, perf_params or {}, seed)
    iters = {r["job_id"]: max(1, round(r["iterations"])) for r in res.records}
    if any(j.iterations is None or j.iterations != iters.get(j.job_id, j.iterations) for j in jobs):
        jobs = [replace(j, iterations=float(iters[j.job_id]), duration_s=None) if j.job_id in iters else j
                for j in jobs]
        notes.append("durations turned into whole iterations and simulated again")
        res, rec = _simulate_once(cluster, jobs, policy_name, params, catalog, perf_model, perf_params or {}, seed)
    if res.rejected or res.unfinished:
        raise ConfigError(f"the simulation did not finish every job (rejected {[r['job_id'] for r in res.rejected]}"
                          f", unfinished {res.unfinished}): use a workload that fits the testbed cluster",
                          field="workload")
    if any(r["preemptions"] for r in res.records):
        raise ConfigError(f"policy {policy_name!r} preempted jobs: not replayable on the testbed", field="policy")
    schedule = extract_schedule(rec.starts, res.audit, {j.job_id: j.arrival_s for j in jobs})
    return Simulated(res, schedule, list(jobs), notes)


def gated_jobs(cluster: Cluster, sim: Simulated, catalog: ModelCatalog) -> list[GatedJob]:
    """The schedule as testbed jobs: the profile's (emulated) gradient, its compute time on those GPUs, and its
    overlap ω (the worker hides that share of the all-reduce under compute, as the ``phased`` model assumes; 0 when
    the profile sets none, the ``phased`` default)."""
    specs = {j.job_id: j for j in sim.jobs}
    out = []
    for s in sim.schedule:
        spec = specs[s.job_id]
        prof = catalog[spec.model]
        comp = compute_time(cluster, Placement(s.job_id, s.gpus, prof))
        iters = round(spec.iterations or 0)
        omega = prof.overlap if prof.overlap is not None else 0.0
        out.append(GatedJob(JobRun(s.job_id, s.gpus, prof.grad_mb, iters, 1e3 * comp, s.exo_s, omega), s.deps))
    return out


def measured_records(cluster: Cluster, sim: Simulated, run: RunResult) -> list[dict[str, Any]]:
    """Records in the simulator's format from a testbed run. ``ideal_run_s`` and ``spread_s`` are the simulator's
    (the model's isolated run time consolidated and on the job's placement); the measured excess beyond them is
    ``contention_s`` (negative when the testbed ran faster than the model alone); the testbed has no GPU sharing,
    heterogeneity, task switching or preemption, so those causes are 0."""
    sim_rec = {r["job_id"]: r for r in sim.result.records}
    specs = {j.job_id: j for j in sim.jobs}
    rows = []
    for s in sim.schedule:
        m, spec, sr = run.jobs[s.job_id], specs[s.job_id], sim_rec[s.job_id]
        finish = m.start_s + m.jct_s
        run_s = m.jct_s
        rows.append({
            "job_id": s.job_id, "model": spec.model, "num_gpus": spec.num_gpus, "user": spec.user or "",
            "arrival_s": spec.arrival_s, "first_start_s": m.start_s, "finish_s": finish,
            "jct_s": finish - spec.arrival_s, "queue_s": m.start_s - spec.arrival_s, "run_s": run_s,
            "ideal_run_s": sr["ideal_run_s"], "comm_s": sum(it["comm_s"] for it in m.iterations),
            "comm_overhead_s": run_s - sr["ideal_run_s"],
            "contention_s": run_s - sr["ideal_run_s"] - sr["spread_s"], "spread_s": sr["spread_s"],
            "sharing_s": 0.0, "hetero_s": 0.0, "switch_s": 0.0, "restart_s": 0.0,
            "iterations": float(len(m.iterations)), "preemptions": 0, "placements": 1,
            "servers": len(cluster.servers_of(s.gpus)), "racks": len(cluster.racks_of(s.gpus)),
            "last_gpus": " ".join(map(str, s.gpus)),
        })
    rows.sort(key=lambda r: (r["finish_s"], r["job_id"]))
    return rows


def measured_result(cluster: Cluster, sim: Simulated, run: RunResult) -> SimResult:
    """A :class:`SimResult` holding the measured records (``perf_model`` = ``testbed``), for ``write_run``."""
    recs = measured_records(cluster, sim, run)
    events = sorted([(r["first_start_s"], r["num_gpus"]) for r in recs] + [(r["finish_s"], -r["num_gpus"])
                                                                            for r in recs])
    ts: dict[str, list[float]] = {"time_s": [], "busy_gpus": [], "pending": [], "running": []}
    busy = running = 0
    for t, dg in events:
        busy += dg
        running += 1 if dg > 0 else -1
        pending = sum(1 for r in recs if r["arrival_s"] <= t < r["first_start_s"])
        for k, v in (("time_s", t), ("busy_gpus", busy), ("pending", pending), ("running", running)):
            ts[k].append(v)
    busy_gpu_s = sum(ts["busy_gpus"][i] * (ts["time_s"][i + 1] - ts["time_s"][i]) for i in range(len(events) - 1))
    return replace(sim.result, records=recs, timeseries=ts, perf_model="testbed", perf_params={},
                   events=len(events), wall_s=run.wall_s, rejected=[], unfinished=[], busy_gpu_s=busy_gpu_s,
                   audit=[])


def _err(pred: float, meas: float) -> float:
    return 100.0 * (pred / meas - 1.0) if meas > 0 else float("nan")


def side_by_side(sim_records: Sequence[dict[str, Any]], meas_records: Sequence[dict[str, Any]],
                 schedule: Sequence[ScheduledJob]) -> list[dict[str, Any]]:
    """Per job: simulated vs measured start, JCT and communication time per iteration (error = sim/meas − 1)."""
    sim = {r["job_id"]: r for r in sim_records}
    meas = {r["job_id"]: r for r in meas_records}
    rows = []
    for s in schedule:
        a, b = sim[s.job_id], meas[s.job_id]
        sc, mc = a["comm_s"] / a["iterations"], b["comm_s"] / b["iterations"]
        rows.append({"job_id": s.job_id, "gpus": " ".join(map(str, s.gpus)), "servers": a["servers"],
                     "after": " ".join(s.deps) or "-", "sim_start_s": round(a["first_start_s"], 3),
                     "meas_start_s": round(b["first_start_s"], 3), "sim_jct_s": round(a["jct_s"], 3),
                     "meas_jct_s": round(b["jct_s"], 3), "jct_err_pct": round(_err(a["jct_s"], b["jct_s"]), 1),
                     "sim_comm_per_iter_s": round(sc, 4), "meas_comm_per_iter_s": round(mc, 4),
                     "comm_err_pct": round(_err(sc, mc), 1) if a["num_gpus"] > 1 else float("nan")})
    return rows


def markdown(rows: Sequence[dict[str, Any]], sim_summary: dict[str, Any], meas_summary: dict[str, Any]) -> str:
    head = ["job", "GPUs", "servers", "after", "start sim / meas (s)", "JCT sim (s)", "JCT meas (s)", "JCT err",
            "comm/iter sim (s)", "comm/iter meas (s)", "comm err"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        err = r["comm_err_pct"]
        comm_err = f"{err:+.1f} %" if err == err else "n/a (1 GPU)"
        lines.append(f"| {r['job_id']} | {r['gpus']} | {r['servers']} | {r['after']} | {r['sim_start_s']:.2f} / "
                     f"{r['meas_start_s']:.2f} | {r['sim_jct_s']:.2f} | {r['meas_jct_s']:.2f} | "
                     f"{r['jct_err_pct']:+.1f} % | {r['sim_comm_per_iter_s']:.3f} | {r['meas_comm_per_iter_s']:.3f} | "
                     f"{comm_err} |")
    for key, label in (("avg_jct_s", "average JCT"), ("makespan_s", "makespan")):
        a, b = sim_summary[key], meas_summary[key]
        lines.append(f"| **{label}** | | | | | {a:.2f} | {b:.2f} | {_err(a, b):+.1f} % | | | |")
    return "\n".join(lines)


def write_outputs(out: Path, cluster: Cluster, sim: Simulated, run: RunResult,
                  meta: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """``out/simulated``, ``out/measured`` (record format), ``out/side_by_side.{csv,md}``, ``out/schedule.json``."""
    from ddlsched.metrics.output import write_run

    out.mkdir(parents=True, exist_ok=True)
    sim_summary = write_run(sim.result, out / "simulated", extra={"notes": sim.notes} if sim.notes else None)
    meas = measured_result(cluster, sim, run)
    meas_summary = write_run(meas, out / "measured", extra={"cpu_util": run.cpu_util, "worker_cpu": run.worker_cpu,
                                                            "start_lag_s": {j: m.start_lag_s
                                                                            for j, m in run.jobs.items()}})
    rows = side_by_side(sim.result.records, meas.records, sim.schedule)
    with (out / "side_by_side.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    table = markdown(rows, sim_summary, meas_summary)
    (out / "side_by_side.md").write_text(table + "\n")
    (out / "schedule.json").write_text(json.dumps({**meta, "schedule": [vars(s) | {"gpus": list(s.gpus),
                                                                                   "deps": list(s.deps)}
                                                                        for s in sim.schedule]}, indent=1) + "\n")
    return rows, table
