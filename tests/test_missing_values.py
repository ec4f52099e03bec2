"""Missing values in a generic CSV (issue 33): ``Unknown``, ``None``, ``N/A`` and empty fields mean "no value";
missing in a required field is a located error, in an optional one the field is absent (``--missing``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ddlsched.cli import cli
from ddlsched.errors import InputError
from ddlsched.workload.loaders import load_trace
from ddlsched.workload.loaders.generic_csv import MISSING_DEFAULT, parse_missing

HEADER = "JobID,Submit,Elapsed,NGPUs,User,Model,Batch,GPUType\n"


@pytest.fixture(autouse=True)
def _no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DDLSCHED_CACHE", "off")


def _write(tmp_path: Path, rows: list[str], name: str = "t.csv") -> Path:
    p = tmp_path / name
    p.write_text(HEADER + "".join(r + "\n" for r in rows))
    return p


COLS = {"job_id": "JobID", "arrival": "Submit", "duration": "Elapsed", "num_gpus": "NGPUs", "user": "User",
        "model": "Model", "batch_size": "Batch", "gpu_type": "GPUType"}


def test_missing_optional_fields_are_absent_not_errors(tmp_path: Path) -> None:
    p = _write(tmp_path, ["1,0,01:00:00,2,Unknown,None,N/A,unknown",
                          "2,60,00:30:00,1,alice,resnet50,64,v100",
                          "3,120,00:10:00,4,,null,,<none>"])
    t = load_trace(p, columns=COLS)
    jobs = {j.job_id: j for j in t.jobs}
    assert len(jobs) == 3 and t.skipped == 0
    assert jobs["1"].user is None and jobs["1"].batch_size is None and jobs["1"].gpu_type is None
    assert jobs["3"].user is None and jobs["3"].gpu_type is None
    assert jobs["2"].user == "alice" and jobs["2"].batch_size == 64 and jobs["2"].gpu_type == "v100"
    assert jobs["2"].model == "resnet50"
    assert any("2 jobs had no model in the trace" in n for n in t.notes)  # 1 and 3: assigned, counted


@pytest.mark.parametrize("field,row", [
    ("Elapsed", "2,60,Unknown,1,bob,,,"),
    ("NGPUs", "2,60,00:10:00,None,bob,,,"),
    ("Submit", "2,N/A,00:10:00,1,bob,,,"),
    ("JobID", "unknown,60,00:10:00,1,bob,,,"),
])
def test_missing_required_field_is_a_located_error(tmp_path: Path, field: str, row: str) -> None:
    p = _write(tmp_path, ["1,0,01:00:00,2,alice,,,", row])
    with pytest.raises(InputError) as e:
        load_trace(p, columns=COLS)
    assert e.value.line == 3 and e.value.field == field and str(p) in str(e.value)
    assert "missing value" in str(e.value) and "required" in str(e.value)
    t = load_trace(p, columns=COLS, skip_invalid=True)  # skipped and counted, never dropped silently
    assert len(t.jobs) == 1 and t.skipped == 1 and t.rows == 2


def test_missing_option_replaces_the_default_set(tmp_path: Path) -> None:
    p = _write(tmp_path, ["1,0,01:00:00,2,None,,?,"])
    assert load_trace(p, columns=COLS, missing="?").jobs[0].user == "None"  # 'None' is a user name now
    with pytest.raises(InputError, match="not a number"):  # '?' is not missing by default
        load_trace(p, columns=COLS)
    assert parse_missing(None) == frozenset(MISSING_DEFAULT) | {""}
    assert parse_missing("") == frozenset({""}) and parse_missing(["NA ", "Unknown"]) == {"", "na", "unknown"}


def test_fast_path_reads_missing_values_as_the_row_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [f"{i},{i * 10},{60 + i},{1 + i % 4},{'Unknown' if i % 3 else 'u' + str(i)},"
            f"{'None' if i % 2 else 'resnet50'},32,{'N/A' if i % 5 else 'v100'}" for i in range(200)]
    p = _write(tmp_path, rows)
    out = {}
    for mode in ("always", "off"):
        monkeypatch.setenv("DDLSCHED_FAST_CSV", mode)
        out[mode] = load_trace(p, columns=COLS)
    assert out["always"].jobs == out["off"].jobs and out["always"].notes == out["off"].notes
    assert sum(j.user is None for j in out["always"].jobs) == 133


def test_cli_missing_flag(tmp_path: Path) -> None:
    p = _write(tmp_path, ["1,0,01:00:00,2,alice,,?,", "2,5,01:00:00,2,bob,,64,"])
    r = CliRunner().invoke(cli, ["traces", "info", str(p), "--column", "batch_size=Batch", "--missing", "?,unknown"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, ["traces", "info", str(p), "--column", "batch_size=Batch"])
    assert r.exit_code == 2 and ":2" in r.output and "Batch" in r.output
