"""benchmarks/tcp_gamma_sensitivity.py re-scores saved validation runs with the γ it is given, not a re-fitted one."""

from __future__ import annotations

import json
from pathlib import Path

from benchmark_module import load
from ddlsched.testbed.executor import JobMeasurement, RunResult
from ddlsched.testbed.scenarios import VALIDATION, validation_suite

ROOT = Path(__file__).resolve().parents[1]
RINGSIZE = next(s for s in VALIDATION if s.name == "ringsize")
COMM = {"a": 1.17, "b": 1.33, "c": 1.46}  # ≈ run 12's means (s per iteration)


def _module():
    return load("tcp_gamma_sensitivity")


def _saved(tmp: Path) -> Path:
    saved = tmp / "saved"
    for s in validation_suite(2, (RINGSIZE,)):
        res = RunResult({j.job_id: JobMeasurement(j.job_id, j.start_s, COMM[j.job_id] * j.iters, COMM[j.job_id], 0.0,
                                                  0.0) for j in s.jobs}, 0.1, 1.0)
        (saved / "runs" / s.name).mkdir(parents=True)
        (saved / "runs" / s.name / "run.json").write_text(json.dumps(res.as_json()))
    (saved / "calibration-runs").mkdir()  # no calibration runs: a re-fit could not reproduce the γ given
    (saved / "calibration.json").write_text(json.dumps({
        "kind": "ddlsched-calibration", "hop_latency_s": 0.0, "common": {"efficiency": 1.0},
        "models": {"maxmin": {"efficiency": 1.0}}, "tcp": {"tcp_exponent": 1.0, "tcp_own_queue": 1.0}}))
    return saved


def test_a_larger_gamma_slows_the_two_ring_of_ringsize(tmp_path):
    mod = _module()
    saved = _saved(tmp_path)
    rows = {g: mod.score(saved, g, tmp_path, only=("ringsize",)) for g in (0.0, 1.0, 1.5)}
    # ringsize/a (the 2-ring) is the worst job at γ = 0 (per-ring sharing gives it C/2: far too fast); a larger γ
    # lowers its weight, so its predicted time rises and the error shrinks — the γ given was used each time
    assert rows[0.0]["comm_worst_at"] == "ringsize/a" and rows[0.0]["comm_signed_worst"] < -0.3
    errs = [rows[g]["comm_worst"] for g in (0.0, 1.0, 1.5)]
    assert errs[0] > errs[1] > errs[2]
    # the saved calibration is left as it was
    assert json.loads((saved / "calibration.json").read_text())["tcp"]["tcp_exponent"] == 1.0
