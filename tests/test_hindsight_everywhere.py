"""``hindsight`` runs wherever a policy runs: ``compare``, a sweep cell, ``live run`` (the twin executor), each
giving the same figures as ``simulate`` (issue 30: "works in simulate, compare, sweeps, and live runs")."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

from ddlsched.experiments.runner import CellParams, run_cell

ROOT = Path(__file__).resolve().parents[1]
MURI = str(ROOT / "data/traces/muri/trace1.csv")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ddlsched.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)


def summary(folder: Path) -> dict:
    return json.loads((folder / "summary.json").read_text())


def test_compare_and_a_sweep_cell_give_the_simulate_figures(tmp_path: Path) -> None:
    args = ("--trace", MURI, "--cluster", "n8g8", "--max-jobs", "120", "--load-scale", "3")
    r = cli("simulate", *args, "--policy", "hindsight", "--out", str(tmp_path / "sim"))
    assert r.returncode == 0, r.stderr
    sim = summary(tmp_path / "sim")
    assert sim["jobs_completed"] == 120 and sim["preemptions"] > 0  # it did reorder: not FIFO in disguise

    r = cli("compare", *args, "--policies", "hindsight,tiresias", "--out", str(tmp_path / "cmp"))
    assert r.returncode == 0, r.stderr
    assert summary(tmp_path / "cmp" / "hindsight")["avg_jct_s"] == sim["avg_jct_s"]
    assert "hindsight" in r.stdout

    cell = run_cell(CellParams(policy="hindsight", cluster="n8g8", trace=MURI, seed=0, max_jobs=120,
                               load_scale=3.0))
    assert cell.error is None
    assert cell.files["records.csv"] == (tmp_path / "sim" / "records.csv").read_bytes()


def test_a_sweep_runs_hindsight_with_and_without_its_parameters(tmp_path: Path) -> None:
    cfg = tmp_path / "sweep.yaml"
    cfg.write_text(f"""name: hs
policies:
  - hindsight
  - {{name: hindsight, params: {{num_classes: 8}}}}
traces: ["{MURI}"]
clusters: [n8g8]
seeds: [0]
max_jobs: 60
""")
    r = cli("sweep", str(cfg), "--out", str(tmp_path / "sw"), "--workers", "1")
    assert r.returncode == 0, r.stderr + r.stdout
    rows = list(csv.DictReader((tmp_path / "sw" / "results.csv").open()))
    assert len(rows) == 2 and all(row["policy"].startswith("hindsight") for row in rows)
    assert all(int(row["jobs_completed"]) == 60 for row in rows)


def test_live_run_with_the_twin_matches_the_simulation(tmp_path: Path) -> None:
    out = tmp_path / "live"
    r = cli("live", "run", "--trace", MURI, "--cluster", "n8g8", "--policy", "hindsight,fifo", "--max-jobs", "60",
            "--load-scale", "4", "--time-scale", "1e6", "--compare-sim", "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    live = json.loads((out / "hindsight" / "live.json").read_text())
    assert live["jobs_submitted"] == 60 == live["jobs_completed"]
    rows = {row["policy"]: row for row in csv.DictReader((out / "comparison.csv").open())}
    assert float(rows["hindsight"]["avg_jct_err"]) < 1e-6 and float(rows["hindsight"]["makespan_err"]) < 1e-6
    assert float(rows["hindsight"]["live_avg_jct_s"]) < 0.95 * float(rows["fifo+consolidated"]["live_avg_jct_s"])
