"""Do two equal rings that start their communication together stay in phase? (docs/validation.md, "Pooled over
runs 13–15").

    python benchmarks/phase_drift.py RUN_DIR [RUN_DIR ...] [--scenarios offset0,overlap0.3,nic2,ratio2]

Each RUN_DIR is a ``results/validation`` directory written by ``make validate``. For every two-job scenario named,
every repeat in every run: the instant each ring starts its all-reduce in iteration i (the worker logs each
iteration's start and compute time; communication follows compute), and the mean over the repeats of
|b's start − a's start| per iteration, beside a's mean communication time per iteration. The phase-level model
splits a shared link exactly equally, so two equal rings that start together stay together in it (offset 0 in
every iteration); a growing measured offset is TCP's uneven split moving them apart.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def _iterations(path: Path) -> list[dict[str, float]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, help="results/validation directories of make validate runs")
    ap.add_argument("--scenarios", default="offset0,overlap0.3,nic2,ratio2", help="two-job scenarios (a, b)")
    args = ap.parse_args()
    for sc in args.scenarios.split(","):
        offsets: list[list[float]] = []
        comm: list[float] = []
        for run in args.runs:
            for d in sorted((run / "runs").glob(f"{sc}*")):
                if d.name != sc and not d.name.startswith(f"{sc}.r"):
                    continue  # e.g. offset0.25 when asking for offset0
                a, b = _iterations(d / "a.jsonl"), _iterations(d / "b.jsonl")
                offsets.append([abs((y["start"] + y["compute_s"]) - (x["start"] + x["compute_s"]))
                                for x, y in zip(a, b, strict=True)])
                comm += [x["comm_s"] for x in a]
        if not offsets:
            print(f"{sc}: no runs found")
            continue
        n = min(map(len, offsets))
        mean_off = [statistics.mean(o[i] for o in offsets) for i in range(n)]
        print(f"{sc}: {len(offsets)} repeats; mean |offset of the comm starts| per iteration: "
              + ", ".join(f"{x:.3f}" for x in mean_off) + f" s; a's comm per iteration {statistics.mean(comm):.2f} s")


if __name__ == "__main__":
    main()
