"""report.html in a real browser (headless Chromium): every embedded figure decodes, and the tables sort.

Skipped where no Chromium binary is installed (``apt-get install chromium``), so CI without one still passes.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from ddlsched.cli import cli
from ddlsched.metrics.report import PLOTS

REPO = Path(__file__).resolve().parents[1]
MURI = REPO / "data/traces/muri/trace1.csv"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")

# After load: count the images that decoded, then click the 'avg JCT' header twice and read the column back.
PROBE = """<script>window.addEventListener('load', function () {
  var imgs = Array.from(document.images);
  var ok = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; });
  var th = document.querySelectorAll('table.sortable')[0].tHead.rows[0].cells[3];
  var before = Array.from(th.closest('table').tBodies[0].rows).map(function (r) { return r.cells[3].textContent; });
  function col() { return Array.from(th.closest('table').tBodies[0].rows).map(function (r) {
    return parseFloat(r.cells[3].textContent); }); }
  function ordered(v, s) { return v.every(function (x, i) { return i === 0 || s * (x - v[i - 1]) >= 0; }); }
  th.click(); var up = col(); th.click(); var down = col();
  var out = document.createElement('pre'); out.id = 'probe';
  out.textContent = 'loaded=' + ok.length + ' total=' + imgs.length
    + ' widths=' + imgs.map(function (i) { return i.naturalWidth + 'x' + i.naturalHeight; }).join(',')
    + ' asc=' + ordered(up, 1) + ' desc=' + ordered(down, -1) + ' rows=' + up.length
    + ' distinct=' + new Set(up).size + ' first=' + before[0].replace(/ /g, '');
  document.body.appendChild(out);
});</script>"""


def _browser() -> str | None:
    return next((p for b in BROWSERS if (p := shutil.which(b))), None)


def test_every_image_loads_and_tables_sort_in_headless_chromium(tmp_path: Path) -> None:
    cfg = tmp_path / "s.yaml"
    cfg.write_text("policies: [fifo+consolidated, srtf+first_fit, sjf+consolidated]\n"
                   "traces: [{synthetic: {jobs: 40, rate_per_s: 0.05}}]\nclusters: [wang2020]\nseeds: [0, 1]\n")
    out = tmp_path / "sweep"
    res = CliRunner().invoke(cli, ["sweep", str(cfg), "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(cli, ["report", str(out)])
    assert res.exit_code == 0, res.output
    page = (out / "report.html").read_text()
    assert "2 seeds per point: the 95 % interval is very wide" in page  # metrics.warnings.seeds_warning
    browser = _browser()
    if browser is None:
        pytest.skip("no Chromium binary on PATH (apt-get install chromium) — the browser check needs one")
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", PROBE + "</body>"))
    run = subprocess.run([browser, "--headless", "--disable-gpu", "--no-sandbox", "--virtual-time-budget=10000",
                          f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", probe.as_uri()],
                         capture_output=True, text=True, timeout=60)
    m = re.search(r"<pre id=\"probe\">(.*?)</pre>", run.stdout)
    assert m, f"no probe output (rc {run.returncode}): {run.stderr[-2000:]}"
    found = dict(kv.split("=", 1) for kv in m.group(1).split())
    assert found["total"] == str(len(PLOTS)) and found["loaded"] == found["total"], found
    assert set(found["widths"].split(",")) == {"825x462"}
    assert found["rows"] == "3" and found["distinct"] == "3", found  # three policies, three different means
    assert found["asc"] == "true" and found["desc"] == "true", found
    assert "±" in found["first"]  # the column sorted holds 'mean ± CI' cells: sorted by the mean
