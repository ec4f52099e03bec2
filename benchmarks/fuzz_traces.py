"""Fuzz campaign for trace loading and ``ddlsched simulate``: mutated traces of every format plus CLI-flag cases.

Every case must end in a located error (InputError naming the file, exit 2 with ``error:``) or a clean run
(every data row a job, skipped or filtered by reason; ``jobs`` in summary.json equal to the jobs loaded, and
``rows_read`` = jobs + filtered). The seeds are every bundled format plus the Slurm and Kubernetes exports of
``data/examples`` (``--formats slurm,kubernetes`` fuzzes only those). Printed counts: cases, located errors, clean
runs, tracebacks (must be 0), hangs (must be 0), silent losses (must be 0), other contract breaks (must be 0),
and engine errors (a SimulationError from a valid input: reported, not a loader bug).

    python benchmarks/fuzz_traces.py                       # 600 mutated traces + the CLI flag cases
    python benchmarks/fuzz_traces.py --cases 100 --seed 7  # quicker, another random stream
"""

from __future__ import annotations

import argparse
import collections
import random
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from trace_mutations import (  # noqa: E402
    GENERIC,
    Hang,
    Outcome,
    check_load,
    check_simulate,
    cluster_gpu_types,
    export_seeds,
    mutate,
    seeds,
)

FLAG_VALUES: dict[str, list[str]] = {
    "--load-scale": ["nan", "inf", "-inf", "1e400", "1e-320", "0", "-1", "abc", "", "1e7", "1e-7", "2", "0.5"],
    "--restart-penalty": ["nan", "inf", "-1000", "1e400", "1e300", "abc", "", "0", "120"],
    "--max-jobs": ["0", "-1", "1.5", "abc", "9" * 40, "", "2", "100"],
    "--seed": ["-1", "nan", "9" * 40, "1.5", "", "7"],
    "--time-unit": ["fortnight", "", "auto", "min"],
    "--duration-unit": ["fortnight", "", "h"],
    "--format": ["nope", "", "muri", "gavel", "generic_csv", "slurm", "kubernetes"],
    "--states": ["", "all", "completed", "bogus", ",", "COMPLETED,cancelled"],
    "--gpus-from": ["", "AllocGPUs", "AllocGPUs:gres/gpu", r"AllocGPUs~(\d+(?:\.\d+)?)", "AllocGPUs~(", "nope~x",
                    r"AllocGPUs~(\d)(\d)", "User~.*"],
    "--column": ["duration", "=x", "bogus=Elapsed", "duration=nope", "duration=", "num_gpus=User", "model=GPUType"],
    "--gpu-unit": ["bits", "milli", "percent"],
    "--fractional-gpus": ["floor", "error"],
    "--unknown-models": ["guess", "error"],
    "--perf-param": ["x=NaN", "x=Infinity", "x=1e400", "=1", "noequals", "bogus=1"],
    "--policy-param": ["x=NaN", "x=-Infinity", "bogus=1", "=1"],
    "--perf-model": ["nope", "", "none"],
    "--policy": ["nope", "", "sjf"],
    "--cluster": ["nope", "", "/nonexistent.yaml", "rack256"],
    "--models": ["/nonexistent.csv", "", "@bad_models", "@good_models"],
    "--trace": ["/nonexistent.csv", "", ".", "@folder", "@empty"],
}


def _alarm(_sig: int, _frame: Any) -> None:
    raise Hang("time limit")


def _timed(limit: int, fn: Any, *a: Any, **kw: Any) -> Outcome:
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(limit)
    try:
        return fn(*a, **kw)
    except Hang:
        return Outcome("hang", f"{fn.__name__} ran past {limit} s")
    except Exception as e:  # a traceback: the contract is broken
        return Outcome("traceback", f"{type(e).__name__}: {e}".replace("\n", " ")[:200] + " @ "
                       + traceback.extract_tb(e.__traceback__)[-1].filename.split("src/")[-1])
    finally:
        signal.alarm(0)


def classify(out: Outcome) -> str:
    if out.kind == "bad":
        return "silent loss" if out.detail.startswith("silent loss") else "contract break"
    return {"error": "located error", "loaded": "clean run", "engine": "engine error"}.get(out.kind, out.kind)


