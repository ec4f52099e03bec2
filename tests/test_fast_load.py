"""The columnar fast path (pyarrow + numpy) gives the row parser's trace byte for byte, and its errors.

``docs/traces.md`` "Fast loading"; :mod:`ddlsched.workload.loaders.columnar`.
"""

from __future__ import annotations

import contextlib
import hashlib
import random
import sys
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddlsched.errors import InputError
from ddlsched.workload.loaders import columnar, generic_csv, load_generic_csv, load_philly_pollux, philly_pollux
from ddlsched.workload.model_mapping import DEFAULT_MIX, assign_model, assign_models, check_mix
from ddlsched.workload.trace import Trace
from trace_mutations import VALUES, Seed, mutate

pytest.importorskip("pyarrow")

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "data" / "traces"
PHILLY = TRACES / "philly_pollux" / "philly.csv"
LOADERS: dict[str, Callable[..., Any]] = {"philly_pollux": load_philly_pollux, "generic_csv": load_generic_csv}
MODULES = {"philly_pollux": philly_pollux, "generic_csv": generic_csv}


@pytest.fixture(autouse=True)
def _every_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path also for the small files of these tests."""
    monkeypatch.setattr(columnar, "MIN_BYTES", 0)
    monkeypatch.delenv(columnar.ENV, raising=False)


def snapshot(t: Trace) -> str:
    """Every field of every job (value repr and type: 1 vs 1.0, -0.0 vs 0.0 differ) and of the trace."""
    jobs = [[(f, type(getattr(j, f)).__name__, repr(getattr(j, f))) for f in j.__slots__] for j in t.jobs]
    return repr((jobs, t.path, t.format, t.skipped, t.skipped_reasons, t.notes, t.mapping, repr(t.epoch)))


def outcome(load: Callable[..., Any], path: Path, monkeypatch: pytest.MonkeyPatch, fast: bool,
            **kw: Any) -> str:
    """The trace's :func:`snapshot`, or the error's type and message (file, line, field)."""
    with monkeypatch.context() as m:
        m.setenv(columnar.ENV, "on" if fast else "off")
        try:
            return snapshot(load(path, **kw))
        except InputError as e:
            return f"error {type(e).__name__}: {e} | {e.path}:{e.line} [{e.field}]"


def spy(fmt: str, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Record whether each call of the format's fast path returned a trace."""
    used: list[bool] = []
    mod = MODULES[fmt]
    real = mod._load_fast

    def wrapped(*a: Any, **k: Any) -> Any:
        out = real(*a, **k)
        used.append(out is not None)
        return out

    monkeypatch.setattr(mod, "_load_fast", wrapped)
    return used


