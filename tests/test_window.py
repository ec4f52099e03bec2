"""Measurement windows (--warmup/--cooldown): the excluded jobs still run; per-job metrics leave them out."""

from __future__ import annotations

import functools
import math
import operator
import statistics
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from ddlsched.cli import cli
from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.engine import SimConfig, run_simulation
from ddlsched.errors import InputError
from ddlsched.metrics.summary import busy_share, running_sum, summarize
from ddlsched.metrics.window import Exclusion, Window
from ddlsched.policies import make_policy
from ddlsched.workload import JobSpec

MURI = Path(__file__).resolve().parents[1] / "data/traces/muri/trace1.csv"


@pytest.mark.parametrize(("text", "seconds", "jobs"), [("3600", 3600.0, 0), ("90s", 90.0, 0), ("30m", 1800.0, 0),
                                                        ("12h", 43200.0, 0), ("2d", 172800.0, 0),
                                                        ("500jobs", 0.0, 500), ("1 job", 0.0, 1)])
def test_exclusions_parse(text: str, seconds: float, jobs: int) -> None:
    assert Exclusion.parse(text, "--warmup") == Exclusion(seconds, jobs)


@pytest.mark.parametrize("bad", ["5x", "1.5jobs", "-3", "inf", "nan", "h"])
def test_bad_exclusions_name_the_flag(bad: str) -> None:
    with pytest.raises(InputError, match="--cooldown"):
        Exclusion.parse(bad, "--cooldown")


def test_bounds_by_hand() -> None:
    arrivals = [0.0, 10.0, 20.0, 30.0, 40.0]
    assert Window().bounds(arrivals) == (0.0, 40.0)
    assert Window.parse("15", "2jobs").bounds(arrivals) == (15.0, 20.0)
    assert Window.parse("1jobs", "5").bounds(arrivals) == (10.0, 35.0)


def test_busy_share_integrates_the_step_series() -> None:
    ts = {"time_s": [0.0, 10.0, 30.0], "busy_gpus": [4, 2, 0]}
    # over [5, 25]: 4 GPUs for 5 s + 2 GPUs for 15 s = 50 GPU·s over 20 s × 8 GPUs
    assert busy_share(ts, 5.0, 25.0, 8) == pytest.approx(50 / 160)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=-1e12, max_value=1e12, allow_nan=False), max_size=60))
def test_running_sum_adds_in_order(xs: list[float]) -> None:
    """The summary's sums of a definition (offered load, busy share) add left to right, one at a time."""
    assert running_sum(np.array(xs, dtype=float)) == functools.reduce(operator.add, xs, 0.0)


def test_bounds_of_an_array_equal_those_of_its_list() -> None:
    arrivals = [30.0, 10.0, 0.0, 40.0, 20.0]
    for w in (Window(), Window.parse("15", "2jobs"), Window.parse("1jobs", "5")):
        assert w.bounds(np.array(arrivals)) == w.bounds(arrivals)
    assert all(math.isnan(x) for x in Window().bounds(np.zeros(0)))


def test_warmup_and_cooldown_leave_jobs_out_of_the_metrics_only() -> None:
    cluster = Cluster.build("c", [[ServerSpec(4, "V", 25.0)] * 2], {"V": GPUType("V", 32768)})
    jobs = [JobSpec(f"j{i}", 100.0 * i, [1, 2, 4][i % 3], "resnet50", iterations=500.0 + 40 * i) for i in range(30)]
    res = run_simulation(cluster, jobs, make_policy("fifo"), SimConfig())
    whole = summarize(res)
    part = summarize(res, Window.parse("5jobs", "600"))
    assert part["jobs_completed"] == whole["jobs_completed"] == 30  # accounting is over every job
    kept = [r for r in res.records if 500.0 <= r["arrival_s"] <= 2300.0]
    assert part["jobs_measured"] == len(kept) == 19
    assert (part["window_start_s"], part["window_end_s"]) == (500.0, 2300.0)
    assert part["avg_jct_s"] == pytest.approx(statistics.fmean(r["jct_s"] for r in kept))
    assert part["makespan_s"] == whole["makespan_s"]  # the whole run's
    assert whole["jobs_measured"] == 30 and whole["window_start_s"] == 0.0


def test_cli_window_flags(tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = CliRunner().invoke(cli, ["simulate", "--trace", str(MURI), "--cluster", "wang2020", "--max-jobs", "30",
                                 "--policy", "fifo", "--warmup", "5jobs", "--cooldown", "5jobs", "--out", str(out),
                                 "--quiet"])
    assert r.exit_code == 0, r.output
    assert "per-job metrics over the 20 of 30 completed jobs" in r.output
    bad = CliRunner().invoke(cli, ["simulate", "--trace", str(MURI), "--cluster", "wang2020", "--policy", "fifo",
                                   "--warmup", "ten", "--out", str(tmp_path / "bad"), "--quiet"])
    assert bad.exit_code == 2 and "--warmup" in bad.output and not (tmp_path / "bad").exists()


def test_load_over_time_by_hand() -> None:
    from ddlsched.metrics.loadtime import load_over_time

    recs = [{"arrival_s": 0.0, "num_gpus": 2, "ideal_run_s": 3600.0},
            {"arrival_s": 1800.0, "num_gpus": 4, "ideal_run_s": 900.0},
            {"arrival_s": 7200.0, "num_gpus": 8, "ideal_run_s": 1800.0}]
    ts = {"time_s": [0.0, 3600.0, 9000.0], "busy_gpus": [6, 0, 8]}
    rows = load_over_time(recs, ts, 8)
    assert [r["jobs_arrived"] for r in rows] == [2, 0, 1]
    assert [r["offered_load"] for r in rows] == pytest.approx([(7200 + 3600) / (8 * 3600), 0.0, 14400 / (8 * 3600)])
    assert [r["busy_share"] for r in rows] == pytest.approx([6 / 8, 0.0, 8 * 1800 / (8 * 3600)])


def test_a_run_folder_has_its_load_over_time(tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = CliRunner().invoke(cli, ["simulate", "--trace", str(MURI), "--cluster", "wang2020", "--max-jobs", "30",
                                 "--policy", "fifo", "--out", str(out), "--quiet"])
    assert r.exit_code == 0, r.output
    lines = (out / "load.csv").read_text().splitlines()
    assert lines[0] == "start_s,end_s,jobs_arrived,offered_load,busy_share"
    assert sum(int(x.split(",")[2]) for x in lines[1:]) == 30
