"""A malformed large trace fails with its located error in bounded memory (issue 33): the generic CSV, Slurm
and Kubernetes row parsers check every row of a file above ``limits.CHECK_FIRST_BYTES`` in a first pass that
keeps nothing."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from ddlsched.errors import InputError
from ddlsched.workload import limits
from ddlsched.workload.loaders import load_trace


@pytest.fixture(autouse=True)
def _row_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DDLSCHED_CACHE", "off")
    monkeypatch.setenv("DDLSCHED_FAST_CSV", "off")


def _peak_of_failing_load(p: Path) -> tuple[int, InputError]:
    tracemalloc.start()
    try:
        with pytest.raises(InputError) as e:
            load_trace(p)
        return tracemalloc.get_traced_memory()[1], e.value
    finally:
        tracemalloc.stop()


def test_bad_last_row_of_a_large_file_fails_without_holding_the_rows(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    n = 20_000
    p = tmp_path / "big.csv"
    p.write_text("job_id,submit_time,duration,num_gpus\n"
                 + "".join(f"j{i},{i},{60 + i % 7},{1 + i % 4}\n" for i in range(n)) + "bad,5,abc,1\n")
    whole, err_whole = _peak_of_failing_load(p)  # below the threshold: one pass, every row held
    monkeypatch.setattr(limits, "CHECK_FIRST_BYTES", 0)
    first, err_first = _peak_of_failing_load(p)
    assert str(err_first) == str(err_whole) and err_first.line == n + 2 and err_first.field == "duration"
    assert first * 4 < whole, (first, whole)  # measured: about 150x less


def test_first_pass_gives_the_same_trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "t.csv"
    p.write_text("job_id,submit_time,duration,num_gpus,model\n"
                 + "".join(f"j{i},2024-01-01T00:00:{i:02d},{60 + i},{0.5 if i % 3 else 2},\n" for i in range(40)))
    one = load_trace(p)
    monkeypatch.setattr(limits, "CHECK_FIRST_BYTES", 0)
    two = load_trace(p)
    assert one.jobs == two.jobs and one.notes == two.notes and one.epoch == two.epoch
    assert one.notes.count(next(n for n in one.notes if "had no model" in n)) == 1  # models counted once


def test_slurm_row_path_first_pass_locates_a_late_bad_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "sacct.txt"
    rows = "".join(f"{i}|2024-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}|2024-01-01T01:00:00|00:10:00|COMPLETED|"
                   f"cpu=2,gres/gpu={1 + i % 4}\n{i}.batch|2024-01-01T00:00:00|None|00:10:00|COMPLETED|cpu=2\n"
                   for i in range(3000))
    p.write_text("JobID|Submit|Start|Elapsed|State|AllocTRES\n" + rows + "9999|2024-01-01T02:00:00|2024-01-01T02:00:00"
                 "|00:10:00|COMPLETED|gres/gpu=x\n")
    ok = p.read_text().rsplit("\n", 2)[0] + "\n"
    whole, err_whole = _peak_of_failing_load(p)
    monkeypatch.setattr(limits, "CHECK_FIRST_BYTES", 0)
    first, err_first = _peak_of_failing_load(p)
    assert str(err_first) == str(err_whole) and err_first.line == 6002 and err_first.field == "AllocTRES"
    assert first * 4 < whole, (first, whole)
    good = tmp_path / "ok.txt"
    good.write_text(ok)
    two = load_trace(good)
    monkeypatch.setattr(limits, "CHECK_FIRST_BYTES", 1 << 40)
    one = load_trace(good)
    assert one.jobs == two.jobs and one.notes == two.notes and one.filtered == two.filtered == {"step": 3000}


def test_kubernetes_first_pass_locates_a_late_bad_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "pods.csv"
    head = "name,phase,creationTimestamp,scheduledTime,finishedAt,deletionTimestamp,gpus\n"
    rows = "".join(f"p{i},Succeeded,2024-05-06T07:{i // 60 % 60:02d}:{i % 60:02d}Z,2024-05-06T08:00:00Z,"
                   f"2024-05-06T09:00:00Z,,{1 + i % 4}\n" for i in range(3000))
    bad = "last,Succeeded,2024-05-06T07:00:00Z,2024-05-06T08:00:00Z,2024-05-06T09:00:00Z,,many\n"
    p.write_text(head + rows + bad)
    whole, err_whole = _peak_of_failing_load(p)
    monkeypatch.setattr(limits, "CHECK_FIRST_BYTES", 0)
    first, err_first = _peak_of_failing_load(p)
    assert str(err_first) == str(err_whole) and err_first.line == 3002 and err_first.field == "gpus"
    assert first * 4 < whole, (first, whole)
    good = tmp_path / "ok.csv"
    good.write_text(head + rows)
    two = load_trace(good)
    monkeypatch.setattr(limits, "CHECK_FIRST_BYTES", 1 << 40)
    one = load_trace(good)
    assert one.jobs == two.jobs and one.notes == two.notes and len(one.jobs) == 3000
