"""How much the uneven split's Monte-Carlo mean moves with its seeds (docs/physics.md §14).

    python benchmarks/split_draws.py [DRAWS]

For a few suite scenarios and σ = 0.1, 0.2 (γ = 1.5, κ = 0.7, e = 0.96 on the scaled tb32): each job's mean
communication time over DRAWS replays (default ``SPLIT_DRAWS``) for four disjoint sets of seeds, and the largest
relative difference between a set and the first.
"""

from __future__ import annotations

import random
import statistics
import sys

from ddlsched.testbed.fabric import scaled_cluster
from ddlsched.testbed.phase_replay import SPLIT_DRAWS, _replay
from ddlsched.testbed.scenarios import CALIBRATION, VALIDATION, tb32


def main() -> None:
    draws = int(sys.argv[1]) if len(sys.argv) > 1 else SPLIT_DRAWS
    sc = scaled_cluster(tb32(), nic_mbit=100)
    scen = {s.name: s for s in (*VALIDATION, *CALIBRATION)}
    for name in ("cal-sync", "offset0", "nic4", "uplink", "staggered", "partial"):
        jobs = list(scen[name].jobs)
        for sigma in (0.1, 0.2):
            sets = []
            for base in range(0, 4 * draws, draws):
                runs = [_replay(sc, jobs, 0.96, 0.0, "tcp", 1.5, 0.7, sigma, random.Random(f"split-{d}"))
                        for d in range(base, base + draws)]
                sets.append({j.job_id: statistics.mean(r[j.job_id].comm_s for r in runs) for j in jobs})
            worst = max(abs(s[k] / sets[0][k] - 1) for s in sets[1:] for k in sets[0])
            print(f"{name} σ={sigma}: a job's {draws}-draw mean differs by at most {100 * worst:.2f} % between "
                  "4 disjoint seed sets")


if __name__ == "__main__":
    main()
