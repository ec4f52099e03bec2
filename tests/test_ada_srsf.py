"""Wang 2020 policies and the task-level engine: AdaDUAL, SRSF(n), LWF-κ, hand-computed JCT, CLI."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from ddlsched.cli import cli
from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.engine import run_simulation
from ddlsched.policies import list_policies, make_policy
from ddlsched.policies.ada_srsf import adadual_threshold, lwf_pick
from ddlsched.workload.jobspec import JobSpec

BETA, ETA = 0.856, 0.235


class _View:
    beta, eta = BETA, ETA


class _Job:
    size_mb = 10.0


def _ongoing(lefts: list[float]) -> list[tuple[object, float]]:
    return [(object(), x) for x in lefts]


def test_adadual_threshold_and_decisions():
    assert adadual_threshold(BETA, ETA) == pytest.approx(2 * (0.856 + 0.235) / 0.856)  # ≈ 2.549
    ada = make_policy("adadual")
    assert ada.admit(_Job(), 0, _ongoing([]), _View())
    assert ada.admit(_Job(), 1, _ongoing([30.0]), _View())  # 30/10 = 3.0 ≥ 2.549
    assert not ada.admit(_Job(), 1, _ongoing([20.0]), _View())  # 20/10 = 2.0 < 2.549
    assert not ada.admit(_Job(), 2, _ongoing([300.0, 300.0]), _View())  # never 3-way


@pytest.mark.parametrize(("n", "k", "ok"), [(1, 0, True), (1, 1, False), (2, 1, True), (2, 2, False),
                                            (3, 2, True)])
def test_srsf_n_admission(n, k, ok):
    assert make_policy(f"srsf{n}").admit(_Job(), k, _ongoing([1.0] * k), _View()) is ok


def test_lwf_spreads_small_and_packs_large():
    gpu_server = [0, 0, 1, 1, 2, 2]
    load = [5.0, 1.0, 3.0, 3.0, 0.5, 9.0]
    sload = {0: 3.0, 1: 3.0, 2: 4.75}
    assert lwf_pick(1, 1, range(6), load, gpu_server, sload) == [4]  # least-loaded GPU anywhere
    assert lwf_pick(4, 1, list(range(6)), load, gpu_server, sload) == [1, 0, 2, 3]  # least-loaded servers, packed
    assert lwf_pick(2, 2, list(range(6)), load, gpu_server, sload) == [4, 1]  # n ≤ κ: spread


def _cluster(servers: int, gpus: int) -> Cluster:
    return Cluster.build("t", [[ServerSpec(gpus, "V100", 10.0) for _ in range(servers)]],
                         {"V100": GPUType("V100", 32768)})


def test_tasklevel_single_job_hand_computed():
    # resnet50: fw 25 ms, bw 37 ms, M = 99.2 MB; two servers × 1 GPU → every iteration ends with β·M alone
    jobs = [JobSpec("a", 0.0, 2, "resnet50", iterations=3)]
    res = run_simulation(_cluster(2, 1), jobs, make_policy("srsf1"))
    assert res.records[0]["jct_s"] == pytest.approx(3 * (62 + 0.856 * 99.2) / 1000)
    assert res.records[0]["comm_s"] == pytest.approx(3 * 0.856 * 99.2 / 1000)


def test_tasklevel_time_sharing_contention_and_retiming():
    # 2 servers × 1 GPU; two 2-GPU resnet50 jobs time-share both GPUs and share both NICs.
    jobs = [JobSpec("a", 0.0, 2, "resnet50", iterations=1), JobSpec("b", 0.0, 2, "resnet50", iterations=1)]
    c = _cluster(2, 1)
    m = 99.2
    # srsf priority: a fw [0,25], a bw [25,62] (a has less service left), b fw [62,87], b bw [87,124].
    # a transfers alone from 62; at 124 it has m - 62/β MB left.
    left = m - 62 / BETA
    # SRSF(2) admits b at 124: both at k = 2 until a ends, then b alone.
    a2 = 124 + left * (2 * BETA + ETA)
    b2 = a2 + (m - left) * BETA
    r2 = {x["job_id"]: x["jct_s"] for x in run_simulation(c, jobs, make_policy("srsf2")).records}
    assert r2 == pytest.approx({"a": a2 / 1000, "b": b2 / 1000})
    # SRSF(1) and AdaDUAL (left/m ≈ 0.27 < 2.549) make b wait for a
    for name in ("srsf1", "adadual"):
        r = {x["job_id"]: x["jct_s"] for x in run_simulation(c, jobs, make_policy(name)).records}
        assert r == pytest.approx({"a": (62 + m * BETA) / 1000, "b": (62 + 2 * m * BETA) / 1000})


def test_authors_poll_defect_hand_computed():
    # the case above under AdaDUAL with poll_defect: from 124 ms b waits (k = 1 on its NICs, so AdaDUAL reads a's
    # remaining size every millisecond) and a's transfer runs twice as fast; b then transfers alone
    from ddlsched.engine import SimConfig
    from ddlsched.errors import ConfigError

    jobs = [JobSpec("a", 0.0, 2, "resnet50", iterations=1), JobSpec("b", 0.0, 2, "resnet50", iterations=1)]
    m = 99.2
    left = m - 62 / BETA
    a_end = 124 + left * BETA / 2
    res = run_simulation(_cluster(2, 1), jobs, make_policy("adadual"), SimConfig(perf_params={"poll_defect": 1}))
    r = {x["job_id"]: x for x in res.records}
    assert {k: v["jct_s"] for k, v in r.items()} == pytest.approx({"a": a_end / 1000, "b": (a_end + m * BETA) / 1000})
    assert r["a"]["contention_s"] < 0  # faster than its NIC allows: the mode is non-physical and says so
    assert res.perf_params.get("poll_defect") == 1
    for bad in (2, 0.5, "x"):
        with pytest.raises(ConfigError, match="poll_defect"):
            run_simulation(_cluster(2, 1), jobs, make_policy("adadual"), SimConfig(perf_params={"poll_defect": bad}))


def test_authors_load_constant_changes_only_the_load_ranking():
    from ddlsched.engine import SimConfig

    jobs = [JobSpec("a", 0.0, 2, "resnet50", iterations=3)]
    base = run_simulation(_cluster(2, 1), jobs, make_policy("srsf1"))
    alt = run_simulation(_cluster(2, 1), jobs, make_policy("srsf1"), SimConfig(perf_params={"load_ms_per_mb": 7.8125}))
    assert alt.records[0]["jct_s"] == base.records[0]["jct_s"]  # one job: nothing to rank


def test_policies_listed():
    names = {n for n, _ in list_policies()}
    assert {"lwf-kappa", "srsf1", "srsf2", "srsf3", "adadual", "ada-srsf", "wang-first-fit"} <= names


def _trace(tmp_path: Path) -> Path:
    p = tmp_path / "t.csv"
    rows = ["job_id,arrival_s,num_gpus,model,iterations,duration_s"]
    for i, (g, m) in enumerate([(1, "resnet50"), (8, "vgg16_wang"), (4, "lstm"), (2, "inception3"), (16, "resnet50")]):
        rows.append(f"j{i},{i * 0.5},{g},{m},{5 + i},")
    p.write_text("\n".join(rows) + "\n")
    return p


def test_cli_simulate_and_compare(tmp_path):
    trace = _trace(tmp_path)
    r = CliRunner().invoke(cli, ["simulate", "--trace", str(trace), "--cluster", "wang2020", "--policy", "lwf-kappa",
                                 "--policy-param", "kappa=2", "--out", str(tmp_path / "s"), "--quiet"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "s" / "summary.json").exists()
    r = CliRunner().invoke(cli, ["compare", "--trace", str(trace), "--cluster", "wang2020", "--policies",
                                 "srsf1,adadual,ada-srsf", "--out", str(tmp_path / "c"), "--quiet"])
    assert r.exit_code == 0, r.output
    assert "ada-srsf" in (tmp_path / "c" / "comparison.csv").read_text()


def test_reproduce_quick(tmp_path):
    r = CliRunner().invoke(cli, ["reproduce", "wang2020", "--quick", "--seeds", "0", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    for f in ("placement_lwf_vs_firstfit.csv", "communication_ada_srsf.md", "placement_avg_jct.png",
              "communication_avg_jct.png", "adadual_gain.png", "summary.md"):
        assert (tmp_path / f).stat().st_size > 0
    head = (tmp_path / "summary.md").read_text()
    assert "Ada-SRSF (LWF-2)" in head and "(paper -20.1 %)" in head and "(paper -36.7 %)" in head
    import csv

    mech = {(m["placement"], m["communication"]): m for m in csv.DictReader((tmp_path / "mechanisms.csv").open())}
    assert len(mech) == 3 * 4  # first-fit, LWF-1, LWF-2 × SRSF(1..3), AdaDUAL
    for m in mech.values():
        assert 0 <= float(m["contended_transfers_mean"]) <= float(m["transfers_mean"])
    for placement in ("first-fit", "LWF-1", "LWF-2"):
        assert float(mech[(placement, "SRSF(1)")]["contended_transfers_mean"]) == 0  # SRSF(1) admits onto idle NICs
        assert float(mech[(placement, "SRSF(1)")]["transfers_mean"]) > 0
