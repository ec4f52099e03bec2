"""Repeated validation runs (``testbed validate --val-repeats``): order, saving/loading, per-job means, spread.

No root needed: the runs are fabricated (measured = a chosen time per job and repeat) and saved the way
``run_suite`` saves them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ddlsched.testbed.calibrate import save_calibration
from ddlsched.testbed.executor import JobMeasurement, RunResult
from ddlsched.testbed.fabric import scaled_cluster
from ddlsched.testbed.predict import predict
from ddlsched.testbed.scenarios import (
    CALIBRATION,
    VAL_REPEATS,
    VALIDATION,
    Scenario,
    base_name,
    calibration_suite,
    repeat_index,
    repeat_name,
    tb32,
    validation_suite,
)
from ddlsched.testbed.validate import (
    evaluate,
    group_repeats,
    load_validation_runs,
    markdown_detail,
    spread,
    spread_line,
)

SC = scaled_cluster(tb32(), nic_mbit=100)
BY_NAME = {s.name: s for s in VALIDATION}
PICK = [BY_NAME["nic2"], BY_NAME["uplink"]]
CAL = {"kind": "ddlsched-calibration", "hop_latency_s": 0.0, "common": {"efficiency": 1.0},
       "models": {"maxmin": {"efficiency": 1.0}}}


def _run(scen: Scenario, comm: dict[str, float], lag: dict[str, float] | None = None) -> RunResult:
    lag = lag or {}
    return RunResult({j.job_id: JobMeasurement(j.job_id, j.start_s + lag.get(j.job_id, 0.0), comm[j.job_id] * j.iters,
                                               comm[j.job_id], 0.0, lag.get(j.job_id, 0.0)) for j in scen.jobs},
                     0.1, 1.0)


def _save(out: Path, name: str, res: RunResult) -> None:
    (out / name).mkdir(parents=True)
    (out / name / "run.json").write_text(json.dumps(res.as_json()))


# measured comm. time per iteration of nic2/a, nic2/b, uplink/a, b, c in repeats 1, 2, 3
COMM = {"nic2": [{"a": 1.0, "b": 1.2}, {"a": 1.1, "b": 1.2}, {"a": 1.3, "b": 1.2}],
        "uplink": [{"a": 0.6, "b": 0.7, "c": 0.7}, {"a": 0.55, "b": 0.7, "c": 0.7}, {"a": 0.7, "b": 0.7, "c": 0.65}]}


def _save_repeats(out: Path, repeats: int = 3) -> None:
    for s in validation_suite(repeats, tuple(PICK)):
        _save(out, s.name, _run(s, COMM[base_name(s.name)][repeat_index(s.name) - 1]))


def test_validation_suite_interleaves_the_repeats():
    assert validation_suite(1) == VALIDATION and VAL_REPEATS == 3
    names = [s.name for s in validation_suite(3)]
    n = len(VALIDATION)
    assert names[:n] == [s.name for s in VALIDATION]  # every scenario once, under its own name …
    assert names[n:2 * n] == [f"{s.name}.r2" for s in VALIDATION]  # … then every scenario again, …
    assert names[2 * n:] == [f"{s.name}.r3" for s in VALIDATION]
    assert len(set(names)) == 3 * n
    for s in validation_suite(3):
        assert s.jobs == BY_NAME[base_name(s.name)].jobs
        assert repeat_name(base_name(s.name), repeat_index(s.name)) == s.name
    assert [s.name for s in validation_suite(2, tuple(PICK))] == ["nic2", "uplink", "nic2.r2", "uplink.r2"]
    # the repeats stay apart from the calibration runs (which keep their own names and directory)
    assert not {s.name for s in validation_suite(5)} & {s.name for s in calibration_suite(5)}
    assert calibration_suite(4)[:len(CALIBRATION)] == CALIBRATION
    with pytest.raises(ValueError, match="--val-repeats must be ≥ 1"):
        validation_suite(0)


def test_repeats_load_in_interleaved_order_and_score_against_the_mean(tmp_path):
    _save_repeats(tmp_path)
    results = load_validation_runs(PICK, tmp_path)
    assert [r.scenario.name for r in results] == ["nic2", "uplink", "nic2.r2", "uplink.r2", "nic2.r3", "uplink.r3"]
    groups = group_repeats(results)
    assert [(s.name, [r.scenario.name for r in runs]) for s, runs in groups] == [
        ("nic2", ["nic2", "nic2.r2", "nic2.r3"]), ("uplink", ["uplink", "uplink.r2", "uplink.r3"])]
    report = evaluate(SC, results, None)
    rows = {f"{j['scenario']}/{j['job']}": j for j in report["jobs"]}
    assert list(rows) == ["nic2/a", "nic2/b", "uplink/a", "uplink/b", "uplink/c"]
    a = rows["nic2/a"]["measured"]
    assert a["runs"] == 3 and a["comm_s_runs"] == [1.0, 1.1, 1.3]
    assert a["comm_s"] == pytest.approx((1.0 + 1.1 + 1.3) / 3)
    assert a["jct_s"] == pytest.approx((1.0 + 1.1 + 1.3) / 3 * 4)  # 4 iterations
    assert a["comm_spread"] == pytest.approx((1.3 - 1.0) / ((1.0 + 1.1 + 1.3) / 3))
    assert rows["nic2/b"]["measured"]["comm_spread"] == pytest.approx(0.0, abs=1e-12)
    # every run has the same executed schedule here, so the mean prediction is the prediction
    pred = predict(SC, BY_NAME["nic2"].jobs, "maxmin")
    p = rows["nic2/a"]["predicted"]["maxmin/raw"]
    assert p["comm_s"] == pytest.approx(pred["a"].comm_s)
    assert p["comm_err"] == pytest.approx(pred["a"].comm_s / ((1.0 + 1.1 + 1.3) / 3) - 1)
    assert p["jct_err"] == pytest.approx(pred["a"].jct_s / ((1.0 + 1.1 + 1.3) / 3 * 4) - 1)
    up = rows["uplink/a"]["measured"]
    assert up["comm_s"] == pytest.approx(0.6166666667) and up["comm_spread"] == pytest.approx(0.15 / 0.6166666667)
    # spreads: nic2/b, uplink/b 0, uplink/c 7.3 %, uplink/a 24.3 %, nic2/a 26.5 % → median 7.3 %, worst nic2/a
    spreads = sorted(j["measured"]["comm_spread"] for j in report["jobs"])
    assert report["measurement_spread"]["comm_median"] == pytest.approx(spreads[2])
    assert report["measurement_spread"]["comm_worst"] == pytest.approx(spreads[-1])
    assert report["measurement_spread"]["comm_worst_at"] == "nic2/a"
    assert spreads[2] == pytest.approx(0.05 / (2.05 / 3))
    assert spread_line(report) == (
        "Measurement spread ((max − min) / mean of a job's comm. time over its 3 runs): median "
        f"{100 * spreads[2]:.1f} %, p90 {100 * report['measurement_spread']['comm_p90']:.1f} %, worst 26.5 % "
        "(nic2/a).")
    detail = markdown_detail(report, "raw")
    assert "comm spread (runs)" in detail and "| nic2 | a | 1.133 | 26.5 % (3) |" in detail


def test_prediction_is_the_mean_over_each_runs_executed_schedule():
    """Run 2 of staggered starts job c 0.6 s late: the predicted time is the mean of the two runs' predictions."""
    s = BY_NAME["staggered"]
    comm = {"a": 1.0, "b": 1.2, "c": 0.9}
    runs = [_run(s, comm), _run(Scenario(repeat_name(s.name, 2), s.what, s.jobs), comm, lag={"c": 0.6})]
    from ddlsched.testbed.validate import ScenarioResult

    report = evaluate(SC, [ScenarioResult(Scenario(repeat_name(s.name, k + 1), s.what, s.jobs), r)
                           for k, r in enumerate(runs)], None)
    p1 = predict(SC, runs[0].as_executed(s.jobs), "maxmin")
    p2 = predict(SC, runs[1].as_executed(s.jobs), "maxmin")
    assert p1["a"].jct_s != pytest.approx(p2["a"].jct_s)  # the lag matters to a
    row = next(j for j in report["jobs"] if j["job"] == "a")
    assert row["predicted"]["maxmin/raw"]["jct_s"] == pytest.approx((p1["a"].jct_s + p2["a"].jct_s) / 2)
    assert row["start_s"] == pytest.approx(0.0)


