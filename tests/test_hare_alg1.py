"""hare-alg1 (docs/policies/hare.md §9): hand-checked cases, the relaxation, and the fallback without highspy."""

from __future__ import annotations

import builtins

import pytest

from ddlsched.policies import hare_lp, make_policy
from ddlsched.policies.hare_alg1 import HareAlg1
from ddlsched.policies.hare_lp import RelaxJob, relax
from test_hare import _by_id, _cluster, _job, _run


def _no_highspy(monkeypatch: pytest.MonkeyPatch) -> None:
    real = builtins.__import__

    def fake(name, *a, **k):  # type: ignore[no-untyped-def]
        if name == "highspy":
            raise ImportError("no highspy")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)


def test_fallback_without_highspy_is_greedy_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_highspy(monkeypatch)
    assert not hare_lp.highs_available()
    pol = make_policy("hare-alg1")
    _, res = _run(_cluster(1, 1), [_job("a", 4, 1), _job("b", 1, 2, arrival=0.5)], pol)
    assert pol.mechanisms() == {"relaxation_lp": 0, "relaxation_greedy": 1}
    assert len(res.records) == 2
    with pytest.raises(Exception, match="highspy"):
        relax([RelaxJob("a", 0.0, 1.0, 1, 1, {"V100": 1.0})], {"V100": 1}, solver="highs")


def test_greedy_relaxation_hand_checked() -> None:
    # one V100, two 1-task 1-round jobs at t=0: a (w=1, 4 s), b (w=4, 1 s). Smith's rule puts b first, so b's
    # only round starts at 0 and a's at 0 as well (a's relaxed schedule begins in the first interval with
    # capacity left: b takes 1 s of the first interval, a the rest) — x̂ is the start of the fractional schedule.
    jobs = [RelaxJob("a", 0.0, 1.0, 1, 1, {"V100": 4.0}), RelaxJob("b", 0.0, 4.0, 1, 1, {"V100": 1.0})]
    xs, method = relax(jobs, {"V100": 1}, intervals=5, solver="greedy")
    assert method == "greedy"
    assert xs["b"] == [0.0]
    # grid: 5 steps up to 5 s (1 s each); b fills [0, 1); a starts in [1, 2)
    assert xs["a"] == [pytest.approx(1.0)]


def test_round_starts_follow_the_job_rate() -> None:
    # one job, 1 task per round, 3 rounds, 2 s per task on one GPU: its rate bound is 1 task / 2 s, so the rounds'
    # x̂ are 0, 2, 4 in the greedy fill (intervals of 1 s: 0.5 task each)
    xs, _ = relax([RelaxJob("a", 0.0, 1.0, 1, 3, {"V100": 2.0})], {"V100": 1}, intervals=6, solver="greedy")
    assert xs["a"] == [pytest.approx(0.0), pytest.approx(2.0), pytest.approx(4.0)]


@pytest.mark.skipif(not hare_lp.highs_available(), reason="highspy not installed (optional extra 'lp')")
def test_lp_relaxation_orders_by_weight() -> None:
    jobs = [RelaxJob("a", 0.0, 1.0, 1, 1, {"V100": 4.0}), RelaxJob("b", 0.0, 4.0, 1, 1, {"V100": 1.0})]
    xs, method = relax(jobs, {"V100": 1}, intervals=5, solver="highs")
    assert method == "lp"
    assert xs["b"][0] < xs["a"][0]


def test_h_order_and_earliest_free_gpu_hand_checked() -> None:
    # 1 V100 (1 s/task) + 1 K80 (3 s/task). a: 4 tasks × 1 round at t=0; b: 1 task × 2 rounds at t=0.5.
    # t=0: both GPUs idle since 0, only a ready → a's tasks on GPU 0 and GPU 1. a's H (x̂ = 0 + 3/2) < b's
    # (x̂ ≥ 0.5), so the V100 runs a's last two tasks at 1–2, 2–3; a finishes at 3 with the K80. Then b takes the
    # GPU freed first at t = 3 and its second round the GPU idle longest (not the fastest).
    pol = HareAlg1(solver="greedy")
    _, res = _run(_cluster(1, 1), [_job("a", 4, 1), _job("b", 1, 2, arrival=0.5)], pol)
    r = _by_id(res)
    assert r["a"]["jct_s"] == pytest.approx(3.0)
    assert r["b"]["first_start_s"] == pytest.approx(3.0)
    # b's rounds: one on each GPU (3 s on the K80 + 1 s on the V100), in either order
    assert r["b"]["finish_s"] == pytest.approx(7.0)


def test_gpu_choice_fastest_takes_the_fast_idle_gpu() -> None:
    # 1 V100 (GPU 0) + 1 K80 (GPU 1). a (1 task) at t=0 takes GPU 0 (both idle since 0; tie → index), 0–1 s.
    # b arrives at 1.0: the K80 has been idle since 0, the V100 since 1 → "earliest" puts b on the K80 (3 s),
    # "fastest" on the V100 (1 s).
    jobs = [_job("a", 1, 1), _job("b", 1, 1, arrival=1.0)]
    _, res = _run(_cluster(1, 1), jobs, HareAlg1(solver="greedy"))
    assert _by_id(res)["b"]["jct_s"] == pytest.approx(3.0)
    _, res = _run(_cluster(1, 1), jobs, HareAlg1(solver="greedy", gpu_choice="fastest"))
    assert _by_id(res)["b"]["jct_s"] == pytest.approx(1.0)
