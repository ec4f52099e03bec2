"""Derive the pairwise GPU-sharing slowdown table ``src/ddlsched/data/profiles/interference.csv``.

Source: Gavel ``simulation_throughputs.json`` (MIT, stanford-futuredata/gavel @ c4fa400), V100, scale factor 1.
For a pair entry ``d[A][B] = [thr_A_with_B, thr_B_with_A]``: ξ_A = d[A]["null"] / thr_A_with_B (slowdown of A
when it shares one GPU with B). Entries with a zero throughput (the pair did not fit) are left out.
Our catalog models map to Gavel job types below; ``proxy=1`` marks a stand-in of a similar kind, not the
same model. Usage: ``python scripts/derive_interference.py /work/shared/profiles/gavel/simulation_throughputs.json``
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

# catalog model -> (Gavel job type, is a proxy)
MAPPING: dict[str, tuple[str, int]] = {
    "resnet18": ("ResNet-18 (batch size 128)", 0),
    "resnet50": ("ResNet-50 (batch size 16)", 0),
    "transformer": ("Transformer (batch size 64)", 0),
    "lstm": ("LM (batch size 80)", 0),
    "recommendation": ("Recommendation (batch size 2048)", 0),
    "cyclegan": ("CycleGAN", 0),
    "a3c": ("A3C", 0),
    "dqn": ("A3C", 1),
    "a2c": ("A3C", 1),
    "bert": ("Transformer (batch size 16)", 1),
    "gpt2": ("Transformer (batch size 16)", 1),
}


def main(src: str, dst: str = "src/ddlsched/data/profiles/interference.csv") -> None:
    d = json.loads(Path(src).read_text())["v100"]
    rows = []
    for a, (ga, pa) in MAPPING.items():
        for b, (gb, pb) in MAPPING.items():
            ka, kb = f"('{ga}', 1)", f"('{gb}', 1)"
            pair = d[ka].get(kb)
            if not pair or pair[0] <= 0:
                continue
            xi = d[ka]["null"] / pair[0]
            rows.append((a, b, round(max(1.0, xi), 4), max(pa, pb), f"gavel v100 {ga} | {gb}"))
    with open(dst, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["model", "partner", "xi", "proxy", "source"])
        w.writerows(rows)
    print(f"wrote {len(rows)} rows to {dst}")


if __name__ == "__main__":
    main(*sys.argv[1:])