def test_a_directory_saved_before_repeats_loads_as_one_run(tmp_path):
    _save_repeats(tmp_path, repeats=1)
    results = load_validation_runs(PICK, tmp_path)
    assert [r.scenario.name for r in results] == ["nic2", "uplink"]
    report = evaluate(SC, results, None)
    a = report["jobs"][0]["measured"]
    assert (a["runs"], a["comm_s"], a["comm_spread"]) == (1, 1.0, 0.0)
    assert spread_line(report) == "Measurement spread: one run per scenario, not measured."
    # a first run is required; a missing later repeat leaves that scenario with fewer runs
    _save(tmp_path, "uplink.r2", _run(BY_NAME["uplink"], COMM["uplink"][1]))
    report = evaluate(SC, load_validation_runs(PICK, tmp_path), None)
    assert [j["measured"]["runs"] for j in report["jobs"]] == [1, 1, 2, 2, 2]
    assert spread_line(report).startswith("Measurement spread ((max − min) / mean of a job's comm. time over its "
                                          "1–2 runs)")
    (tmp_path / "nic2" / "run.json").unlink()
    with pytest.raises(FileNotFoundError):
        load_validation_runs(PICK, tmp_path)


def test_spread_is_range_over_mean():
    assert spread([2.0]) == 0.0
    assert spread([0.9, 1.0, 1.1]) == pytest.approx(0.2)


