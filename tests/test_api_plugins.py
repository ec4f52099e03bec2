"""The public API, the example script, and a policy written outside the package (CLI, sweep, Python)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import ddlsched
from ddlsched.cli import cli
from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.errors import ConfigError
from ddlsched.workload import JobSpec

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "examples" / "plugins" / "largest_first.py"
MURI = ROOT / "data" / "traces" / "muri" / "trace1.csv"


def test_example_script_runs(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "api_quickstart.py"), str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "shortest average JCT" in r.stdout and "records: 200 rows" in r.stdout
    assert (tmp_path / "o" / "best" / "manifest.json").is_file()


def test_simulate_api_matches_the_cli(tmp_path: Path) -> None:
    res = ddlsched.simulate(MURI, "rack256", "tiresias", max_jobs=60, seed=2)
    r = CliRunner().invoke(cli, ["simulate", "--trace", str(MURI), "--cluster", "rack256", "--policy", "tiresias",
                                 "--max-jobs", "60", "--seed", "2", "--out", str(tmp_path / "cli"), "--quiet"])
    assert r.exit_code == 0, r.output
    res.write(tmp_path / "api")
    for f in ("records.csv", "timeseries.csv"):
        assert (tmp_path / "api" / f).read_bytes() == (tmp_path / "cli" / f).read_bytes()
    back = ddlsched.load_results(tmp_path / "api")
    assert len(back) == 1 and back.runs[0].summary["jobs_completed"] == 60
    assert res.summary["execution_model"] == "fluid"


def test_options_that_do_not_apply_are_errors() -> None:
    with pytest.raises(ConfigError, match="does not apply"):
        ddlsched.simulate(MURI, "wang2020", "srsf1", max_jobs=5, restart_penalty_s=10.0)
    with pytest.raises(ConfigError, match="does not apply"):
        ddlsched.simulate(MURI, "wang2020", "fifo", max_jobs=5, model_params={"max_rounds": 3})
    with pytest.raises(ConfigError, match="unknown parameter 'nope'"):
        ddlsched.simulate(MURI, "wang2020", "fifo", max_jobs=5, policy_params={"nope": 1})
    with pytest.raises(ConfigError, match="starvation_factor"):
        ddlsched.simulate(MURI, "wang2020", "tiresias", max_jobs=5, policy_params={"starvation_factor": "x"})


def _hand_cluster() -> Cluster:
    return Cluster.build("h", [[ServerSpec(4, "V100", 10.0)]], {"V100": GPUType("V100", 32768)})


def test_plugin_policy_hand_computed() -> None:
    # 4 GPUs. a (1 GPU) and b (4 GPUs) arrive together; largest-first starts b first (vgg16 alone in one server:
    # 10 iterations of 107 ms + intra-server ring), a waits for it although a arrived first in the trace.
    ddlsched.load_plugin(str(PLUGIN))
    jobs = [JobSpec("a", 0.0, 1, "resnet50", iterations=10), JobSpec("b", 0.0, 4, "resnet50", iterations=10)]
    r = ddlsched.simulate(jobs, _hand_cluster(), "largest-first")
    rec = {x["job_id"]: x for x in r.records}
    ring = 2 * 3 / 4 * 99.2e6 / 150e9  # resnet50 gradient 99.2 MB over the 1200 Gb/s intra-server links
    assert rec["b"]["first_start_s"] == 0.0
    assert rec["b"]["finish_s"] == pytest.approx(10 * (0.062 + ring), rel=1e-6)  # resnet50: 62 ms/iteration
    assert rec["a"]["first_start_s"] == pytest.approx(rec["b"]["finish_s"])
    fifo = {x["job_id"]: x for x in ddlsched.simulate(jobs, _hand_cluster(), "fifo").records}
    assert fifo["a"]["first_start_s"] == 0.0  # the built-in FIFO order differs


def test_plugin_from_the_cli(tmp_path: Path) -> None:
    out = tmp_path / "sim"
    args = ["simulate", "--plugin", str(PLUGIN), "--policy", "largest-first", "--policy-param", "backfill=false",
            "--trace", str(MURI), "--max-jobs", "40", "--cluster", "rack256", "--out", str(out), "--quiet"]
    r = subprocess.run([sys.executable, "-m", "ddlsched.cli", *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads((out / "summary.json").read_text())["policy"] == "largest-first"
    r = subprocess.run([sys.executable, "-m", "ddlsched.cli", "simulate", "--policy", "largest-first",
                        "--trace", str(MURI), "--cluster", "rack256", "--out", str(tmp_path / "x")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "--plugin" in r.stderr  # without the plug-in: a clear error, not a traceback


def test_an_order_placement_policy_imports_no_named_policy() -> None:
    """``ORDER+PLACEMENT`` is never a registered name, so building one loads no named policy's module."""
    code = ("import sys; from ddlsched.policies import make_policy, canonical_name; "
            "p = make_policy('fifo+consolidated'); assert canonical_name('sjf+pack') == 'sjf+pack'; "
            "print(sorted(m for m in sys.modules if m.startswith('ddlsched.policies.') and "
            "m.split('.')[-1] in ('hare', 'sjf_bco', 'ada_srsf', 'delay', 'sharing')))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"


def test_parameters_are_checked_with_or_without_a_shortcut() -> None:
    from ddlsched.policies import make_policy
    from ddlsched.policies.registry import validate_params

    def needs(self: object, x: int, y: float = 1.0) -> None: ...

    assert validate_params(needs, {"x": 2}, "f") == {"x": 2}
    with pytest.raises(ConfigError, match="x"):
        validate_params(needs, {}, "f")  # a required parameter is missing: no shortcut
    assert make_policy("tiresias+pack").ordering.starvation_factor == 1.0  # defaults, no parameters given
    # an ordering's parameters are checked against its constructor's signature, which a compiled class would hide
    assert make_policy("tiresias+consolidated", {"starvation_factor": 2.0}).ordering.starvation_factor == 2.0
    with pytest.raises(ConfigError, match="unknown parameter 'nope'"):
        make_policy("fifo+consolidated", {"nope": 1})
    with pytest.raises(ConfigError, match="unknown policy"):
        make_policy("nosuch+consolidated")
