"""The extended testbed suite without root: phase scenarios, the overlapped worker mode on loopback, the exact
phase-level replay of a schedule (hand-computed cases), the fidelity plot."""

from __future__ import annotations

import argparse
import threading

import pytest

from ddlsched.cluster.topology import GBIT, Cluster, GPUType, ServerSpec
from ddlsched.perf.base import Placement
from ddlsched.perf.phase_lock import DEFAULT_SPLIT
from ddlsched.perf.phased_exact import phased_job, simulate_phases
from ddlsched.testbed.fabric import scaled_cluster
from ddlsched.testbed.phase_replay import replay_phases
from ddlsched.testbed.predict import JobRun, predict
from ddlsched.testbed.scenarios import CALIBRATION, PHASE_M0_MS, PHASES, VALIDATION, tb32
from loopback import free_ports

M0 = 2 * 3 / 4 * 4e6 / (0.1 * GBIT)  # 4-ring, 4 MB, 100 Mbit/s NICs: 0.48 s alone (docs/physics.md §2)


def rack() -> Cluster:
    return Cluster.build("t", [[ServerSpec(2, "V100", 0.1)] * 4], {"V100": GPUType("V100", 32768)})


def pair(offset_s: float, compute_s: float = M0, iters: int = 6, overlap: float = 0.0) -> list[JobRun]:
    return [JobRun("a", (0, 2, 4, 6), 4.0, iters, 1e3 * compute_s, 0.0, overlap),
            JobRun("b", (1, 3, 5, 7), 4.0, iters, 1e3 * compute_s, offset_s, overlap)]


def test_m0_of_the_phase_scenarios_is_what_the_cluster_gives():
    assert abs(PHASE_M0_MS / 1e3 - M0) < 1e-9
    sc = scaled_cluster(tb32(), nic_mbit=100)
    p = predict(sc, [JobRun("a", (0, 4, 8, 12), 4.0, 1)], "maxmin")
    assert p["a"].comm_s == pytest.approx(M0)


def test_extended_suite_covers_ratio_offset_overlap_and_stays_apart_from_calibration():
    ratios = {round(j.compute_ms / PHASE_M0_MS, 3) for s in PHASES for j in s.jobs}
    assert min(ratios) == 0.25 and max(ratios) == 4.0 and len(ratios) >= 5
    assert {j.overlap for s in PHASES for j in s.jobs} >= {0.0, 0.3, 0.6}
    assert {"compute", "ringsize"} <= {s.name for s in VALIDATION}
    assert set(PHASES) <= set(VALIDATION)
    cal = {s.name for s in CALIBRATION}
    assert not cal & {s.name for s in VALIDATION}
    shapes = {tuple((j.gpus, j.grad_mb, j.compute_ms, j.overlap) for j in s.jobs) for s in CALIBRATION}
    assert not shapes & {tuple((j.gpus, j.grad_mb, j.compute_ms, j.overlap) for j in s.jobs) for s in VALIDATION}


@pytest.mark.parametrize("name,offset_periods", [("offset0", 0.0), ("offset0.5", 0.5), ("ratio4", 0.5)])
def test_phase_scenario_offsets_are_fractions_of_the_alone_period(name: str, offset_periods: float):
    sc = next(s for s in PHASES if s.name == name)
    a, b = sc.jobs
    assert a.start_s == 0.0
    assert b.start_s == pytest.approx(offset_periods * (a.compute_ms + PHASE_M0_MS) / 1e3, abs=1e-3)


def test_exact_replay_by_hand_duty_half():
    """Two identical jobs, compute = all-reduce alone = m0 on the same NICs: opposite phases never meet
    (comm m0, iteration 2·m0); aligned phases always share (comm 2·m0, iteration 3·m0)."""
    c = rack()
    opp = replay_phases(c, pair(M0))
    assert opp["a"].comm_s == pytest.approx(M0) and opp["b"].comm_s == pytest.approx(M0)
    assert opp["a"].jct_s == pytest.approx(6 * 2 * M0)
    al = replay_phases(c, pair(0.0))
    assert al["a"].comm_s == pytest.approx(2 * M0) and al["b"].comm_s == pytest.approx(2 * M0)
    assert al["a"].jct_s == pytest.approx(6 * 3 * M0)
    # maxmin (always sending) charges the opposite case as if aligned
    assert predict(c, pair(M0), "maxmin")["a"].comm_s > 1.8 * M0