def test_cli_reuse_scores_saved_repeats(tmp_path):
    """``testbed validate --reuse`` (no root) loads every saved repeat and writes the spread into the doc block."""
    from click.testing import CliRunner

    from ddlsched.cli.testbed import testbed

    _save_repeats(tmp_path / "saved" / "runs")
    cal = save_calibration(CAL, tmp_path / "cal.json")
    doc = tmp_path / "doc.md"
    out = CliRunner().invoke(testbed, ["validate", "--reuse", str(tmp_path / "saved"), "--calibration", str(cal),
                                       "--out", str(tmp_path / "out"), "--doc", str(doc), "--only", "nic2",
                                       "--only", "uplink"])
    assert out.exit_code == 0, out.output
    assert "validation: 6 saved runs of 2 scenarios" in out.output
    assert "Measurement spread ((max − min) / mean of a job's comm. time over its 3 runs)" in out.output
    text = doc.read_text()
    assert "### Summary (all 5 jobs of the suite; each job's measured time = mean of its 3 runs)" in text
    assert "worst 26.5 % (nic2/a)." in text
    report = json.loads((tmp_path / "out" / "fidelity.json").read_text())
    assert report["measurement_spread"]["runs_max"] == 3


def test_cli_without_doc_writes_only_under_out(tmp_path, monkeypatch):
    """Item 3 of issue 32: without ``--doc`` the validation writes under ``--out`` and nowhere else (no doc, no
    docs/validation.json, no docs/images plot)."""
    from click.testing import CliRunner

    from ddlsched.cli.testbed import testbed

    _save_repeats(tmp_path / "saved" / "runs")
    cal = save_calibration(CAL, tmp_path / "cal.json")
    work = tmp_path / "work"
    (work / "docs").mkdir(parents=True)
    (work / "docs" / "validation.md").write_text("tracked\n")
    monkeypatch.chdir(work)
    out = CliRunner().invoke(testbed, ["validate", "--reuse", str(tmp_path / "saved"), "--calibration", str(cal),
                                       "--out", "results/validation", "--only", "nic2", "--only", "uplink"])
    assert out.exit_code == 0, out.output
    files = sorted(str(p.relative_to(work)) for p in work.rglob("*") if p.is_file())
    assert [f for f in files if not f.startswith("results/validation/")] == ["docs/validation.md"]
    assert (work / "docs" / "validation.md").read_text() == "tracked\n"
    assert "results/validation/fidelity.md" in files and "results/validation/fidelity.json" in files
    assert "<!-- fidelity:begin -->" in (work / "results" / "validation" / "fidelity.md").read_text()


