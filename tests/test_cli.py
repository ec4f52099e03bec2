"""The CLI contract (issue 2 item 9): files, keys, determinism, and clear errors with a non-zero exit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ddlsched.cli import cli

ROOT = Path(__file__).resolve().parents[1]
MURI = str(ROOT / "data/traces/muri/trace1.csv")
KEYS = {"jobs", "jobs_completed", "avg_jct_s", "median_jct_s", "p99_jct_s", "makespan_s", "avg_queueing_s",
        "comm_overhead_s", "gpu_utilization"}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ddlsched.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


def test_simulate_writes_summary_with_contract_keys_and_is_byte_identical(tmp_path: Path):
    outs = []
    for name in ("a", "b"):
        out = tmp_path / name
        r = CliRunner().invoke(cli, ["simulate", "--trace", MURI, "--cluster", "wang2020", "--policy", "tiresias",
                                     "--max-jobs", "80", "--seed", "7", "--out", str(out), "--quiet"])
        assert r.exit_code == 0, r.output
        outs.append(out)
    summary = json.loads((outs[0] / "summary.json").read_text())
    assert set(summary) >= KEYS
    assert summary["jobs"] == 80 and summary["jobs_completed"] == 80
    for f in ("summary.json", "records.csv", "timeseries.csv"):
        assert (outs[0] / f).read_bytes() == (outs[1] / f).read_bytes(), f


def test_compare_prints_one_row_per_policy(tmp_path: Path):
    r = CliRunner().invoke(cli, ["compare", "--trace", MURI, "--cluster", "rack256", "--max-jobs", "60",
                                 "--policies", "fifo,sjf+first_fit,srtf", "--out", str(tmp_path), "--quiet"])
    assert r.exit_code == 0, r.output
    for p in ("fifo+consolidated", "sjf+first_fit", "srtf+consolidated"):  # folders: resolved policy names
        assert p in r.output
        assert (tmp_path / p / "summary.json").exists()
    assert len((tmp_path / "comparison.csv").read_text().strip().splitlines()) == 4


def test_traces_info_and_policies_list():
    r = CliRunner().invoke(cli, ["traces", "info", MURI])
    assert r.exit_code == 0 and "1494" in r.output.replace(",", "")
    r = CliRunner().invoke(cli, ["policies"])
    assert r.exit_code == 0 and "tiresias+consolidated" in r.output and "maxmin" in r.output
    r = CliRunner().invoke(cli, ["traces", "formats"])
    assert r.exit_code == 0 and "generic_csv" in r.output


@pytest.mark.parametrize(("args", "needle"), [
    (["--policy", "no-such-policy"], "unknown policy 'no-such-policy'"),
    (["--policy", "fifo", "--cluster", "nope"], "unknown cluster 'nope'"),
    (["--policy", "tiresias", "--policy-param", "bogus=1"], "bogus"),
])
def test_bad_options_exit_non_zero_with_a_clear_message(tmp_path: Path, args: list[str], needle: str):
    base = ["simulate", "--trace", MURI, "--cluster", "wang2020", "--max-jobs", "5", "--out", str(tmp_path)]
    # later options win in click, so --cluster given in args overrides the default one
    r = run(*base, *args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert needle in r.stderr


def test_malformed_trace_row_names_file_line_and_field(tmp_path: Path):
    bad = tmp_path / "bad.csv"
    bad.write_text("job_id,submission_time,duration,num_gpu\n1,0,100,1\n2,10,abc,2\n")
    r = run("simulate", "--trace", str(bad), "--cluster", "wang2020", "--policy", "fifo", "--out", str(tmp_path / "o"))
    assert r.returncode == 2
    assert "bad.csv:3" in r.stderr and "duration" in r.stderr
    r = run("simulate", "--trace", str(bad), "--cluster", "wang2020", "--policy", "fifo", "--skip-invalid",
            "--out", str(tmp_path / "o"), "--quiet")
    assert r.returncode == 0, r.stderr
    assert "skipped 1 invalid row" in r.stderr
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert (s["jobs"], s["jobs_completed"], s["jobs_skipped"]) == (2, 1, 1)  # every row accounted for


def test_cluster_file_with_unknown_key_is_rejected(tmp_path: Path):
    c = tmp_path / "c.yaml"
    c.write_text("gpu_types: {V100: {mem_gb: 32}}\nracks: [{servers: [{gpus: 4, gpu_type: V100, nics: 2}]}]\n")
    r = run("simulate", "--trace", MURI, "--cluster", str(c), "--policy", "fifo", "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "c.yaml" in r.stderr and "nics" in r.stderr


def test_oversized_job_is_reported_not_hung_on(tmp_path: Path):
    t = tmp_path / "t.csv"
    t.write_text("job_id,submission_time,duration,num_gpu\n1,0,100,1\n2,0,100,512\n")
    r = run("simulate", "--trace", str(t), "--cluster", "wang2020", "--policy", "fifo", "--out", str(tmp_path / "o"),
            "--quiet")
    assert r.returncode == 0, r.stderr
    assert "rejected" in r.stderr
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert (s["jobs"], s["jobs_completed"], s["jobs_rejected"]) == (2, 1, 1)
