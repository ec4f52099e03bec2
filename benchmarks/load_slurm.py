"""Load time and peak memory of a large Slurm export, columnar path vs row path, and whether they agree.

    python benchmarks/load_slurm.py [--rows 1000000] [--file /tmp/sacct_1m.txt]

The export is written by ``benchmarks/gen_slurm_export.py`` (seeded) unless the file exists. Each path runs in a
fresh subprocess (the trace cache off) that reports its wall time, its peak RSS (``ru_maxrss``) and a SHA-256 of
every job's fields, the filtered counts and the notes; the two digests must be equal. Wall time on a loaded
machine says little: the CPU time (user + system of the process, all its threads, from ``resource.getrusage``) and
the load average before and after each run are printed too. Target (issue 33): the columnar path loads
1,000,000 rows in <= 20 s and <= 1.5 GiB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

_CHILD = r"""
import hashlib, json, resource, sys, time
from dataclasses import astuple
from ddlsched.workload.loaders import load_trace
def cpu_s():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime
t0, c0 = time.perf_counter(), cpu_s()
tr = load_trace(sys.argv[1])
wall, cpu = time.perf_counter() - t0, cpu_s() - c0
h = hashlib.sha256()
for j in tr.jobs:
    h.update(repr(astuple(j)).encode())
h.update(repr((tr.filtered, tr.notes, tr.epoch, tr.mapping, tr.skipped)).encode())
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"wall_s": wall, "cpu_s": cpu, "peak_rss_mib": rss,
                  "jobs": len(tr.jobs), "rows": tr.rows, "filtered": tr.filtered, "digest": h.hexdigest()}))
"""


def measure(path: Path, fast: str) -> dict[str, object]:
    env = {**os.environ, "DDLSCHED_CACHE": "off", "DDLSCHED_FAST_CSV": fast}
    r = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True, env=env,
                       check=True)
    return json.loads(r.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--file", type=Path, default=Path("/tmp/sacct_1m.txt"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--columnar-only", action="store_true", help="skip the (slow) row path and the comparison")
    a = ap.parse_args()
    if not a.file.exists():
        sys.path.insert(0, str(HERE))
        from gen_slurm_export import write_export

        write_export(a.file, a.rows, a.seed)
    size = a.file.stat().st_size
    print(f"{a.file}: {size / 2**20:,.0f} MiB")
    results = {}
    for name, mode in (("columnar", "on"), ("row", "off"))[: 1 if a.columnar_only else 2]:
        before = os.getloadavg()[0]
        results[name] = m = measure(a.file, mode)
        print(f"{name:>8}: {m['wall_s']:6.1f} s wall, {m['cpu_s']:6.1f} s CPU, peak RSS {m['peak_rss_mib']:,.0f} MiB, "
              f"{m['rows']:,} rows -> "
              f"{m['jobs']:,} jobs, filtered {m['filtered']}; load average {before:.1f} -> {os.getloadavg()[0]:.1f}")
    if a.columnar_only:
        print(f"digest {results['columnar']['digest']}")
        return
    same = results["columnar"]["digest"] == results["row"]["digest"]
    print(f"same result: {same}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
