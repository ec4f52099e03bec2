"""Policy-driven testbed runs without privileges: schedule extraction, refusals, record format."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ddlsched.errors import ConfigError
from ddlsched.testbed.executor import JobMeasurement, RunResult
from ddlsched.testbed.fabric import scaled_cluster
from ddlsched.testbed.policy_run import (
    emulated_catalog,
    extract_schedule,
    gated_jobs,
    markdown,
    measured_records,
    side_by_side,
    simulate_schedule,
    workload,
)
from ddlsched.testbed.scenarios import tb4


def _sc():
    return scaled_cluster(tb4(), nic_mbit=100)


def test_extract_schedule_by_hand():
    starts = [(0.0, "a", (0, 1), False, 1), (1.0, "b", (2, 3), False, 1),
              (5.0, "c", (0, 1, 2), False, 1), (7.5, "d", (4,), False, 1)]
    audit = [(0.0, "arrive", "a", 0.0), (1.0, "arrive", "b", 0.0), (2.0, "arrive", "c", 0.0),
             (3.0, "arrive", "d", 0.0), (4.0, "finish", "b", 5.0), (5.0, "finish", "a", 9.0)]
    s = {j.job_id: j for j in extract_schedule(starts, audit, {"a": 0.0, "b": 1.0, "c": 2.0, "d": 3.0})}
    assert s["a"].deps == () and s["a"].trigger == "arrival" and s["a"].exo_s == 0.0
    # c started when a finished (trigger) and reuses b's GPU 2 (previous holder, finished earlier)
    assert s["c"].deps == ("a", "b") and s["c"].trigger == "finish:a" and s["c"].exo_s == 2.0
    assert s["c"].sim_start_s == 5.0
    # d started at 7.5 with no event then: a policy timer; its exogenous time is the timer, no deps
    assert s["d"].trigger == "wake" and s["d"].exo_s == 7.5 and s["d"].deps == ()


def test_extract_schedule_refuses_restarts_and_sharing():
    with pytest.raises(ConfigError, match="started twice"):
        extract_schedule([(0.0, "a", (0,), False, 1), (2.0, "a", (1,), False, 1)], [], {"a": 0.0})
    with pytest.raises(ConfigError, match="sharing"):
        extract_schedule([(0.0, "a", (0,), True, 1)], [], {"a": 0.0})


def test_simulated_schedule_follows_the_policy():
    sc, cat = _sc(), emulated_catalog(0.01)
    ff = simulate_schedule(sc, workload("place4"), "fifo+first_fit", {}, cat)
    co = simulate_schedule(sc, workload("place4"), "fifo+consolidated", {}, cat)
    # the schedule's GPUs are exactly those of the simulator's records
    for sim in (ff, co):
        rec = {r["job_id"]: r["last_gpus"] for r in sim.result.records}
        assert {s.job_id: " ".join(map(str, s.gpus)) for s in sim.schedule} == rec
    assert {s.job_id: s.gpus for s in ff.schedule}["b"] == (1, 2)  # first fit spans servers 0, 1
    assert {s.job_id: s.gpus for s in co.schedule}["b"] == (2, 3)  # consolidated: server 1 only
    q = {s.job_id: s for s in simulate_schedule(sc, workload("queue3"), "fifo+first_fit", {}, cat).schedule}
    assert q["c"].deps == ("a", "b") and q["c"].exo_s == pytest.approx(0.2)
    g = {j.job.job_id: j for j in gated_jobs(sc, simulate_schedule(sc, workload("queue3"), "fifo+first_fit",
                                                                     {}, cat), cat)}
    assert g["c"].deps == ("a", "b") and g["c"].job.iters == 4 and g["c"].job.compute_ms == pytest.approx(100.0)
    assert g["c"].job.overlap == 0.0  # bundled profiles set no overlap


def test_profile_overlap_reaches_the_workers():
    sc = _sc()
    cat = emulated_catalog(0.01)
    hidden = cat.with_profiles([replace(cat[n], overlap=0.4) for n in cat.names() if n.startswith("tb-")])
    sim = simulate_schedule(sc, workload("queue3"), "fifo+first_fit", {}, hidden, perf_model="phased")
    for g in gated_jobs(sc, sim, hidden):
        assert g.job.overlap == 0.4
        if len(g.job.gpus) > 1:
            assert g.job.hidden_ms(sc) > 0  # the worker's --hide-ms: part of the all-reduce runs under compute


@pytest.mark.parametrize(("policy", "params", "why"), [
    ("srtf+consolidated", {}, "preemptive"), ("delay-sched", {}, "preemptive"),
    ("ada-srsf", {}, "execution model"), ("sjf-bsbf", {}, "shares GPUs")])
def test_unsupported_policies_are_refused(policy, params, why):
    with pytest.raises(ConfigError, match=why):
        simulate_schedule(_sc(), workload("queue3"), policy, params, emulated_catalog(0.01))


def test_supported_named_policies_simulate():
    sc, cat = _sc(), emulated_catalog(0.01)
    for policy, params in (("delay-sched", {"preemption": False}), ("sjf-bco", {}), ("sjf+consolidated", {})):
        sim = simulate_schedule(sc, workload("queue3"), policy, params, cat)
        assert sorted(s.job_id for s in sim.schedule) == ["a", "b", "c"]


def test_measured_records_have_the_simulator_format():
    sc, cat = _sc(), emulated_catalog(0.01)
    sim = simulate_schedule(sc, workload("queue3"), "fifo+first_fit", {}, cat)
    jobs = {}
    for r in sim.result.records:  # a fake measurement: 10 % slower than simulated, same starts
        n, per = int(r["iterations"]), r["run_s"] / r["iterations"] * 1.1
        its = [{"start": r["first_start_s"] + i * per, "end": r["first_start_s"] + (i + 1) * per,
                "comm_s": 0.05, "compute_s": 0.1} for i in range(n)]
        jobs[r["job_id"]] = JobMeasurement(r["job_id"], r["first_start_s"], n * per, 0.05, 0.1, 0.0, its)
    meas = measured_records(sc, sim, RunResult(jobs, 0.1, 1.0))
    assert [list(m) for m in meas] == [list(sim.result.records[0])] * len(meas)
    rows = side_by_side(sim.result.records, meas, sim.schedule)
    for row in rows:
        assert row["comm_err_pct"] == pytest.approx(100 * (row["sim_comm_per_iter_s"] / 0.05 - 1), abs=0.2)
        assert row["meas_jct_s"] > row["sim_jct_s"]
    table = markdown(rows, {"avg_jct_s": 2.0, "makespan_s": 3.0}, {"avg_jct_s": 2.5, "makespan_s": 3.0})
    assert table.count("\n") == len(rows) + 3 and "| **average JCT** | | | | | 2.00 | 2.50 | -20.0 % |" in table


def test_cli_policy_run_needs_a_workload():
    from click.testing import CliRunner

    from ddlsched.cli.testbed import testbed

    r = CliRunner().invoke(testbed, ["run", "--policy", "fifo"])
    assert r.exit_code != 0 and "--trace" in r.output
