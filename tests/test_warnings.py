"""The analyst's warnings (metrics.warnings): each fires on the case it describes and stays quiet otherwise."""

from __future__ import annotations

from ddlsched.metrics.warnings import (
    load_warnings,
    outcome_warnings,
    queue_warnings,
    record_warnings,
    run_warnings,
    seeds_warning,
)

STEADY = {"offered_load": 0.8, "offered_load_min_quarter": 0.75, "offered_load_max_quarter": 0.85,
          "gpu_utilization_window": 0.82, "median_slowdown": 1.1}


def _recs(waits: list[float], finishes: list[float] | None = None) -> list[dict]:
    n = len(waits)
    finishes = finishes or [100.0 * i + 50.0 + w for i, w in enumerate(waits)]
    return [{"job_id": f"j{i}", "arrival_s": 100.0 * i, "queue_s": w, "finish_s": f}
            for i, (w, f) in enumerate(zip(waits, finishes, strict=True))][:n]


def test_a_steady_healthy_run_has_no_warning() -> None:
    assert run_warnings(STEADY, _recs([10.0] * 20)) == []


def test_each_load_warning() -> None:
    assert "mostly idle" in load_warnings({**STEADY, "offered_load": 0.2})[0]
    assert "more work arrives" in load_warnings({**STEADY, "offered_load": 1.5})[0]
    swing = load_warnings({**STEADY, "offered_load_min_quarter": 0.3, "offered_load_max_quarter": 1.1})
    assert len(swing) == 1 and "0.30–1.10" in swing[0]
    assert load_warnings({**STEADY, "offered_load": float("nan")}) == []


def test_outcome_warnings() -> None:
    spiral = outcome_warnings({**STEADY, "gpu_utilization_window": 0.95, "offered_load": 0.5})
    assert len(spiral) == 1 and "1.9× the offered load" in spiral[0]
    assert "2.5× the ideal" in outcome_warnings({**STEADY, "median_slowdown": 2.5})[0]


def test_a_queue_that_never_empties() -> None:
    # pending jobs over [0, 100]: the second half is [50, 100]
    drains = {"time_s": [0.0, 10.0, 60.0, 70.0], "pending": [0, 5, 0, 3]}
    assert queue_warnings(drains, 0.0, 100.0) == []  # empty over [60, 70)
    stuck = {"time_s": [0.0, 10.0, 60.0, 70.0, 120.0], "pending": [0, 5, 2, 3, 0]}
    assert "at least 2 job(s) wait" in queue_warnings(stuck, 0.0, 100.0)[0]  # empties only after the window
    assert "at least 5 job(s)" in queue_warnings(stuck, 0.0, 20.0)[0]  # second half [10, 20]: 5 wait throughout
    assert queue_warnings({}, 0.0, 100.0) == []


def test_a_lone_last_job() -> None:
    finishes = [100.0 * i + 60.0 for i in range(20)]
    finishes[3] = 10_000.0  # ends 8,040 s after the next-latest job, in a makespan of 10,000 s
    lone = record_warnings(_recs([10.0] * 20, finishes))
    assert lone == ["the makespan is decided by one job: j3 finishes 2.2 h after every other job (80 % of the "
                    "makespan)"]
    assert record_warnings(_recs([10.0] * 20)) == []


def test_seeds_warning() -> None:
    assert seeds_warning(3) is None
    assert "no confidence interval" in (seeds_warning(1) or "")
    assert "2 seeds" in (seeds_warning(2) or "")
