"""Nothing lost, nothing silently changed: every number at the input boundary is finite and in range, every
error names file:line:field (or the CLI flag), every job in a file is loaded, rejected or counted as skipped."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from ddlsched.cli import cli
from ddlsched.cli.common import finite_float, parse_columns, parse_kv
from ddlsched.errors import InputError
from ddlsched.workload.inputs import load_workload_and_models
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.limits import MAX_LINE_BYTES
from ddlsched.workload.loaders import FORMATS, load_trace
from ddlsched.workload.profiles import load_models

GENERIC = "job_id,submission_time,duration,num_gpu\n"
MURI_HEAD = "job_id,num_gpu,submit_time,iterations,model_name,batch_size\n"
PHILLY_HEAD = "timestamp,duration,num_gpus,gpu_time,cluster\n"


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text)
    return p


def located(e: pytest.ExceptionInfo[InputError], path: Path, line: int | None, field: str | None = None) -> None:
    msg = str(e.value)
    assert str(path) in msg, msg
    assert e.value.path == str(path)
    if line is not None:
        assert e.value.line == line and f"{path}:{line}" in msg, msg
    if field is not None:
        assert e.value.field == field and f"'{field}'" in msg, msg


def simulate(tmp_path: Path, trace: Path | str, *extra: str, cluster: str = "n8g8"):
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["simulate", "--trace", str(trace), "--cluster", cluster, "--policy", "fifo",
                                 "--out", str(out), "--quiet", *extra])
    return r, out


# ---- jobs that used to vanish --------------------------------------------------------------------------------

def test_arrival_overflowing_after_unit_conversion_is_an_error_not_a_lost_job(tmp_path: Path) -> None:
    f = write(tmp_path, "g.csv", GENERIC + "a,0,60,1\nb,1e308,60,1\n")
    with pytest.raises(InputError) as e:
        load_trace(f, time_unit="min")
    located(e, f, 3, "submission_time")
    assert "min" in str(e.value)
    r, out = simulate(tmp_path, f, "--time-unit", "min")
    assert r.exit_code == 2 and "error:" in r.output and f"{f}:3" in r.output
    assert not (out / "summary.json").exists()


def test_huge_finite_arrivals_and_durations_are_bounded(tmp_path: Path) -> None:
    f = write(tmp_path, "g.csv", GENERIC + "a,0,60,1\nb,1e300,60,1\n")
    with pytest.raises(InputError, match="beyond the limit") as e:
        load_trace(f)
    located(e, f, 3, "submission_time")
    f = write(tmp_path, "d.csv", GENERIC + "a,0,60,1\nb,0,2e9,1\n")
    with pytest.raises(InputError, match="beyond the limit") as e:
        load_trace(f)
    located(e, f, 3, "duration")
    gavel = write(tmp_path, "x.trace", "A3C\tcmd\t-n\t1\t100\t1e200\t1\nA3C\tcmd\t-n\t1\t1e300\t5\t1\n"
                                       "A3C\tcmd\t-n\t1\t100\t5\t1\n")
    with pytest.raises(InputError) as e:
        load_trace(gavel)
    located(e, gavel, 1, "arrival_time")
    t = load_trace(gavel, skip_invalid=True)
    assert len(t) == 1 and t.skipped == 2 and "total_steps" in t.skipped_reasons[1]


def test_load_scale_that_would_push_arrivals_to_infinity_is_refused(tmp_path: Path) -> None:
    f = write(tmp_path, "g.csv", GENERIC + "a,0,60,1\nb,100,60,1\n")
    with pytest.raises(InputError, match="--load-scale"):
        load_workload_and_models(str(f), seed=0, load_scale=1e-320)
    with pytest.raises(InputError, match="--load-scale") as e:
        load_workload_and_models(str(f), seed=0, load_scale=1e-6, options={"time_unit": "h"})
    assert "g.csv:3" in str(e.value) and "beyond the limit" in str(e.value)
    w = load_workload_and_models(str(f), seed=0, load_scale=2.0)
    assert [j.arrival_s for j in w.jobs] == [0.0, 50.0] and any("--load-scale 2" in n for n in w.notes)


def test_unclosed_quote_in_last_philly_column_does_not_swallow_rows(tmp_path: Path) -> None:
    rows = [f"2017-10-09 07:0{i}:55,66.0,1,66.0,a" for i in range(4)]
    rows[0] += '"'  # unbalanced quote in the last field: used to eat the three rows after it
    rows[0] = rows[0].replace(',a"', ',"a')
    f = write(tmp_path, "p.csv", PHILLY_HEAD + "\n".join(rows) + "\n")
    for skip in (False, True):
        with pytest.raises(InputError, match="never closed") as e:
            load_trace(f, skip_invalid=skip)
        located(e, f, 2)
    closed_later = rows[:]
    closed_later[2] = closed_later[2].replace(",a", ',a"')
    f2 = write(tmp_path, "p2.csv", PHILLY_HEAD + "\n".join(closed_later) + "\n")
    with pytest.raises(InputError, match="spans lines 2-4") as e:
        load_trace(f2)
    located(e, f2, 2)
    r, _ = simulate(tmp_path, f)
    assert r.exit_code == 2 and "p.csv:2" in r.output


def test_duplicate_column_name_is_an_error(tmp_path: Path) -> None:
    f = write(tmp_path, "dup.csv", "job_id,submission_time,duration,num_gpu,duration\na,0,60,1,30\n")
    with pytest.raises(InputError, match="appears twice") as e:
        load_trace(f)
    located(e, f, 1, "duration")
    m = write(tmp_path, "m.csv", MURI_HEAD.rstrip("\n") + ",num_gpu\n0,1,0,10,vgg16,16,2\n")
    with pytest.raises(InputError, match="appears twice"):
        load_trace(m)


HEADERS = {
    "philly_pollux": PHILLY_HEAD,
    "muri": MURI_HEAD,
    "elasticflow": "job_id,submit_time,real_iteration,model_name,ddl,batch_size,num_gpu,real_duration,duration,"
                   "iteration\n",
    "pollux": "name,time,application,num_replicas,batch_size\n",
    "tiresias": "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n",
    "generic_csv": GENERIC,
}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_header_only_and_empty_files_are_errors_in_every_format(tmp_path: Path, fmt: str) -> None:
    empty = write(tmp_path, "empty.csv", "")
    blank = write(tmp_path, "blank.csv", "\n  \n")
    for f in (empty, blank):
        with pytest.raises(InputError) as e:
            load_trace(f, format=fmt)
        assert str(f) in str(e.value)
        with pytest.raises(InputError):
            load_trace(f)
    if fmt in HEADERS:
        ho = write(tmp_path, "ho.csv", HEADERS[fmt])
        for kw in ({}, {"format": fmt}, {"format": fmt, "skip_invalid": True}):
            with pytest.raises(InputError, match="no job rows") as e:
                load_trace(ho, **kw)
            assert str(ho) in str(e.value)
    dur = write(tmp_path, "durations.csv", "duration\n")
    with pytest.raises(InputError, match="no job rows"):
        load_trace(dur)


def test_header_only_file_exits_2_from_the_cli(tmp_path: Path) -> None:
    f = write(tmp_path, "ho.csv", GENERIC)
    r, out = simulate(tmp_path, f)
    assert r.exit_code == 2 and "error:" in r.output and "no job rows" in r.output
    assert not out.exists() or not (out / "summary.json").exists()


def test_all_rows_skipped_is_an_error_naming_the_first_reason(tmp_path: Path) -> None:
    f = write(tmp_path, "g.csv", GENERIC + "a,0,x,1\nb,0,-1,1\n")
    with pytest.raises(InputError, match="all 2 data rows were skipped") as e:
        load_trace(f, skip_invalid=True)
    assert "g.csv:2" in str(e.value)


# ---- tracebacks that used to escape ---------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "1e400", "Infinity"])
def test_non_finite_muri_submit_time_is_a_located_error(tmp_path: Path, value: str) -> None:
    f = write(tmp_path, "m.csv", MURI_HEAD + f"0,1,0,10,vgg16,16\n1,1,{value},10,vgg16,16\n")
    with pytest.raises(InputError, match="finite") as e:
        load_trace(f)
    located(e, f, 3, "submit_time")
    t = load_trace(f, skip_invalid=True)
    assert len(t) == 1 and t.skipped == 1 and t.rows == 2


def test_non_utf8_trace_names_file_and_line(tmp_path: Path) -> None:
    f = write(tmp_path, "latin1.csv", (GENERIC + "a,0,60,1\nb\xe9,0,60,1\n").encode("latin-1"))
    with pytest.raises(InputError, match="not valid UTF-8") as e:
        load_trace(f)
    located(e, f, 3)
    u16 = write(tmp_path, "u16.csv", (GENERIC + "a,0,60,1\n").encode("utf-16"))
    with pytest.raises(InputError, match="UTF-16") as e:
        load_trace(u16)
    located(e, u16, 1)


def test_unknown_model_names_file_line_and_field(tmp_path: Path) -> None:
    f = write(tmp_path, "m.csv", MURI_HEAD + "0,1,0,10,vgg16,16\n1,1,0,10,llama-70b,16\n")
    with pytest.raises(InputError, match="unknown model 'llama-70b'") as e:
        load_trace(f)
    located(e, f, 3, "model_name")
    assert "resnet50" in str(e.value) and "--models" in str(e.value) and "--unknown-models map" in str(e.value)


def test_over_long_field_and_line_are_refused_early_with_a_location(tmp_path: Path) -> None:
    f = write(tmp_path, "wide.csv", GENERIC + "a,0,60,1\nb,0," + "9" * 200_000 + ",1\n")
    with pytest.raises(InputError, match="longer than") as e:
        load_trace(f)
    located(e, f, 3)
    big = tmp_path / "big.csv"
    with big.open("w") as fh:
        fh.write(GENERIC + "a,0,60,1\nb,0,")
        fh.write("9" * (32 * MAX_LINE_BYTES))  # 32 MiB on one line
        fh.write(",1\n")
    t0 = time.perf_counter()
    with pytest.raises(InputError, match="longer than 1,048,576 bytes") as e:
        load_trace(big)
    assert time.perf_counter() - t0 < 2.0
    located(e, big, 3)


def test_bare_cr_and_nul_are_located(tmp_path: Path) -> None:
    f = write(tmp_path, "cr.csv", GENERIC.replace("\n", "\r") + "a,0,60,1\r")
    with pytest.raises(InputError, match="carriage return") as e:
        load_trace(f, format="generic_csv")
    located(e, f, 1)
    n = write(tmp_path, "nul.csv", GENERIC + "a,0,6\x000,1\n")
    with pytest.raises(InputError) as e:
        load_trace(n)
    located(e, n, 2, "duration")


def test_empty_field_row_is_a_row_not_a_blank_line(tmp_path: Path) -> None:
    f = write(tmp_path, "g.csv", GENERIC + "a,0,60,1\n,,,\n\n   \n")
    with pytest.raises(InputError, match="empty value") as e:
        load_trace(f)
    located(e, f, 3)
    t = load_trace(f, skip_invalid=True)
    assert len(t) == 1 and t.skipped == 1


def test_jobspec_refuses_non_finite_values() -> None:
    for kw in ({"arrival_s": float("inf")}, {"arrival_s": float("nan")}, {"duration_s": float("inf")},
               {"iterations": float("nan"), "duration_s": None}):
        base = {"job_id": "a", "arrival_s": 0.0, "num_gpus": 1, "model": "vgg16", "duration_s": 5.0}
        with pytest.raises(ValueError):
            JobSpec(**{**base, **kw})  # type: ignore[arg-type]


# ---- CLI flags ------------------------------------------------------------------------------------------------

MURI = str(Path(__file__).resolve().parents[1] / "data/traces/muri/trace1.csv")


@pytest.mark.parametrize(("flag", "value"), [
    ("--load-scale", "inf"), ("--load-scale", "nan"), ("--load-scale", "1e-320"), ("--load-scale", "0"),
    ("--load-scale", "-1"), ("--load-scale", "1e400"), ("--load-scale", "abc"),
    ("--restart-penalty", "-1000"), ("--restart-penalty", "nan"), ("--restart-penalty", "inf"),
    ("--restart-penalty", "1e300"), ("--max-jobs", "0"), ("--max-jobs", "-1"), ("--max-jobs", "1.5"),
    ("--seed", "-1"), ("--time-unit", "fortnight"), ("--format", "nope"), ("--unknown-models", "guess"),
])
def test_numeric_and_choice_flags_are_checked_and_named(tmp_path: Path, flag: str, value: str) -> None:
    r, out = simulate(tmp_path, MURI, "--max-jobs", "5", flag, value)
    assert r.exit_code == 2, r.output
    assert flag in r.output
    assert not (out / "summary.json").exists()


@pytest.mark.parametrize("pair", ["x=NaN", "x=Infinity", "x=-Infinity", "x=1e400", "x=[1, NaN]"])
def test_key_value_flags_refuse_non_finite_numbers(pair: str) -> None:
    with pytest.raises(InputError, match="not a finite number") as e:
        parse_kv((pair,), "perf-param")
    assert e.value.field == "perf-param"
    with pytest.raises(InputError, match="twice"):
        parse_kv(("a=1", "a=2"), "perf-param")
    assert parse_kv(("a=1.5", "b=x", "c=[1,2]"), "p") == {"a": 1.5, "b": "x", "c": [1, 2]}


def test_finite_float_type() -> None:
    t = finite_float(0.0, 10.0)
    assert t.convert("2.5", None, None) == 2.5
    for bad in ("nan", "inf", "-1", "11", "x", "1e400"):
        with pytest.raises(click.BadParameter):
            t.convert(bad, None, None)
    assert finite_float(0.0, min_open=True).convert("1e-300", None, None) == 1e-300
    with pytest.raises(click.BadParameter):
        finite_float(0.0, min_open=True).convert("0", None, None)


def test_empty_paths_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="empty"):
        load_trace("")  # used to load the current directory as a folder
    r, _ = simulate(tmp_path, "")
    assert r.exit_code == 2 and "--trace" in r.output
    with pytest.raises(InputError, match="--models"):
        load_models("")


def test_column_flag_parsing() -> None:
    assert parse_columns(("duration=123", "arrival = Submit Time", "model=")) == {
        "duration": "123", "arrival": "Submit Time", "model": ""}
    with pytest.raises(InputError, match="mapped twice"):
        parse_columns(("duration=a", "duration=b"))
    with pytest.raises(InputError, match="FIELD=NAME"):
        parse_columns(("duration",))


def test_max_jobs_cut_is_noted_and_skips_are_counted(tmp_path: Path) -> None:
    f = write(tmp_path, "g.csv", GENERIC + "a,0,60,1\nb,1,x,1\nc,2,60,1\nd,3,60,1\n")
    r, out = simulate(tmp_path, f, "--skip-invalid", "--max-jobs", "2")
    assert r.exit_code == 0, r.output
    assert "skipped 1 invalid row" in r.output and "--max-jobs 2: the first 2 of 3 jobs" in r.output
    assert json.loads((out / "summary.json").read_text())["jobs"] == 2
