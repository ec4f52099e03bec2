"""Scheduling latency of a live run with a long queue: a job's finish → the next launch reaching the executor.

N jobs arrive at once on a small cluster, so for most of the run ≥ N − (cluster GPUs) jobs are pending; each finish is
followed by a policy pass and a launch. The executor is the digital twin (no worker processes), so the figure is the
loop's own: the time from the finish (its instant on the run clock) to ``executor.launch``, wall milliseconds.

    PYTHONPATH=src python benchmarks/live_latency.py --jobs 250 --policies fifo,tiresias,delay-sched

Prints one line per policy (median, p95, max over the launches that followed a finish; the loop's CPU share).
"""

from __future__ import annotations

import argparse
import random

from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.engine.run import default_catalog
from ddlsched.live.run import LiveRun
from ddlsched.live.sim_executor import SimExecutor
from ddlsched.policies import make_policy
from ddlsched.workload import JobSpec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=250)
    ap.add_argument("--policies", default="fifo,tiresias,delay-sched")
    ap.add_argument("--time-scale", type=float, default=2000.0)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    cluster = Cluster.build("q", [[ServerSpec(4, "V100", 10.0) for _ in range(4)]], {"V100": GPUType("V100", 32768)})
    catalog = default_catalog()
    names = catalog.names()
    rng = random.Random(a.seed)
    jobs = [JobSpec(f"j{i}", 0.0, rng.choice([1, 1, 2, 4]), rng.choice(names), duration_s=rng.uniform(30, 120))
            for i in range(a.jobs)]
    for p in a.policies.split(","):
        res = LiveRun(cluster, make_policy(p), SimExecutor(catalog), time_scale=a.time_scale, jobs=jobs,
                      catalog=catalog).run()
        lat, live = res.live["sched_latency"], res.live
        print(f"{p}: {a.jobs} jobs ({len(res.records)} completed), finish → launch median {lat['median_ms']} ms, "
              f"p95 {lat['p95_ms']} ms, max {lat['max_ms']} ms over {lat['count']} launches; wall {live['wall_s']} s, "
              f"loop CPU {live['cpu_busy_loop']}, machine CPU {live['cpu_busy_system']} ({live['cpu_cores']} cores)")


if __name__ == "__main__":
    main()
