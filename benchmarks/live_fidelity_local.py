"""Live vs simulated on localhost Ray (no root, no namespaces): the docs' localhost example, measured.

Starts one ``ray start`` node per server of ``examples/live-ray/cluster.yaml`` (``LocalRayCluster``), runs
``ddlsched live run --executor ray --compare-sim`` on ``examples/live-ray/jobs.csv`` and prints its summary lines
(avg JCT and makespan live/sim, scheduling latency, the measured start costs) and the machine's load average.

    PYTHONPATH=src python benchmarks/live_fidelity_local.py OUT [--policy tiresias --policy-param thresholds=[20]]
        [--executor-opt warm=false] [--executor-opt grad_scale=0.001] …

Localhost has no shaped network, so the all-reduce is scaled down (``grad_scale``, default 0.001) and the
simulation is given the same scaled profiles (``--compare-sim`` does that); what remains to compare is start-up,
preemption, checkpoint/resume and the loop's own overheads.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from ddlsched.cluster.config import load_cluster_file
from ddlsched.live.localray import LocalRayCluster
from ddlsched.live.ray_executor import node_resources

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "live-ray"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--policy", default="tiresias")
    ap.add_argument("--policy-param", action="append", default=None)
    ap.add_argument("--executor-opt", action="append", default=[])
    ap.add_argument("--trace", default=str(EXAMPLE / "jobs.csv"))
    ap.add_argument("--grace", default="30")
    ap.add_argument("--ray-env", action="append", default=[], metavar="KEY=VALUE",
                    help="environment of the ray start nodes (e.g. a RAY_… system setting)")
    a = ap.parse_args()
    params = a.policy_param if a.policy_param is not None else (["thresholds=[20]"] if a.policy == "tiresias" else [])
    opts = a.executor_opt
    if not any(o.startswith("grad_scale=") for o in opts):
        opts = [*opts, "grad_scale=0.001"]
    if not any(o.startswith("checkpoint_every=") for o in opts):
        opts = [*opts, "checkpoint_every=20"]
    cluster = load_cluster_file(EXAMPLE / "cluster.yaml")
    print(f"load average before: {os.getloadavg()}", flush=True)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    with LocalRayCluster([node_resources(cluster, i) for i in range(cluster.num_servers)],
                         env={"PYTHONPATH": str(REPO / "src"), **dict(e.split("=", 1) for e in a.ray_env)}) as lr:
        cmd = [sys.executable, "-m", "ddlsched.cli", "live", "run", "--trace", a.trace, "--cluster",
               str(EXAMPLE / "cluster.yaml"), "--policy", a.policy, *(x for p in params for x in ("--policy-param", p)),
               "--executor", "ray", "--executor-opt", f"address={lr.address}",
               *(x for o in opts for x in ("--executor-opt", o)), "--grace", a.grace, "--compare-sim",
               "--out", str(a.out), "--overwrite", "--quiet"]
        t0 = time.monotonic()
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        print(f"live run: exit {p.returncode} in {time.monotonic() - t0:.1f} s wall", flush=True)
        print((p.stdout + p.stderr).strip()[-4000:], flush=True)
    live = json.loads((a.out / "live.json").read_text()) if (a.out / "live.json").exists() else {}
    print(f"start costs (run s): {json.dumps(live.get('start_costs'))}")
    for r in live.get("startups", []):
        print(f"  start {r['job_id']} attempt {r['attempt']} ({r['ranks']} ranks): total {r['total']} s = place "
              f"{r['place']} + spawn {r['spawn']} + call {r['call']} + imports {r['imports']} + init {r['init']}")
    print(f"load average after: {os.getloadavg()}", flush=True)
    return p.returncode


if __name__ == "__main__":
    sys.exit(main())
