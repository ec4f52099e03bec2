"""The 2-ring of ``staggered/c`` on the 5×-iteration validation runs: measured communication per iteration beside
what ``phased_tcp`` (random phases, calibrated) predicts per phase (docs/validation.md, "Longer jobs").

    python benchmarks/staggered_switch.py                                  # the two saved long runs
    python benchmarks/staggered_switch.py benchmarks/validation_long_results/run2

No root, no testbed: it reads the saved records (``runs/staggered/run.json``) and each run's ``calibration.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ddlsched.testbed.calibrate import calibrated_cluster
from ddlsched.testbed.fabric import scaled_cluster
from ddlsched.testbed.predict import predict
from ddlsched.testbed.scenarios import VALIDATION, longer, tb32
from ddlsched.testbed.validate import load_validation_runs

ROOT = Path(__file__).resolve().parents[1]
RUNS = [ROOT / "benchmarks" / "validation_long_results" / r for r in ("run1", "run2")]
NIC_MBIT = 100.0  # the testbed's default emulated rate of the fastest NIC (``ddlsched testbed validate``)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="*", type=Path, default=RUNS, help="saved 5×-iteration validation runs")
    args = ap.parse_args(argv)
    scenario = [s for s in longer(VALIDATION, 5) if s.name == "staggered"]
    for base in args.runs:
        cal = json.loads((base / "calibration.json").read_text())
        cluster = calibrated_cluster(scaled_cluster(tb32(), scale=None, nic_mbit=NIC_MBIT), cal)
        for result in load_validation_runs(scenario, base / "runs"):
            run = result.run
            pred = predict(cluster, run.as_executed(result.scenario.jobs), "phased_tcp", cal,
                           extra={"phase_lock": False})
            t0 = min(m.start_s for m in run.jobs.values())
            print(f"{base.name}:")
            for jid, m in sorted(run.jobs.items()):
                its = " ".join(f"{m.start_s - t0 + sum(i['end'] - i['start'] for i in m.iterations[:k]):.0f}s:"
                               f"{it['comm_s']:.2f}" for k, it in enumerate(m.iterations))
                phases = ", ".join(f"from {t:.1f}s {c:.2f}" for t, c in pred[jid].phases)
                print(f"  {jid} measured (start:comm s) {its}")
                print(f"  {jid} phased_tcp per phase        {phases}; mean {pred[jid].comm_s:.2f} against "
                      f"{m.comm_s:.2f} measured")


if __name__ == "__main__":
    main()
