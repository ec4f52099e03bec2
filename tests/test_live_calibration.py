"""The start costs a live run measured, as the simulation of --compare-sim uses them (no Ray needed)."""

from __future__ import annotations

import pytest

from ddlsched.live.calibration import scaled_catalog, sim_restart_penalty, start_costs
from ddlsched.workload.profiles import ModelCatalog, ModelProfile


def _row(job: str, attempt: int, total: float | None) -> dict[str, object]:
    return {"job_id": job, "attempt": attempt, "total": total}


def test_start_costs_are_medians_in_run_seconds() -> None:
    rows = [_row("a", 1, 0.1), _row("b", 1, 0.3), _row("c", 1, 0.2), _row("a", 2, 0.5), _row("x", 1, None)]
    c = start_costs(rows, [0.01, 0.03], time_scale=10.0)
    assert c["startup_s"] == pytest.approx(2.0) and c["startup_max_s"] == pytest.approx(3.0) and c["starts"] == 3
    assert c["resume_s"] == pytest.approx(5.0) and c["resumes"] == 1
    assert c["drain_s"] == pytest.approx(0.2) and c["drains"] == 2
    assert sim_restart_penalty(c) == pytest.approx(5.0)
    only_first = start_costs(rows[:3], [], 1.0)
    assert only_first["resume_s"] is None and only_first["drain_s"] is None
    assert sim_restart_penalty(only_first) == pytest.approx(0.2)  # no relaunch measured: the first start-up
    assert sim_restart_penalty(start_costs([], [], 1.0)) is None


def test_scaled_catalog_scales_gradient_and_compute_only() -> None:
    p = ModelProfile("m", grad_mb=100.0, compute_ms=50.0, batch_size=8, mem_mb=1000.0, fw_ms=20.0, bw_ms=30.0,
                     speedup={"A100": 2.0})
    cat = ModelCatalog([p])
    assert scaled_catalog(cat, 1.0, 1.0) is cat
    q = scaled_catalog(cat, 0.001, 0.5)["m"]
    assert (q.grad_mb, q.compute_ms, q.fw_ms, q.bw_ms) == pytest.approx((0.1, 25.0, 10.0, 15.0))
    assert (q.batch_size, q.mem_mb, dict(q.speedup)) == (8, 1000.0, {"A100": 2.0})
