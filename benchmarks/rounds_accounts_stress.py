"""The rounds model's accounts on a 3,000-job trace of 1–64-GPU jobs lasting seconds to weeks (issue 30: "rounds
model accounts do not close" for ``hare-offline``, ``hare-alg1`` and ``sched-homo`` on such a trace).

The trace is synthetic but built from the bundled traces: the longest jobs and the jobs with the most GPUs of Muri
trace1 and the Philly-derived trace (weeks-long, 8–64 GPUs where the trace has them; GPU counts above 64 are capped),
mixed with as many of their shortest jobs (seconds), arrivals spread over a day so that everything overlaps. It runs
on ``gavel_hetero`` (three GPU types) and ``rack256``. The engine checks every job's accounts at its finish (run =
ideal + causes, every cause ≥ 0): a run either finishes with every job accounted for or stops with that error.

    python benchmarks/rounds_accounts_stress.py                 # 3,000 jobs, both clusters, the three policies
    python benchmarks/rounds_accounts_stress.py --jobs 600 --clusters gavel_hetero
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "data" / "traces"
POLICIES = ("hare-offline", "hare-alg1", "sched-homo")


def build(jobs: int, seed: int = 0) -> list:
    """``jobs`` jobs: a third the longest, a third the widest, a third the shortest of the two bundled traces."""
    import ddlsched
    from ddlsched.workload import JobSpec

    pool = []
    for path in (TRACES / "muri" / "trace1.csv", TRACES / "philly_pollux" / "philly.csv"):
        pool += list(ddlsched.load_trace(path).jobs)
    third = jobs // 3
    longest = sorted(pool, key=lambda j: -(j.duration_s or 0.0))[:third]
    widest = sorted(pool, key=lambda j: (-j.num_gpus, -(j.duration_s or 0.0)))[:third]
    shortest = sorted(pool, key=lambda j: (j.duration_s or 0.0))[: jobs - 2 * third]
    rng = random.Random(seed)
    out = []
    for i, j in enumerate(longest + widest + shortest):
        out.append(JobSpec(f"s{i}", rng.uniform(0.0, 86400.0), min(64, j.num_gpus), j.model,
                           duration_s=max(1.0, float(j.duration_s or 1.0))))
    return sorted(out, key=lambda j: j.arrival_s)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=3000)
    ap.add_argument("--clusters", default="gavel_hetero,rack256")
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--max-rounds", type=int, default=0, help="stop each run after this many rounds (0: none)")
    a = ap.parse_args(argv)
    import ddlsched
    from ddlsched.errors import DdlschedError

    jobs = build(a.jobs)
    durs = sorted(j.duration_s for j in jobs)
    print(f"{len(jobs)} jobs, GPUs {min(j.num_gpus for j in jobs)}–{max(j.num_gpus for j in jobs)}, "
          f"durations {durs[0]:.0f} s – {durs[-1] / 86400:.1f} d (median {durs[len(durs) // 2]:.0f} s)")
    bad = 0
    for cluster in a.clusters.split(","):
        for pol in a.policies.split(","):
            t0 = time.perf_counter()
            mp = {"max_rounds": a.max_rounds} if a.max_rounds else None
            try:
                r = ddlsched.simulate(jobs, cluster, pol, model_params=mp, timeseries=False)
            except DdlschedError as e:
                bad += 1
                print(f"{cluster} {pol}: ERROR {e}")
                continue
            s = r.summary
            acc = (s["jobs_completed"] + s.get("jobs_rejected", 0) + s.get("jobs_unfinished", 0))
            print(f"{cluster} {pol}: completed {s['jobs_completed']}, rejected {s.get('jobs_rejected', 0)}, "
                  f"unfinished {s.get('jobs_unfinished', 0)} (accounted {acc} of {len(jobs)}), "
                  f"{time.perf_counter() - t0:.1f} s", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
