"""benchmarks/nic4_winner.py without root: the variants' jobs, the winner/lead bookkeeping and the --reuse loader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmark_module import load

nw = load("nic4_winner")


def test_base_is_the_suites_nic4() -> None:
    from ddlsched.testbed.scenarios import VALIDATION

    nic4 = next(s for s in VALIDATION if s.name == "nic4")
    assert nw.jobs_of("base") == list(nic4.jobs)


def test_variants_permute_one_thing_each() -> None:
    base = {j.job_id: j for j in nw.jobs_of("base")}
    rev = nw.jobs_of("reversed")
    assert [j.job_id for j in rev] == ["d", "c", "b", "a"] and all(j == base[j.job_id] for j in rev)
    ren = nw.jobs_of("renamed")
    assert [j.gpus for j in ren] == [j.gpus for j in base.values()] and [j.job_id for j in ren] == ["d", "c", "b", "a"]
    gp = nw.jobs_of("gpus")
    assert [j.job_id for j in gp] == ["a", "b", "c", "d"] and gp[0].gpus == base["d"].gpus
    assert {j.job_id: j.start_s for j in nw.jobs_of("d_early")} == {"a": 0.1, "b": 0.1, "c": 0.1, "d": 0.0}


def test_winner_lead_and_position() -> None:
    r = nw.summarise("reversed", {"a": 0.8, "b": 1.0, "c": 1.0, "d": 1.0}, {j: 0.0 for j in "abcd"})
    assert r["winner"] == "a" and r["winner_pos"] == 3 and r["winner_gpu"] == 0
    assert r["lead"] == pytest.approx(0.2)


def test_reuse_loader(tmp_path: Path) -> None:
    for j, comm in zip("abcd", (0.9, 1.0, 1.1, 1.0), strict=True):
        recs = [{"comm_s": comm + d, "start": 100.0 + (j == "b") * 0.002 + k, "end": 101.0 + k}
                for k, d in enumerate((-0.1, 0.1))]
        (tmp_path / f"{j}.jsonl").write_text("\n".join(json.dumps(x) for x in recs) + "\n")
    comm, lag = nw.load_run(tmp_path)
    assert comm == pytest.approx({"a": 0.9, "b": 1.0, "c": 1.1, "d": 1.0})
    assert lag["b"] == pytest.approx(0.002) and lag["a"] == 0.0
    assert "| base | 1 | 1 / 0 / 0 / 0 |" in nw.table([nw.summarise("base", comm, lag)])
