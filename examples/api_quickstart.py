"""The Python API in one page: simulate two policies on a small slice of a bundled trace, compare them, write
one run to disk and read it back. Run it from the repository root: ``python examples/api_quickstart.py [OUT]``.
(The test suite executes this script.)"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import ddlsched

TRACE = Path(__file__).resolve().parents[1] / "data" / "traces" / "muri" / "trace1.csv"


def main(out: Path) -> None:
    cluster = ddlsched.build_cluster(racks=4, servers_per_rack=4, gpus_per_server=8, nic_gbps=25,
                                     oversubscription=2)
    print(cluster.describe())
    results = {}
    for policy in ("fifo+consolidated", "tiresias+consolidated"):
        r = ddlsched.simulate(TRACE, cluster, policy, max_jobs=200, seed=1)
        s = r.summary
        results[policy] = r
        print(f"{policy:24s} jobs {s['jobs_completed']}/{s['jobs']}  avg JCT {s['avg_jct_s'] / 3600:7.2f} h  "
              f"comm overhead {s['comm_overhead_pct']:5.1f} %  offered load {s['offered_load']:.2f}")
    best = min(results, key=lambda p: results[p].summary["avg_jct_s"])
    print(f"shortest average JCT: {best}")
    results[best].write(out / "best")
    back = ddlsched.load_results(out / "best")
    print(f"read back {len(back)} run ({back.kind}): {back.runs[0].summary['policy']}")
    rows = back.records_df()
    print(f"records: {len(rows)} rows")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="ddlsched-example-")))
