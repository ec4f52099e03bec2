"""The reproductions' one table/figure style (ddlsched.experiments.figures): t-intervals, their clipping, sizes."""

from __future__ import annotations

import math
import struct
from pathlib import Path

import pytest

from ddlsched.experiments.figures import DPI, SIZE_IN, _interval, aggregate, plot_bars, plot_lines, seed_stats


def test_seed_stats_is_the_t_interval_by_hand() -> None:
    # mean 2, sample sd 1, n = 3: half-width = t(0.975, 2) · 1 / √3 = 4.302653 / 1.7320508
    mean, half, lo, hi = seed_stats([1.0, 2.0, 3.0])
    assert (mean, lo, hi) == (2.0, 1.0, 3.0)
    assert half == pytest.approx(4.302653 / math.sqrt(3), rel=1e-6)


def test_one_seed_has_no_interval() -> None:
    mean, half, _, _ = seed_stats([5.0])
    assert mean == 5.0 and math.isnan(half)
    assert _interval([5.0], 0.0, None) == (5.0, 0.0, 0.0)


def test_interval_is_clipped_at_the_metric_range() -> None:
    mean, below, above = _interval([0.1, 0.2, 5.0], 0.0, None)  # a wide interval around a small mean
    assert mean - below == 0.0 and above > 0
    mean, below, above = _interval([-50.0, 40.0, 90.0], None, None)  # a percentage: no clipping
    assert mean - below < -50


def test_aggregate_means_and_intervals_per_group() -> None:
    rows = [{"p": "a", "seed": s, "x": float(s)} for s in range(3)] + [{"p": "b", "seed": 0, "x": 7.0}]
    a, b = aggregate(rows, ("p",), ("x",))
    assert (a["p"], a["seeds"], a["x"]) == ("a", 3, 1.0)
    assert a["x_ci95"] == pytest.approx(4.302653 / math.sqrt(3), rel=1e-6)
    assert b["seeds"] == 1 and math.isnan(b["x_ci95"])


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    return struct.unpack(">II", head[16:24])


def test_figures_are_readable_sizes(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    plot_bars(tmp_path / "b.png", ["x", "y"], {"s": [[1.0, 2.0, 3.0], [2.0, 2.5, 3.5]]}, "v", "t",
              paper={"x": 2.2})
    plot_lines(tmp_path / "l.png", [1, 2, 4], {"s": [[1.0, 2.0], [2.0, 3.0], [1.0, 1.5]]}, "κ", "v", "t",
               categorical=True)
    for name in ("b.png", "l.png"):
        w, h = _png_size(tmp_path / name)
        assert (w, h) == (round(SIZE_IN[0] * DPI), round(SIZE_IN[1] * DPI))
        assert w <= 1000
