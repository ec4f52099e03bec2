"""The ``phased`` fluid approximation against the exact phase-level simulation over random scenarios.

    PYTHONPATH=src python benchmarks/phased_error.py [--scenarios 200] [--seed 0] [--draws 6]

Prints the median and worst relative error of the per-job iteration time (a job's JCT is its work times its
iteration time while the set of running jobs is fixed, so the JCT error is the same number), over every job and
over the contended jobs (exact iteration > 1 % above alone), with maxmin's error beside it. docs/physics.md §11.
"""

from __future__ import annotations

import argparse
import statistics
import time

from ddlsched.perf.phased_check import JobError, campaign


def _stats(label: str, errs: list[JobError]) -> None:
    if not errs:
        print(f"{label}: no jobs")
        return
    ph = sorted(abs(e.rel_err) for e in errs)
    mm = sorted(abs(e.maxmin_rel_err) for e in errs)
    signed = statistics.median(e.rel_err for e in errs)
    spread = statistics.median(e.exact_max_s / e.exact_min_s - 1 for e in errs)
    print(f"{label}: {len(errs)} jobs | phased |err| median {100 * statistics.median(ph):.2f} %, "
          f"p90 {100 * ph[int(0.9 * (len(ph) - 1))]:.2f} %, worst {100 * ph[-1]:.2f} % (signed median "
          f"{100 * signed:+.2f} %) | maxmin |err| median {100 * statistics.median(mm):.2f} %, worst "
          f"{100 * mm[-1]:.2f} % | exact best→worst offset spread median {100 * spread:.1f} %")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--draws", type=int, default=6)
    a = ap.parse_args()
    t0 = time.perf_counter()
    errs = campaign(a.scenarios, a.seed, a.draws)
    print(f"{a.scenarios} scenarios, seed {a.seed}, {a.draws} offset draws each, {time.perf_counter() - t0:.1f} s")
    _stats("all jobs", errs)
    _stats("contended jobs", [e for e in errs if e.exact_s > 1.01 * e.alone_s])
    worst = max(errs, key=lambda e: abs(e.rel_err))
    print(f"worst: scenario {worst.scenario} job {worst.job_id}: exact {worst.exact_s:.4f} s (offsets "
          f"{worst.exact_min_s:.4f}–{worst.exact_max_s:.4f}), phased {worst.phased_s:.4f} s, maxmin "
          f"{worst.maxmin_s:.4f} s, alone {worst.alone_s:.4f} s")


if __name__ == "__main__":
    main()