def test_exact_replay_overlap_and_finite_jobs():
    c = rack()
    # alone with ω = 0.5: the all-reduce starts m0/2 before compute ends; exposed communication m0/2
    alone = replay_phases(c, pair(0.0, overlap=0.5)[:1])
    assert alone["a"].comm_s == pytest.approx(0.5 * M0)
    assert alone["a"].jct_s == pytest.approx(6 * 1.5 * M0)
    # b starts after a has finished: neither is slowed
    seq = replay_phases(c, pair(6 * 2 * M0 + 0.1))
    assert seq["b"].comm_s == pytest.approx(M0) and seq["b"].finish_s == pytest.approx(6 * 2 * M0 + 0.1 + 12 * M0)
    # the efficiency scales the link rate
    assert replay_phases(c, pair(0.0)[:1], efficiency=0.8)["a"].comm_s == pytest.approx(M0 / 0.8)
    with pytest.raises(ValueError, match="phased model only"):
        predict(c, pair(0.0), "maxmin", extra={"exact": True})


def test_exact_replay_matches_the_steady_state_phase_simulation():
    """Equal periods keep their offset δ (docs/physics.md §11): both jobs communicate 2·m0 − δ per iteration.
    The replay of 40 iterations agrees with that and with ``simulate_phases``' steady state."""
    c = rack()
    d = 0.25 * M0
    jobs = pair(d, iters=40)
    rep = replay_phases(c, jobs)
    cap = [link.capacity_Bps for link in c.links]
    pj = [phased_job(c, Placement(j.job_id, j.gpus, j.profile()), cap, 0.0) for j in jobs]
    steady = simulate_phases(pj, cap, {"b": d}, iterations=40, warmup=5)
    assert steady["a"] == pytest.approx(3 * M0 - d)
    assert rep["a"].comm_s == pytest.approx(2 * M0 - d, rel=1e-6)
    assert rep["a"].jct_s / 40 == pytest.approx(steady["a"], rel=1e-6)
    assert rep["b"].jct_s / 40 == pytest.approx(steady["b"], rel=0.01)  # b's last phase runs alone


def test_hidden_ms_is_omega_times_the_alone_allreduce_capped_by_compute():
    c = rack()
    assert JobRun("a", (0, 2, 4, 6), 4.0, 1, 1e3 * M0, overlap=0.3).hidden_ms(c) == pytest.approx(300 * M0)
    assert JobRun("a", (0, 2, 4, 6), 4.0, 1, 10.0, overlap=0.9).hidden_ms(c) == pytest.approx(10.0)
    assert JobRun("a", (0, 2, 4, 6), 4.0, 1, 100.0).hidden_ms(c) == 0.0
    assert JobRun("a", (0,), 4.0, 1, 100.0, overlap=0.5).hidden_ms(c) == 0.0



@pytest.mark.parametrize("hide_ms", [0.0, 150.0])
def test_worker_overlap_mode_on_loopback(hide_ms: float):
    """--hide-ms: the compute-only phase is c − h, the all-reduce runs under the last h of compute, and comm_s is
    the exposed part (iteration end − compute end): on loopback the all-reduce is far shorter than h."""
    from ddlsched.testbed import worker

    peers = ",".join(f"127.0.0.1:{p}" for p in free_ports(2))
    recs: dict[int, list] = {}

    def rank(r: int) -> None:
        args = argparse.Namespace(rank=r, peers=peers, grad_bytes=4e5, iters=3, compute_ms=200.0, compute="sleep",
                                  backend="socket", start_at=0.0, start_file="", gate_timeout=10.0, out="-",
                                  hide_ms=hide_ms)
        recs[r] = worker.run(args)

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for rec in recs[0]:
        it = rec["end"] - rec["start"]
        if hide_ms:
            assert rec["comm_s"] < 0.05 and rec["allreduce_s"] < hide_ms / 1e3
            assert it == pytest.approx(0.2, abs=0.06)  # compute only: the all-reduce hid completely
        else:
            assert "allreduce_s" not in rec and rec["comm_s"] == pytest.approx(it - rec["compute_s"], abs=1e-6)
        assert rec["compute_s"] == pytest.approx(0.2, abs=0.05)


def test_plot_comm_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    from ddlsched.testbed.validate import plot_comm

    jobs = [{"scenario": s, "job": j, "measured": {"comm_s": 1.0},
             "predicted": {"maxmin/calibrated": {"comm_s": 1.1, "comm_err": 0.1},
                           "phased[exact]/calibrated": {"comm_s": 0.5, "comm_err": -3.0}}}
            for s in ("x", "y") for j in ("a", "b")]
    out = plot_comm({"jobs": jobs, "testbed": {"spec": "tb32"}}, tmp_path / "p.png")
    assert out.stat().st_size > 10_000 and out.read_bytes()[:4] == b"\x89PNG"


