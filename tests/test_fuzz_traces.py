"""Property-based fuzzing of every trace format: a mutated file gives a located InputError or loads with every
row accounted for, and ``ddlsched simulate`` on it exits 0 with all jobs or 2 with ``error:``, never a traceback.

The long campaign (hundreds of files, CLI flag cases) is ``benchmarks/fuzz_traces.py``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trace_mutations import check_load, check_simulate, cluster_gpu_types, data_rows, mutate, seeds

SEEDS = seeds()
FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.mark.parametrize("seed", SEEDS, ids=[s.name for s in SEEDS])
def test_seeds_load_completely(seed, tmp_path: Path) -> None:
    f = tmp_path / f"{seed.name}.csv"
    f.write_bytes(seed.data)
    out = check_load(f, skip_invalid=False)
    assert out.kind == "loaded" and out.jobs == out.rows == data_rows(seed.data, out.detail) == 4, out


def _draw_file(data: st.DataObject, tmp: Path) -> tuple[Path, list[str]]:
    seed = SEEDS[data.draw(st.integers(0, len(SEEDS) - 1), label="seed")]
    n_ops = data.draw(st.integers(1, 3), label="ops")
    raw, ops = mutate(seed, lambda n: data.draw(st.integers(0, max(0, n - 1))), n_ops)
    f = tmp / ("t.trace" if seed.name == "gavel" else "t.csv")
    f.write_bytes(raw)
    return f, [seed.name, *ops]


@pytest.mark.timeout(300)
@settings(FUZZ, max_examples=100)
@given(data=st.data())
def test_mutated_traces_error_located_or_every_row_accounted(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        f, what = _draw_file(data, Path(tmp))
        for skip in (False, True):
            out = check_load(f, skip_invalid=skip)
            assert out.kind in ("error", "loaded"), (what, skip, out)


@pytest.mark.timeout(300)
@settings(FUZZ, max_examples=30)
@given(data=st.data())
def test_mutated_traces_simulate_exits_0_with_all_jobs_or_2(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        f, what = _draw_file(data, Path(tmp))
        loaded = check_load(f, skip_invalid=False, gpu_types=cluster_gpu_types())
        assert loaded.kind in ("error", "loaded"), (what, loaded)
        sim = check_simulate(f, Path(tmp) / "out", [], expect_jobs=loaded.jobs if loaded.kind == "loaded" else None)
        assert sim.kind in ("error", "loaded", "engine"), (what, sim)
        assert (sim.kind == "loaded") == (loaded.kind == "loaded"), (what, loaded, sim)
