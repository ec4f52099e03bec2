"""The calibration's fitting rules without root (docs/validation.md, "Calibration"): which rows fit which
parameter, the ring-cost fit on synthetic rows, the TCP rule's γ and κ recovered from synthetic measurements, and
the shapes of the calibration scenarios that pin them."""

from __future__ import annotations

import pytest

from ddlsched.perf.tcp_share import contended, own_slow_queues, tcp_rates
from ddlsched.testbed.calibrate import SPLIT_GRID, fit, fit_ring_cost, fit_split, fit_tcp, row_role
from ddlsched.testbed.executor import JobMeasurement, RunResult
from ddlsched.testbed.fabric import scaled_cluster
from ddlsched.testbed.predict import JobRun, predict
from ddlsched.testbed.scenarios import (
    CALIBRATION,
    TCP_RULE_SCENARIOS,
    VALIDATION,
    base_name,
    calibration_suite,
    repeat_index,
    repeat_name,
    tb32,
)
from ddlsched.testbed.validate import load_calibration_runs

SC = scaled_cluster(tb32(), nic_mbit=100)
CAP = [link.capacity_Bps for link in SC.links]


def row(x_bw: float, n: int, measured: float, jobs: int = 1) -> dict:
    x_lat = 2 * (n - 1)
    return {"x_bw": x_bw, "x_lat": x_lat, "measured": measured, "role": row_role(x_bw, x_lat, jobs)}


def test_row_roles():
    assert row_role(0.04, 10, 1) == "latency"  # cal-lat: 10 steps × 0.5 ms = 12.5 % of 40 ms
    assert row_role(0.514, 6, 1) == "bandwidth"  # cal-4ring: 3 ms = 0.6 % of 514 ms
    assert row_role(0.64, 2, 2) == "shared"
    assert row_role(0.2501, 10, 1) == "bandwidth" and row_role(0.2499, 10, 1) == "latency"  # the 2 % boundary


def test_ring_cost_fit_ignores_a_latency_row_faster_than_the_link():
    """Bandwidth rows at e = 0.95 exactly; the latency row runs faster than the shaped rate (a shaper burst):
    α is clipped to 0 and e is the bandwidth rows' alone — the row that used to pull e up does not."""
    e = 0.95
    rows = [row(x, n, x / e) for x, n in ((0.48, 2), (0.514, 4), (1.524, 6))]
    rows.append(row(0.04, 6, 0.037))
    eff, alpha = fit_ring_cost(rows)
    assert eff == pytest.approx(e) and alpha == 0.0
    # with α: the latency row's residual after e sets it
    a = 0.002
    rows = [row(x, n, x / e + a * 2 * (n - 1)) for x, n in ((0.48, 2), (0.514, 4), (1.524, 6), (0.04, 6))]
    assert [r["role"] for r in rows] == ["bandwidth"] * 3 + ["latency"]
    eff, alpha = fit_ring_cost(rows)
    assert eff == pytest.approx(e) and alpha == pytest.approx(a)
    # shared rows never enter e or α
    eff2, alpha2 = fit_ring_cost([*rows, row(0.64, 2, 0.5, jobs=2)])
    assert (eff2, alpha2) == (pytest.approx(eff), pytest.approx(alpha))
    with pytest.raises(ValueError, match="bandwidth-bound"):
        fit_ring_cost([row(0.04, 6, 0.037), row(0.64, 2, 0.7, jobs=2)])


def _measure(scenario_jobs, gamma: float, kappa: float, eff: float) -> RunResult:
    p = predict(SC, scenario_jobs, "phased", {"common": {"efficiency": eff}},
                extra={"exact": True, "fairness": "tcp", "tcp_exponent": gamma, "tcp_own_queue": kappa})
    return RunResult({j.job_id: JobMeasurement(j.job_id, j.start_s, p[j.job_id].jct_s, p[j.job_id].comm_s, 0.0,
                                               0.0) for j in scenario_jobs}, 0.1, 1.0)


