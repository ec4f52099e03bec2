"""Reports: plots are drawn from the run files (checked against values recomputed here), HTML is self-contained."""

from __future__ import annotations

import base64
import csv
import html
import json
import math
import re
import statistics
import struct
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from ddlsched.cli import cli
from ddlsched.metrics.report import PLOTS, PLOTS_DIR
from ddlsched.metrics.stats import mean_ci95, t975
from ddlsched.metrics.summary import busy_share

REPO = Path(__file__).resolve().parents[1]
MURI = REPO / "data/traces/muri/trace1.csv"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def _images(page: str) -> list[bytes]:
    return [base64.b64decode(m) for m in re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", page)]


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("rep")
    cfg = tmp / "s.yaml"
    cfg.write_text("""policies: [fifo+consolidated, srtf+first_fit]
traces: [{synthetic: {jobs: 30, rate_per_s: 0.02}}]
clusters: [wang2020, rack256]
seeds: [0, 1, 2]
""")
    out = tmp / "out"
    res = CliRunner().invoke(cli, ["sweep", str(cfg), "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(cli, ["report", str(out)])
    assert res.exit_code == 0, res.output
    return out


def _cells(out: Path) -> dict[tuple[str, str], list[Path]]:
    groups: dict[tuple[str, str], list[Path]] = {}
    for d in sorted((out / "cells").iterdir()):
        lab = json.loads((d / "cell.json").read_text())["labels"]
        groups.setdefault((f"cluster={lab['cluster']}", lab["policy"]), []).append((d, lab["seed"]))
    return {k: [d for d, _ in sorted(v, key=lambda x: x[1])] for k, v in groups.items()}


def _png_names(out: Path) -> dict[str, str]:
    """scenario → the suffix of its PNG files (none with one scenario)."""
    series = json.loads((out / PLOTS_DIR / "avg_jct_s.json").read_text())["series"]
    if len(series) == 1:
        return {s: "" for s in series}
    return {s: "-" + s.replace("=", "_") for s in series}


def test_html_embeds_one_image_per_plot_and_scenario(sweep_dir: Path) -> None:
    page = (sweep_dir / "report.html").read_text()
    imgs = _images(page)
    names = _png_names(sweep_dir)
    assert len(names) == 2 and len(imgs) == 2 * len(PLOTS)
    expected = [(sweep_dir / PLOTS_DIR / f"{name}{suffix}.png").read_bytes() for suffix in names.values()
                for name, *_ in PLOTS]
    for img, want in zip(imgs, expected, strict=True):
        assert img.startswith(PNG_MAGIC) and img == want
        w, h = struct.unpack(">II", img[16:24])
        assert (w, h) == (825, 462)  # 7.5 × 4.2 in at 110 dpi (experiments.figures)
    # self-contained: no external asset; the only script is the inline table sorter
    assert "http://" not in page and "https://" not in page and "<script src" not in page
    assert page.count("<script>") == 1 and "table.sortable" in page
    md = (sweep_dir / "report.md").read_text()
    assert md.count("](report_plots/") == 2 * len(PLOTS)
    assert "offered load" in md and "Student-t 95 %" in md


def test_jct_cdf_plot_is_the_records(sweep_dir: Path) -> None:
    series = json.loads((sweep_dir / PLOTS_DIR / "jct_cdf.json").read_text())["series"]
    groups = _cells(sweep_dir)
    assert set(series) == {s for s, _ in groups}
    for (scen, pol), dirs in groups.items():
        jct = sorted(float(r["jct_s"]) / 3600 for d in dirs for r in _rows(d / "records.csv"))
        assert series[scen][pol]["x"] == pytest.approx(jct, rel=1e-12)
        assert series[scen][pol]["y"] == pytest.approx([(i + 1) / len(jct) for i in range(len(jct))])


def test_bar_plots_are_means_with_t_ci(sweep_dir: Path) -> None:
    plots = {n: json.loads((sweep_dir / PLOTS_DIR / f"{n}.json").read_text())["series"]
             for n in ("avg_jct_s", "makespan_s", "comm_overhead_pct")}
    for (scen, pol), dirs in _cells(sweep_dir).items():
        recs = [_rows(d / "records.csv") for d in dirs]
        per = {
            "avg_jct_s": [statistics.mean(float(r["jct_s"]) for r in rs) / 3600 for rs in recs],
            "makespan_s": [(max(float(r["finish_s"]) for r in rs) - min(float(r["arrival_s"]) for r in rs)) / 3600
                           for rs in recs],
            "comm_overhead_pct": [100 * sum(float(r["comm_overhead_s"]) for r in rs)
                                  / sum(float(r["run_s"]) for r in rs) for rs in recs],
        }
        for name, vals in per.items():
            got = plots[name][scen][pol]
            assert got["n"] == 3
            assert got["mean"] == pytest.approx(statistics.mean(vals), rel=1e-9)
            ci = 4.302653 * statistics.stdev(vals) / math.sqrt(3)  # t_{0.975, 2}
            assert got["ci95"] == pytest.approx(ci, rel=1e-6, abs=1e-12)
    # seeds draw different workloads, so at least one interval is non-zero
    assert any(v["ci95"] > 0 for s in plots["avg_jct_s"].values() for v in s.values())


def test_time_series_plots_are_rolling_averages_over_the_active_period(sweep_dir: Path) -> None:
    """Each point is the time-average of the step series over its window, as summary.busy_share computes it."""
    util = json.loads((sweep_dir / PLOTS_DIR / "utilization.json").read_text())["series"]
    queue = json.loads((sweep_dir / PLOTS_DIR / "queue.json").read_text())["series"]
    for scen in util:
        dirs = {pol: d for (s, pol), d in _cells(sweep_dir).items() if s == scen}
        recs = [r for d in dirs.values() for r in _rows(d[0] / "records.csv")]
        t0 = min(float(r["arrival_s"]) for r in recs)
        t1 = max(float(r["finish_s"]) for r in recs)
        for pol, d in dirs.items():
            rows = _rows(d[0] / "timeseries.csv")  # lowest seed
            ts = {k: [float(r[k]) for r in rows] for k in ("time_s", "busy_gpus", "pending")}
            gpus = json.loads((d[0] / "summary.json").read_text())["cluster_gpus"]
            u, q = util[scen][pol], queue[scen][pol]
            assert u["t0_s"] == t0 and u["width_h"] == pytest.approx((t1 - t0) / 100 / 3600)
            assert u["x"][0] == 0 and u["x"][-1] == pytest.approx((t1 - t0) / 3600)
            half = (t1 - t0) / 200
            for i in (0, 7, len(u["x"]) // 2, len(u["x"]) - 1):
                t = t0 + u["x"][i] * 3600
                lo, hi = max(t0, t - half), min(t1, t + half)
                assert u["y"][i] == pytest.approx(busy_share(ts, lo, hi, gpus), rel=1e-9, abs=1e-12)
                pend = {"time_s": ts["time_s"], "busy_gpus": ts["pending"]}
                assert q["y"][i] == pytest.approx(busy_share(pend, lo, hi, 1), rel=1e-9, abs=1e-12)
            assert all(0 <= y <= 1 for y in u["y"])


def test_size_classes_table_and_bars_are_the_records(sweep_dir: Path) -> None:
    jct = json.loads((sweep_dir / PLOTS_DIR / "jct_by_size.json").read_text())["series"]
    slow = json.loads((sweep_dir / PLOTS_DIR / "slowdown_by_size.json").read_text())["series"]

    def cls(g: int) -> str:
        return "1 GPU" if g <= 1 else "2–4 GPUs" if g <= 4 else "5–8 GPUs" if g <= 8 else ">8 GPUs"

    seen = set()
    for (scen, pol), dirs in _cells(sweep_dir).items():
        per: dict[str, list[tuple[float, float]]] = {}
        for d in dirs:
            by: dict[str, list[dict[str, str]]] = {}
            for r in _rows(d / "records.csv"):
                by.setdefault(cls(int(r["num_gpus"])), []).append(r)
            for c, rs in by.items():
                per.setdefault(c, []).append((statistics.mean(float(r["jct_s"]) for r in rs) / 3600,
                                              statistics.mean(float(r["run_s"]) / float(r["ideal_run_s"])
                                                              for r in rs)))
        for c, vals in per.items():
            seen.add(c)
            got_j, got_s = jct[scen][pol][c], slow[scen][pol][c]
            assert got_j["n"] == len(vals)
            assert got_j["mean"] == pytest.approx(statistics.mean(v[0] for v in vals), rel=1e-9)
            assert got_s["mean"] == pytest.approx(statistics.mean(v[1] for v in vals), rel=1e-9)
            assert got_s["mean"] >= 1 - 1e-9 and got_j["lo"] >= 0 and got_s["lo"] >= 1 - 1e-9
    assert len(seen) >= 2
    page = (sweep_dir / "report.html").read_text()
    assert "By job size" in page and "slowdown, 1 GPU" in page


def test_table_has_p95_and_preemptions_and_intervals_are_clipped(sweep_dir: Path) -> None:
    table = {(r["scenario"], r["policy"]): r for r in _rows(sweep_dir / "report_table.csv")}
    for (scen, pol), dirs in _cells(sweep_dir).items():
        recs = [_rows(d / "records.csv") for d in dirs]
        p95 = [float(np.percentile([float(r["jct_s"]) for r in rs], 95)) for rs in recs]
        pre = [sum(int(r["preemptions"]) for r in rs) for rs in recs]
        row = table[(scen, pol)]
        assert float(row["p95_jct_s"]) == pytest.approx(statistics.mean(p95), rel=1e-9)
        assert float(row["preemptions"]) == pytest.approx(statistics.mean(pre))
        summ = [json.loads((d / "summary.json").read_text()) for d in dirs]
        assert float(row["p95_jct_s"]) == pytest.approx(statistics.mean(s["p95_jct_s"] for s in summ), rel=1e-9)
    page = (sweep_dir / "report.html").read_text()
    assert "p95 JCT h" in page and "preemptions" in page and "Measurement window" in page
    for name in ("avg_jct_s", "makespan_s", "comm_overhead_pct"):
        for scen in json.loads((sweep_dir / PLOTS_DIR / f"{name}.json").read_text())["series"].values():
            for st in scen.values():
                assert st["lo"] >= 0 and st["lo"] <= st["mean"] <= st["hi"]


def test_compare_and_simulate_report_flags(tmp_path: Path) -> None:
    cmp_out = tmp_path / "cmp"
    res = CliRunner().invoke(cli, ["compare", "--trace", str(MURI), "--cluster", "wang2020", "--max-jobs", "25",
                                   "--policies", "fifo,sjf", "--out", str(cmp_out), "--quiet", "--report"])
    assert res.exit_code == 0, res.output
    page = (cmp_out / "report.html").read_text()
    assert len(_images(page)) == len(PLOTS)
    assert "fifo+consolidated" in page and "sjf+consolidated" in page
    load = json.loads((cmp_out / "fifo+consolidated" / "summary.json").read_text())["offered_load"]
    assert f"offered load {load:.2f}" in page
    series = json.loads((cmp_out / PLOTS_DIR / "jct_cdf.json").read_text())["series"]
    assert list(series) == ["wang2020"]
    jct = sorted(float(r["jct_s"]) / 3600 for r in _rows(cmp_out / "sjf+consolidated" / "records.csv"))
    assert series["wang2020"]["sjf+consolidated"]["x"] == pytest.approx(jct)

    sim_out = tmp_path / "sim"
    res = CliRunner().invoke(cli, ["simulate", "--trace", str(MURI), "--cluster", "wang2020", "--max-jobs", "25",
                                   "--policy", "srtf", "--out", str(sim_out), "--quiet", "--report"])
    assert res.exit_code == 0, res.output
    page = (sim_out / "report.html").read_text()
    assert len(_images(page)) == len(PLOTS) and "srtf+consolidated" in page
    bars = json.loads((sim_out / PLOTS_DIR / "avg_jct_s.json").read_text())["series"]["wang2020"]
    avg = statistics.mean(float(r["jct_s"]) for r in _rows(sim_out / "records.csv")) / 3600
    got = bars["srtf+consolidated"]
    assert (got["mean"], got["ci95"], got["n"]) == (pytest.approx(avg), None, 1)
    assert got["lo"] == got["hi"] == got["mean"]  # one seed: no interval


def test_report_measures_the_window_and_prints_the_warnings(tmp_path: Path) -> None:
    """Per-job numbers over the jobs arriving in the summary's window (as the summary's), the window stated, and
    metrics.warnings.run_warnings of the run shown in both pages."""
    from ddlsched.metrics.report_data import measured
    from ddlsched.metrics.results_dir import find_runs
    from ddlsched.metrics.warnings import run_warnings

    out = tmp_path / "sim"
    res = CliRunner().invoke(cli, ["simulate", "--trace", str(MURI), "--cluster", "wang2020", "--max-jobs", "25",
                                   "--policy", "fifo", "--warmup", "5jobs", "--out", str(out), "--quiet", "--report"])
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["jobs_measured"] == 20
    table = _rows(out / "report_table.csv")[0]
    assert float(table["avg_jct_s"]) == pytest.approx(summary["avg_jct_s"], rel=1e-12)
    assert float(table["p95_jct_s"]) == pytest.approx(summary["p95_jct_s"], rel=1e-12)
    everyone = statistics.mean(float(r["jct_s"]) for r in _rows(out / "records.csv"))
    assert float(table["avg_jct_s"]) != pytest.approx(everyone)  # the warm-up jobs are left out
    page, md = (out / "report.html").read_text(), (out / "report.md").read_text()
    assert "20 of 25 completed jobs (warm-up/cool-down excluded)" in page and "20 of 25" in md
    (run,) = find_runs(out)[1]
    warns = run_warnings(run.summary, measured(run), run.timeseries())
    assert warns  # this slice of the Muri trace has one job deciding the makespan
    for w in warns:
        assert w in md and html.escape(w) in page
    assert "Warnings" in page
    util = json.loads((out / PLOTS_DIR / "utilization.json").read_text())["series"]["wang2020"]["fifo+consolidated"]
    assert len(util["x"]) == 400
    again = tmp_path / "again"
    assert CliRunner().invoke(cli, ["report", str(out), "--out", str(again)]).exit_code == 0
    for name in ("report.html", "report.md", "report_table.csv", f"{PLOTS_DIR}/utilization.png"):
        assert (again / name).read_bytes() == (out / name).read_bytes(), name  # deterministic


def test_report_on_empty_dir_fails(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["report", str(tmp_path)])
    assert res.exit_code != 0 and "no finished runs" in str(res.exception)


def test_t_quantiles() -> None:
    assert t975(1) == pytest.approx(12.7062, abs=1e-4)
    assert t975(40) == pytest.approx(2.021075, abs=2e-4)
    assert t975(120) == pytest.approx(1.979930, abs=1e-4)
    m, hw, n = mean_ci95([1.0, 2.0, 3.0, float("nan")])
    assert (m, n) == (2.0, 3) and hw == pytest.approx(4.302653 / math.sqrt(3))
    assert math.isnan(mean_ci95([5.0])[1])


def test_a_missing_optional_extra_is_one_line_naming_it(tmp_path: Path) -> None:
    """Without matplotlib (a plain install), --report used to die with a ModuleNotFoundError traceback."""
    import subprocess
    import sys

    code = ("import sys; sys.modules['matplotlib'] = None; from ddlsched.cli import main; sys.argv = ['ddlsched', "
            f"'simulate', '--trace', {str(MURI)!r}, '--cluster', 'wang2020', '--max-jobs', '10', '--policy', "
            f"'fifo', '--out', {str(tmp_path / 'out')!r}, '--quiet', '--report']; main()")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    assert "pip install 'ddlsched[plots]'" in res.stderr
