"""The record check made on every finished job (engine/records.py): noise reads as 0, a real negative cause or
accounts that do not close stop the run with the job and the cause named."""

from __future__ import annotations

from typing import Any

import pytest

from ddlsched.engine.records import RECORD_COLUMNS, job_record
from ddlsched.engine.state import JobState
from ddlsched.errors import SimulationError
from ddlsched.vocabulary import RECORD_FIELDS
from ddlsched.workload import JobSpec
from ddlsched.workload.profiles import ModelProfile

PROF = ModelProfile("m", grad_mb=100.0, compute_ms=50.0, batch_size=32, mem_mb=1000)


def _state(**accounts: float) -> JobState:
    st = JobState(spec=JobSpec("j", 10.0, 2, "m", iterations=100), profile=PROF, seq=0)
    st.work, st.ideal_iter_s = 100.0, 1.0  # ideal run 100 s
    st.first_start, st.finish = 20.0, 20.0 + 100.0 + sum(accounts.values())
    st.run_s = 100.0 + sum(accounts.values())
    for name, value in accounts.items():
        setattr(st, name, value)
    return st


def record(st: JobState, model: str = "fluid", may_be_negative: frozenset[str] = frozenset()) -> dict[str, Any]:
    return dict(zip(RECORD_COLUMNS, job_record(st, model, may_be_negative), strict=True))


def test_the_tuple_holds_each_column_where_the_vocabulary_says() -> None:
    st = _state(contention_s=3.0, spread_s=2.0, sharing_s=0.5, hetero_s=0.25, switch_s=0.125, restart_s=4.0)
    st.comm_s, st.preemptions, st.placements, st.max_servers, st.max_racks = 7.5, 2, 3, 4, 5
    st.last_gpus = (8, 9)
    rec = record(st)
    assert list(rec) == list(RECORD_FIELDS)
    assert rec == {"job_id": "j", "model": "m", "num_gpus": 2, "user": "", "arrival_s": 10.0, "first_start_s": 20.0,
                   "finish_s": st.finish, "jct_s": st.finish - 10.0, "queue_s": pytest.approx(10.0),
                   "run_s": st.run_s, "ideal_run_s": 100.0, "comm_s": 7.5, "comm_overhead_s": 5.0,
                   "contention_s": 3.0, "spread_s": 2.0, "sharing_s": 0.5, "hetero_s": 0.25, "switch_s": 0.125,
                   "restart_s": 4.0, "iterations": 100.0, "preemptions": 2, "placements": 3, "servers": 4,
                   "racks": 5, "last_gpus": "8 9"}


def test_causes_add_up_and_noise_reads_as_zero() -> None:
    rec = record(_state(contention_s=3.0, spread_s=2.0, restart_s=1e-9))
    assert (rec["contention_s"], rec["spread_s"], rec["comm_overhead_s"]) == (3.0, 2.0, 5.0)
    assert rec["restart_s"] == 0.0  # inside the tolerance
    times = (rec["jct_s"], rec["queue_s"], rec["run_s"], rec["ideal_run_s"])
    assert times == pytest.approx((115.0, 10.0, 105.0, 100.0))


def test_a_negative_cause_is_named_unless_the_model_allows_it() -> None:
    st = _state(contention_s=5.0, hetero_s=-2.0)
    with pytest.raises(SimulationError, match=r"job j: negative hetero_s = -2\.0"):
        job_record(st, "fluid")
    assert record(st, "taskdag", frozenset({"hetero_s"}))["hetero_s"] == -2.0


def test_accounts_that_do_not_close_stop_the_run() -> None:
    st = _state(spread_s=4.0)
    st.run_s += 1.0  # one second that no cause explains
    with pytest.raises(SimulationError, match="accounts do not close"):
        job_record(st, "fluid")
