"""Fuzz the Slurm loader's columnar path against its row path: mutated exports must give the same trace or the
same located error either way (``DDLSCHED_FAST_CSV=always`` vs ``off``).

    python benchmarks/fuzz_slurm_fast.py [CASES]        # default 150; prints the differences (must be 0)
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from gen_slurm_export import write_export  # noqa: E402

from ddlsched.errors import InputError  # noqa: E402
from ddlsched.workload.loaders import load_trace  # noqa: E402
from trace_mutations import Seed, mutate  # noqa: E402

SLURM_VALUES = [b"Unknown", b"None", b"", b"CANCELLED+", b"CANCELLED by 0", b"OUT_OF_MEMORY", b"EXPLODED",
                b"1-25:00:00", b"00:60:00", b"99:59:59", b"0-00:00:00", b"3600", b"12:00", b"gres/gpu=2,gres/gpu=3",
                b"cpu=1,cpu=2,gres/gpu=1", b"gres/gpu:a100=2", b"gres/gpu=1.5", b"gres/gpu=", b"gres/gpumem=8G",
                b"billing=8,gres/gpu=0", b"123+0", b"123.batch", b"2024-02-30T00:00:00", b"2024-01-01 00:00:00",
                b"2024-01-01T00:00:00Z", b"gres/gpu=99999999"]


def _slurm_field(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A Slurm-looking value put into a random field of a random data row."""
    lines = data.split(b"\n")
    r = 1 + rng.randrange(max(1, len(lines) - 2))
    fields = lines[r].split(b"|")
    c = rng.randrange(len(fields))
    v = SLURM_VALUES[rng.randrange(len(SLURM_VALUES))]
    fields[c] = v
    lines[r] = b"|".join(fields)
    return b"\n".join(lines), f"row {r} col {c} := {v!r}"


def _load(f: Path, mode: str) -> tuple[Any, ...]:
    os.environ["DDLSCHED_FAST_CSV"] = mode
    try:
        t = load_trace(f, format="slurm")
        return ("ok", t.jobs, t.notes, t.filtered, t.epoch, t.skipped)
    except InputError as e:
        return ("error", str(e))


def main() -> int:
    cases = int(sys.argv[1]) if len(sys.argv) > 1 else 150
    os.environ["DDLSCHED_CACHE"] = "off"
    with tempfile.TemporaryDirectory(prefix="ddlsched-fastfuzz-") as tmp:
        base = Path(tmp) / "base.txt"
        write_export(base, 400, seed=5)
        seed = Seed("slurm", base.read_bytes(), b"|", True)
        kinds: dict[str, int] = {}
        diffs = 0
        for i in range(cases):
            rng = random.Random(i)
            if i % 2:
                raw, ops = mutate(seed, rng.randrange, 1 + rng.randrange(2))
            else:
                raw, ops = seed.data, []
                for _ in range(1 + rng.randrange(3)):
                    raw, op = _slurm_field(raw, rng)
                    ops.append(op)
            f = Path(tmp) / "case.txt"
            f.write_bytes(raw)
            row, fast = _load(f, "off"), _load(f, "always")
            kinds[row[0]] = kinds.get(row[0], 0) + 1
            if row != fast:
                diffs += 1
                print(f"DIFF {'; '.join(ops)}: row {row[0]}, columnar {fast[0]}")
    print(f"cases {cases}: {kinds}; differences {diffs}")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
