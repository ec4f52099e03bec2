"""benchmarks/physics_rankings.py: ``--only`` picks one set-up; the table and its ranks (docs/reproductions.md)."""

from __future__ import annotations

import pytest

from benchmark_module import load

pr = load("physics_rankings")


def test_only_luo2024_prints_its_table_alone(capsys: pytest.CaptureFixture[str]) -> None:
    pr.main(["--seeds", "0", "--only", "luo2024"])  # quick sizes: 30 jobs, ~1 s CPU
    out = capsys.readouterr().out
    assert "luo2024 set-up (n8g8, Muri traces, 30 jobs, seeds 0)" in out
    assert "sharma2024" not in out
    rows = [ln for ln in out.splitlines() if ln.startswith("| ") and not ln.startswith("| policy")]
    assert [r.split(" | ")[0][2:] for r in rows] == list(pr.luo2024.POLICIES)
    assert all(r.count("(") == len(pr.NETWORKS) for r in rows)  # one ranked cell per network


def test_only_rejects_an_unknown_set_up(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        pr.main(["--only", "luo2025"])
    assert e.value.code == 2
    assert "--only" in capsys.readouterr().err


def test_ranks_are_competition_ranks_with_ties_marked() -> None:
    assert pr._ranks({"a": 2.0, "b": 1.0, "c": 2.0, "d": 3.0}) == {"a": "2=", "b": "1", "c": "2=", "d": "4"}


def test_networks_picks_the_columns_and_rejects_unknown_ones(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        pr.main(["--only", "luo2024", "--networks", "maxmin,tcpp"])
    assert e.value.code == 2
    assert "tcpp" in capsys.readouterr().err
    assert pr.NETWORK_PARAMS["maxmin-tcp"] == {"network": "maxmin", "network_params": {"fairness": "tcp"}}
    assert set(pr.NETWORKS) <= set(pr.NETWORK_PARAMS)
