"""Regenerate src/ddlsched/data/profiles/gpu_speeds/{gavel_1gpu_throughputs,sia_seed_1gpu_step_times}.csv.

Usage: python scripts/extract_gpu_speeds.py /work/shared/profiles
Reads Gavel's scheduler/simulation_throughputs.json (MIT) and Sia's seed_1gpu/*.csv; keeps only the isolated
1-GPU numbers that ddlsched.workload.gpu_speeds uses.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src" / "ddlsched" / "data" / "profiles" / "gpu_speeds"


def main(src: Path) -> None:
    d = json.loads((src / "gavel" / "simulation_throughputs.json").read_text())
    rows = []
    for key in d["v100"]:
        m = re.fullmatch(r"\('(.+)', (\d+)\)", key)
        if not m or m.group(2) != "1":
            continue
        rows.append([m.group(1)] + [repr(float(d[t][key]["null"])) for t in ("k80", "p100", "v100")])
    with (OUT / "gavel_1gpu_throughputs.csv").open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["job_type", "k80_steps_per_s", "p100_steps_per_s", "v100_steps_per_s"])
        w.writerows(rows)
    with (OUT / "sia_seed_1gpu_step_times.csv").open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["job", "gpu_type", "local_bsz", "step_time_s"])
        for p in sorted((src / "sia_pollux" / "seed_1gpu").glob("*.csv")):
            with p.open() as g:
                for r in csv.DictReader(g):
                    if r["gpu_type"] in ("t4", "v100"):
                        w.writerow([p.stem, r["gpu_type"], int(r["local_bsz"]), r["step_time"]])


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "/work/shared/profiles"))
