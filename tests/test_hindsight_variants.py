"""benchmarks/hindsight_variants.py (docs/policies/hindsight.md, "The p99 trade-off, measured") and
benchmarks/staggered_switch.py (docs/validation.md, "What happens at staggered/c"): both read saved runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmark_module import load as load_benchmark

SAVED = Path(__file__).resolve().parents[1] / "benchmarks" / "policy_suite_results" / "runs.jsonl"


def test_the_default_reproduces_its_saved_run(capsys: pytest.CaptureFixture[str]) -> None:
    """Re-run at the suite's own load scale, hindsight's default gives the saved avg JCT of a small cell."""
    variants = load_benchmark("hindsight_variants")
    assert variants.main(["--cells", "sia-saturn/rack256/0.9"]) == 0
    out = capsys.readouterr().out
    saved = next(json.loads(line) for line in SAVED.read_text().splitlines()
                 if '"hindsight"' in line and '"sia-saturn"' in line and '"rack256"' in line and '"load": 0.9' in line)
    assert f"{saved['avg_jct_s'] / 3600:9.1f} h (saved default {saved['avg_jct_s'] / 3600:9.1f})" in out
    assert "targets met in 0 of 1 cells" in out


@pytest.mark.parametrize("argv", [["num_classes"], ["--cells", "no-such/cell/0.7"]])
def test_bad_arguments_are_refused(argv: list[str]) -> None:
    with pytest.raises(SystemExit, match="hindsight_variants"):
        load_benchmark("hindsight_variants").main(argv)


def test_staggered_switch_prints_both_long_runs(capsys: pytest.CaptureFixture[str]) -> None:
    load_benchmark("staggered_switch").main([])
    out = capsys.readouterr().out
    assert out.count("c phased_tcp per phase") == 2
    assert "run1:" in out and "run2:" in out
