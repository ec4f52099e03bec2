"""benchmarks/bench_scale.py: a cell reports what it ran (policy, realised load, preemptions), and the cost-curve plot
reads only the ``fifo+consolidated`` rows of a table."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from benchmark_module import load

bs = load("bench_scale")


@pytest.mark.parametrize("policy", ["fifo+consolidated", "tiresias+consolidated"])
def test_cell_reports_policy_and_realised_load(policy: str) -> None:
    r = bs.run(300, 512, 0.05, policy, True)
    assert r["policy"] == policy and r["jobs"] == 300 and r["completed"] == 300
    assert 0 < r["realised_load"] <= 1.0 and r["offered_load"] > 0
    assert bs.run(300, 512, 0.05, policy)["realised_load"] == ""  # no time series, no realised load
    assert r["preemptions"] >= 0 and (policy != "fifo+consolidated" or r["preemptions"] == 0)


def test_plot_reads_fifo_rows_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("matplotlib")
    table = tmp_path / "t.md"
    table.write_text("| policy | jobs | gpus | cpu_s | peak_mib | build |\n|---|---|---|---|---|---|\n"
                     "| fifo+consolidated | 10 | 512 | 1.0 | 50 | pure |\n"
                     "| tiresias+consolidated | 10 | 512 | 9.0 | 60 | pure |\n"
                     "| fifo+consolidated | 100 | 512 | 2.0 | 70 | pure |\n")
    drawn: list[list[float]] = []
    import matplotlib.axes

    real = matplotlib.axes.Axes.plot

    def spy(self: object, xs: list[float], ys: list[float], **kw: object) -> object:
        drawn.append(list(ys))
        return real(self, xs, ys, **kw)

    monkeypatch.setattr(matplotlib.axes.Axes, "plot", spy)
    bs.plot(str(tmp_path / "c.png"), [str(table)])
    assert drawn == [[1.0, 2.0], [50.0, 70.0]]
    assert (tmp_path / "c.png").stat().st_size > 0


@pytest.mark.parametrize(("args", "flag"), [(["--policies", "fifo,nosuch"], "--policies"),
                                            (["--jobs", "10k"], "--jobs"), (["--gpus", "500"], "--gpus"),
                                            (["--load", "nan"], "--load"), (["--jobs", "0"], "--jobs")])
def test_bad_flags_exit_2_naming_the_flag_before_any_run(args: list[str], flag: str, capsys: pytest.CaptureFixture,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["bench_scale.py", *args])
    monkeypatch.setattr(bs, "cell", lambda *a: pytest.fail("a cell ran despite a bad flag"))
    with pytest.raises(SystemExit) as e:
        bs.main()
    assert e.value.code == 2
    assert flag in capsys.readouterr().err
