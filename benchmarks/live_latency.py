"""Scheduling latency of a live run with a long queue: a job's finish → the next launch.

N jobs arrive at once on a small cluster, so for most of the run ≥ N − (cluster GPUs) jobs are pending; each finish
is followed by a policy pass and a launch. Two executors:

* ``--executor sim`` (default): the digital twin (no worker processes), so the figure is the loop's own: the time
  from the finish (its instant on the run clock) to ``executor.launch``, wall milliseconds.

      PYTHONPATH=src python benchmarks/live_latency.py --jobs 250 --policies fifo,tiresias,delay-sched

* ``--executor ray``: a local Ray cluster (``LocalRayCluster``: ``--nodes`` ``ray start`` nodes of ``--slots`` GPU
  slots each, no root) and very short profile jobs (sleep-only compute, a tiny ring); besides the loop's figure it
  reports the finish → the launch reaching Ray (``sched_latency_dispatched``: the GPUs' warm actors called, or with
  ``warm=False`` the placement group requested), over every launch that
  followed a finish and over those with at least ``--min-pending`` jobs still queued.

      PYTHONPATH=src python benchmarks/live_latency.py --executor ray --jobs 260 --nodes 2 --slots 8 --policies fifo

Prints one line per policy (median, p95, max over the launches that followed a finish; the loop's CPU share; the
machine's load average) and, with ``--json FILE``, writes the figures and every sample.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.engine.run import default_catalog
from ddlsched.live.run import LiveRun, latency_stats
from ddlsched.live.sim_executor import SimExecutor
from ddlsched.policies import make_policy
from ddlsched.workload import JobSpec
from ddlsched.workload.profiles import ModelCatalog, ModelProfile

REPO = Path(__file__).resolve().parents[1]


def _line(p: str, n: int, res: Any, min_pending: int) -> dict[str, Any]:
    lat, live = res.live["sched_latency"], res.live
    row = {"policy": p, "jobs": n, "completed": len(res.records), "failed": len(res.failed),
           "sched_latency": lat, "wall_s": live["wall_s"], "cpu_busy_loop": live["cpu_busy_loop"],
           "cpu_busy_system": live["cpu_busy_system"], "cpu_cores": live["cpu_cores"],
           "load_average": os.getloadavg()}
    text = (f"{p}: {n} jobs ({len(res.records)} completed, {len(res.failed)} failed), finish → launch median "
            f"{lat['median_ms']} ms, p95 {lat['p95_ms']} ms, max {lat['max_ms']} ms over {lat['count']} launches")
    if "sched_latency_dispatched" in live:
        d = live["sched_latency_dispatched"]
        deep = [s for s in res.latency_samples if s["pending"] >= min_pending and "dispatched_s" in s]
        dd = latency_stats([s["dispatched_s"] for s in deep])
        row.update(sched_latency_dispatched=d, min_pending=min_pending, dispatched_deep=dd,
                   startups=live.get("start_costs"))
        text += (f"; finish → reaching Ray median {d['median_ms']} ms, p95 {d['p95_ms']} ms; "
                 f"with ≥ {min_pending} pending: median {dd['median_ms']} ms, p95 {dd['p95_ms']} ms over "
                 f"{dd['count']} launches")
    text += (f"; wall {live['wall_s']} s, loop CPU {live['cpu_busy_loop']}, machine CPU {live['cpu_busy_system']} "
             f"({live['cpu_cores']} cores), load average {os.getloadavg()[0]:.1f}")
    print(text, flush=True)
    return row


def run_sim(a: argparse.Namespace) -> list[dict[str, Any]]:
    cluster = Cluster.build("q", [[ServerSpec(4, "V100", 10.0) for _ in range(4)]], {"V100": GPUType("V100", 32768)})
    catalog = default_catalog()
    names = catalog.names()
    rng = random.Random(a.seed)
    jobs = [JobSpec(f"j{i}", 0.0, rng.choice([1, 1, 2, 4]), rng.choice(names), duration_s=rng.uniform(30, 120))
            for i in range(a.jobs)]
    rows = []
    for p in a.policies.split(","):
        res = LiveRun(cluster, make_policy(p), SimExecutor(catalog), time_scale=a.time_scale, jobs=jobs,
                      catalog=catalog).run()
        rows.append(_line(p, a.jobs, res, a.min_pending))
    return rows


def run_ray(a: argparse.Namespace) -> list[dict[str, Any]]:
    from ddlsched.live.localray import LocalRayCluster
    from ddlsched.live.ray_executor import RayExecutor, node_resources

    cluster = Cluster.build("lat", [[ServerSpec(a.slots, "V100", 10.0) for _ in range(a.nodes)]],
                            {"V100": GPUType("V100", 32768)})
    cat = ModelCatalog([ModelProfile("tiny", grad_mb=0.01, compute_ms=a.compute_ms, batch_size=8, mem_mb=100.0)])
    rng = random.Random(a.seed)
    jobs = [JobSpec(f"j{i}", 0.0, rng.choice([1, 1, 1, 2]), "tiny", iterations=float(a.iterations))
            for i in range(a.jobs)]
    rows = []
    t0 = time.monotonic()
    with LocalRayCluster([node_resources(cluster, i) for i in range(a.nodes)], num_cpus=a.num_cpus,
                         env={"PYTHONPATH": str(REPO / "src")}, ray_cli=a.ray_cli) as lr:
        print(f"{a.nodes} Ray nodes × {a.slots} slots up in {time.monotonic() - t0:.1f} s", flush=True)
        for p in a.policies.split(","):
            ex = RayExecutor(lr.address, catalog=cat, checkpoint_every=1000, warm=not a.cold)
            res = LiveRun(cluster, make_policy(p), ex, time_scale=1.0, jobs=jobs, catalog=cat).run()
            from ddlsched.live.calibration import start_costs

            res.live["start_costs"] = start_costs(ex.startups, ex.drains, 1.0)
            print(f"{p}: warm actors ready in {ex.warm_s} s; leftovers {ex.leftovers}", flush=True)
            row = _line(p, a.jobs, res, a.min_pending)
            row["samples"] = res.latency_samples
            rows.append(row)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--executor", choices=("sim", "ray"), default="sim")
    ap.add_argument("--jobs", type=int, default=250)
    ap.add_argument("--policies", default="fifo,tiresias,delay-sched")
    ap.add_argument("--time-scale", type=float, default=2000.0, help="sim executor only")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--min-pending", type=int, default=200, help="also report launches with this many queued")
    ap.add_argument("--nodes", type=int, default=2, help="ray: nodes (servers)")
    ap.add_argument("--slots", type=int, default=8, help="ray: GPU slots per node")
    ap.add_argument("--num-cpus", type=int, default=1, help="ray: CPUs each node advertises (actors ask for 0)")
    ap.add_argument("--iterations", type=int, default=5, help="ray: iterations per job")
    ap.add_argument("--compute-ms", type=float, default=20.0, help="ray: sleep per iteration")
    ap.add_argument("--cold", action="store_true", help="ray: warm=False (a placement group and actors per launch)")
    ap.add_argument("--ray-cli", default=None, help="ray: the `ray` program (default: beside this Python)")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    print(f"load average before: {os.getloadavg()}", flush=True)
    rows = run_sim(a) if a.executor == "sim" else run_ray(a)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))
    return 0 if all(r["failed"] == 0 and r["completed"] == a.jobs for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
