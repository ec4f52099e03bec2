"""benchmarks/validation_pooled.py: the first table of docs/validation.md, pooled from saved runs (19-21, 25-27)."""

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
        rows = pooled.jobs_of(report, row["model"], "run21")
        assert len(rows) == len(report["jobs"]), row["model"]
        got = pooled.error_summary(rows, f"{row['model']}/calibrated")
        for k, v in row.items():
            if k.endswith("_worst_at"):
                assert got[k] == f"run21:{v}", row["model"]
            elif k not in ("model", "variant"):
                assert got[k] == pytest.approx(v, abs=1e-12), (row["model"], k)


def test_pooled_table_of_the_three_runs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pooled = load_benchmark("validation_pooled")
    assert pooled.main([str(RUNS / f"run{n}") for n in (19, 20, 21)]) == 0
    out = capsys.readouterr().out
    assert "123 job-runs" in out
    default = next(line for line in out.splitlines() if line.startswith("| `phased_tcp` |"))
    assert default.startswith("| `phased_tcp` | 1.8 / 5.6 / +9.1 % (run19:uplink/b) |")
    random_phases = next(line for line in out.splitlines() if line.startswith("| `phased_tcp[phase_lock=false]`"))
    assert random_phases.startswith("| `phased_tcp[phase_lock=false]` | 4.8 / 23.8 / +31.5 % (run21:offset0.5/a) |")
    with pytest.raises(SystemExit):
        pooled.main([str(tmp_path / "missing")])


def test_the_docs_first_table_is_the_pooled_acceptance_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/validation.md's default row is what pooling runs 25-27 (the default as shipped) prints."""
    pooled = load_benchmark("validation_pooled")
    assert pooled.main([str(RUNS / f"run{n}") for n in (25, 26, 27)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("| `phased_tcp` |"))
    comm, jct = (c.strip() for c in line.split("|")[2:4])
    doc = (RUNS.parents[1] / "docs" / "validation.md").read_text()
    row = next(x for x in doc.splitlines() if x.startswith("| **`phased_tcp` (the default)** |"))
    as_doc = [c.strip().replace(" %", "").replace("% ", "") for c in row.split("|")[2:4]]
    assert comm.replace(" %", "") == as_doc[0] and jct.replace(" %", "") == as_doc[1], (comm, jct, as_doc)
