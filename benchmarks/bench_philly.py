"""Speed benchmark of the simulator core on the bundled Philly-derived trace (issues 2 and 6).

Each (policy, cluster, jobs) cell runs in a fresh subprocess so its peak memory (ru_maxrss) is its own.
Prints wall seconds (simulation only and including trace loading), events per second, peak memory, and the ratio
of the total to the *bare-Python floor*: a loop that parses the same CSV with the standard library and pushes and
pops two heap events per job (arrival, finish), timed in the same run as the median of three processes
(``x_floor = total_s / floor_s``).

    python benchmarks/bench_philly.py                      # full trace, philly2048, fifo+consolidated and tiresias
    python benchmarks/bench_philly.py --scaling            # jobs 1k/10k/82k × clusters 512/2048/8192 (fifo)
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "data" / "traces" / "philly_pollux" / "philly.csv"
FLOOR_RUNS = 3


def one(policy: str, cluster: str, jobs: int | None, perf: str) -> dict:
    from ddlsched import native
    from ddlsched.cluster import load_cluster
    from ddlsched.engine import SimConfig, run_simulation
    from ddlsched.metrics import summarize
    from ddlsched.policies import make_policy
    from ddlsched.workload.loaders import load_trace

    t0 = time.perf_counter()
    trace = load_trace(TRACE)
    specs = trace.jobs if jobs is None else trace.jobs[:jobs]
    c = load_cluster(cluster)
    p = make_policy(policy)
    t_load = time.perf_counter() - t0
    r = run_simulation(c, specs, p, SimConfig(perf_model=perf))
    s = summarize(r)
    return {"policy": policy, "cluster": cluster, "perf_model": perf, "jobs": len(specs),
            "completed": s["jobs_completed"], "load_s": round(t_load, 2), "sim_s": round(r.wall_s, 2),
            "total_s": round(time.perf_counter() - t0, 2), "events": r.events,
            "events_per_s": round(r.events / r.wall_s), "peak_mib": round(
                resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "offered_load": round(s["offered_load"], 3), "avg_jct_h": round(s["avg_jct_s"] / 3600, 3),
            "preemptions": s["preemptions"], "build": native.status()["mode"]}


def floor() -> dict:
    """The bare-Python floor: parse the trace with ``csv`` and push/pop an arrival and a finish per job."""
    import csv
    import heapq
    from datetime import datetime

    t0 = time.perf_counter()
    heap: list[tuple[float, int, int]] = []
    with open(TRACE, newline="") as f:
        rows = csv.reader(f)
        header = next(rows)
        i_sub, i_dur = header.index("timestamp"), header.index("duration")
        for i, row in enumerate(rows):
            if not row:
                continue
            t = datetime.fromisoformat(row[i_sub]).timestamp()
            heapq.heappush(heap, (t, 0, i))
            heapq.heappush(heap, (t + float(row[i_dur]), 1, i))
    n = 0
    while heap:
        heapq.heappop(heap)
        n += 1
    return {"floor_s": time.perf_counter() - t0, "events": n}


def run_cell(policy: str, cluster: str, jobs: int | None, perf: str) -> dict:
    cmd = [sys.executable, __file__, "--cell", json.dumps([policy, cluster, jobs, perf])]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--policies", default="fifo+consolidated,tiresias+consolidated")
    ap.add_argument("--cluster", default="philly2048")
    ap.add_argument("--perf-model", default=None, help="physics (default: the simulator's, DEFAULT_PERF_MODEL)")
    ap.add_argument("--jobs", type=int, default=None, help="first N jobs (default: all 82,247)")
    ap.add_argument("--scaling", action="store_true", help="jobs × cluster-size scaling table (fifo+consolidated)")
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.cell:
        cell = json.loads(a.cell)
        print(json.dumps(floor() if cell == "floor" else one(*cell)))
        return
    if a.perf_model is None:
        from ddlsched.perf import DEFAULT_PERF_MODEL

        a.perf_model = DEFAULT_PERF_MODEL
    if a.scaling:
        cells = [("fifo+consolidated", c, n, a.perf_model) for c in ("philly512", "philly2048", "philly8192")
                 for n in (1000, 10000, None)]
    else:
        cells = [(p, a.cluster, a.jobs, a.perf_model) for p in a.policies.split(",")]
    cols = ["policy", "cluster", "jobs", "completed", "offered_load", "sim_s", "total_s", "events", "events_per_s",
            "peak_mib", "preemptions", "avg_jct_h", "x_floor", "build"]
    floors = [json.loads(subprocess.run([sys.executable, __file__, "--cell", '"floor"'], check=True,
                                        capture_output=True, text=True).stdout.strip().splitlines()[-1])
              for _ in range(FLOOR_RUNS)]
    f = sorted(floors, key=lambda x: x["floor_s"])[FLOOR_RUNS // 2]  # the median: one run moves by ± 20 %
    each = ", ".join(f"{x['floor_s']:.2f}" for x in floors)
    print(f"bare-Python floor (csv parse + 2 heap events per job, {f['events']:,} events): {f['floor_s']:.2f} s, "
          f"median of {FLOOR_RUNS} processes ({each} s)")
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for cell in cells:
        r = run_cell(*cell)
        r["x_floor"] = round(r["total_s"] / f["floor_s"], 1)
        print("| " + " | ".join(str(r[c]) for c in cols) + " |", flush=True)


if __name__ == "__main__":
    main()
