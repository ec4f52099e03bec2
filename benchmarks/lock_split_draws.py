"""How many replays the default physics' locked replay needs with TCP's uneven split (docs/physics.md §15).

    PYTHONPATH=src python benchmarks/lock_split_draws.py benchmarks/validation_results/run2[2-7]
    PYTHONPATH=src python benchmarks/lock_split_draws.py --draws 8,32,128 RUN_DIR [RUN_DIR ...]

Each RUN_DIR is a saved ``make validate`` output (``runs/`` and ``calibration.json``, as kept in
``benchmarks/validation_results/runNN``; a folder under ``validation_long_results`` is read at 5× iterations).
Every run's jobs are scored by ``ddlsched testbed validate --reuse``'s own ``evaluate`` (each repeat's executed
schedule, calibrated, σ from the calibration) for ``phased_tcp`` with the locked replay averaged over each number of
draws
(``phase_lock.SPLIT_DRAWS``, seeds ``split-0`` …). Printed per run and per number of draws: communication and JCT
median and worst |error| (%), with the worst job, and the seconds the predictions took. The shipped default is
``SPLIT_DRAWS``; the differences between the rows are the sampling error of the mean.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from ddlsched.cli.testbed import _scaled
from ddlsched.perf import phase_lock
from ddlsched.testbed.calibrate import load_calibration
from ddlsched.testbed.scenarios import VALIDATION, longer
from ddlsched.testbed.validate import evaluate, load_validation_runs


def errors(run_dir: Path) -> dict[str, tuple[float, float]]:
    """Per job: (communication error, JCT error) of the default, calibrated, the repeats averaged."""
    cal = load_calibration(run_dir / "calibration.json")
    scale = 5 if "long" in str(run_dir.resolve()) else 1
    results = load_validation_runs(longer(VALIDATION, scale), run_dir / "runs")
    report = evaluate(_scaled("tb32", 100.0, None)[0], results, cal, labels=["phased_tcp"], kinds=["calibrated"])
    return {f"{j['scenario']}/{j['job']}": (j["predicted"]["phased_tcp/calibrated"]["comm_err"],
                                            j["predicted"]["phased_tcp/calibrated"]["jct_err"])
            for j in report["jobs"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--draws", default="8,16,32,64,128")
    args = ap.parse_args()
    print(f"shipped: SPLIT_DRAWS = {phase_lock.SPLIT_DRAWS}")
    print("| run | σ | draws | comm. median | comm. worst | JCT median | JCT worst | s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    shipped = phase_lock.SPLIT_DRAWS
    try:
        for run in args.runs:
            sigma = load_calibration(run / "calibration.json").get("tcp", {}).get("split_noise", 0.0)
            for n in (int(x) for x in args.draws.split(",")):
                phase_lock.SPLIT_DRAWS = n
                t0 = time.perf_counter()
                e = errors(run)
                dt = time.perf_counter() - t0
                cells = []
                for i in (0, 1):
                    worst = max(e, key=lambda k: abs(e[k][i]))
                    cells += [f"{100 * statistics.median(abs(v[i]) for v in e.values()):.2f}",
                              f"{100 * e[worst][i]:+.1f} ({worst})"]
                print(f"| {run.name} | {sigma:g} | {n} | " + " | ".join(cells) + f" | {dt:.1f} |", flush=True)
    finally:
        phase_lock.SPLIT_DRAWS = shipped


if __name__ == "__main__":
    main()
