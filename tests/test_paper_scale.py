"""Paper-scale policies (issue 13): the CLI warns, in one line, when a run has more jobs than the policy's measured
limit (``Policy.paper_scale_jobs``), and stays quiet at or under it. Tiny cases, with the limit lowered."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ddlsched.cli import cli
from ddlsched.policies import make_policy
from ddlsched.policies.baselines import OrderedPolicy

ROOT = Path(__file__).resolve().parents[1]
MURI = str(ROOT / "data/traces/muri/trace1.csv")


def _simulate(tmp_path: Path, policy: str, jobs: int) -> str:
    r = CliRunner().invoke(cli, ["simulate", "--trace", MURI, "--cluster", "rack256", "--policy", policy,
                                 "--max-jobs", str(jobs), "--out", str(tmp_path / "out"), "--quiet"])
    assert r.exit_code == 0, r.output
    return r.output


def test_simulate_warns_above_the_limit_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(OrderedPolicy, "paper_scale_jobs", 10)
    out = _simulate(tmp_path / "a", "fifo", 11)
    lines = [x for x in out.splitlines() if "paper-scale" in x]
    assert len(lines) == 1, out
    assert "fifo+consolidated" in lines[0] and "10 jobs" in lines[0] and "11" in lines[0]
    assert "paper-scale" not in _simulate(tmp_path / "b", "fifo", 10)


def test_compare_warns_for_the_policy_over_its_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cls = type(make_policy("sjf-preempt"))
    monkeypatch.setattr(cls, "paper_scale_jobs", 5)
    r = CliRunner().invoke(cli, ["compare", "--trace", MURI, "--cluster", "rack256", "--max-jobs", "12",
                                 "--policies", "fifo,sjf-preempt", "--out", str(tmp_path), "--quiet"])
    assert r.exit_code == 0, r.output
    lines = [x for x in r.output.splitlines() if "paper-scale" in x]
    assert len(lines) == 1 and "sjf-preempt" in lines[0], r.output


def test_no_limit_no_warning(tmp_path: Path) -> None:
    assert make_policy("fifo").paper_scale_jobs is None
    assert "paper-scale" not in _simulate(tmp_path, "fifo", 12)


def _documented_limits() -> dict[str, int]:
    """The 'Paper-scale policies' table of docs/policies/README.md: policy name -> documented limit."""
    text = (ROOT / "docs/policies/README.md").read_text().split("## Paper-scale policies", 1)[1]
    rows = [line.split("|") for line in text.splitlines() if line.startswith("| `")]
    return {r[1].strip().strip("`"): int(r[2].replace(",", "").strip()) for r in rows}


def test_every_measured_limit_is_documented_and_only_those() -> None:
    from ddlsched.policies.registry import policy_rows

    limits = {name: make_policy(name).paper_scale_jobs for name, *_ in policy_rows()}
    measured = {name: v for name, v in limits.items() if v is not None}
    assert measured["tiresias+random"] == 9_500 and measured["ada-srsf"] > 0
    assert "tiresias+consolidated" not in measured and "fifo+random" not in measured
    assert "tiresias+least_loaded" not in measured
    assert measured == _documented_limits()
