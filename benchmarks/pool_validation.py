"""Pool several ``make validate`` runs: how far each run's median error is from the model's own
(docs/CHANGELOG-validation.md, "Pooled over runs").

    python benchmarks/pool_validation.py RUN_DIR [RUN_DIR ...] [--model 'phased[exact,fairness=tcp]']

Each RUN_DIR is a ``results/validation`` directory written by ``make validate`` (its ``fidelity.json``). Every
run measured each validation job ``--val-repeats`` times and scored the mean of those repeats against its own
calibrated prediction. Pooling k runs gives each job k × repeats measurements, so the random part of the
measured mean shrinks by √k and what is left of the error is the model's. Printed, for the chosen model's
calibrated variant: each run's score as ``make validate`` reported it; each run's calibration scored against the
pooled mean; the mean of the runs' predictions against the pooled mean, with the jobs ranked by signed error;
and the standard error of a job's mean at one run's and at the pooled number of repeats (median over the jobs).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import numpy as np


def _score(errors: list[float]) -> str:
    a = np.abs(errors)
    return f"median {100 * np.median(a):.1f} %, p90 {100 * np.percentile(a, 90):.1f} %, worst {100 * a.max():.1f} %"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, help="results/validation directories of make validate runs")
    ap.add_argument("--model", default="phased[exact,fairness=tcp]", help="model label as in the fidelity table")
    ap.add_argument("--top", type=int, default=24, help="jobs listed by |signed error| (default 24)")
    args = ap.parse_args()
    key = f"{args.model}/calibrated"
    reports = [json.loads((d / "fidelity.json").read_text()) for d in args.runs]
    jobs: dict[tuple[str, str], dict[str, list[float]]] = {}
    for rep in reports:
        for j in rep["jobs"]:
            if key not in j["predicted"]:
                raise SystemExit(f"{args.model!r} is not in a fidelity.json (calibrated variant missing)")
            e = jobs.setdefault((j["scenario"], j["job"]), {"runs": [], "own": [], "pred": []})
            e["runs"] += j["measured"]["comm_s_runs"]
            e["own"].append(j["measured"]["comm_s"])
            e["pred"].append(j["predicted"][key]["comm_s"])
    if any(len(e["pred"]) != len(reports) for e in jobs.values()):
        raise SystemExit("the runs do not have the same validation jobs")
    n = len(reports)
    per_run = len(next(iter(jobs.values()))["runs"]) // n
    print(f"{args.model}, calibrated; {n} runs, {len(jobs)} jobs, {per_run} repeats per job and run")
    for i, d in enumerate(args.runs):
        own = [e["pred"][i] / e["own"][i] - 1 for e in jobs.values()]
        pooled = [e["pred"][i] / statistics.mean(e["runs"]) - 1 for e in jobs.values()]
        print(f"  {d}: own {per_run} repeats: {_score(own)}; against all {n * per_run}: {_score(pooled)}")
    signed = {k: statistics.mean(e["pred"]) / statistics.mean(e["runs"]) - 1 for k, e in jobs.items()}
    print(f"mean of the {n} runs' predictions against all {n * per_run} repeats: {_score(list(signed.values()))}")
    ranked = sorted(signed.items(), key=lambda kv: -abs(kv[1]))[:args.top]
    print("  " + ", ".join(f"{s}/{j} {100 * x:+.1f}" for (s, j), x in ranked))
    rel_sd = [statistics.stdev(e["runs"]) / statistics.mean(e["runs"]) for e in jobs.values()]
    print(f"standard error of a job's mean (median over jobs): {per_run} repeats "
          f"{100 * statistics.median(rel_sd) / per_run ** 0.5:.2f} %, {n * per_run} repeats "
          f"{100 * statistics.median(rel_sd) / (n * per_run) ** 0.5:.2f} %")


if __name__ == "__main__":
    main()
