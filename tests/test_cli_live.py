"""``ddlsched live run``: the result folder, the side-by-side with the simulation, and bad input."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MURI = str(ROOT / "data/traces/muri/trace1.csv")
TIRESIAS60 = str(ROOT / "data/traces/tiresias/60_job.csv")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ddlsched.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


def test_live_run_writes_a_run_folder_and_the_comparison(tmp_path: Path):
    out = tmp_path / "o"
    r = run("live", "run", "--trace", TIRESIAS60, "--cluster", "wang2020", "--policy", "fifo,tiresias", "--max-jobs",
            "20", "--load-scale", "20", "--time-scale", "1e5", "--compare-sim", "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    assert "scheduling latency" in r.stdout
    for policy in ("fifo+consolidated", "tiresias+consolidated"):
        d = out / policy
        for f in ("summary.json", "records.csv", "timeseries.csv", "manifest.json", "live.json", "sim_summary.json"):
            assert (d / f).is_file(), f
        live = json.loads((d / "live.json").read_text())
        assert live["jobs_submitted"] == 20 == live["jobs_completed"] + live["jobs_rejected"] + live["jobs_failed"] \
            + live["jobs_cancelled"] + live["jobs_unfinished"]
        assert live["executor"] == "sim" and live["sched_latency"]["count"] >= 0
    rows = list(csv.DictReader((out / "comparison.csv").open()))
    assert [r["policy"] for r in rows] == ["fifo+consolidated", "tiresias+consolidated"]
    for row in rows:  # the twin reproduces the simulation
        assert float(row["avg_jct_err"]) < 1e-6 and float(row["makespan_err"]) < 1e-6
    assert json.loads((out / "comparison.json").read_text())["same_ranking"] is True
    assert len(list(csv.DictReader((out / "jobs_comparison.csv").open()))) == 40


@pytest.mark.parametrize(("args", "message"), [
    (["--policy", "no-such-policy"], "no-such-policy"),
    (["--policy", "allox"], "execution model"),
    (["--policy", "fifo", "--time-scale", "nan"], "time-scale"),
    (["--policy", "fifo", "--time-scale", "0"], "time-scale"),
    (["--policy", "fifo", "--executor-opt", "bogus=1"], "bogus"),
    (["--policy", "fifo,tiresias", "--policy-param", "las:thresholds=[5]"], "'las' is not one of the policies"),
    (["--policy", "fifo,tiresias", "--policy-param", "thresholds=[5]"], "thresholds"),  # fifo has no thresholds
])
def test_bad_input_exits_2_naming_the_cause(tmp_path: Path, args: list[str], message: str):
    out = tmp_path / "o"
    r = run("live", "run", "--trace", MURI, "--cluster", "wang2020", "--max-jobs", "5", "--time-scale", "1e6",
            "--out", str(out), "--quiet", *args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert message in r.stderr
    assert not out.exists()  # nothing half-written


def test_a_job_that_never_fits_is_an_error_before_anything_starts(tmp_path: Path):
    t = tmp_path / "t.csv"
    t.write_text("job_id,submission_time,duration,num_gpu\n1,0,100,1\n2,0,100,512\n")
    r = run("live", "run", "--trace", str(t), "--cluster", "wang2020", "--policy", "fifo", "--time-scale", "1e6",
            "--out", str(tmp_path / "o"), "--quiet")
    assert r.returncode == 2
    assert "can never run" in r.stderr and "512" in r.stderr
    assert not (tmp_path / "o").exists()


def test_a_scoped_policy_param_reaches_its_policy_only(tmp_path: Path):
    out = tmp_path / "o"
    r = run("live", "run", "--trace", TIRESIAS60, "--cluster", "wang2020", "--policy", "fifo,tiresias", "--max-jobs",
            "20", "--load-scale", "20", "--time-scale", "1e5", "--policy-param", "tiresias:thresholds=[5]",
            "--compare-sim", "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    manifests = {p: json.loads((out / p / "manifest.json").read_text()) for p in ("fifo+consolidated",
                                                                                   "tiresias+consolidated")}
    assert manifests["tiresias+consolidated"]["inputs"]["policy_params"] == {"thresholds": [5]}
    assert manifests["fifo+consolidated"]["inputs"]["policy_params"] == {}
