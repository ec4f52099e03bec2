"""``engine.result.Records``: the engine's one-tuple-per-job records read as dicts, by column, or written out —
the same values and the same files whichever way they are read (docs/engine.md, "Records as rows")."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from ddlsched.cluster import load_cluster
from ddlsched.engine import SimConfig, run_simulation
from ddlsched.engine.result import Records
from ddlsched.metrics.loadtime import load_over_time
from ddlsched.metrics.output import write_records
from ddlsched.metrics.summary import summarize
from ddlsched.metrics.window import Window
from ddlsched.policies import make_policy
from ddlsched.vocabulary import RECORD_FIELDS
from ddlsched.workload.synthetic import philly_mix


def _run() -> object:
    jobs = philly_mix(60, seed=3, rate_per_s=1 / 200).jobs
    return run_simulation(load_cluster("rack256"), jobs, make_policy("tiresias+pack"), SimConfig())


def _rows() -> Records:
    return Records([("a", "m", 2, "", 1.0, 2.0, 5.0) + (0.5,) * 17 + ("0 1",),
                    ("b", "m", 4, "u", 0.0, 3.0, 9.0) + (1.5,) * 17 + ("2 3 4 5",)])


def test_the_engine_returns_rows_and_reads_as_dicts_in_vocabulary_order() -> None:
    res = _run()
    recs = res.records
    assert isinstance(recs, Records) and recs.as_rows and len(recs) == 60
    assert recs.columns == tuple(RECORD_FIELDS)
    first = recs[0]
    assert list(first) == list(RECORD_FIELDS) and not recs.as_rows
    assert recs[0] is first and next(iter(recs)) is first  # the same dict objects from now on
    assert recs.column("job_id") == [r["job_id"] for r in recs]


def test_a_summary_from_rows_equals_one_from_dicts() -> None:
    res = _run()
    from_rows = summarize(res)
    assert res.records.as_rows  # summarising built no dict
    dict_res = type(res)(**{**res.__dict__, "records": [dict(r) for r in Records(list(res.records.rows()))]})
    assert not dict_res.records.as_rows
    assert summarize(dict_res) == from_rows
    win = Window.parse("5jobs", "2h")
    assert summarize(res, win) == summarize(dict_res, win) != from_rows


def test_edits_to_the_dicts_are_what_columns_read_afterwards() -> None:
    recs = _rows()
    assert recs.column("num_gpus") == [2, 4]
    recs[1]["num_gpus"] = 8
    assert recs.column("num_gpus") == [2, 8]
    assert [list(c) for c in recs.float_columns(["num_gpus", "arrival_s"])] == [[2.0, 8.0], [1.0, 0.0]]
    assert list(recs.rows())[1][2] == 8


def test_columns_subset_equality_and_pickling() -> None:
    recs = _rows()
    gpus, arr = recs.float_columns(["num_gpus", "arrival_s"])
    assert gpus.flags.c_contiguous and np.array_equal(gpus, [2.0, 4.0]) and np.array_equal(arr, [1.0, 0.0])
    sub = recs.subset([False, True])
    assert sub.column("job_id") == ["b"] and sub.as_rows
    assert recs == _rows() and recs != Records(list(_rows().rows())[:1])
    assert recs == [dict(zip(RECORD_FIELDS, row, strict=True)) for row in _rows().rows()]
    assert not recs.as_rows  # comparing with dicts built them
    back = pickle.loads(pickle.dumps(_rows()))
    assert back == recs and back.as_rows
    assert Records.of([]) == [] and len(Records()) == 0 and Records().float_columns(["jct_s"])[0].size == 0
    with pytest.raises(TypeError):
        hash(recs)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_files_written_from_rows_are_byte_identical_to_files_from_dicts(tmp_path: Path, suffix: str) -> None:
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    res = _run()
    write_records(tmp_path / f"rows{suffix}", res.records)
    assert res.records.as_rows
    write_records(tmp_path / f"dicts{suffix}", [dict(r) for r in Records(list(res.records.rows()))])
    assert (tmp_path / f"rows{suffix}").read_bytes() == (tmp_path / f"dicts{suffix}").read_bytes()
    write_records(tmp_path / f"empty{suffix}", Records())
    write_records(tmp_path / f"empty-dicts{suffix}", [])
    assert (tmp_path / f"empty{suffix}").read_bytes() == (tmp_path / f"empty-dicts{suffix}").read_bytes()


def test_load_over_time_reads_rows_and_dicts_alike() -> None:
    res = _run()
    dicts = [dict(r) for r in Records(list(res.records.rows()))]
    n = res.cluster.num_gpus
    assert load_over_time(res.records, res.timeseries, n) == load_over_time(dicts, res.timeseries, n)
    assert res.records.as_rows
