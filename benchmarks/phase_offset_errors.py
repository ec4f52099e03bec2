"""Where `phased_tcp`'s validation error comes from: per run, per scenario and per job pair (docs/validation.md,
"Where the error comes from").

    PYTHONPATH=src python benchmarks/phase_offset_errors.py --git        # every recorded extended-suite report
    PYTHONPATH=src python benchmarks/phase_offset_errors.py REPORT.json [REPORT.json ...]

A report is a saved fidelity report (``results/validation/fidelity.json`` or ``docs/validation.json``); ``--git``
takes every version of ``docs/validation.json`` in this repository's history that holds the 41-job extended suite
(one per recorded ``make validate`` run that was published). Each report is re-scored as ``ddlsched testbed
rescore`` does (every scenario replayed once from its jobs' mean measured starts, calibrated parameters), with:

* ``random``: ``phased_tcp`` with random relative phases everywhere (``phase_lock=False``, the model before
  phase locking);
* ``locked``: ``phased_tcp`` with its phase lock (components of 2–4 rings of equal period replayed from their
  offsets) but without TCP's uneven split in it (``split_noise=0``): what the offsets alone explain;
* ``exact``: ``phased[exact,fairness=tcp]``, every phase of every iteration (the reference that knows offsets);
* ``default``: ``phased_tcp`` as shipped, the lock replayed with the uneven split (σ from the report's calibration
  where it has one, run 16 only; else the default σ).

Printed: per run, median / p90 / worst |error| of communication time and JCT for each; then, pooled over the runs,
per job of every scenario with contention: its partners on a shared link, whether their alone periods are equal,
the start offset in alone periods (circular, 0 = aligned, 0.5 = opposite), and the mean signed error of each
model over the runs; finally, per model, the job-runs over 15 % and how many have a partner of equal period.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from ddlsched.cli.testbed import _scaled
from ddlsched.perf.base import Placement
from ddlsched.perf.phase_lock import alone_period
from ddlsched.perf.phased_exact import phased_job
from ddlsched.testbed.calibrate import calibrated_cluster
from ddlsched.testbed.predict import JobRun, predict
from ddlsched.testbed.scenarios import VALIDATION

MODELS: dict[str, tuple[str, dict[str, Any]]] = {
    "random": ("phased_tcp", {"phase_lock": False}),
    "locked": ("phased_tcp", {"split_noise": 0.0}),
    "exact": ("phased", {"exact": True, "fairness": "tcp"}),
    "default": ("phased_tcp", {}),
}


def git_reports() -> list[tuple[str, dict[str, Any]]]:
    """Every version of docs/validation.json with the 41-job extended suite, oldest first, named by commit."""
    commits = subprocess.run(["git", "log", "--format=%h %cs", "--", "docs/validation.json"], check=True,
                             capture_output=True, text=True).stdout.split("\n")
    out = []
    for line in reversed([c for c in commits if c.strip()]):
        commit, date = line.split()
        report = json.loads(subprocess.run(["git", "show", f"{commit}:docs/validation.json"], check=True,
                                           capture_output=True, text=True).stdout)
        if len(report.get("jobs", [])) == 41:
            out.append((f"{commit} ({date})", report))
    return out


def score(errs: list[float], where: list[str] | None = None) -> str:
    a = np.abs(errs)
    i = int(np.argmax(a))
    at = f" ({where[i]})" if where else ""
    return f"{100 * np.median(a):4.1f} / {100 * np.percentile(a, 90):4.1f} / {100 * errs[i]:+5.1f}{at}"


def pairs(cluster: Any, cal: dict[str, Any] | None, jobs: tuple[JobRun, ...],
          starts: dict[str, float]) -> dict[str, list[str]]:
    """Per job: its partners on a shared link, each as 'b (equal T, offset 0.50)' or 'b (T ×1.3)'."""
    eff = float((cal or {}).get("common", {}).get("efficiency", 1.0))
    cap = [link.capacity_Bps * eff for link in cluster.links]
    pj = {j.job_id: phased_job(cluster, Placement(j.job_id, j.gpus, j.profile()), cap, 0.0) for j in jobs}
    out: dict[str, list[str]] = defaultdict(list)
    for a in pj:
        for b in pj:
            if a == b or not set(pj[a].use) & set(pj[b].use):
                continue
            ta, tb = alone_period(pj[a]), alone_period(pj[b])
            if abs(ta - tb) <= 1e-6 * ta:
                x = (abs(starts[b] - starts[a]) / ta) % 1.0
                out[a].append(f"{b} (equal T, offset {min(x, 1 - x):.2f})")
            else:
                out[a].append(f"{b} (T ×{tb / ta:.2f})")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("reports", nargs="*", type=Path, help="saved fidelity reports")
    ap.add_argument("--git", action="store_true", help="every recorded extended-suite docs/validation.json")
    args = ap.parse_args()
    reports = [(str(p), json.loads(p.read_text())) for p in args.reports]
    if args.git:
        reports += git_reports()
    if not reports:
        ap.error("give reports or --git")
    by_name = {s.name: s for s in VALIDATION}
    pooled: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    partners: dict[str, list[str]] = {}
    print("per run: communication median / p90 / worst | JCT median / p90 / worst (%, calibrated)")
    print(f"| run | {' | '.join(f'{m} comm. | {m} JCT' for m in MODELS)} |")
    print(f"|---|{'---|---|' * len(MODELS)}")
    for name, report in reports:
        tb = report.get("testbed") or {}
        sc, _ = _scaled(tb.get("spec", "tb32"), tb.get("nic_mbit", 100.0), None)
        cal = report.get("calibration") or None
        cluster = calibrated_cluster(sc, cal)
        rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in report["jobs"]:
            rows[r["scenario"]].append(r)
        errs: dict[str, dict[str, list[float]]] = {m: {"comm": [], "jct": []} for m in MODELS}
        where: list[str] = []
        for scen, saved in rows.items():
            starts = {r["job"]: r["start_s"] for r in saved}
            sched = tuple(JobRun(j.job_id, j.gpus, j.grad_mb, j.iters, j.compute_ms, starts[j.job_id], j.overlap)
                          for j in by_name[scen].jobs)
            for jid, text in pairs(cluster, cal, sched, starts).items():
                partners.setdefault(f"{scen}/{jid}", text)
            where += [f"{scen}/{r['job']}" for r in saved]
            for m, (model, extra) in MODELS.items():
                pred = predict(cluster, sched, model, cal, extra=extra)
                for r in saved:
                    ce = pred[r["job"]].comm_s / r["measured"]["comm_s"] - 1
                    je = pred[r["job"]].jct_s / r["measured"]["jct_s"] - 1
                    errs[m]["comm"].append(ce)
                    errs[m]["jct"].append(je)
                    pooled[f"{scen}/{r['job']}"][m].append(ce)
        cells = [f"{score(errs[m]['comm'], where)} | {score(errs[m]['jct'], where)}" for m in MODELS]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()
    print(f"pooled over {len(reports)} runs: mean signed communication error per job (jobs with a partner)")
    print(f"| job | partners on a shared link | {' | '.join(MODELS)} |")
    print(f"|---|---|{'---:|' * len(MODELS)}")
    for job in sorted(pooled, key=lambda k: -abs(statistics.mean(pooled[k]["random"]))):
        if job not in partners:
            continue
        means = {m: statistics.mean(pooled[job][m]) for m in MODELS}
        print(f"| {job} | {', '.join(partners[job])} | " + " | ".join(f"{100 * means[m]:+.1f} %" for m in MODELS)
              + " |")
    print()
    for m in MODELS:
        big = [(job, e) for job in pooled for e in pooled[job][m] if abs(e) > 0.15]
        equal = sum(any("equal T" in p for p in partners.get(job, [])) for job, _ in big)
        print(f"{m}: {len(big)} job-runs over 15 %, {equal} of them with a partner of equal period")
    for m in MODELS:
        allerr = [e for job in pooled for e in pooled[job][m]]
        print(f"{m}: all runs pooled, communication median / p90 / worst {score(allerr)} ({len(allerr)} job-runs)")


if __name__ == "__main__":
    main()
