"""Synthetic Philly-mix generator."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddlsched.errors import InputError
from ddlsched.workload.loaders import load_trace
from ddlsched.workload.synthetic import philly_mix, philly_sizes, to_csv


def test_size_mix_160_and_80() -> None:
    assert Counter(philly_sizes(160)) == {1: 80, 2: 14, 4: 26, 8: 30, 16: 8, 32: 2}
    assert sum(philly_sizes(160)) == 644
    assert Counter(philly_sizes(80)) == {1: 40, 2: 7, 4: 13, 8: 15, 16: 4, 32: 1}


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 400), seed=st.integers(0, 10**6), arrival=st.sampled_from(["poisson", "uniform", "batch"]))
def test_deterministic(n: int, seed: int, arrival: str) -> None:
    kw = {"rate_per_s": 0.5, "window_s": 100.0}
    a = philly_mix(n, seed=seed, arrival=arrival, **kw)
    b = philly_mix(n, seed=seed, arrival=arrival, **kw)
    assert to_csv(a) == to_csv(b)
    assert len(a) == n and Counter(j.num_gpus for j in a.jobs) == Counter(philly_sizes(n))
    assert all(1000 <= j.iterations <= 6000 for j in a.jobs)


def test_arrival_processes_and_options() -> None:
    u = philly_mix(50, seed=1, arrival="uniform", window_s=12.0, models=["resnet50"], iterations=(10, 60))
    assert all(0 <= j.arrival_s < 12 for j in u.jobs) and {j.model for j in u.jobs} == {"resnet50"}
    assert all(10 <= j.iterations <= 60 for j in u.jobs)
    assert all(j.arrival_s == 0 for j in philly_mix(20, seed=1, arrival="batch").jobs)
    p = philly_mix(200, seed=2, rate_per_s=2.0)
    assert p.jobs[0].arrival_s == 0 and 50 < p.jobs[-1].arrival_s < 150
    assert to_csv(philly_mix(30, seed=3, rate_per_s=1.0)) != to_csv(philly_mix(30, seed=4, rate_per_s=1.0))
    with pytest.raises(InputError):
        philly_mix(10, seed=0, arrival="poisson")
    with pytest.raises(InputError):
        philly_mix(10, seed=0, arrival="sometimes")


def test_csv_round_trip(tmp_path: Path) -> None:
    t = philly_mix(80, seed=9, rate_per_s=0.1)
    f = tmp_path / "syn.csv"
    f.write_text(to_csv(t))
    back = load_trace(f)
    assert back.format == "generic_csv"
    assert [(j.job_id, j.arrival_s, j.num_gpus, j.model, j.iterations) for j in back.jobs] == [
        (j.job_id, j.arrival_s, j.num_gpus, j.model, j.iterations) for j in t.jobs]