def trace_cases(n: int, seed: int, limit: int, tmp: Path, tally: collections.Counter, fails: list[str],
                per_format: dict[str, collections.Counter], formats: set[str] | None = None) -> None:
    pool = [s for s in seeds() + export_seeds() if formats is None or s.name in formats]
    types = cluster_gpu_types()
    for i in range(n):
        rng = random.Random(f"{seed}:{i}")
        s = pool[i % len(pool)]
        raw, ops = mutate(s, rng.randrange, 1 + rng.randrange(3))
        f = tmp / f"case{i}{'.trace' if s.name == 'gavel' else '.csv'}"
        f.write_bytes(raw)
        what = f"{s.name}: {'; '.join(ops)}"
        outs = []
        strict = _timed(limit, check_load, f, skip_invalid=False, gpu_types=types)
        outs.append(strict)
        outs.append(_timed(limit, check_load, f, skip_invalid=True, gpu_types=types))
        expect = strict.jobs if strict.kind == "loaded" else None
        sim = _timed(limit, check_simulate, f, tmp / f"out{i}", [], expect_jobs=expect)
        if strict.kind in ("loaded", "error") and sim.kind in ("loaded", "error") and (
                (sim.kind == "loaded") != (strict.kind == "loaded")):
            sim = Outcome("bad", f"load {strict.kind} but simulate {sim.kind}: {sim.detail}")
        outs.append(sim)
        worst = next((o for o in outs if o.kind in ("traceback", "hang", "bad")), None) or next(
            (o for o in outs if o.kind == "engine"), None) or sim
        label = classify(worst)
        tally[label] += 1
        per_format[s.name][label] += 1
        if label not in ("located error", "clean run"):
            fails.append(f"[{label}] {what} -> {worst.detail}")


def flag_cases(limit: int, tmp: Path, tally: collections.Counter, fails: list[str]) -> int:
    trace = tmp / "slurm.csv"
    trace.write_bytes(GENERIC)
    (tmp / "folder").mkdir()
    (tmp / "folder" / "a.csv").write_bytes(GENERIC)
    (tmp / "folder" / "b.csv").write_bytes(GENERIC)
    (tmp / "empty").mkdir()
    (tmp / "bad_models.csv").write_text("name,grad_mb,compute_ms,batch_size,mem_mb\nx,1,nan,4,10\n")
    (tmp / "good_models.csv").write_text("name,grad_mb,compute_ms,batch_size,mem_mb\nx,1,5,4,10\n")
    n = 0
    for flag, values in FLAG_VALUES.items():
        for v in values:
            if v.startswith("@"):
                v = str(tmp / (v[1:] + (".csv" if "models" in v else "")))
            args = [flag, v] if flag == "--trace" else ["--trace", str(trace), flag, v]
            rows = 8 if v.endswith("folder") else 4
            expect = min(rows, int(v)) if flag == "--max-jobs" and v.isdigit() and int(v) > 0 else rows
            out = _timed(limit, check_simulate, None, tmp / f"flag{n}", args, expect_jobs=expect)
            label = classify(out)
            tally[label] += 1
            if label not in ("located error", "clean run"):
                fails.append(f"[{label}] simulate {' '.join(args[-2:])} -> {out.detail}")
            n += 1
    return n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=600, help="mutated trace files (default 600)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the mutation stream")
    ap.add_argument("--limit", type=int, default=60, help="seconds before a case counts as a hang")
    ap.add_argument("--show", type=int, default=20, help="failures to print")
    ap.add_argument("--formats", default=None, help="comma-separated seed names to fuzz (default: all)")
    ap.add_argument("--no-flags", action="store_true", help="skip the CLI flag cases")
    args = ap.parse_args()
    t0 = time.perf_counter()
    tally: collections.Counter = collections.Counter()
    flags: collections.Counter = collections.Counter()
    per_format: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    fails: list[str] = []
    with tempfile.TemporaryDirectory(prefix="ddlsched-fuzz-") as tmp:
        formats = set(args.formats.split(",")) if args.formats else None
        trace_cases(args.cases, args.seed, args.limit, Path(tmp), tally, fails, per_format, formats)
        n_flags = 0 if args.no_flags else flag_cases(args.limit, Path(tmp), flags, fails)
    print(f"mutated traces: {args.cases} cases (seed {args.seed}), {time.perf_counter() - t0:.0f} s in all")
    for name, c in sorted(per_format.items()):
        print(f"  {name:20s} " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
    keys = ["located error", "clean run", "traceback", "hang", "silent loss", "contract break", "engine error"]
    print("  totals: " + ", ".join(f"{k} {tally[k]}" for k in keys))
    print(f"CLI flag cases: {n_flags}: " + ", ".join(f"{k} {flags[k]}" for k in keys))
    for line in fails[:args.show]:
        print("  " + line)
    both = tally + flags
    print(f"cases {args.cases + n_flags}; " + "; ".join(f"{k}s {both[k]}" if not k.endswith("loss") else
                                                     f"silent losses {both[k]}" for k in keys))
    return 1 if sum(both[k] for k in ("traceback", "hang", "silent loss", "contract break")) else 0


if __name__ == "__main__":
    sys.exit(main())
