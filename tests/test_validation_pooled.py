"""benchmarks/validation_pooled.py: the first table of docs/validation.md, pooled from the saved runs 19-21."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmark_module import load as load_benchmark

RUNS = Path(__file__).resolve().parents[1] / "benchmarks" / "validation_results"


def test_one_run_pooled_alone_gives_that_reports_own_figures() -> None:
    """Pooling a single run must give back the report's own median, p90 and worst for every model it scored."""
    pooled = load_benchmark("validation_pooled")
    report = json.loads((RUNS / "run21" / "fidelity.json").read_text())
    for row in (r for r in report["summary"] if r["variant"] == "calibrated"):
        comm, jct = pooled.errors(report, row["model"])
        for errs, kind in ((comm, "comm"), (jct, "jct")):
            med, p90, (worst, where) = pooled.stats(errs)
            assert med == pytest.approx(row[f"{kind}_median"], abs=1e-12), row["model"]
            assert p90 == pytest.approx(row[f"{kind}_p90"], abs=1e-12), row["model"]
            assert worst == pytest.approx(row[f"{kind}_signed_worst"], abs=1e-12), row["model"]
            assert where == row[f"{kind}_worst_at"], row["model"]


def test_pooled_table_of_the_three_runs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pooled = load_benchmark("validation_pooled")
    assert pooled.main([str(RUNS / f"run{n}") for n in (19, 20, 21)]) == 0
    out = capsys.readouterr().out
    assert "123 job-runs" in out
    default = next(line for line in out.splitlines() if line.startswith("| `phased_tcp[phase_lock=false]`"))
    assert default.startswith("| `phased_tcp[phase_lock=false]` | 4.8 / 23.9 / +31.5 % (offset0.5/a) |")
    with pytest.raises(SystemExit):
        pooled.main([str(tmp_path / "missing")])
