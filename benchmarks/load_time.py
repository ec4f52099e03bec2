"""Uncached load time of a trace file (default: the bundled Philly trace), median of N runs, wall and CPU.

Each run is a fresh process, with the parsed-trace cache off (``DDLSCHED_CACHE=off``); ``wall`` and ``CPU`` count
from the import of the loaders (pyarrow's import, when the fast path runs, included), ``load`` is the wall time of
``load_trace`` alone. ``DDLSCHED_FAST_CSV=off`` in the environment times the row parser alone.

    python benchmarks/load_time.py                          # philly.csv, 3 runs
    python benchmarks/load_time.py --runs 5 --trace FILE
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_CHILD = """
import json, resource, sys, time
t0 = time.perf_counter(); c0 = time.process_time()
from ddlsched.workload.loaders import load_trace
t1 = time.perf_counter()
t = load_trace(sys.argv[1])
print(json.dumps({"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0, "jobs": len(t.jobs),
                  "load": time.perf_counter() - t1}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=str(ROOT / "data" / "traces" / "philly_pollux" / "philly.csv"))
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    env = {**os.environ, "DDLSCHED_CACHE": "off"}
    runs = []
    for _ in range(a.runs):
        out = subprocess.run([sys.executable, "-c", _CHILD, a.trace], env=env, check=True, capture_output=True,
                             text=True).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
    walls = ", ".join(f"{r['wall']:.3f}" for r in runs)
    fast = os.environ.get("DDLSCHED_FAST_CSV", "on")
    print(f"{Path(a.trace).name}: {runs[0]['jobs']} jobs, DDLSCHED_FAST_CSV={fast}, {a.runs} runs: "
          f"wall median {statistics.median(r['wall'] for r in runs):.3f} s "
          f"({walls}), "
          f"CPU median {statistics.median(r['cpu'] for r in runs):.3f} s, "
          f"load_trace alone median {statistics.median(r['load'] for r in runs):.3f} s")


if __name__ == "__main__":
    main()
