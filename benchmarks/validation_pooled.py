"""Pool several saved validation runs into one accuracy table per physics model (docs/validation.md, first table).

Each argument is a ``fidelity.json`` written by ``ddlsched testbed validate`` (or the folder holding one). For every
model, with its calibrated parameters: the median, the 90th percentile and the worst (signed, with its job) of the
relative error predicted ÷ measured − 1 of per-iteration communication time and of JCT, over the jobs of all runs
pooled; then the same per run for the default physics and ``maxmin``.

    python benchmarks/validation_pooled.py benchmarks/validation_results/run19 benchmarks/validation_results/run20 \\
        benchmarks/validation_results/run21
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

# as simulate runs the default physics: the testbed replay passes the clock, so its plain ``phased_tcp`` row locks
# equal rings' phases; the engines do not (docs/physics.md §15)
DEFAULT_ROW = "phased_tcp[phase_lock=false]"
MODELS = (DEFAULT_ROW, "maxmin", "phased", "none", "flat", "sjf_bco", "abe", "sharing", "phased_tcp",
          "phased[exact,fairness=tcp,split]")


def stats(errs: list[tuple[float, str]]) -> tuple[float, float, tuple[float, str]]:
    """(median |e|, p90 |e| — the report's nearest-rank rule —, the largest |e| signed with its job)."""
    a = sorted(abs(e) for e, _ in errs)
    return statistics.median(a), a[min(len(a) - 1, round(0.9 * (len(a) - 1)))], max(errs, key=lambda x: abs(x[0]))


def fmt(s: tuple[float, float, tuple[float, str]]) -> str:
    med, p90, (worst, where) = s
    return f"{med * 100:.1f} / {p90 * 100:.1f} / {worst * 100:+.1f} % ({where})".replace("-", "−")


def errors(report: dict, model: str) -> tuple[list[tuple[float, str]], list[tuple[float, str]]]:
    comm, jct = [], []
    for j in report["jobs"]:
        p = j["predicted"].get(f"{model}/calibrated")
        if p is not None:
            where = f"{j['scenario']}/{j['job']}"
            comm.append((p["comm_err"], where))
            jct.append((p["jct_err"], where))
    return comm, jct


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
    print("| model | communication | JCT |")
    print("|---|---|---|")
    for m in MODELS:
        comm, jct = [], []
        for r in reports:
            c, j = errors(r, m)
            comm += c
            jct += j
        if comm:
            print(f"| `{m}` | {fmt(stats(comm))} | {fmt(stats(jct))} |")
    print()
    print("| run | model | communication | JCT |")
    print("|---|---|---|---|")
    for name, r in zip(a.reports, reports, strict=True):
        for m in (DEFAULT_ROW, "maxmin"):
            c, j = errors(r, m)
            if c:
                print(f"| {name} | `{m}` | {fmt(stats(c))} | {fmt(stats(j))} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
