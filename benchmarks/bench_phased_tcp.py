"""Cost of ``phased_tcp`` against ``maxmin`` (issue 32: ≤ 2× on the full Philly-derived trace, philly512 and
philly2048; docs/validation.md, "Cost").

    PYTHONPATH=src python benchmarks/bench_phased_tcp.py                    # full trace, fifo+consolidated, 3 pairs
    PYTHONPATH=src python benchmarks/bench_phased_tcp.py --pairs 5 --clusters philly512
    PYTHONPATH=src python benchmarks/bench_phased_tcp.py --policy fifo+random --jobs 300 \
        --models maxmin,phased,phased_tcp                                    # a spreading run

Every cell is one fresh process (``--cell``) that loads the trace, then times ``run_simulation`` alone: wall
seconds and CPU seconds of the process (``time.process_time``: on a shared machine CPU time moves far less than
wall time). The models of a cluster run alternately, pair after pair, so a change in the machine's load spreads
over all of them; the 1-minute load average before each cell is printed beside it. Printed per cluster: each
cell, then per model the median CPU and wall seconds and the ratio of the medians to the first model's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "data" / "traces" / "philly_pollux" / "philly.csv"


def cell(policy: str, cluster: str, jobs: int | None, perf: str) -> dict:
    from ddlsched.cluster import load_cluster
    from ddlsched.engine import SimConfig, run_simulation
    from ddlsched.metrics import summarize
    from ddlsched.policies import make_policy
    from ddlsched.workload.loaders import load_trace

    trace = load_trace(TRACE)
    specs = trace.jobs if jobs is None else trace.jobs[:jobs]
    c, p = load_cluster(cluster), make_policy(policy)
    w0, c0 = time.perf_counter(), time.process_time()
    r = run_simulation(c, specs, p, SimConfig(perf_model=perf))
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    s = summarize(r)
    return {"perf_model": perf, "cluster": cluster, "jobs": len(specs), "sim_cpu_s": round(cpu, 2),
            "sim_wall_s": round(wall, 2), "avg_jct_h": round(s["avg_jct_s"] / 3600, 4)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    ap.add_argument("--clusters", default="philly512,philly2048")
    ap.add_argument("--models", default="maxmin,phased_tcp", help="the first is the reference of the ratios")
    ap.add_argument("--policy", default="fifo+consolidated")
    ap.add_argument("--jobs", type=int, default=None, help="the first N jobs of the trace (default: all)")
    ap.add_argument("--pairs", type=int, default=3, help="runs of every model per cluster, alternating")
    a = ap.parse_args()
    if a.cell:
        print(json.dumps(cell(*json.loads(a.cell))))
        return
    models = a.models.split(",")
    for cluster in a.clusters.split(","):
        runs: dict[str, list[dict]] = {m: [] for m in models}
        print(f"{cluster}, {a.policy}, {a.jobs or 'all'} jobs")
        for i in range(a.pairs):
            for m in models:
                load = os.getloadavg()[0]
                out = subprocess.run([sys.executable, __file__, "--cell", json.dumps([a.policy, cluster, a.jobs, m])],
                                     check=True, capture_output=True, text=True).stdout
                r = json.loads(out.strip().splitlines()[-1])
                runs[m].append(r)
                print(f"  run {i + 1} {m:>10}: cpu {r['sim_cpu_s']:7.2f} s, wall {r['sim_wall_s']:7.2f} s, "
                      f"load {load:.1f}, avg JCT {r['avg_jct_h']} h", flush=True)
        ref_cpu = statistics.median(r["sim_cpu_s"] for r in runs[models[0]])
        ref_wall = statistics.median(r["sim_wall_s"] for r in runs[models[0]])
        for m in models:
            cpu = statistics.median(r["sim_cpu_s"] for r in runs[m])
            wall = statistics.median(r["sim_wall_s"] for r in runs[m])
            print(f"  median {m:>10}: cpu {cpu:.2f} s ({cpu / ref_cpu:.2f}×), "
                  f"wall {wall:.2f} s ({wall / ref_wall:.2f}×)")


if __name__ == "__main__":
    main()