def test_fit_recovers_the_tcp_rule_from_the_calibration_suite():
    """Synthetic measurements made by the phase replay with γ = 1.2, κ = 0.6 and e = 0.96: fit() gets e from the
    lone rows and γ, κ from the shared ones; the calibrated tcp variants then use them."""
    runs = [(s, _measure(list(s.jobs), 1.2, 0.6, 0.96)) for s in CALIBRATION]
    prof = fit(SC, runs, nic_mbit=100, scale=0.01, split_grid=(0.0, 0.1))
    assert prof["common"]["efficiency"] == pytest.approx(0.96, rel=1e-6)
    assert prof["hop_latency_s"] == pytest.approx(0.0, abs=1e-9)
    assert prof["tcp"]["tcp_exponent"] == pytest.approx(1.2, abs=0.01)
    assert prof["tcp"]["tcp_own_queue"] == pytest.approx(0.6, abs=0.01)
    assert prof["tcp"]["split_noise"] == 0.0  # the measurements were made without an uneven split
    assert prof["tcp"]["not_identified"] == [] and prof["tcp"]["fit_rmse_rel"] < 1e-3
    assert {r["role"] for r in prof["fit"]["rows"]} == {"bandwidth", "latency", "shared"}
    own = next(s for s in CALIBRATION if s.name == "cal-own")
    with_cal = predict(SC, own.jobs, "maxmin", prof, extra={"fairness": "tcp"})
    explicit = predict(SC, own.jobs, "maxmin", {"common": prof["common"]},
                       extra={"fairness": "tcp", "tcp_exponent": prof["tcp"]["tcp_exponent"],
                              "tcp_own_queue": prof["tcp"]["tcp_own_queue"]})
    assert with_cal["a"].comm_s == pytest.approx(explicit["a"].comm_s)


def test_tcp_parameters_no_row_depends_on_keep_their_defaults():
    share2 = next(s for s in CALIBRATION if s.name == "cal-share2")  # two equal rings: weights cancel
    res = _measure(list(share2.jobs), 3.0, 1.0, 1.0)
    out = fit_tcp(SC, [(list(share2.jobs), {k: m.comm_s for k, m in res.jobs.items()})], 1.0)
    assert (out["tcp_exponent"], out["tcp_own_queue"]) == (1.5, 0.0)
    assert out["not_identified"] == ["tcp_exponent", "tcp_own_queue"]
    assert fit_tcp(SC, [], 1.0)["not_identified"] == ["tcp_exponent", "tcp_own_queue"]


def _hops(jobs: tuple[JobRun, ...]) -> dict[str, list[tuple[int, ...]]]:
    return {j.job_id: [tuple(h) for h in SC.ring_hops(j.gpus)] for j in jobs}


def _contended_per_hop(jobs: tuple[JobRun, ...]) -> dict[str, list[int]]:
    """How many contended queues each hop of each job crosses (the TCP rule's n per hop, before own queues)."""
    hops = _hops(jobs)
    q = contended(hops, tcp_rates(hops, CAP, 0.0), CAP)
    return {j: [sum(1 for lid in h if lid in q) for h in hs] for j, hs in hops.items()}


def _worst_contended(jobs: tuple[JobRun, ...]) -> dict[str, int]:
    return {j: max(per_hop) for j, per_hop in _contended_per_hop(jobs).items()}


def test_tcp_calibration_scenarios_pin_gamma_and_kappa_with_shapes_of_their_own():
    cal = {s.name: s for s in CALIBRATION}
    park, own, long = cal["cal-park"].jobs, cal["cal-own"].jobs, cal["cal-long"].jobs
    # parking lot: the 2-ring's worst hop crosses two contended queues, the 3-ring's one; no own slow queue
    assert [len(j.gpus) for j in park] == [2, 3]
    assert _worst_contended(park) == {"a": 2, "b": 1}
    assert own_slow_queues(_hops(park), CAP) == {"a": [0, 0], "b": [0, 0, 0]}
    # own slow queue: a (a 4 Gb/s NIC of its own) shares a fast NIC with b, which has none
    assert _worst_contended(own) == {"a": 1, "b": 1}
    assert own_slow_queues(_hops(own), CAP) == {"a": [1, 1], "b": [0, 0]}
    # a 2-ring beside a longer ring: the same worst-hop counts as the parking lot, but the 8-GPU ring (grouped by
    # server: 4 hops inside servers, 4 NIC hops over servers 0–3) has a NIC hop that meets nobody; the 3-ring of
    # cal-park has not
    assert [len(j.gpus) for j in long] == [2, 8]
    assert _worst_contended(long) == {"a": 2, "b": 1}
    assert own_slow_queues(_hops(long), CAP) == {"a": [0, 0], "b": [0] * 8}
    assert sorted(_contended_per_hop(long)["b"]) == [0] * 5 + [1] * 3  # 4 hops inside servers, one NIC hop free
    assert _contended_per_hop(park)["b"] == [1, 1, 1]

    # neither repeats a validation scenario's placement (the set of servers of every job)
    def servers(jobs: tuple[JobRun, ...]) -> frozenset[tuple[int, ...]]:
        return frozenset(tuple(sorted(SC.servers_of(j.gpus))) for j in jobs)

    val = {servers(s.jobs) for s in VALIDATION}
    for name in TCP_RULE_SCENARIOS:
        assert servers(cal[name].jobs) not in val, name


