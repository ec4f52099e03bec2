"""How often a placement splits jobs that would fit in one server (or one rack).

    python benchmarks/placement_split.py [--jobs 10000] [--cluster philly512] [--policy fifo+consolidated]

Prints, over the completed jobs: the share of jobs that fit in one server but ran on several servers, the share of
jobs that fit in one rack but ran over several racks (from the records' servers / racks columns), and the median and
p95 of run time ÷ ideal run time for the split and the unsplit jobs.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import ddlsched

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "data" / "traces" / "philly_pollux" / "philly.csv"


def shares(records: list[dict], cluster: object) -> dict[str, float]:
    per_server = cluster.max_gpus_per_server  # type: ignore[attr-defined]
    per_rack = max(sum(len(cluster.server_gpus[s]) for s in rs) for rs in cluster.rack_servers)  # type: ignore[attr-defined]
    fit_server = [r for r in records if 1 < r["num_gpus"] <= per_server]
    fit_rack = [r for r in records if 1 < r["num_gpus"] <= per_rack]
    split_s = [r for r in fit_server if r["servers"] > 1]
    split_r = [r for r in fit_rack if r["racks"] > 1]

    def slow(rs: list[dict]) -> str:
        xs = sorted(r["run_s"] / r["ideal_run_s"] for r in rs if r["ideal_run_s"] > 0)
        if not xs:
            return "-"
        return f"median {statistics.median(xs):.2f}×, p95 {xs[int(0.95 * (len(xs) - 1))]:.2f}×"

    return {"fit_one_server": len(fit_server), "split_servers": len(split_s),
            "fit_one_rack": len(fit_rack), "split_racks": len(split_r),
            "slowdown_split": slow(split_s), "slowdown_unsplit": slow([r for r in fit_server if r["servers"] <= 1])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=10000)
    ap.add_argument("--cluster", default="philly512")
    ap.add_argument("--policy", default="fifo+consolidated")
    a = ap.parse_args()
    r = ddlsched.simulate(TRACE, a.cluster, a.policy, max_jobs=a.jobs)
    c = ddlsched.load_cluster(a.cluster)
    s = shares(r.records, c)
    print(f"{a.policy} on {a.cluster}, first {a.jobs} jobs: {r.summary['jobs_completed']} completed, offered load "
          f"{r.summary['offered_load']:.2f}, avg queueing {r.summary['avg_queueing_s'] / 3600:.1f} h")
    print(f"  2+-GPU jobs that fit one server: {s['fit_one_server']}, split over servers: {s['split_servers']} "
          f"({100 * s['split_servers'] / max(1, s['fit_one_server']):.1f} %)")
    print(f"  2+-GPU jobs that fit one rack: {s['fit_one_rack']}, split over racks: {s['split_racks']} "
          f"({100 * s['split_racks'] / max(1, s['fit_one_rack']):.1f} %)")
    print(f"  run ÷ ideal: split {s['slowdown_split']}; one server {s['slowdown_unsplit']}")


if __name__ == "__main__":
    main()
