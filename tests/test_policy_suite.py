"""benchmarks/policy_suite.py --quick: runs, writes complete outputs, ranks every policy of the cell and judges
hindsight's targets (whatever the verdict)."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from benchmark_module import load as load_benchmark


@pytest.mark.slow
def test_quick_suite_writes_ranked_cells(tmp_path: Path) -> None:
    suite = load_benchmark("policy_suite")
    assert suite.main(["--quick", "--out", str(tmp_path)]) == 0
    rows = list(csv.DictReader((tmp_path / "cells.csv").open()))
    assert {r["policy"] for r in rows} == set(suite.QUICK_POLICIES)
    assert sorted(int(r["rank"]) for r in rows) == list(range(1, len(rows) + 1))  # every policy ran and is ranked
    assert all(r["seeds"] == "2" and math.isfinite(float(r["avg_jct_s"])) for r in rows)
    flags = {r["policy"]: r["clairvoyant"] for r in rows}
    assert flags["hindsight"] == "False" and flags["srtf+consolidated"] == "True"
    ours = next(r for r in rows if r["policy"] == "hindsight")
    assert ours["target"].startswith(("MET", "missed")) and "vs best clairvoyant" in ours["target"]
    md = (tmp_path / "suite.md").read_text()
    assert "## Targets cell by cell" in md and "hindsight-oracle" in md
    assert (tmp_path / "suite.png").stat().st_size > 0
    # resumed: a second call reruns nothing and writes the same table
    before = (tmp_path / "runs.jsonl").read_text()
    assert suite.main(["--quick", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "runs.jsonl").read_text() == before


def test_bad_flags_exit_2(tmp_path: Path) -> None:
    suite = load_benchmark("policy_suite")
    for argv in (["--loads", "x"], ["--loads", "3"], ["--policies", "nope"], ["--slices", "nope"]):
        with pytest.raises(SystemExit) as e:
            suite.main([*argv, "--out", str(tmp_path)])
        assert e.value.code == 2
