"""Pool several saved validation runs into one accuracy table per physics model (docs/validation.md, first table).

Each argument is a ``fidelity.json`` written by ``ddlsched testbed validate`` (or the folder holding one). For every
model, with its calibrated parameters: the median, the 90th percentile and the worst (signed, with its job) of the
relative error predicted ÷ measured − 1 of per-iteration communication time and of JCT, over the jobs of all runs
pooled (``ddlsched.testbed.validate.error_summary``, the report's own definitions); then the same per run for the
default physics and ``maxmin``. A pooled job is named ``run:scenario/job``.

    python benchmarks/validation_pooled.py benchmarks/validation_results/run19 benchmarks/validation_results/run20 \\
        benchmarks/validation_results/run21
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ddlsched.testbed.validate import error_summary

# the default physics as simulate runs it: the replay, like the engines, passes the clock, so equal rings are locked
# to their offsets for their first iterations (with TCP's uneven split), then random (docs/physics.md §15); its two
# limits and the lock without the split follow
DEFAULT_ROW = "phased_tcp"
MODELS = (DEFAULT_ROW, "maxmin", "phased", "none", "flat", "sjf_bco", "abe", "sharing",
          "phased_tcp[phase_lock=false]", "phased_tcp[lock_iterations=1e9]", "phased_tcp[split_noise=0]",
          "phased[exact,fairness=tcp,split]")


def jobs_of(report: dict, model: str, run: str) -> list[dict]:
    """The report's job rows that scored ``model`` (calibrated), each named with its run (``run:scenario``)."""
    key = f"{model}/calibrated"
    return [{**j, "scenario": f"{run}:{j['scenario']}"} for j in report["jobs"] if key in j["predicted"]]


def fmt(e: dict, metric: str) -> str:
    """median / p90 / worst (signed, with its job), %, as ``error_summary`` defines them."""
    return (f"{e[metric + '_median'] * 100:.1f} / {e[metric + '_p90'] * 100:.1f} / "
            f"{e[metric + '_signed_worst'] * 100:+.1f} % ({e[metric + '_worst_at']})").replace("-", "−")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("reports", nargs="+", help="fidelity.json files or the folders holding them")
    a = ap.parse_args(argv)
    reports = []
    for r in a.reports:
        p = Path(r) / "fidelity.json" if Path(r).is_dir() else Path(r)
        try:
            reports.append(json.loads(p.read_text()))
        except (OSError, ValueError) as e:
            ap.error(f"{p}: {e}")
    print(f"pooled over {len(reports)} run(s), {sum(len(r['jobs']) for r in reports)} job-runs; calibrated; "
          "median / p90 / worst")
    names = [Path(r).name for r in a.reports]
    print("| model | communication | JCT |")
    print("|---|---|---|")
    for m in MODELS:
        rows = [j for name, r in zip(names, reports, strict=True) for j in jobs_of(r, m, name)]
        if rows:
            e = error_summary(rows, f"{m}/calibrated")
            print(f"| `{m}` | {fmt(e, 'comm')} | {fmt(e, 'jct')} |")
    print()
    print("| run | model | communication | JCT |")
    print("|---|---|---|---|")
    for name, r in zip(names, reports, strict=True):
        for m in (DEFAULT_ROW, "maxmin"):
            rows = jobs_of(r, m, name)
            if rows:
                e = error_summary(rows, f"{m}/calibrated")
                print(f"| {name} | `{m}` | {fmt(e, 'comm')} | {fmt(e, 'jct')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
