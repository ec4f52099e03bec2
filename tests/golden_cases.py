"""Golden cases: one small trace × one or two policies per execution model, compared byte for byte.

Regenerate (only in a commit that says why the numbers moved)::

    python tests/golden_cases.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).resolve().parent / "golden"
PHILLY = "data/traces/philly_pollux/philly.csv"  # relative to the repository root (summaries name the trace)
MURI = "data/traces/muri/trace1.csv"
FILES = ("records.csv", "summary.json", "timeseries.csv")

# name → CellParams fields (the unit shared by ``simulate`` and ``sweep``)
CASES: dict[str, dict] = {
    "fluid_fifo": {"policy": "fifo+consolidated", "cluster": "rack256", "trace": PHILLY, "max_jobs": 400,
                   "load_scale": 20.0},
    "fluid_tiresias": {"policy": "tiresias+consolidated", "cluster": "rack256", "trace": PHILLY, "max_jobs": 400,
                       "load_scale": 20.0},
    "fluid_delay": {"policy": "delay-sched", "cluster": "rack256", "trace": PHILLY, "max_jobs": 300,
                    "load_scale": 20.0},
    "fluid_sharing": {"policy": "sjf-bsbf", "cluster": "n8g8", "trace": MURI, "max_jobs": 120},
    "fluid_sjfbco": {"policy": "sjf-bco", "cluster": "wang2020", "trace": MURI, "max_jobs": 30},
    "tasklevel_adasrsf": {"policy": "ada-srsf", "cluster": "wang2020", "trace": MURI, "max_jobs": 30},
    "tasklevel_srsf1": {"policy": "srsf1", "cluster": "wang2020", "trace": MURI, "max_jobs": 30},
    "hare_hlas": {"policy": "hlas", "cluster": "hetero", "trace": PHILLY, "max_jobs": 30},
    "hare_gavel": {"policy": "gavel-het", "cluster": "hetero", "trace": PHILLY, "max_jobs": 30},
}


def run_case(name: str) -> dict[str, bytes]:
    import contextlib

    from ddlsched.experiments.runner import CellParams, run_cell

    with contextlib.chdir(ROOT):
        out = run_cell(CellParams(**CASES[name]))
    if out.error:
        raise RuntimeError(f"golden case {name} failed: {out.error}")
    return {f: out.files[f] for f in FILES if f in out.files}


def regenerate(names: list[str]) -> None:
    for name in names:
        d = GOLDEN / name
        d.mkdir(parents=True, exist_ok=True)
        for old in d.iterdir():
            old.unlink()
        for f, data in run_case(name).items():
            (d / f).write_bytes(data)
        print(f"wrote {d}")


if __name__ == "__main__":
    regenerate(sys.argv[1:] or list(CASES))
