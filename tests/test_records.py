"""The record check made on every finished job (engine/records.py): noise reads as 0, a real negative cause or
accounts that do not close stop the run with the job and the cause named."""

from __future__ import annotations

import pytest

from ddlsched.engine.records import job_record
from ddlsched.engine.state import JobState
from ddlsched.errors import SimulationError
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


def test_causes_add_up_and_noise_reads_as_zero() -> None:
    rec = job_record(_state(contention_s=3.0, spread_s=2.0, restart_s=1e-9), "fluid")
    assert (rec["contention_s"], rec["spread_s"], rec["comm_overhead_s"]) == (3.0, 2.0, 5.0)
    assert rec["restart_s"] == 0.0  # inside the tolerance
    times = (rec["jct_s"], rec["queue_s"], rec["run_s"], rec["ideal_run_s"])
    assert times == pytest.approx((115.0, 10.0, 105.0, 100.0))


def test_a_negative_cause_is_named_unless_the_model_allows_it() -> None:
    st = _state(contention_s=5.0, hetero_s=-2.0)
    with pytest.raises(SimulationError, match=r"job j: negative hetero_s = -2\.0"):
        job_record(st, "fluid")
    assert job_record(st, "taskdag", frozenset({"hetero_s"}))["hetero_s"] == -2.0


def test_accounts_that_do_not_close_stop_the_run() -> None:
    st = _state(spread_s=4.0)
    st.run_s += 1.0  # one second that no cause explains
    with pytest.raises(SimulationError, match="accounts do not close"):
        job_record(st, "fluid")
