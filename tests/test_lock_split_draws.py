"""benchmarks/lock_split_draws.py: scores a saved run as `ddlsched testbed validate` does, at any number of draws."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmark_module import load as load_benchmark
from ddlsched.perf import phase_lock

RUN = Path(__file__).resolve().parents[1] / "benchmarks" / "validation_results" / "run27"


def test_the_shipped_draws_give_the_reports_own_errors() -> None:
    draws = load_benchmark("lock_split_draws")
    report = json.loads((RUN / "fidelity.json").read_text())
    got = draws.errors(RUN)
    assert len(got) == len(report["jobs"]) == 41
    for job in report["jobs"]:
        saved = job["predicted"]["phased_tcp/calibrated"]
        comm, jct = got[f"{job['scenario']}/{job['job']}"]
        assert comm == pytest.approx(saved["comm_err"], abs=1e-12)
        assert jct == pytest.approx(saved["jct_err"], abs=1e-12)


def test_fewer_draws_move_the_split_jobs_only(monkeypatch: pytest.MonkeyPatch) -> None:
    draws = load_benchmark("lock_split_draws")
    shipped = draws.errors(RUN)
    monkeypatch.setattr(phase_lock, "SPLIT_DRAWS", 2)
    few = draws.errors(RUN)
    moved = {k for k in shipped if shipped[k] != few[k]}
    assert moved and moved < set(shipped)  # locked rings that meet move; jobs outside locks do not
    assert not any(k.startswith(("ringsize/", "nic1/")) for k in moved)  # unequal periods; a ring alone