def test_make_validate_writes_results_only_and_calls_no_sudo(tmp_path):
    """``make validate`` passes no --doc (DOC=… opts in) and its recipe has no sudo."""
    import shutil
    import subprocess
    from pathlib import Path

    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    root = Path(__file__).resolve().parents[1]
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / ".installed-stamp").write_text("")
    run = [shutil.which("make"), "-n", "-s", "-C", str(root), f"VENV={venv}"]
    plain = subprocess.run([*run, "validate"], capture_output=True, text=True, check=True).stdout
    line = [x for x in plain.splitlines() if "testbed validate" in x]
    assert line and "--out results/validation" in line[0] and "--doc" not in line[0], plain
    assert "sudo" not in plain.replace("does not call sudo", "")
    doc = subprocess.run([*run, "validate", "DOC=docs/validation.md"], capture_output=True, text=True,
                         check=True).stdout
    assert "--doc docs/validation.md" in doc


def test_rescore_of_the_published_report_reproduces_its_errors(tmp_path):
    """``testbed rescore`` (saved report, mean starts) gives the report's own errors back for the fluid models it
    scored, and scores a model the report does not have."""
    from pathlib import Path

    from click.testing import CliRunner

    from ddlsched.cli.testbed import testbed

    report = Path(__file__).resolve().parents[1] / "docs" / "validation.json"
    out = CliRunner().invoke(testbed, ["rescore", str(report), "--models", "maxmin,phased_tcp",
                                       "--out", str(tmp_path / "r.json")])
    assert out.exit_code == 0, out.output
    scored = json.loads((tmp_path / "r.json").read_text())
    assert set(scored["check"]) == {"maxmin/raw", "maxmin/calibrated"}
    assert max(scored["check"].values()) < 0.001  # within 0.1 percentage point of every job's published error
    assert {e["model"] for e in scored["summary"]} == {"maxmin", "phased_tcp"}
    bad = CliRunner().invoke(testbed, ["rescore", str(report), "--models", "nope"])
    assert bad.exit_code == 2 and "unknown model" in bad.output


def test_cli_reuse_needs_the_iterations_scale_of_the_saved_runs(tmp_path):
    """The saved 5×-iterations runs (benchmarks/validation_long_results) re-score only with the factor they used;
    with another one the CLI says which run and how many iterations it has, instead of scoring the wrong schedule."""
    from pathlib import Path

    from click.testing import CliRunner

    from ddlsched.cli.testbed import testbed

    saved = Path(__file__).resolve().parents[1] / "benchmarks" / "validation_long_results" / "run1"
    args = ["validate", "--reuse", str(saved), "--calibration", str(saved / "calibration.json"), "--only", "nic1"]
    wrong = CliRunner().invoke(testbed, [*args, "--out", str(tmp_path / "wrong")])
    assert wrong.exit_code == 2
    assert "the saved run nic1/a has 25 iterations, the scenario 5 at --iterations-scale 1" in wrong.output
    assert not (tmp_path / "wrong" / "fidelity.json").exists()
    right = CliRunner().invoke(testbed, [*args, "--iterations-scale", "5", "--out", str(tmp_path / "right")])
    assert right.exit_code == 0, right.output
    report = json.loads((tmp_path / "right" / "fidelity.json").read_text())
    assert report["testbed"]["iterations_scale"] == 5
    assert [r["iters"] for r in report["jobs"]] == [25]
