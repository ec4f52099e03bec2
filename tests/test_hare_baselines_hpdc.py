"""HPDC'22 baselines gavel-fifo, allox, sched-homo (docs/policies/hare.md §10): hand-checked cases."""

from __future__ import annotations

import numpy as np
import pytest

from ddlsched.cluster.topology import Cluster, ServerSpec
from ddlsched.policies import make_policy
from ddlsched.policies.hare_allox import hungarian
from test_hare import TYPES, _by_id, _cluster, _job, _run


def test_gavel_fifo_gang_fastest_gpus_and_head_of_line_blocking() -> None:
    # 2 V100 + 2 K80. a: 3 GPUs × 1 round at 0 → V100, V100, K80 (fastest idle), round = 3 s (paced by the K80).
    # b: 2 GPUs at 0.5 waits (1 GPU idle); c: 1 GPU at 1 may not pass b (HOL blocking) → both start at 3.
    jobs = [_job("a", 3, 1), _job("b", 2, 1, arrival=0.5), _job("c", 1, 1, arrival=1.0)]
    _, res = _run(_cluster(2, 2), jobs, make_policy("gavel-fifo"))
    r = _by_id(res)
    assert r["a"]["jct_s"] == pytest.approx(3.0)
    assert r["a"]["last_gpus"] == "0 1 2"
    assert r["b"]["first_start_s"] == pytest.approx(3.0)
    assert r["c"]["first_start_s"] == pytest.approx(3.0)
    assert r["b"]["last_gpus"] == "0 1"  # the two V100s


def test_hungarian_matches_brute_force() -> None:
    rng = np.random.default_rng(3)
    from itertools import permutations
    for _ in range(20):
        c = rng.integers(0, 20, size=(3, 5)).astype(float)
        cols = hungarian(c)
        best = min(sum(c[i, p[i]] for i in range(3)) for p in permutations(range(5), 3))
        assert len(set(cols)) == 3
        assert sum(c[i, cols[i]] for i in range(3)) == pytest.approx(best)


def test_allox_one_gpu_per_job_no_intra_job_parallelism() -> None:
    # 1 V100 + 1 K80, a: 2 tasks × 1 round at t=0. AlloX runs both tasks back to back on one GPU: on the V100
    # (2 s) rather than the K80 (6 s); no relaxed round spreads it over two GPUs.
    _, res = _run(_cluster(1, 1), [_job("a", 2, 1)], make_policy("allox"))
    r = _by_id(res)["a"]
    assert r["jct_s"] == pytest.approx(2.0)
    assert r["last_gpus"] == "0 0"


def test_allox_matching_sends_short_job_first_on_shared_gpu() -> None:
    # 1 V100 only; a (4 tasks) and b (1 task) both arrive at 0: min Σ C puts b first (1 + 5 = 6 < 4 + 5 = 9).
    _, res = _run(_cluster(1, 0), [_job("a", 4, 1), _job("b", 1, 1)], make_policy("allox"))
    r = _by_id(res)
    assert r["b"]["jct_s"] == pytest.approx(1.0)
    assert r["a"]["jct_s"] == pytest.approx(5.0)


def test_sched_homo_smith_order_blind_to_gpu_type() -> None:
    # 1 V100 + 1 K80 (K80 is GPU 1). a: 1 task × 1 round, b: 1 task × 1 round, b weighted 3 → b first, on GPU 0;
    # a takes the next idle GPU in index order (the K80, 3 s) — no heterogeneity guard.
    jobs = [_job("a", 1, 1), _job("b", 1, 1).with_(weight=3.0)]
    _, res = _run(_cluster(1, 1), jobs, make_policy("sched-homo"))
    r = _by_id(res)
    assert r["b"]["last_gpus"] == "0"
    assert r["a"]["last_gpus"] == "1"
    assert r["a"]["jct_s"] == pytest.approx(3.0)


def test_sched_homo_gpu_order_idle_vs_index() -> None:
    # a on GPU 0 (V100) 0–1; b arrives at 1.0: "idle" gives it the K80 (idle since 0, 3 s), "index" the V100 (1 s)
    jobs = [_job("a", 1, 1), _job("b", 1, 1, arrival=1.0)]
    _, res = _run(_cluster(1, 1), jobs, make_policy("sched-homo"))
    assert _by_id(res)["b"]["jct_s"] == pytest.approx(3.0)
    _, res = _run(_cluster(1, 1), jobs, make_policy("sched-homo", {"gpu_order": "index"}))
    assert _by_id(res)["b"]["jct_s"] == pytest.approx(1.0)


def test_sched_homo_spread_one_task_per_gpu_per_round() -> None:
    # GPU 0 = K80 (3 s/task), GPU 1 = V100 (1 s). b (weight 100, 1 task × 2 rounds) first → K80 0–3; a (2 tasks ×
    # 1 round) → V100 0–1. At t=1 the V100 is idle: relaxed, a's second task runs there (1–2, a done at 2);
    # spread, a may not use the V100 twice in the round and waits; at 3 b's second round takes the V100 (idle
    # longest) and a's task the K80 (3–6).
    cl = Cluster.build("t", [[ServerSpec(1, "K80", 10.0), ServerSpec(1, "V100", 10.0)]], dict(TYPES))
    jobs = [_job("b", 1, 2).with_(weight=100.0), _job("a", 2, 1)]
    _, res = _run(cl, jobs, make_policy("sched-homo"))
    assert _by_id(res)["a"]["jct_s"] == pytest.approx(2.0)
    _, res = _run(cl, jobs, make_policy("sched-homo", {"spread": True}))
    assert _by_id(res)["a"]["jct_s"] == pytest.approx(6.0)
    # a round wider than the cluster still runs (GPUs reused once every GPU had a task of it)
    _, res = _run(cl, [_job("c", 3, 1)], make_policy("sched-homo", {"spread": True}))
    assert len(res.records) == 1