# --- the uneven split (docs/physics.md §14) ------------------------------------------------------------------

def test_split_noise_zero_is_the_plain_rule_and_a_lone_ring_ignores_it():
    cl = rack()
    for fairness in ("ring", "tcp"):
        plain = replay_phases(cl, pair(0.0), fairness=fairness)
        zero = replay_phases(cl, pair(0.0), fairness=fairness, split_noise=0.0)
        assert {k: (p.comm_s, p.jct_s) for k, p in plain.items()} == {k: (p.comm_s, p.jct_s) for k, p in zero.items()}
    alone = [pair(0.0)[0]]
    noisy = replay_phases(cl, alone, fairness="tcp", split_noise=0.3)["a"]
    assert noisy.comm_s == pytest.approx(M0, rel=1e-9)  # a weight scales nothing when nobody shares


def test_split_noise_moves_two_aligned_equal_rings_apart_and_is_deterministic():
    """Equal shares keep two equal rings that start together in phase (each communicates 2·m0 per iteration);
    a random uneven split lets one finish first, start its compute first, and the two drift apart, so both
    communicate less on average — never less than alone. The same inputs give the same mean."""
    cl = rack()
    fair = replay_phases(cl, pair(0.0), fairness="tcp")
    assert fair["a"].comm_s == pytest.approx(2 * M0, rel=1e-6)
    noisy = replay_phases(cl, pair(0.0), fairness="tcp", split_noise=0.2)
    again = replay_phases(cl, pair(0.0), fairness="tcp", split_noise=0.2)
    for k in "ab":
        assert M0 < noisy[k].comm_s < 0.97 * fair[k].comm_s
        assert noisy[k].comm_s == again[k].comm_s and noisy[k].jct_s == again[k].jct_s
    stronger = replay_phases(cl, pair(0.0), fairness="tcp", split_noise=0.4)
    assert stronger["a"].comm_s + stronger["b"].comm_s < noisy["a"].comm_s + noisy["b"].comm_s


@pytest.mark.parametrize("bad", [{"split_noise": -0.1}, {"split_noise": float("nan")},
                                 {"split_noise": 0.1, "split_draws": 0}, {"split_noise": 0.1, "split_draws": 1.5}])
def test_split_noise_refuses_bad_parameters(bad):
    with pytest.raises(ValueError, match="split_"):
        replay_phases(rack(), pair(0.0), fairness="tcp", **bad)


def test_the_split_variant_takes_sigma_from_the_calibration_and_none_without():
    cl = rack()
    cal = {"common": {"efficiency": 0.96}, "tcp": {"tcp_exponent": 1.2, "tcp_own_queue": 0.5, "split_noise": 0.2}}
    ex = {"exact": True, "fairness": "tcp"}

    def comm(calibration, extra):
        return {k: p.comm_s for k, p in predict(cl, pair(0.0), "phased", calibration, extra=extra).items()}

    assert comm(cal, {**ex, "split": True}) == comm(cal, {**ex, "split_noise": 0.2})
    assert comm(cal, {**ex, "split": True}) != comm(cal, ex)
    bare = {"common": {"efficiency": 0.96}}  # no fitted TCP rule: no σ either
    assert comm(bare, {**ex, "split": True}) == comm(bare, ex)


def test_phased_tcp_takes_the_calibrated_split_for_its_locked_replay():
    # the default physics' locked replay uses the calibration's σ like its γ, κ; without one, its own default
    cl = rack()
    cal = {"common": {"efficiency": 0.96}, "tcp": {"tcp_exponent": 1.2, "tcp_own_queue": 0.5, "split_noise": 0.3}}

    def comm(calibration, extra=None):
        return {k: p.comm_s for k, p in predict(cl, pair(0.0), "phased_tcp", calibration, extra=extra).items()}

    assert comm(cal) == comm(cal, {"split_noise": 0.3})
    assert comm(cal) != comm(cal, {"split_noise": 0.0})
    assert comm(cal, {"split_noise": 0.0}) != comm(cal, {"split_noise": DEFAULT_SPLIT})
    bare = {"common": {"efficiency": 0.96}}
    assert comm(bare) == comm(bare, {"split_noise": DEFAULT_SPLIT})