# --- repeats of the TCP rule's scenarios (``--cal-repeats``) -----------------------------------------------------

def test_calibration_suite_repeats_the_tcp_rule_scenarios_under_names_of_their_own():
    assert calibration_suite(1) == CALIBRATION
    suite = calibration_suite(3)
    names = [s.name for s in suite]
    assert len(names) == len(set(names))
    assert names[:len(CALIBRATION)] == [s.name for s in CALIBRATION]  # the first run keeps its old name
    assert names[len(CALIBRATION):] == ["cal-park.r2", "cal-own.r2", "cal-long.r2", "cal-sync.r2",
                                        "cal-park.r3", "cal-own.r3", "cal-long.r3", "cal-sync.r3"]  # interleaved
    by = {s.name: s for s in suite}
    for n in TCP_RULE_SCENARIOS:
        assert by[repeat_name(n, 3)].jobs == by[n].jobs
    for s in suite:
        assert repeat_name(base_name(s.name), repeat_index(s.name)) == s.name
    assert (base_name("cal-park.r12"), repeat_index("cal-park.r12")) == ("cal-park", 12)
    assert (base_name("offset0.25"), repeat_index("offset0.25")) == ("offset0.25", 1)
    with pytest.raises(ValueError, match="≥ 1"):
        calibration_suite(0)
    with pytest.raises(ValueError, match="numbered from 1"):
        repeat_name("cal-park", 0)
    # no repeat is scored or has a validation scenario's name or shape (the same checks as for CALIBRATION)
    shape = lambda s: tuple((j.gpus, j.grad_mb, j.compute_ms, j.overlap) for j in s.jobs)  # noqa: E731
    assert not {s.name for s in calibration_suite(8)} & {s.name for s in VALIDATION}
    assert not {shape(s) for s in calibration_suite(8)} & {shape(s) for s in VALIDATION}


GRID = 9  # a coarse first grid keeps these fits fast; the pattern search from its best point refines it


def _shared_runs(gammas: list[float], kappa: float = 0.6) -> tuple[list, list[str]]:
    """The shared calibration scenarios as ``fit`` hands them to ``fit_tcp``, repeat k measured with γ_k."""
    executed, names = [], []
    for s in calibration_suite(len(gammas)):
        if len(s.jobs) < 2:
            continue
        k = repeat_index(s.name)
        res = _measure(list(s.jobs), gammas[k - 1], kappa, 0.96)
        executed.append((list(s.jobs), {j: m.comm_s for j, m in res.jobs.items()}))
        names.append(s.name)
    return executed, names


def test_fit_tcp_pools_the_repeats_and_fits_each_alone():
    """Three repeats measured with γ = 0.75, 1.0, 1.25 (the spread one run of cal-park gave): the pooled fit lies
    between them, each repeat alone recovers its own γ (reported under per_repeat), the measurements are listed
    per job and repeat, and cal-share2 (run once) enters every per-repeat fit."""
    executed, names = _shared_runs([0.75, 1.0, 1.25])
    out = fit_tcp(SC, executed, 0.96, names=names, grid=GRID)
    assert out["repeats"] == {"cal-share2": 1, "cal-park": 3, "cal-own": 3, "cal-long": 3, "cal-sync": 3}
    assert out["rows"] == 2 * len(executed) and out["aggregate"] == "mean"
    assert [r["tcp_exponent"] for r in out["per_repeat"]] == [pytest.approx(g, abs=0.01) for g in (0.75, 1.0, 1.25)]
    assert all(r["fit_rmse_rel"] < 1e-3 for r in out["per_repeat"])  # (at γ = 0.75, κ ≤ 0.6 changes nothing)
    assert out["per_repeat"][1]["scenarios"] == ["cal-share2", "cal-park.r2", "cal-own.r2", "cal-long.r2",
                                                 "cal-sync.r2"]
    assert 0.8 < out["tcp_exponent"] < 1.2 and out["fit_rmse_rel"] > 0.01
    assert len(out["measured"]["cal-park/a"]) == 3 and len(out["measured"]["cal-share2/a"]) == 1
    # without names every scenario is its own: no repeats reported, the same loss as before repeats existed
    plain = fit_tcp(SC, executed, 0.96, grid=GRID)
    assert "per_repeat" not in plain and plain["tcp_exponent"] == pytest.approx(out["tcp_exponent"], abs=1e-9)
    with pytest.raises(ValueError, match="aggregate"):
        fit_tcp(SC, executed, 0.96, names=names, aggregate="max")
    with pytest.raises(ValueError, match="names"):
        fit_tcp(SC, executed, 0.96, names=names[:-1])


