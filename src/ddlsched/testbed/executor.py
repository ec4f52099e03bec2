"""Run a schedule of jobs for real on the emulated cluster and measure per-iteration times and JCTs.

Every job's workers (one process per GPU, in its server's namespace, ranked in ``Cluster.ring_order``) are
launched together, form their ring, then wait until the job's start time before iterating. The measured
start is the first iteration's start; the replay that predicts the schedule uses those measured starts.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import mean
from typing import Any

from ddlsched.cluster.topology import Cluster
from ddlsched.testbed.fabric import server_ip, server_ns
from ddlsched.testbed.netns import TestbedError, kill_pids, read_state, write_state
from ddlsched.testbed.predict import JobRun

MAX_WORKERS = 16
BASE_PORT = 21504  # job i listens on BASE_PORT + 64·i + rank (64-aligned: the fair shaper matches on it)
PORT_STRIDE = 64
# workers are latency sensitive and light (~10 % of a core each at 100 Mbit/s); on a shared host a small
# priority boost keeps other tenants' CPU-bound work from stretching their steps
WORKER_NICE = int(os.environ.get("DDL_WORKER_NICE", "-5"))


@dataclass
class JobMeasurement:
    job_id: str
    start_s: float  # measured first-iteration start, relative to the schedule's t0
    jct_s: float  # last iteration end − measured start
    comm_s: float  # mean over iterations
    compute_s: float
    start_lag_s: float  # measured start − scheduled start
    iterations: list[dict[str, float]] = field(default_factory=list)


@dataclass
class RunResult:
    jobs: dict[str, JobMeasurement]
    cpu_util: float  # busy fraction of all host CPUs during the run (includes other tenants of the host)
    wall_s: float
    worker_cpu: float = 0.0  # CPU time of our workers / (wall × CPUs): what the emulation itself costs

    def as_json(self) -> dict[str, Any]:
        return {"cpu_util": self.cpu_util, "worker_cpu": self.worker_cpu, "wall_s": self.wall_s,
                "jobs": {k: vars(v) for k, v in self.jobs.items()}}

    def as_executed(self, jobs: Sequence[JobRun]) -> list[JobRun]:
        """The schedule with the measured start times (what the replay should predict)."""
        return [replace(j, start_s=self.jobs[j.job_id].start_s) for j in jobs]


def _await(name: str, p: subprocess.Popen[bytes], deadline: float, timeout_s: float) -> None:
    """Wait for one worker until ``deadline``; raise with its stderr tail if it fails or overruns."""
    try:
        p.wait(timeout=max(1.0, deadline - time.time()))
    except subprocess.TimeoutExpired:
        raise TestbedError(f"worker {name} did not finish within {timeout_s:.0f} s") from None
    if p.returncode != 0:
        err = p.stderr.read().decode(errors="replace")[-2000:] if p.stderr else ""
        raise TestbedError(f"worker {name} failed ({p.returncode}):\n{err}")


def _reap(procs: list[subprocess.Popen[bytes]]) -> None:
    """Kill workers still running, close their pipes, wait for them, and forget their pids in the state file."""
    kill_pids([p.pid for p in procs if p.poll() is None])
    for p in procs:
        if p.stderr:
            p.stderr.close()
        if p.poll() is None:
            p.wait()
    st = read_state()
    if st is not None:
        st["pids"] = []
        write_state(st)


def _cpu_times() -> tuple[float, float]:
    with open("/proc/stat") as f:
        vals = [float(x) for x in f.readline().split()[1:]]
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0.0)
    return sum(vals) - idle, sum(vals)


def free_placement(cluster: Cluster, n: int, busy: set[int]) -> tuple[int, ...]:
    """First fit over servers (most free GPUs first) for jobs given without GPUs."""
    order = sorted(range(cluster.num_servers),
                   key=lambda s: (-sum(g not in busy for g in cluster.server_gpus[s]), s))
    chosen: list[int] = []
    for s in order:
        chosen.extend(g for g in cluster.server_gpus[s] if g not in busy)
        if len(chosen) >= n:
            return tuple(chosen[:n])
    raise TestbedError(f"no room for a {n}-GPU job")


def run_schedule(cluster: Cluster, jobs: Sequence[JobRun], out_dir: str | Path, *, backend: str = "socket",
                 compute: str = "sleep", timeout_s: float = 600.0) -> RunResult:
    """Run ``jobs`` on the testbed that is up for ``cluster`` (scaled); write per-job JSON lines to ``out_dir``."""
    state = read_state()
    if state is None:
        raise TestbedError("no testbed is up: run 'ddlsched testbed up' first")
    if len(state["servers"]) != cluster.num_servers:
        raise TestbedError(f"the testbed that is up has {len(state['servers'])} servers, the schedule's cluster "
                           f"{cluster.num_servers}")
    nproc = sum(len(j.gpus) for j in jobs)
    if nproc > MAX_WORKERS:
        raise TestbedError(f"{nproc} workers: at most {MAX_WORKERS} run at once on this host")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lead = 2.0 + 0.3 * nproc  # process start-up (numpy import) on a busy 2-core host
    t0 = time.time() + lead
    procs: list[tuple[str, subprocess.Popen[bytes]]] = []
    env = {**os.environ, "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "eth0"}
    c0 = _cpu_times()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        for ji, job in enumerate(jobs):
            order = cluster.ring_order(job.gpus)
            peers = ",".join(f"{server_ip(cluster.gpu_server[gpu])}:{BASE_PORT + PORT_STRIDE * ji + r}"
                             for r, gpu in enumerate(order))
            for r, gpu in enumerate(order):
                ns = server_ns(cluster.gpu_server[gpu])
                cmd = ["nice", "-n", str(WORKER_NICE), "ip", "netns", "exec", ns, sys.executable, "-m",
                       "ddlsched.testbed.worker", "--rank", str(r), "--peers", peers,
                       "--grad-bytes", str(job.grad_mb * 1e6), "--iters", str(job.iters),
                       "--compute-ms", str(job.compute_ms), "--compute", compute, "--backend", backend,
                       "--hide-ms", repr(job.hidden_ms(cluster)), "--start-at", repr(t0 + job.start_s),
                       "--out", str(out / f"{job.job_id}.jsonl")]
                p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
                procs.append((f"{job.job_id}/rank{r}", p))
        state["pids"] = [p.pid for _, p in procs]
        write_state(state)
        deadline = time.time() + timeout_s
        for name, p in procs:
            _await(name, p, deadline, timeout_s)
    finally:
        _reap([p for _, p in procs])
    c1 = _cpu_times()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (c1[0] - c0[0]) / max(c1[1] - c0[1], 1e-9)
    wall = time.time() - (t0 - lead)
    worker_cpu = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) / (wall * (os.cpu_count() or 1))
    measured: dict[str, JobMeasurement] = {}
    for job in jobs:
        recs = [json.loads(x) for x in (out / f"{job.job_id}.jsonl").read_text().splitlines() if x.strip()]
        start = recs[0]["start"] - t0
        measured[job.job_id] = JobMeasurement(
            job.job_id, start, recs[-1]["end"] - recs[0]["start"], mean(r["comm_s"] for r in recs),
            mean(r["compute_s"] for r in recs), start - job.start_s, recs)
    return RunResult(measured, cpu, wall, worker_cpu)


@dataclass(frozen=True)
class GatedJob:
    """A job of a dependency-gated replay: it starts at ``max(t0 + job.start_s, actual end of every dep)``."""

    job: JobRun
    deps: tuple[str, ...] = ()


def _write_gate(path: Path, epoch_s: float) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(repr(epoch_s))
    tmp.replace(path)


def read_iterations(path: Path) -> list[dict[str, Any]]:
    """A worker's per-iteration records (rank 0's JSON lines: iter, start, end, compute_s, comm_s)."""
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def run_gated(cluster: Cluster, jobs: Sequence[GatedJob], out_dir: str | Path, *, backend: str = "socket",
              compute: str = "sleep", timeout_s: float = 600.0, poll_s: float = 0.01) -> RunResult:
    """Run ``jobs`` so that each starts when its dependencies have *actually* finished on the testbed.

    All workers are launched at once and form their rings; each job then waits on a gate file that this
    controller writes when the job may start: immediately (time ``t0 + start_s``) for a job without
    dependencies, else as soon as every dependency's workers have exited, with the start time
    ``max(t0 + start_s, last iteration end of every dependency)``. ``start_lag_s`` of a measurement is its
    first iteration's start minus that gate time (process-exit detection + polling latency).
    """
    state = read_state()
    if state is None:
        raise TestbedError("no testbed is up: run 'ddlsched testbed up' first")
    if len(state["servers"]) != cluster.num_servers:
        raise TestbedError(f"the testbed that is up has {len(state['servers'])} servers, the schedule's cluster "
                           f"{cluster.num_servers}")
    ids = [gj.job.job_id for gj in jobs]
    if len(set(ids)) != len(ids):
        raise TestbedError("duplicate job ids in the schedule")
    for gj in jobs:
        unknown = sorted(set(gj.deps) - set(ids))
        if unknown:
            raise TestbedError(f"job {gj.job.job_id} depends on unknown job(s) {unknown}")
    nproc = sum(len(gj.job.gpus) for gj in jobs)
    if nproc > MAX_WORKERS:
        raise TestbedError(f"{nproc} workers in all: the gated replay launches every job's workers up front and "
                           f"at most {MAX_WORKERS} run at once on this host (use fewer or smaller jobs)")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for gj in jobs:
        for stale in (out / f"{gj.job.job_id}.gate", out / f"{gj.job.job_id}.jsonl"):
            stale.unlink(missing_ok=True)
    lead = 2.0 + 0.3 * nproc
    t0 = time.time() + lead
    env = {**os.environ, "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "eth0"}
    procs: dict[str, list[subprocess.Popen[bytes]]] = {}
    c0 = _cpu_times()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    gate_at: dict[str, float] = {}
    ends: dict[str, float] = {}
    try:
        for ji, gj in enumerate(jobs):
            job = gj.job
            order = cluster.ring_order(job.gpus)
            peers = ",".join(f"{server_ip(cluster.gpu_server[gpu])}:{BASE_PORT + PORT_STRIDE * ji + r}"
                             for r, gpu in enumerate(order))
            procs[job.job_id] = []
            for r, gpu in enumerate(order):
                cmd = ["nice", "-n", str(WORKER_NICE), "ip", "netns", "exec", server_ns(cluster.gpu_server[gpu]),
                       sys.executable, "-m", "ddlsched.testbed.worker", "--rank", str(r), "--peers", peers,
                       "--grad-bytes", str(job.grad_mb * 1e6), "--iters", str(job.iters),
                       "--compute-ms", str(job.compute_ms), "--compute", compute, "--backend", backend,
                       "--hide-ms", repr(job.hidden_ms(cluster)), "--start-file", str(out / f"{job.job_id}.gate"),
                       "--gate-timeout", str(timeout_s),
                       "--out", str(out / f"{job.job_id}.jsonl")]
                procs[job.job_id].append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                                          env=env))
        state["pids"] = [p.pid for ps in procs.values() for p in ps]
        write_state(state)
        deadline = time.time() + timeout_s
        while len(ends) < len(jobs):
            for gj in jobs:  # open every gate whose dependencies have all finished
                jid = gj.job.job_id
                if jid not in gate_at and all(d in ends for d in gj.deps):
                    gate_at[jid] = max([t0 + gj.job.start_s, *(ends[d] for d in gj.deps)])
                    _write_gate(out / f"{jid}.gate", gate_at[jid])
            for jid, ps in procs.items():
                if jid in ends:
                    continue
                for r, p in enumerate(ps):
                    if p.poll() not in (None, 0):
                        err = p.stderr.read().decode(errors="replace")[-2000:] if p.stderr else ""
                        raise TestbedError(f"worker {jid}/rank{r} failed ({p.returncode}):\n{err}")
                done = out / f"{jid}.jsonl"  # rank 0 writes it (atomically) right after its last iteration
                if done.exists() or all(p.poll() is not None for p in ps):
                    ends[jid] = read_iterations(done)[-1]["end"]
            if time.time() > deadline:
                raise TestbedError(f"the replay did not finish within {timeout_s:.0f} s "
                                   f"(finished: {sorted(ends)})")
            time.sleep(poll_s)
        for jid, ps in procs.items():  # the last jobs' workers are still in their final barrier
            for r, p in enumerate(ps):
                _await(f"{jid}/rank{r}", p, deadline, timeout_s)
    finally:
        _reap([p for ps in procs.values() for p in ps])
    c1 = _cpu_times()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.time() - (t0 - lead)
    worker_cpu = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) / (wall * (os.cpu_count() or 1))
    measured: dict[str, JobMeasurement] = {}
    for gj in jobs:
        recs = read_iterations(out / f"{gj.job.job_id}.jsonl")
        start = recs[0]["start"] - t0
        measured[gj.job.job_id] = JobMeasurement(
            gj.job.job_id, start, recs[-1]["end"] - recs[0]["start"], mean(r["comm_s"] for r in recs),
            mean(r["compute_s"] for r in recs), start - (gate_at[gj.job.job_id] - t0), recs)
    cpu = (c1[0] - c0[0]) / max(c1[1] - c0[1], 1e-9)
    return RunResult(measured, cpu, wall, worker_cpu)
