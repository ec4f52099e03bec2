"""Fairness metrics, hand-computed (docs/policies/fairness.md gives the definitions)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import ddlsched
from ddlsched.cluster.tenants import Tenant, TenantSet, attach
from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.metrics.fairness import fairness, jain, jobs_in_system_avg, water_fill
from ddlsched.vocabulary import FAIRNESS_FIELDS, TENANT_FIELDS
from ddlsched.workload import JobSpec


def _tenants(wa: float = 1.0, wb: float = 1.0) -> TenantSet:
    return TenantSet({"A": Tenant("A", wa, 0, {}, None, None, None), "B": Tenant("B", wb, 0, {}, None, None, None),
                      "default": Tenant("default", 1.0, 0, {}, None, None, None)}, "default")


def _rec(job: str, user: str, gpus: int, arrival: float, start: float, finish: float, run: float,
         ideal: float) -> dict:
    return {"job_id": job, "user": user, "num_gpus": gpus, "arrival_s": arrival, "first_start_s": start,
            "finish_s": finish, "jct_s": finish - arrival, "run_s": run, "ideal_run_s": ideal}


# 4 GPUs. a1 (A, 2 GPUs) and b1 (B, 2 GPUs) run [0, 10]; a2 (A, 4 GPUs) arrives at 0 and runs [10, 20].
RECORDS = [_rec("a1", "A", 2, 0, 0, 10, 10, 10), _rec("b1", "B", 2, 0, 0, 10, 10, 10),
           _rec("a2", "A", 4, 0, 10, 20, 10, 10)]


def test_helpers() -> None:
    assert water_fill(4, np.array([6.0, 2.0]), np.array([1.0, 1.0])).tolist() == [2.0, 2.0]
    assert water_fill(4, np.array([6.0, 2.0]), np.array([3.0, 1.0])).tolist() == [3.0, 1.0]
    assert water_fill(10, np.array([1.0, 0.0, 20.0]), np.array([1.0, 5.0, 1.0])).tolist() == [1.0, 0.0, 9.0]
    assert jain([1, 1, 1]) == 1.0 and jain([1, 0, 0]) == pytest.approx(1 / 3)
    # jobs in the system: 3 over [0, 10], then 1 over [10, 20]
    n = jobs_in_system_avg(np.array([0.0, 0.0, 0.0]), np.array([10.0, 10.0, 20.0]))
    assert n.tolist() == [3.0, 3.0, 2.0]  # a2: (3·10 + 1·10) / 20


def test_equal_weights_hand_computed() -> None:
    out, rho, shares = fairness(RECORDS, _tenants(), 4)
    # entitlement [0,10]: demand A 6, B 2 → 2 each; [10,20]: A 4 → A 2·10 + 4·10 = 60 GPU-s, B 2·10 = 20
    a, b = out["tenants"]["A"], out["tenants"]["B"]
    assert (a["gpu_s_received"], a["gpu_s_entitled"]) == (60.0, pytest.approx(60.0))
    assert (b["gpu_s_received"], b["gpu_s_entitled"]) == (20.0, pytest.approx(20.0))
    assert out["jain_index"] == pytest.approx(1.0)
    assert (a["jobs"], a["avg_jct_s"], a["p95_jct_s"]) == (2, 15.0, pytest.approx(19.5))
    assert (b["jobs"], b["avg_jct_s"]) == (1, 10.0)
    assert out["tenants"]["default"] == {"jobs": 0, "avg_jct_s": None, "p95_jct_s": None, "gpu_s_received": 0.0,
                                         "gpu_s_entitled": 0.0, "normalised_share": None}
    # rho: isolated = ideal × jobs in system; a1, b1: 10 / (10·3); a2: 20 / (10·2) = 1, not > 1
    assert [r["rho"] for r in rho] == pytest.approx([1 / 3, 1 / 3, 1.0])
    assert out["rho_max"] == pytest.approx(1.0) and out["rho_gt1_frac"] == 0.0
    assert out["share_bucket_s"] == pytest.approx(0.2) and len(shares) == 100 * 3
    first = {r["tenant"]: r for r in shares[:3]}
    assert (first["A"]["demand_gpus"], first["A"]["entitled_gpus"], first["A"]["received_gpus"]) == \
        pytest.approx((6.0, 2.0, 2.0))
    assert set(out) == set(FAIRNESS_FIELDS) and set(a) == set(TENANT_FIELDS)


def test_weights_change_the_entitlement_and_jain() -> None:
    out, _, _ = fairness(RECORDS, _tenants(3.0, 1.0), 4)
    # [0,10]: level 4/(3+1) = 1 per weight, nobody sated → A 3, B 1; [10,20]: A 4 → A 70, B 10
    assert out["tenants"]["A"]["gpu_s_entitled"] == pytest.approx(70.0)
    assert out["tenants"]["B"]["gpu_s_entitled"] == pytest.approx(10.0)
    # x = 60/70, 20/10 → (20/7)² / (2 · (36/49 + 4)) = 400/464
    assert out["jain_index"] == pytest.approx(400 / 464)


def test_rho_above_one_and_window_and_default_tenant() -> None:
    recs = [*RECORDS, _rec("z", "zed", 1, 100, 140, 150, 10, 10)]  # alone in the system, waited 40 s: rho 5
    out, rho, _ = fairness(recs, _tenants(), 4)
    assert rho[-1]["tenant"] == "default" and rho[-1]["rho"] == pytest.approx(5.0)
    assert out["rho_max"] == pytest.approx(5.0) and out["rho_gt1_frac"] == pytest.approx(0.25)
    assert out["tenants"]["default"]["jobs"] == 1
    out, rho, _ = fairness(recs, _tenants(), 4, measured=np.array([True, True, True, False]))
    assert len(rho) == 3 and out["rho_gt1_frac"] == 0.0 and out["tenants"]["default"]["jobs"] == 0
    assert out["tenants"]["default"]["gpu_s_received"] == 10.0  # shares stay whole-run


def _cluster() -> Cluster:
    return Cluster.build("h", [[ServerSpec(4, "V100", 10.0)]], {"V100": GPUType("V100", 32768)})


def test_runs_with_tenants_report_fairness_and_others_do_not(tmp_path: Path) -> None:
    jobs = [JobSpec(f"j{i}", float(i), 1 + i % 2, "resnet50", duration_s=50.0 + 10 * i, user="A" if i % 3 else "B")
            for i in range(8)]
    plain = ddlsched.simulate(jobs, _cluster(), "fifo")
    assert "jain_index" not in plain.summary and "tenants" not in plain.summary
    c = attach(_cluster(), _tenants())
    r1 = ddlsched.simulate(jobs, c, "fifo")
    r1.write(tmp_path / "a")
    ddlsched.simulate(jobs, c, "fifo").write(tmp_path / "b")
    for f in ("summary.json", "fairness.csv", "tenant_shares.csv", "records.csv"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()  # deterministic
    s = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert set(FAIRNESS_FIELDS) <= set(s)
    assert s["tenants"]["A"]["jobs"] + s["tenants"]["B"]["jobs"] == 8
    assert s["tenants"]["A"]["gpu_s_received"] + s["tenants"]["B"]["gpu_s_received"] == pytest.approx(
        sum(r["num_gpus"] * r["run_s"] for r in r1.records))
    assert (tmp_path / "a" / "fairness.csv").read_text().count("\n") == 9


def test_compare_and_report_show_tenants(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from ddlsched.cli import cli

    trace = tmp_path / "t.csv"
    rows = ["job_id,submit_time,num_gpus,duration,model,vc"]
    rows += [f"j{i},{i * 20},{1 + i % 2},{300 + 50 * (i % 5)},resnet50,{'vc' + str(i % 3)}" for i in range(30)]
    trace.write_text("\n".join(rows) + "\n")
    tenants = tmp_path / "tenants.yaml"
    tenants.write_text("queues:\n  vc0: {quota: 4}\n  vc1: {quota: 2, weight: 2}\n")
    out = tmp_path / "cmp"
    r = CliRunner().invoke(cli, ["compare", "--trace", str(trace), "--cluster", "rack256", "--tenants", str(tenants),
                                 "--policies", "fifo,quota,fair-maxmin", "--out", str(out), "--quiet", "--report"])
    assert r.exit_code == 0, r.output
    assert "fairness across tenants" in r.output
    assert "10 job(s) of 1 trace user(s) that no tenant names (vc2)" in r.output
    header = (out / "comparison.csv").read_text().splitlines()[0].split(",")
    assert {"jain_index", "rho_gt1_frac", "rho_max"} <= set(header)
    md = (out / "report.md").read_text()
    assert "### Tenants" in md and "tenant_shares.png" in md and (out / "report_plots" / "tenant_shares.png").is_file()
    s = json.loads((out / "quota" / "summary.json").read_text())
    assert sorted(s["tenants"]) == ["default", "vc0", "vc1"] and s["tenants"]["default"]["jobs"] == 10