def test_fit_tcp_median_aggregate_ignores_one_outlying_repeat():
    """Two repeats at γ = 1.0 and one at γ = 0.5: the mean of the squared errors is pulled towards the outlier,
    the median over repeats recovers 1.0."""
    executed, names = _shared_runs([1.0, 0.5, 1.0])
    med = fit_tcp(SC, executed, 0.96, names=names, aggregate="median", grid=GRID)
    mean = fit_tcp(SC, executed, 0.96, names=names, aggregate="mean", grid=GRID)
    assert med["tcp_exponent"] == pytest.approx(1.0, abs=0.01) and med["fit_rmse_rel"] < 1e-3
    assert mean["tcp_exponent"] < 0.95


def test_fit_uses_every_repeat_and_saved_repeats_reload(tmp_path):
    """fit() hands repeats to the TCP rule by name; load_calibration_runs finds as many repeats as a directory
    holds, and a directory saved before repeats existed (or without cal-own) still loads."""
    import json

    suite = calibration_suite(2)
    runs = [(s, _measure(list(s.jobs), 1.2 if repeat_index(s.name) == 1 else 0.8, 0.6, 0.96)) for s in suite]
    prof = fit(SC, runs, nic_mbit=100, scale=0.01, split_grid=(0.0,))
    assert prof["tcp"]["repeats"]["cal-park"] == 2
    assert [r["tcp_exponent"] for r in prof["tcp"]["per_repeat"]] == [pytest.approx(1.2, abs=0.01),
                                                                      pytest.approx(0.8, abs=0.01)]
    assert prof["common"]["efficiency"] == pytest.approx(0.96, rel=1e-6)
    for s, res in runs:
        (tmp_path / s.name).mkdir()
        (tmp_path / s.name / "run.json").write_text(json.dumps(res.as_json()))
    assert [r.scenario.name for r in load_calibration_runs(tmp_path)] == [s.name for s in suite]
    for name in ("cal-park.r2", "cal-own.r2", "cal-long.r2", "cal-sync.r2", "cal-own"):
        (tmp_path / name / "run.json").unlink()
    assert [r.scenario.name for r in load_calibration_runs(tmp_path)] == [
        s.name for s in CALIBRATION if s.name != "cal-own"]


def test_fit_split_recovers_the_uneven_split_after_the_tcp_rule():
    """Shared calibration scenarios measured by the replay with an uneven split σ = 0.15 (and γ = 1.2, κ = 0.6):
    fit_split, given γ and κ, finds σ = 0.15 on its grid with no error left; at σ = 0 the error is clearly larger
    (cal-sync's two rings in phase are what σ moves most)."""
    tcp = {"tcp_exponent": 1.2, "tcp_own_queue": 0.6}
    executed, names = [], []
    for s in calibration_suite(1):
        if len(s.jobs) < 2:
            continue
        p = predict(SC, list(s.jobs), "phased", {"common": {"efficiency": 0.96}},
                    extra={"exact": True, "fairness": "tcp", "split_noise": 0.15, **tcp})
        executed.append((list(s.jobs), {j: v.comm_s for j, v in p.items()}))
        names.append(s.name)
    assert "cal-sync" in names
    # σ's neighbours on the default grid (0.025 apart) and its ends: the same argmin question at a third of the cost
    grid = (0.0, 0.125, 0.15, 0.175, 0.4)
    assert set(grid) <= set(SPLIT_GRID)
    out = fit_split(SC, executed, 0.96, tcp, names=names, grid=grid)
    assert out["split_noise"] == pytest.approx(0.15)
    assert out["split_rmse_rel"] < 1e-9 and out["split_zero_rmse_rel"] > 0.02
