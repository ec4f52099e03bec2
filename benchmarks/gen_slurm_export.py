"""Write a synthetic ``sacct --parsable2`` export of N rows (seeded), for the Slurm loader's benchmark and tests.

    python benchmarks/gen_slurm_export.py 1000000 /tmp/sacct_1m.txt [--seed 0]

The rows look like a GPU cluster's accounting: about 70 % jobs, the rest ``.batch``/``.extern`` steps; states
mostly COMPLETED, some FAILED, TIMEOUT, ``CANCELLED by UID`` (after running, or before starting with
``Start=Unknown``), PENDING and RUNNING; ``AllocTRES`` with ``gres/gpu=N`` (a few CPU-only jobs); ``Elapsed`` as
``[D-]HH:MM:SS``. Every row is in the common form the columnar path reads (no heterogeneous jobs, untyped GPUs).
"""

from __future__ import annotations

import argparse
import random
from datetime import datetime, timedelta
from pathlib import Path

HEADER = "JobID|JobName|User|Account|Partition|Submit|Start|End|Elapsed|State|AllocTRES|NNodes|ExitCode"
_STATES = [("COMPLETED", 70), ("FAILED", 8), ("TIMEOUT", 5), ("CANCELLED_RAN", 7), ("CANCELLED_PENDING", 4),
           ("PENDING", 2), ("RUNNING", 2), ("OUT_OF_MEMORY", 2)]
_NAMES = ["bert-ft", "resnet50", "llm-sft", "vit", "nmt", "rl-agent", "hpo", "gan"]


def _clock(s: int) -> str:
    d, rest = divmod(s, 86400)
    h, rest = divmod(rest, 3600)
    m, sec = divmod(rest, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{sec:02d}"


def write_export(path: Path, rows: int, seed: int = 0) -> None:
    """``rows`` data rows (jobs and their step rows) into ``path``."""
    rng = random.Random(seed)
    t0 = datetime(2024, 1, 1, 0, 0, 0)
    states, weights = zip(*_STATES, strict=True)
    fmt = "%Y-%m-%dT%H:%M:%S"
    written = 0
    job = 1000
    t = 0.0
    with path.open("w", encoding="ascii", newline="\n") as f:
        f.write(HEADER + "\n")
        while written < rows:
            job += 1
            t += rng.expovariate(1 / 20.0)
            submit = t0 + timedelta(seconds=int(t))
            state = rng.choices(states, weights)[0]
            gpus = rng.choice([0, 1, 1, 1, 2, 4, 8, 8, 16]) if rng.random() > 0.03 else 0
            user = f"u{rng.randrange(200):03d}"
            tres = f"billing={max(gpus, 1) * 8},cpu={max(gpus, 1) * 8}" + (f",gres/gpu={gpus}" if gpus else "") + \
                f",mem={max(gpus, 1) * 32}G,node={max(1, gpus // 8)}"
            name = rng.choice(_NAMES)
            if state in ("PENDING", "CANCELLED_PENDING"):
                label = "PENDING" if state == "PENDING" else f"CANCELLED by {rng.randrange(1000, 60000)}"
                end = "Unknown" if state == "PENDING" else (submit + timedelta(seconds=60)).strftime(fmt)
                f.write(f"{job}|{name}|{user}|acct|gpu|{submit.strftime(fmt)}|Unknown|{end}|00:00:00|{label}|"
                        f"|0|0:0\n")
                written += 1
                continue
            start = submit + timedelta(seconds=int(rng.expovariate(1 / 600.0)))
            run = max(1, int(rng.lognormvariate(8.0, 1.6)))
            if state == "TIMEOUT":
                run = rng.choice([3600, 14400, 86400])
            run = min(run, 30 * 86400)
            label = {"CANCELLED_RAN": f"CANCELLED by {rng.randrange(1000, 60000)}"}.get(state, state)
            end = "Unknown" if state == "RUNNING" else (start + timedelta(seconds=run)).strftime(fmt)
            f.write(f"{job}|{name}|{user}|acct|gpu|{submit.strftime(fmt)}|{start.strftime(fmt)}|{end}|{_clock(run)}|"
                    f"{label}|{tres}|{max(1, gpus // 8)}|0:0\n")
            written += 1
            for step in ("batch", "extern"):
                if written >= rows or rng.random() < 0.4:
                    continue
                f.write(f"{job}.{step}|{step}|||gpu|{start.strftime(fmt)}|{start.strftime(fmt)}|{end}|{_clock(run)}|"
                        f"{'COMPLETED' if state != 'RUNNING' else 'RUNNING'}|{tres}|1|0:0\n")
                written += 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows", type=int)
    ap.add_argument("out", type=Path)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    write_export(a.out, a.rows, a.seed)


if __name__ == "__main__":
    main()
