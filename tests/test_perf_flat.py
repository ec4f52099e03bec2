"""The placement-blind ``flat`` model against ``none`` (issue 14, item 5): hand-computed cases."""

import pytest

from ddlsched.api import simulate
from ddlsched.cluster.topology import GBIT, Cluster, GPUType, ServerSpec
from ddlsched.perf import PERF_MODELS, make_perf_model
from ddlsched.perf.base import Placement
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import ModelCatalog, ModelProfile

PROF = ModelProfile("m", grad_mb=100.0, compute_ms=50.0, batch_size=32, mem_mb=1000)


def four_by_four() -> Cluster:
    return Cluster.build("t", [[ServerSpec(4, "V100", 10.0) for _ in range(4)]], {"V100": GPUType("V100", 32768)})


def test_flat_is_registered_beside_none():
    assert PERF_MODELS["flat"].name == "flat"
    assert "NIC speed" in PERF_MODELS["none"].description


def test_split_ring_runs_at_consolidated_speed_and_ignores_contention():
    c = four_by_four()
    intra = c.links[c.gpu_tx_link(0)].capacity_Bps
    packed = 2 * 3 / 4 * 100e6 / intra  # 4 workers inside one server
    flat = make_perf_model("flat", c)
    none = make_perf_model("none", c)
    spread_a = tuple(c.server_gpus[s][0] for s in range(4))
    spread_b = tuple(c.server_gpus[s][1] for s in range(4))
    ta = flat.add(Placement("a", spread_a, PROF))["a"]
    changed = flat.add(Placement("b", spread_b, PROF))
    assert set(changed) == {"b"}  # nobody else is touched
    assert ta.comm_s == pytest.approx(packed)
    assert changed["b"].comm_s == pytest.approx(packed)
    assert ta.compute_s == pytest.approx(0.05)
    # none charges the NIC for the split ring
    assert none.add(Placement("a", spread_a, PROF))["a"].comm_s == pytest.approx(2 * 3 / 4 * 100e6 / (10 * GBIT))
    assert flat.isolated(Placement("x", spread_a, PROF)).comm_s == pytest.approx(packed)
    assert flat.remove("a") == {}
    assert flat.add(Placement("one", (0,), PROF))["one"].comm_s == 0.0


def test_flat_run_keeps_trace_durations():
    # five 3-GPU jobs on four 4-GPU servers, packed without waiting: some job gets GPUs on several servers while its
    # reference (consolidated) ring is inside one server; flat keeps every trace duration, none slows that job
    jobs = [JobSpec(job_id=f"j{i}", arrival_s=0.0, num_gpus=3, duration_s=1000.0, model="m") for i in range(5)]
    cat = ModelCatalog([PROF])
    runs = {p: simulate(jobs, four_by_four(), "fifo+pack", perf_model=p, catalog=cat) for p in ("flat", "none")}
    flat = [r["run_s"] for r in runs["flat"].records]
    none = [r["run_s"] for r in runs["none"].records]
    assert len(flat) == len(none) == 5
    assert flat == pytest.approx([1000.0] * 5)
    assert max(none) > 1000.0 * 1.05
