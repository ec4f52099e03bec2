"""The parsed-trace cache: a hit gives the same trace as a parse; a changed file, option or loader misses; a bad
file is never cached; a broken entry is ignored."""

from __future__ import annotations

from pathlib import Path

import pytest

import ddlsched
from ddlsched.errors import InputError
from ddlsched.workload import cache

MURI = Path(__file__).resolve().parents[1] / "data/traces/muri/trace1.csv"


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DDLSCHED_CACHE", str(tmp_path / "c"))
    monkeypatch.setattr(cache, "_MIN_BYTES", 0)
    return tmp_path / "c" / "traces"


def _same(a: ddlsched.Trace, b: ddlsched.Trace) -> None:  # type: ignore[name-defined]
    assert a.jobs == b.jobs and a.notes == b.notes and a.skipped == b.skipped and a.path == b.path


def test_a_hit_equals_a_parse(store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "t.csv"
    f.write_bytes(MURI.read_bytes())
    first = ddlsched.load_trace(f)
    assert len(list(store.glob("*.pickle"))) == 1
    calls = []
    monkeypatch.setattr(cache.pickle, "load", lambda fh, _l=cache.pickle.load: calls.append(1) or _l(fh))
    second = ddlsched.load_trace(f)
    assert calls == [1]  # read from the cache
    _same(first, second)
    monkeypatch.setenv("DDLSCHED_CACHE", "off")
    _same(first, ddlsched.load_trace(f))


def test_what_misses(store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "t.csv"
    f.write_bytes(MURI.read_bytes())
    ddlsched.load_trace(f)
    ddlsched.load_trace(f, time_unit="ms")  # another option (same jobs: ms is what auto picks)
    lines = MURI.read_bytes().splitlines(keepends=True)
    f.write_bytes(b"".join(lines[:-1]))  # another content
    assert len(ddlsched.load_trace(f).jobs) == len(lines) - 2
    assert len(list(store.glob("*.pickle"))) == 3
    ddlsched.load_trace(f)
    assert len(list(store.glob("*.pickle"))) == 3  # the same again: a hit
    monkeypatch.setattr(cache, "_code_hash", lambda: "an edited loader")
    ddlsched.load_trace(f)
    assert len(list(store.glob("*.pickle"))) == 4


def test_bad_files_are_not_cached_and_broken_entries_are_ignored(store: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    lines = MURI.read_text().splitlines()
    bad.write_text("\n".join([lines[0], lines[1], "x,y,z"]) + "\n")
    for _ in range(2):
        with pytest.raises(InputError, match=r"bad\.csv"):
            ddlsched.load_trace(bad)
    assert not store.exists() or not list(store.glob("*.pickle"))
    good = tmp_path / "t.csv"
    good.write_bytes(MURI.read_bytes())
    first = ddlsched.load_trace(good)
    (entry,) = store.glob("*.pickle")
    entry.write_bytes(entry.read_bytes()[:100])  # truncated, as after a crash of another writer
    _same(first, ddlsched.load_trace(good))
    assert entry.stat().st_size > 100  # rewritten whole


def test_pickled_by_columns_round_trips_every_field_and_type() -> None:
    """The cache pickles a trace column by column; the jobs come back equal, with the same field types, also when
    a column mixes iterations and durations (built job by job then) or holds non-default values."""
    import pickle

    from ddlsched.workload.jobspec import JobSpec
    from ddlsched.workload.trace import Trace

    jobs = [JobSpec("a", 0.0, 2, "resnet50", duration_s=10.0, weight=1, source="f:2"),
            JobSpec("b", 1.5, 1, "vgg16", duration_s=3.0, user="u", gpu_request=0.5, gpu_type="V100", group="g"),
            JobSpec("c", 2.0, 4, "lstm", duration_s=7.0, batch_size=64, gpu_mem_mb=1000.0)]
    mixed = [*jobs, JobSpec("d", 3.0, 1, "lstm", iterations=100.0)]
    for js in (jobs, mixed):
        t = Trace(jobs=list(js), path="p", format="x", skipped=2, notes=["n"], mapping={"a": "b"})
        back = pickle.loads(pickle.dumps(t, protocol=pickle.HIGHEST_PROTOCOL))
        assert back.jobs == t.jobs and back.path == "p" and back.skipped == 2 and back.mapping == {"a": "b"}
        assert [[type(getattr(j, f)) for f in JobSpec.__slots__] for j in back.jobs] == \
            [[type(getattr(j, f)) for f in JobSpec.__slots__] for j in t.jobs]
