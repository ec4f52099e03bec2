"""benchmarks/yu2022_seed2.py: its stand-in planner reproduces the library's runs, and its variants change only
what they name (docs/reproductions.md, Yu et al. MobiHoc'22, Fig. 4, seed 2)."""

from __future__ import annotations

import math

import pytest

from benchmark_module import load
from ddlsched.experiments import yu2022

diag = load("yu2022_seed2")


@pytest.mark.parametrize("algorithm", ["sjf-bco", "ff", "ls"])
def test_stand_in_reproduces_the_library(algorithm: str) -> None:
    lib = yu2022.run_one(2, algorithm, horizon=1200, n_jobs=20)
    mine = diag.execute(2, "k1", algorithm, n_jobs=20)
    assert (mine["makespan"], mine["avg_jct"], mine["kappa"], mine["theta"]) == \
        (lib["makespan"], lib["avg_jct"], lib["kappa"], lib["theta"])


def test_order_variants_reorder_the_plan() -> None:
    sizes = {r["job_id"]: r["num_gpus"] for r in diag.execute(2, "k1", "ff", n_jobs=20)["records"]}
    sjf = diag.execute(2, "k1", "ff", n_jobs=20, order_key=diag.ORDERS["smallest G first (SJF)"])["entries"]
    big = diag.execute(2, "k1", "ff", n_jobs=20, order_key=diag.ORDERS["largest G first"])["entries"]
    assert [sizes[e.job_id] for e in sjf] == sorted(sizes.values())
    assert [sizes[e.job_id] for e in big] == sorted(sizes.values(), reverse=True)


def test_fixed_theta_is_one_pass_and_a_cap_below_the_largest_charge_fails() -> None:
    free = diag.execute(2, "k1", "sjf-bco", kappa=1, theta=math.inf, n_jobs=20)
    bis = diag.execute(2, "k1", "sjf-bco", kappa=1, n_jobs=20)
    assert free["theta"] == math.inf and bis["theta"] < math.inf
    cluster, jobs, kw = diag.CALLS[0]
    charge = max(j.rho_hat for j in jobs) / kw["u"]
    kw = {**kw, "kappa": 1}
    assert not diag.stand_in(None, math.floor(charge) - 1.0)(cluster, jobs, **kw).feasible
    assert diag.stand_in(None, math.inf)(cluster, jobs, **kw).entries == free["entries"]


def test_counterfactual_gives_the_longest_largest_job_the_shortest_ones_time() -> None:
    cluster = diag.yu_cluster(seed=2)
    jobs, profiles, _ = yu2022.workload(2, cluster, 160)
    long_j, short_j = diag.extremes(jobs, profiles)
    assert (long_j.job_id, short_j.job_id, long_j.num_gpus) == ("j68", "j146", 32)
    new, _, _ = diag.shortened_workload(2)(2, cluster, 160)
    changed = [(a, b) for a, b in zip(jobs, new, strict=True) if a != b]
    assert len(changed) == 1 and changed[0][1].model == short_j.model
    assert changed[0][1].iterations == short_j.iterations
