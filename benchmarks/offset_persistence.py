"""How long does a start offset last? Two equal rings under TCP's uneven split (docs/physics.md §15, B2).

    PYTHONPATH=src python benchmarks/offset_persistence.py [--iterations 200] [--draws 64] [--sigma 0.1,0.25]

Phase locking (``phased_tcp`` with the caller's clock) assumes two rings of equal period keep their start offset
for their whole life: true under fair sharing (the offset is neutral), but TCP splits a shared link unevenly from
phase to phase (§14: a random weight exp(σ·z) per communication phase, σ fitted 0.1–0.25 on the testbed), which
moves the rings' phases. This replays the validation suite's phase pair — two 4-rings on the same NICs of tb32,
compute = the alone all-reduce m0 (duty ½), started aligned (offset 0) or opposite (offset ½ period) — with the
split for ``--iterations`` iterations, ``--draws`` seeded draws each, and prints the mean iteration (in m0) over
windows of iteration indices, beside the locked values (σ = 0: 3·m0 aligned, 2·m0 opposite) and the random-phase
fluid value of §11 ((1 + √2)·m0 ≈ 2.41·m0 with equal sharing). Where the windows reach the random-phase value,
the offset is forgotten; that iteration count is how far locking can be trusted.
"""

from __future__ import annotations

import argparse
import random
import statistics

from ddlsched.perf.base import Placement
from ddlsched.perf.phased_exact import PhaseClock, phased_job
from ddlsched.testbed.fabric import scaled_cluster
from ddlsched.testbed.scenarios import PHASE_GRAD_MB, ring, tb32
from ddlsched.workload.profiles import ModelProfile

WINDOWS = ((1, 5), (6, 20), (21, 50), (51, 100), (101, 200), (201, 500))


def iterations(sigma: float, offset: float, n: int, seed: int) -> list[float]:
    """Job a's iteration durations (s), a and b equal, b starting ``offset`` alone periods after a."""
    c = scaled_cluster(tb32(), nic_mbit=100.0)
    cap = [link.capacity_Bps for link in c.links]
    m0 = phased_job(c, Placement("x", ring([0, 1, 2, 3]), ModelProfile("x", PHASE_GRAD_MB, 1.0, 1, 0.0)),
                    cap, 0.0).alone_comm_s
    jobs = [phased_job(c, Placement(k, ring([0, 1, 2, 3], i), ModelProfile(k, PHASE_GRAD_MB, 1e3 * m0, 1, 0.0)),
                       cap, 0.0) for i, k in enumerate("ab")]
    clock = PhaseClock(cap, 1.5, 0.0, split_noise=sigma, rng=random.Random(f"persist-{seed}") if sigma else None)
    clock.add(jobs[0], 0.0)
    clock.add(jobs[1], offset * 2 * m0)
    now, last, out = 0.0, 0.0, []
    while len(out) < n:
        dt, done = clock.step()
        now += dt
        if "a" in done:
            out.append((now - last) / m0)
            last = now
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--draws", type=int, default=64)
    ap.add_argument("--sigma", default="0.1,0.25")
    a = ap.parse_args()
    wins = [w for w in WINDOWS if w[0] <= a.iterations]
    print(f"mean iteration of ring a in units of m0 ({a.draws} draws; locked: aligned 3, opposite 2; "
          f"random phases (§11, equal sharing): {1 + 2 ** 0.5:.2f})")
    print("| σ | start | " + " | ".join(f"iterations {lo}–{min(hi, a.iterations)}" for lo, hi in wins) + " |")
    print("|---|---|" + "---:|" * len(wins))
    for sigma in [0.0, *(float(x) for x in a.sigma.split(","))]:
        for offset, name in ((0.0, "aligned"), (0.5, "opposite")):
            runs = [iterations(sigma, offset, a.iterations, d) for d in range(a.draws if sigma else 1)]
            cells = [statistics.mean(x for r in runs for x in r[lo - 1:hi]) for lo, hi in wins]
            print(f"| {sigma:g} | {name} | " + " | ".join(f"{x:.2f}" for x in cells) + " |")


if __name__ == "__main__":
    main()