def same(fmt: str, path: Path, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> tuple[str, bool]:
    """Assert fast == row for one file; returns the outcome and whether the fast path produced it."""
    used = spy(fmt, monkeypatch)
    fast = outcome(LOADERS[fmt], path, monkeypatch, True, **kw)
    took = any(used)
    row = outcome(LOADERS[fmt], path, monkeypatch, False, **kw)
    assert fast == row, (path, fast[:300], row[:300])
    return fast, took


def test_bundled_philly_identical_and_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    out, took = same("philly_pollux", PHILLY, monkeypatch)
    assert took and not out.startswith("error")
    t = load_philly_pollux(PHILLY)
    assert len(t.jobs) == 82247 and t.jobs[0].source.endswith(":31568")


def test_bundled_csvs_generic_identical(monkeypatch: pytest.MonkeyPatch) -> None:
    fast_files = []
    for f in sorted(TRACES.rglob("*.csv")):
        if f == PHILLY:
            continue
        for unit in ("s", "ms"):
            out, took = same("generic_csv", f, monkeypatch, time_unit=unit)
            if took:
                fast_files.append(f"{f.name}/{unit}")
                assert not out.startswith("error")
    # the numeric Muri / SJF-BSBF / ElasticFlow job tables go the fast way
    assert {"trace1.csv/ms", "trace2.csv/s", "trace4_pr.csv/ms", "philly_103959.csv/s"} <= set(fast_files), \
        fast_files


def test_bundled_philly_generic_identical(monkeypatch: pytest.MonkeyPatch) -> None:
    out, took = same("generic_csv", PHILLY, monkeypatch, seed=3)
    assert took and not out.startswith("error")


def _seed(name: str, rel: str, rows: int) -> Seed:
    lines = (TRACES / rel).read_bytes().split(b"\n")
    return Seed(name, b"\n".join(lines[:rows + 1]) + b"\n", b",", True)


MUTATION_SEEDS = [("philly_pollux", _seed("philly", "philly_pollux/philly.csv", 30)),
                  ("generic_csv", _seed("muri", "muri/trace1.csv", 30)),
                  ("generic_csv", _seed("philly", "philly_pollux/philly.csv", 30))]


@pytest.mark.parametrize("k", range(len(MUTATION_SEEDS)))
def test_mutated_traces_same_trace_or_same_located_error(k: int, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    fmt, seed = MUTATION_SEEDS[k]
    rnd = random.Random(1300 + k)
    f = tmp_path / "t.csv"
    errors = fast = 0
    for _ in range(150):
        data, _ops = mutate(seed, rnd.randrange, rnd.randint(1, 2))
        f.write_bytes(data)
        for skip in (False, True):
            out, took = same(fmt, f, monkeypatch, skip_invalid=skip)
            errors += out.startswith("error")
            fast += took
    assert errors > 20 and fast > 20, (errors, fast)  # both paths are exercised


@pytest.mark.parametrize("fmt,col", [("philly_pollux", 0), ("philly_pollux", 1), ("philly_pollux", 2),
                                     ("generic_csv", 1), ("generic_csv", 2), ("generic_csv", 3)])
def test_one_bad_value_in_a_plain_file_is_located_as_before(fmt: str, col: int, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Every fuzz value in one field of row 17: the fast path declines and the row parser names line 19."""
    rel = "philly_pollux/philly.csv" if fmt == "philly_pollux" else "muri/trace1.csv"
    lines = (TRACES / rel).read_bytes().split(b"\n")[:41]
    f = tmp_path / "t.csv"
    for v in [*VALUES, b"0", b"2.5", b"1e11", b"1e999", b"-0", b"2017-02-30 10:00:00", b"0000-01-01 00:00:00",
              b"2017-10-03 24:00:00", b"1e-400", b"+3", b".5", b"5."]:
        fields = lines[18].split(b",")
        fields[col] = v
        f.write_bytes(b"\n".join([*lines[:18], b",".join(fields), *lines[19:]]) + b"\n")
        out, took = same(fmt, f, monkeypatch)
        if out.startswith("error") and ":19 " in out:
            assert not took


def test_without_pyarrow_the_row_parser_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "philly.csv"
    f.write_bytes(b"\n".join(PHILLY.read_bytes().split(b"\n")[:3001]) + b"\n")
    with monkeypatch.context() as m:
        for name in [n for n in sys.modules if n == "pyarrow" or n.startswith("pyarrow.")]:
            m.delitem(sys.modules, name)
        m.setitem(sys.modules, "pyarrow", None)  # `import pyarrow` raises ImportError
        assert columnar.read_columns(f) is None
        used = spy("philly_pollux", m)
        t = load_philly_pollux(f)
        assert used == [False] and len(t.jobs) == 3000
    assert columnar.read_columns(f) is not None  # pyarrow is back
    with monkeypatch.context() as m:
        m.setenv(columnar.ENV, "off")
        assert snapshot(load_philly_pollux(f)) == snapshot(t)


def test_env_off_and_small_files_skip_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(columnar.ENV, "off")
    assert columnar.read_columns(PHILLY) is None
    monkeypatch.setenv(columnar.ENV, "on")
    assert columnar.read_columns(PHILLY) is not None
    monkeypatch.setattr(columnar, "MIN_BYTES", PHILLY.stat().st_size + 1)
    assert columnar.read_columns(PHILLY) is None
    monkeypatch.setenv(columnar.ENV, "always")
    assert columnar.read_columns(PHILLY) is not None


def test_env_with_an_unknown_value_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A typo (``of``) must not silently leave the fast path on: the load stops and names the variable."""
    from ddlsched.errors import ConfigError

    monkeypatch.setenv(columnar.ENV, "of")
    with pytest.raises(ConfigError, match="DDLSCHED_FAST_CSV='of': expected off, on or always"):
        load_philly_pollux(PHILLY)


def _reference(job_id: str, seed: int, mix: Mapping[str, float]) -> str:
    """The per-job walk that model_mapping has always documented."""
    m = check_mix(mix)
    u = int(hashlib.sha256(f"{seed}:{job_id}".encode()).hexdigest()[:16], 16) / 2.0**64 * sum(m.values())
    acc, last = 0.0, ""
    for name, w in m.items():
        if w <= 0:
            continue
        acc += w
        last = name
        if u < acc:
            return name
    return last


@pytest.mark.parametrize("mix", [DEFAULT_MIX, {"a": 0.1, "b": 0.2, "c": 0.0, "d": 0.7}, {"x": 3.0},
                                 {"b": 1e-300, "a": 1.0}, {"z": 0.3, "y": 0.0}])
def test_vectorised_model_mapping_matches_the_per_job_walk(mix: Mapping[str, float]) -> None:
    ids = [f"job-{i}" for i in range(3000)] + ["", "é", "philly-0"]
    for seed in (0, 7):
        want = [_reference(j, seed, mix) for j in ids]
        assert assign_models(ids, seed=seed, mix=mix) == want
        assert [assign_model(j, seed=seed, mix=mix) for j in ids] == want


def test_timestamps_agree_with_fromisoformat() -> None:
    import pyarrow as pa

    vals = ["2017-02-29 00:00:00", "2016-02-29 00:00:00", "2000-02-29 23:59:59", "1900-02-29 00:00:00",
            "0001-01-01 00:00:00", "0000-01-01 00:00:00", "9999-12-31 23:59:59", "2017-04-31 00:00:00",
            "2017-12-31 24:00:00", "2017-13-01 00:00:00", "2017-00-10 00:00:00", "2017-01-00 00:00:00",
            "1969-07-20 20:17:40", "2017-01-01 00:60:00", "2017-01-01 00:00:60", "2017-1-01 00:00:00",
            "2017-01-01T00:00:00", "2017-01-01 00:00:00Z", ""]
    epoch = datetime(1970, 1, 1)
    for v in vals:
        want: int | None = None
        if philly_pollux._TS.match(v):  # the loader's own form
            with contextlib.suppress(ValueError):
                want = int((datetime.fromisoformat(v) - epoch).total_seconds())
        got = columnar.timestamps(pa.array(["2017-10-03 14:11:41", v, "1970-01-01 00:00:01"]).slice(1, 2))
        assert (None if got is None else int(got[0])) == want, v
        if got is not None:
            assert int(got[1]) == 1


def test_jobspec_bulk_is_the_per_job_constructor() -> None:
    from ddlsched.workload.jobspec import JobSpec

    cols: dict[str, list[Any]] = {"job_id": ["a", "b", "c"], "arrival_s": [0.0, -0.0, 5.5], "num_gpus": [1, 2, 8],
                                  "model": ["x", "y", "z"], "duration_s": [1.0, 2.0, 3e8], "user": [None, "u", ""],
                                  "gpu_request": [None, 1.5, None], "source": ["f:2", "f:3", "f:4"]}
    one = [JobSpec(**{k: v[i] for k, v in cols.items()}) for i in range(3)]
    bulk = JobSpec.bulk(3, **cols)
    assert bulk == one and [repr(j) for j in bulk] == [repr(j) for j in one]
    assert [hash(j) for j in bulk] == [hash(j) for j in one]
    with pytest.raises(AttributeError):
        bulk[0].num_gpus = 3  # type: ignore[misc]
    for bad in ({"num_gpus": [1, 0, 8]}, {"arrival_s": [0.0, float("nan"), 1.0]}, {"duration_s": [1.0, 0.0, 2.0]},
                {"gpu_request": [None, 2.5, None]}):
        with pytest.raises(ValueError, match="job b"):
            JobSpec.bulk(3, **{**cols, **bad})


_ANY_NUMBER = st.one_of(st.none(), st.integers(-3, 5), st.floats(allow_nan=True, allow_infinity=True, width=32))


@settings(max_examples=300, deadline=None)
@given(num_gpus=st.integers(-1, 4), arrival=st.floats(allow_nan=True, allow_infinity=True, width=32),
       iterations=_ANY_NUMBER, duration=_ANY_NUMBER, request=_ANY_NUMBER)
def test_bulk_column_checks_agree_with_the_constructor(num_gpus: int, arrival: float, iterations: object,
                                                       duration: object, request: object) -> None:
    """``JobSpec.bulk`` checks the constructor's invariants on whole columns: for any one job, the column check
    passes exactly when the constructor accepts it (so bulk never builds a job the constructor would refuse)."""
    from ddlsched.workload.jobspec import JobSpec, _columns_valid

    cols: dict[str, list[object]] = {"job_id": ["j"], "arrival_s": [arrival], "num_gpus": [num_gpus],
                                     "model": ["m"], "gpu_request": [request]}
    if iterations is not None:
        cols["iterations"] = [iterations]
    if duration is not None:
        cols["duration_s"] = [duration]
    try:
        JobSpec(**{k: v[0] for k, v in cols.items()})  # type: ignore[arg-type]
        accepted = True
    except (ValueError, TypeError):
        accepted = False
    if _columns_valid(1, cols):
        assert accepted, cols
