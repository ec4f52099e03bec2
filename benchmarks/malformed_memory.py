"""A malformed 1 GiB trace fails with a located error under a 2 GiB memory limit (issue 33).

    python benchmarks/malformed_memory.py [--gib 1.0] [--limit-gib 2.0] [--bad-line 1000] [--keep]

Writes a generic CSV (``job_id,submit_time,duration,num_gpus``) of about ``--gib`` GiB whose line ``--bad-line``
holds a duration that is not a number, and loads it in a subprocess whose address space is limited
(``RLIMIT_AS``) to ``--limit-gib`` GiB, with the trace cache on (its default). Expected: exit status 2 and
``error: FILE:LINE, field 'duration': not a number ...``, never a MemoryError or a traceback. The loader reads the
file in blocks: the cache hashes it block by block, the columnar path is not used above ``columnar.MAX_BYTES`` (and
checks plainness block by block below it), and the row parser stops at the first bad row; above
``limits.CHECK_FIRST_BYTES`` it checks every row in a first pass that keeps nothing, so a bad row near the end
(``--bad-line 19000000``) fails in bounded memory too, after a pass over the rows before it.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_CHILD = r"""
import resource, sys
limit = int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from ddlsched.cli import main
sys.argv = ["ddlsched", "traces", "info", sys.argv[1]]
main()
"""


def write(path: Path, size: int, bad_line: int) -> None:
    row = "job-{:09d},{},{},{}\n"
    with path.open("w", encoding="ascii") as f:
        f.write("job_id,submit_time,duration,num_gpus\n")
        i = 0
        written = 0
        buf: list[str] = []
        while written < size:
            line = row.format(i, i * 7, "abc" if i + 2 == bad_line else 3600 + i % 977, 1 + i % 8)
            buf.append(line)
            written += len(line)
            i += 1
            if len(buf) >= 100_000:
                f.write("".join(buf))
                buf.clear()
        f.write("".join(buf))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gib", type=float, default=1.0)
    ap.add_argument("--limit-gib", type=float, default=2.0)
    ap.add_argument("--bad-line", type=int, default=1000)
    ap.add_argument("--keep", action="store_true", help="keep the generated file (printed)")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ddlsched-malformed-"))
    f = tmp / "big.csv"
    try:
        write(f, int(a.gib * 2**30), a.bad_line)
        print(f"{f}: {f.stat().st_size / 2**30:.2f} GiB, bad value at line {a.bad_line}")
        env = {**os.environ, "DDLSCHED_CACHE": str(tmp / "cache")}
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-c", _CHILD, str(f), str(int(a.limit_gib * 2**30))],
                           capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t0
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        err = r.stderr.strip().splitlines()
        print(f"exit {r.returncode} in {wall:.1f} s, child peak RSS {peak:,.0f} MiB, limit {a.limit_gib:g} GiB")
        print("stderr: " + (err[-1] if err else "(none)"))
        ok = r.returncode == 2 and "Traceback" not in r.stderr and f":{a.bad_line}, field 'duration'" in r.stderr
        print("located error under the limit:", ok)
        return 0 if ok else 1
    finally:
        if a.keep:
            print(f"kept {f}")
        else:
            f.unlink(missing_ok=True)
            for p in sorted(tmp.rglob("*"), reverse=True):
                p.rmdir() if p.is_dir() else p.unlink()
            tmp.rmdir()


if __name__ == "__main__":
    sys.exit(main())
