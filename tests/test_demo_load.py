"""The demo's printed load is the load it measures: the `make demo` window is a steady stretch of the trace."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import ddlsched
from ddlsched.cli import cli
from ddlsched.errors import InputError
from ddlsched.workload.inputs import parse_window

ROOT = Path(__file__).resolve().parents[1]
PHILLY = ROOT / "data/traces/philly_pollux/philly.csv"
MURI = ROOT / "data/traces/muri/trace1.csv"


def _demo_args() -> dict[str, str]:
    """The trace, cluster and window the Makefile's demo target uses (read from the Makefile so they cannot drift)."""
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    line = next(ln for ln in text.splitlines() if "ddlsched compare" in ln)
    return dict(re.findall(r"--(trace|cluster|window) (\S+)", line))


def test_the_demo_window_is_steady() -> None:
    args = _demo_args()
    assert set(args) == {"trace", "cluster", "window"}
    s = ddlsched.simulate(ROOT / args["trace"], args["cluster"], "fifo+consolidated", window=args["window"],
                          timeseries=False).summary
    load, lo, hi = s["offered_load"], s["offered_load_min_quarter"], s["offered_load_max_quarter"]
    assert 0.5 < load < 1.0, load  # loaded, not overloaded: the queue stays finite
    assert lo >= 0.9 * load and hi <= 1.1 * load, (lo, load, hi)
    assert s["jobs_completed"] == s["jobs"] > 10_000


def test_quarter_loads_by_hand() -> None:
    from ddlsched.metrics.summary import quarter_loads

    recs = [{"arrival_s": t, "num_gpus": g, "ideal_run_s": 100.0} for t, g in [(0, 1), (10, 2), (30, 4), (40, 8)]]
    # span 40 s: quarters [0,10) [10,20) [20,30) [30,40]; 4 GPUs × 10 s each
    assert quarter_loads(recs, 4) == pytest.approx([100 / 40, 200 / 40, 0.0, 1200 / 40])
    assert quarter_loads(recs[:1], 4) == []


@pytest.mark.parametrize("text", ["55d:70d", "0:12h", ":90m", "1h:2h"])
def test_window_parses(text: str) -> None:
    start, end = parse_window(text)
    assert 0 <= start < end


@pytest.mark.parametrize("bad", ["55d", "70d:55d", "5:5", "1h:", "3jobs:10jobs", "a:b", "0:inf"])
def test_bad_windows_name_the_flag(bad: str) -> None:
    with pytest.raises(InputError, match="--window"):
        parse_window(bad)


def test_cli_window_keeps_the_stretch_and_warns_on_a_burst(tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = CliRunner().invoke(cli, ["simulate", "--trace", str(MURI), "--cluster", "wang2020", "--window", "10d:40d",
                                 "--policy", "fifo", "--out", str(out)])
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())
    assert "quarters of the arrival window 2.30–8.26" in text  # this stretch of the Muri trace is bursty
    assert "warning: the offered load varies more than 2×" in text
    rows = (out / "records.csv").read_text().splitlines()[1:]
    arrivals = sorted(j.arrival_s for j in ddlsched.load_trace(MURI).jobs)
    assert len(rows) == sum(1 for a in arrivals if 10 * 86400 <= a - arrivals[0] < 40 * 86400) > 100
    empty = CliRunner().invoke(cli, ["simulate", "--trace", str(MURI), "--cluster", "wang2020", "--window",
                                     "900d:901d", "--policy", "fifo", "--out", str(tmp_path / "e")])
    assert empty.exit_code == 2 and "--window" in empty.output and not (tmp_path / "e").exists()
