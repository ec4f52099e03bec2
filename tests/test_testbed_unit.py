"""Testbed pieces that need no privileges: the replay predictor, scaling, calibration fit, the local ring."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from ddlsched.cluster.topology import GBIT, Cluster, GPUType, ServerSpec
from ddlsched.testbed.calibrate import calibrated_cluster, fit
from ddlsched.testbed.executor import JobMeasurement, RunResult
from ddlsched.testbed.fabric import scaled_cluster
from ddlsched.testbed.predict import JobRun, model_params, predict
from ddlsched.testbed.scenarios import CALIBRATION, VALIDATION, tb32
from ddlsched.testbed.worker import SocketRing, ring_allreduce
from loopback import free_ports


def one_rack(nic_gbps: float = 0.1) -> Cluster:
    return Cluster.build("t", [[ServerSpec(2, "V100", nic_gbps)] * 4], {"V100": GPUType("V100", 32768)})


def test_replay_staggered_jobs_by_hand():
    c = one_rack()
    a = JobRun("a", (0, 2, 4, 6), 8.0, 5)
    b = JobRun("b", (1, 3, 5, 7), 8.0, 2, start_s=1.0)
    iso = 2 * 3 / 4 * 8e6 / (0.1 * GBIT)  # 0.96 s per all-reduce alone (docs/physics.md §2)
    p = predict(c, [a, b], "maxmin")
    assert p["b"].comm_s == pytest.approx(2 * iso)
    assert p["b"].jct_s == pytest.approx(4 * iso)
    done_alone = 1.0 / iso + 2.0  # iterations of a before b starts, plus the two shared ones
    assert p["a"].jct_s == pytest.approx(1.0 + 4 * iso + (5 - done_alone) * iso)
    assert predict(c, [a, b], "none")["a"].jct_s == pytest.approx(5 * iso)


def test_scaled_cluster_scales_every_capacity():
    base = tb32()
    sc = scaled_cluster(base, nic_mbit=100)
    assert sc.nic_Bps(0) == pytest.approx(100e6 / 8)
    assert sc.nic_Bps(6) == pytest.approx(40e6 / 8)
    assert sc.links[sc.rack_up_link(1)].capacity_Bps == pytest.approx(70e6 / 8)


def test_suites_fit_the_host():
    for sc in (*VALIDATION, *CALIBRATION):
        assert sum(len(j.gpus) for j in sc.jobs) <= 16, sc.name
        gpus = [g for j in sc.jobs for g in j.gpus]
        assert len(gpus) == len(set(gpus)), sc.name


def _result(jobs: list[JobRun], comm: dict[str, float]) -> RunResult:
    return RunResult({j.job_id: JobMeasurement(j.job_id, j.start_s, comm[j.job_id] * j.iters, comm[j.job_id], 0.0,
                                               0.0) for j in jobs}, 0.1, 1.0)


def test_calibration_recovers_efficiency_and_latency():
    sc = scaled_cluster(tb32(), nic_mbit=100)
    eff, alpha = 0.9, 0.004
    truth = calibrated_cluster(sc, {"hop_latency_s": alpha})
    runs = []
    for scen in CALIBRATION:
        p = predict(truth, scen.jobs, "maxmin", {"models": {"maxmin": {"efficiency": eff}}})
        runs.append((scen, _result(list(scen.jobs), {j: v.comm_s for j, v in p.items()})))
    prof = fit(sc, runs, nic_mbit=100, scale=0.01, split_grid=(0.0, 0.1))  # σ is not what this test checks
    assert prof["common"]["efficiency"] == pytest.approx(eff, rel=1e-6)
    assert prof["hop_latency_s"] == pytest.approx(alpha, rel=1e-6)
    assert model_params("maxmin", prof) == {"efficiency": pytest.approx(eff)}
    assert model_params("none", prof) == {}


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_socket_ring_allreduce_on_loopback(n: int):
    ports = free_ports(n)
    peers = [("127.0.0.1", p) for p in ports]
    out: dict[int, np.ndarray] = {}

    def rank(r: int) -> None:
        buf = np.arange(1001, dtype=np.float32) * (r + 1)
        if n > 1:
            ring = SocketRing(r, peers, timeout_s=10)
            ring_allreduce(ring, buf)
            ring.close()
        out[r] = buf

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    total = sum(range(1, n + 1))
    for r in range(n):
        np.testing.assert_allclose(out[r], np.arange(1001, dtype=np.float32) * total)


def test_evaluate_reports_every_model_and_reuses_saved_runs(tmp_path):
    import json

    from ddlsched.perf import PERF_MODELS
    from ddlsched.testbed.validate import evaluate, load_suite, markdown_detail, markdown_table

    sc = scaled_cluster(tb32(), nic_mbit=100)
    scen = [s for s in VALIDATION if s.name in ("nic2", "uplink")]
    for s in scen:
        pred = predict(sc, s.jobs, "maxmin")
        res = _result(list(s.jobs), {j: p.comm_s * 1.1 for j, p in pred.items()})  # measured 10 % slower
        (tmp_path / s.name).mkdir()
        (tmp_path / s.name / "run.json").write_text(json.dumps(res.as_json()))
    results = load_suite(scen, tmp_path)
    report = evaluate(sc, results, {"hop_latency_s": 0.0, "common": {}, "models": {"maxmin": {"efficiency": 1.0}}})
    rows = {(e["model"], e["variant"]): e for e in report["summary"]}
    assert {m for m, _ in rows} == set(PERF_MODELS) | {"maxmin[fairness=flow]", "maxmin[fairness=flow-rtt]",
                                                        "maxmin[fairness=tcp]", "phased[exact]",
                                                        "phased[exact,fairness=tcp]",
                                                        "phased[exact,fairness=tcp,split]",
                                                        "phased_tcp[phase_lock=false]",
                                                        "phased_tcp[lock_iterations=1e9]",
                                                        "phased_tcp[split_noise=0]"}
    assert rows[("maxmin", "raw")]["comm_median"] == pytest.approx(abs(1 / 1.1 - 1), rel=1e-6)
    # nic2 and uplink hold no ring held back elsewhere: per-flow sharing gives the per-ring rates
    assert rows[("maxmin[fairness=flow]", "raw")]["comm_median"] == pytest.approx(abs(1 / 1.1 - 1), rel=1e-6)
    assert rows[("maxmin", "raw")]["comm_p90"] == pytest.approx(abs(1 / 1.1 - 1), rel=1e-6)
    assert "`maxmin`" in markdown_table(report) and "nic2" in markdown_detail(report)


def test_longer_scenarios_multiply_iterations_only() -> None:
    from ddlsched.testbed.scenarios import VALIDATION, longer

    assert longer(VALIDATION, 1) == list(VALIDATION)
    five = longer(VALIDATION[:3], 5)
    for s, s5 in zip(VALIDATION[:3], five, strict=True):
        assert s5.name == s.name and "×5" in s5.what
        assert [(j.job_id, j.gpus, j.start_s, j.compute_ms, j.iters * 5) for j in s.jobs] == \
            [(j.job_id, j.gpus, j.start_s, j.compute_ms, j.iters) for j in s5.jobs]
    with pytest.raises(ValueError, match="iterations-scale"):
        longer(VALIDATION, 0)
