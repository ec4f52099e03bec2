"""One record schema for every execution model, and the accounting checks made on every completed job."""

from __future__ import annotations

from typing import Any

from ddlsched.engine.state import JobState
from ddlsched.errors import SimulationError
from ddlsched.vocabulary import RECORD_FIELDS

RECORD_COLUMNS: tuple[str, ...] = tuple(RECORD_FIELDS)
REJECTED_COLUMNS: tuple[str, ...] = ("job_id", "num_gpus", "source", "reason")

_REL, _ABS, _CLOCK = 1e-6, 1e-6, 1e-10
"""Accounting tolerance: |error| ≤ _ABS + _REL · run + _CLOCK · finish seconds. The last term covers rounding of
the absolute clock (its spacing grows with the time of day); it must not scale with the queueing delay, or a
long wait would hide a whole cause (a job queued for months once had 15 s of spread and contention zeroed)."""


def accounting_tolerance(run_s: float, finish_s: float) -> float:
    """How far run time and ideal + Σ causes may differ in a closed account (seconds); a cause inside it reads as
    0 when the account closes without it."""
    return _ABS + _REL * run_s + _CLOCK * abs(finish_s)


def _noise_to_zero(x: float, tol: float) -> float:
    """Float noise inside the tolerance reads as exactly 0 (a value of exactly −tol is kept as it is)."""
    return 0.0 if -tol < x < tol else x


def job_record(st: JobState, model: str, may_be_negative: frozenset[str] = frozenset()) -> tuple[Any, ...]:
    """The record of a finished job as one tuple in ``RECORD_COLUMNS`` order (meanings:
    ``ddlsched.vocabulary.RECORD_FIELDS``; read back as dicts through ``engine.result.Records``), after checking
    that its accounts close: queue, run and every cause ≥ 0 and run = ideal + Σ causes (within the tolerance; float
    noise inside it reads as exactly 0, unless the causes so zeroed add up to more than the tolerance: then only
    negative noise does). Causes in ``may_be_negative`` (a non-physical mode) skip the ≥ 0 check."""
    spec = st.spec
    finish = st.finish
    assert finish is not None and st.first_start is not None
    jct = finish - st.arrival_s
    run = st.run_s
    tol = accounting_tolerance(run, finish)
    con = _noise_to_zero(st.contention_s, tol)
    spr = _noise_to_zero(st.spread_s, tol)
    shr = _noise_to_zero(st.sharing_s, tol)
    het = _noise_to_zero(st.hetero_s, tol)
    swi = _noise_to_zero(st.switch_s, tol)
    rst = _noise_to_zero(st.restart_s, tol)
    if con < -tol or spr < -tol or shr < -tol or het < -tol or swi < -tol or rst < -tol:
        for name, x in zip(_CAUSE_NAMES, (con, spr, shr, het, swi, rst), strict=True):
            if x < -tol and name not in may_be_negative:
                raise SimulationError(f"{model} model, job {spec.job_id}: negative {name} = {x}")
    ideal = st.ideal_run_s
    queue = jct - run
    if queue < -tol or run < -tol:
        raise SimulationError(f"{model} model, job {spec.job_id}: negative queue ({queue}) or run time ({run})")
    explained = ideal + (con + spr + shr + het + swi + rst)
    if abs(run - explained) > tol:
        # several real causes each below the tolerance (a long job's few seconds of switching and sharing) are not
        # noise together: keep every positive cause as it is, zero only negative noise, and check again
        con, spr, shr, het, swi, rst = (0.0 if -tol < x < 0.0 else x for x in (
            st.contention_s, st.spread_s, st.sharing_s, st.hetero_s, st.switch_s, st.restart_s))
        explained = ideal + (con + spr + shr + het + swi + rst)
        if abs(run - explained) > tol:
            raise SimulationError(f"{model} model, job {spec.job_id}: run time {run} != ideal {ideal} + causes "
                                  f"({explained - ideal}); accounts do not close")
    return (
        st.job_id, spec.model, st.num_gpus, spec.user or "",
        st.arrival_s, st.first_start, finish, jct,
        queue if queue > tol or queue < -tol else (queue if queue >= 0 else 0.0), run,
        ideal, st.comm_s, con + spr, con,
        spr, shr, het, swi, rst,
        st.work, st.preemptions, st.placements,
        st.max_servers, st.max_racks, _gpu_text(st.last_gpus),
    )  # the order of RECORD_COLUMNS (tests/test_records.py checks it)


_GPU_TEXT: dict[tuple[int, ...], str] = {}


def _gpu_text(gpus: tuple[int, ...]) -> str:
    """``"0 1 2 3"`` for GPUs (0, 1, 2, 3); memoised, since consolidated placements repeat the same sets."""
    gpus = tuple(gpus)  # the identity for a tuple
    text = _GPU_TEXT.get(gpus)
    if text is None:
        if len(_GPU_TEXT) >= 1 << 16:
            _GPU_TEXT.clear()
        text = _GPU_TEXT[gpus] = " ".join(map(str, gpus))
    return text


_CAUSE_NAMES = ("contention_s", "spread_s", "sharing_s", "hetero_s", "switch_s", "restart_s")


def rejected_row(st: JobState) -> dict[str, Any]:
    return {"job_id": st.spec.job_id, "num_gpus": st.spec.num_gpus, "source": st.spec.source,
            "reason": st.reject_reason}
