"""The testbed offset-persistence benchmark's arithmetic (the run itself needs root and ~13 minutes)."""

from __future__ import annotations

import math
from typing import Any

from benchmark_module import load

opt = load("offset_persistence_testbed")


def ring_records(first_comm: float, period: float, n: int, compute: float = 0.5) -> list[dict[str, Any]]:
    """n iterations of a ring whose all-reduce starts at first_comm + k·period."""
    out = []
    for k in range(n):
        start = first_comm - compute + k * period
        out.append({"start": start, "end": start + period, "compute_s": compute, "comm_s": period - compute})
    return out


def test_offsets_fold_to_half_a_period() -> None:
    a = ring_records(10.0, 1.0, 6)
    assert opt.folded_offsets(a, ring_records(10.0, 1.0, 6)) == [0.0] * 6
    opposite = opt.folded_offsets(a, ring_records(10.5, 1.0, 6))
    assert all(abs(x - 0.5) < 1e-9 for x in opposite[1:])
    late = opt.folded_offsets(a, ring_records(10.8, 1.0, 6))  # 0.8 period after = 0.2 before
    assert all(abs(x - 0.2) < 1e-9 for x in late[1:])
    # before b's first iteration and after its last: no partner, no offset (b runs 11.75–13.75)
    early = opt.folded_offsets(a, ring_records(12.25, 1.0, 2))
    assert math.isnan(early[0]) and math.isnan(early[1]) and math.isnan(early[4]) and math.isnan(early[5])
    assert abs(early[2] - 0.25) < 1e-9 and abs(early[3] - 0.25) < 1e-9


def test_drifting_partner_shows_in_the_windows() -> None:
    a = ring_records(0.0, 1.0, 40)
    b = ring_records(0.0, 1.01, 40)  # 1 % longer period: the offset grows by 0.01 period per iteration
    offs = opt.folded_offsets(a, b)
    first, later = opt.window_means(offs, [(1, 5), (21, 40)])
    assert first < 0.05 < 0.2 < later


def test_summary_uses_the_alone_run_for_the_locked_predictions() -> None:
    alone = ring_records(0.5, 1.0, 10, compute=0.48)  # all-reduce 0.52 s
    runs = {"aligned": (ring_records(0.5, 1.5, 8, compute=0.48), ring_records(0.5, 1.5, 8, compute=0.48))}
    s = opt.summarise(runs, alone, 8)
    assert s["alone"] == {"compute_s": 0.48, "comm_s": 0.52, "iteration_s": 1.0}
    assert s["locked"] == {"aligned_s": 1.52, "opposite_s": 1.0}
    row = s["rows"][0]
    assert row["windows"] == ["1–5", "6–8"] and row["iteration_s"] == [1.5, 1.5]
    assert row["iteration_over_alone"] == [1.5, 1.5] and row["offset_periods"] == [0.0, 0.0]
    assert "| aligned | offset (periods) | 0.00 | 0.00 |" in opt.markdown(s)


def test_model_predictions_for_the_pair() -> None:
    """Random phases and maxmin do not depend on the start offset (up to the half period b starts later, 1 % of
    20 iterations); locking for good does, in opposite directions; the default (locked for its first 6 iterations,
    then random) lies between the two, on the locked side of random phases for either start."""
    rows = [line.split("|")[1:-1] for line in opt.predictions(20, None).splitlines()[2:]]
    (name_a, rand_a, six_a, lock_a, mm_a), (name_o, rand_o, six_o, lock_o, mm_o) = rows
    assert name_a.strip() == "aligned" and name_o.strip() == "opposite"
    assert math.isclose(float(rand_a), float(rand_o), rel_tol=0.01)
    assert math.isclose(float(mm_a), float(mm_o), rel_tol=0.01)
    assert float(lock_o) < float(rand_o) < float(lock_a) <= float(mm_a) + 1e-9
    assert float(lock_o) < float(six_o) < float(rand_o) < float(six_a) < float(lock_a)


def test_hold_counts_the_leading_iterations_near_the_first_offset() -> None:
    assert opt.hold_iterations([0.5, 0.48, float("nan"), 0.41, 0.39, 0.5]) == 3
    assert opt.hold_iterations([0.0, 0.11]) == 1
    assert opt.hold_iterations([]) == 0


def test_the_default_lock_length_is_the_measured_median_hold() -> None:
    """phased_tcp's lock_iterations is the median hold of the saved testbed runs (both starts, both runs)."""
    import statistics
    from pathlib import Path

    from ddlsched.perf.phase_lock import LOCK_ITERATIONS
    from ddlsched.testbed.executor import read_iterations

    root = Path(__file__).resolve().parents[1] / "benchmarks" / "offset_persistence_results"
    holds = []
    for run in ("run1", "run2"):
        for start in ("aligned", "opposite"):
            a, b = (read_iterations(root / run / start / f"{j}.jsonl") for j in "ab")
            holds.append(opt.hold_iterations(opt.folded_offsets(a, b)))
    assert sorted(holds) == [2, 6, 6, 8]
    assert statistics.median(holds) == LOCK_ITERATIONS
