"""Sweep runner: matrix expansion, local and Ray backends, resume, failing cells, config errors."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from ddlsched.cli import cli
from ddlsched.errors import ConfigError
from ddlsched.experiments.runner import CellParams, run_cell
from ddlsched.experiments.sweep import run_sweep
from ddlsched.experiments.sweep_config import load_cells

REPO = Path(__file__).resolve().parents[1]
MURI = REPO / "data/traces/muri/trace1.csv"
POLICIES = ["fifo+consolidated", "sjf+consolidated", "tiresias+consolidated", "srtf+first_fit"]
RESULT_FILES = ("summary.json", "records.csv", "timeseries.csv")


def _config(tmp: Path, extra: str = "", policies: list[str] | None = None, name: str = "sweep.yaml",
            jobs: int = 40) -> Path:
    pol = "\n".join(f"  - {p}" for p in (policies or POLICIES))
    text = f"""name: t
policies:
{pol}
traces:
  - synthetic: {{jobs: {jobs}, rate_per_s: 0.02}}
clusters: [wang2020, rack256]
seeds: [0, 1, 2]
{extra}"""
    p = tmp / name
    p.write_text(text)
    return p


def _cell_files(out: Path) -> dict[str, dict[str, bytes]]:
    return {d.name: {f: (d / f).read_bytes() for f in RESULT_FILES}
            for d in sorted((out / "cells").iterdir()) if (d / "summary.json").exists()}


@pytest.fixture(scope="module")
def local_sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("sweep")
    cfg = _config(tmp)
    out = tmp / "local"
    res = CliRunner().invoke(cli, ["sweep", str(cfg), "--out", str(out), "--workers", "2"])
    assert res.exit_code == 0, res.output
    return cfg, out


def test_local_sweep_runs_every_cell(local_sweep: tuple[Path, Path]) -> None:
    cfg, out = local_sweep
    _, cells = load_cells(cfg)
    assert len(cells) == 4 * 3 * 2
    files = _cell_files(out)
    assert sorted(files) == sorted(c.cell_id for c in cells)
    with (out / "results.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 24
    assert {r["policy"] for r in rows} == set(POLICIES)
    assert {r["cluster"] for r in rows} == {"wang2020", "rack256"}
    # the seed changes the synthetic workload, so seeds give different results
    fifo_w = [r for r in rows if r["policy"] == "fifo+consolidated" and r["cluster"] == "wang2020"]
    assert len({r["avg_jct_s"] for r in fifo_w}) == 3
    cell = json.loads((out / "cells" / cells[0].cell_id / "cell.json").read_text())
    assert cell["params"]["policy"] == cells[0].params.policy and cell["status"] == "ok"


def test_ray_backend_gives_identical_results(local_sweep: tuple[Path, Path], tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="ray is an optional extra (pip install 'ddlsched[ray]')")
    cfg, out = local_sweep
    ray_out = tmp_path / "ray"
    res = CliRunner().invoke(cli, ["sweep", str(cfg), "--out", str(ray_out), "--backend", "ray", "--workers", "2"])
    assert res.exit_code == 0, res.output
    assert _cell_files(ray_out) == _cell_files(out)
    assert (ray_out / "results.csv").read_text() == (out / "results.csv").read_text()


def test_cell_is_exactly_a_simulate_run(tmp_path: Path) -> None:
    sim = tmp_path / "sim"
    res = CliRunner().invoke(cli, ["simulate", "--trace", str(MURI), "--cluster", "rack256", "--policy", "tiresias",
                                   "--max-jobs", "30", "--seed", "3", "--out", str(sim), "--quiet"])
    assert res.exit_code == 0, res.output
    out = run_cell(CellParams(policy="tiresias", cluster="rack256", trace=str(MURI), seed=3, max_jobs=30))
    assert out.error is None
    assert out.files["records.csv"] == (sim / "records.csv").read_bytes()
    assert out.files["timeseries.csv"] == (sim / "timeseries.csv").read_bytes()
    assert json.loads(out.files["summary.json"]) == json.loads((sim / "summary.json").read_text())


def test_resume_runs_only_missing_cells(local_sweep: tuple[Path, Path], tmp_path: Path) -> None:
    cfg, out = local_sweep
    _, cells = load_cells(cfg)
    # a partial result directory: 19 finished cells copied, a stale temp dir of a killed run, no results.csv
    part = tmp_path / "part"
    (part / "cells").mkdir(parents=True)
    keep = cells[:10] + cells[15:]
    for c in keep:
        os.symlink(out / "cells" / c.cell_id, part / "cells" / c.cell_id)
    (part / "cells" / f".tmp-{cells[12].cell_id}-1").mkdir()
    (part / "cells" / f".tmp-{cells[12].cell_id}-1" / "summary.json").write_text("{}")
    ran: list[str] = []
    outcome = run_sweep(cells, part, workers=2, on_done=lambda c, o: ran.append(c.cell_id) if o else None)
    assert outcome.skipped == 19 and outcome.ran == 5 and not outcome.failed
    assert sorted(ran) == sorted(c.cell_id for c in cells[10:15])
    assert not list((part / "cells").glob(".tmp-*"))
    assert _cell_files(part) == _cell_files(out)


def test_killed_sweep_resumes(tmp_path: Path) -> None:
    # cells large enough that the sweep cannot finish between two polls below (40-job cells, compiled, once did)
    cfg = _config(tmp_path, policies=POLICIES[:2], jobs=3000)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "ddlsched.cli", "sweep", str(cfg), "--out", str(out), "--workers", "1", "--quiet"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if (out / "cells").exists() and len(list((out / "cells").glob("[!.]*/summary.json"))) >= 2:
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = {p.parent.name for p in (out / "cells").glob("*/summary.json")
                   if not p.parent.name.startswith(".")}  # a killed run may leave a .tmp-* dir
    assert 2 <= len(done_before) < 12, "the sweep should have been killed mid-way"
    ran: list[str] = []
    _, cells = load_cells(cfg)
    outcome = run_sweep(cells, out, workers=2, on_done=lambda c, o: ran.append(c.cell_id) if o else None)
    assert outcome.skipped == len(done_before)
    assert set(ran) == {c.cell_id for c in cells} - done_before
    assert len(list((out / "cells").glob("[!.]*/summary.json"))) == 12
    assert not list((out / "cells").glob(".tmp-*"))


BOOM = """
import ddlsched


@ddlsched.register
class Boom(ddlsched.Policy):
    name = "t-boom"
    description = "raises inside the run when fail is true (test plug-in)"
    requirements = ddlsched.Requirements(model="fluid", preemptive=False)

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail

    def schedule(self, view):
        if self.fail:
            raise RuntimeError("boom [on purpose]")
        return []
"""


def test_failing_cell_is_reported_and_others_finish(tmp_path: Path) -> None:
    (tmp_path / "boom.py").write_text(BOOM)
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("""plugins: [boom.py]
policies:
  - fifo+consolidated
  - {name: t-boom, params: {fail: true}}
traces: [{synthetic: {jobs: 20, rate_per_s: 0.02}}]
clusters: [wang2020]
seeds: [0, 1]
""")
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["sweep", str(cfg), "--out", str(out)])
    assert res.exit_code == 1
    assert res.output.count("FAILED") == 2 and "boom [on purpose]" in res.output
    errs = sorted((out / "cells").glob("*/error.txt"))
    assert len(errs) == 2 and all("t-boom" in e.parent.name for e in errs)
    assert all("boom [on purpose]" in e.read_text() for e in errs)
    assert len(list((out / "cells").glob("*/summary.json"))) == 2
    with (out / "results.csv").open() as f:
        assert [r["policy"] for r in csv.DictReader(f)] == ["fifo+consolidated"] * 2


def test_bad_policy_parameter_is_refused_before_running(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("""policies:
  - fifo+consolidated
  - {name: tiresias, params: {thresholds: [-5]}}
traces: [{synthetic: {jobs: 20, rate_per_s: 0.02}}]
clusters: [wang2020]
""")
    with pytest.raises(ConfigError) as ei:
        load_cells(cfg)
    assert str(ei.value).startswith(f"{cfg}, field 'policies.tiresias': ") and "thresholds must be positive" in str(
        ei.value)


@pytest.mark.parametrize(("text", "field"), [
    ("policies: [fifo]\ntraces: [x.csv]\nclusters: [wang2020]\nseedz: [1]\n", "seedz"),
    ("policies: [{name: fifo, parmas: {}}]\ntraces: [x.csv]\nclusters: [wang2020]\n", "parmas"),
    ("policies: [fifo]\ntraces: [{path: x.csv, fmt: muri}]\nclusters: [wang2020]\n", "fmt"),
    ("policies: [fifo]\ntraces: [x.csv]\nclusters: [wang2020]\nload_scale: [0]\n", "load_scale"),
])
def test_config_errors_name_file_and_key(tmp_path: Path, text: str, field: str) -> None:
    p = tmp_path / "cfg.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError) as ei:
        load_cells(p)
    assert str(p) in str(ei.value) and field in str(ei.value)


def test_unknown_policy_fails_before_running(tmp_path: Path) -> None:
    p = tmp_path / "cfg.toml"
    p.write_text('policies = ["fifo", "nope"]\ntraces = ["x.csv"]\nclusters = ["wang2020"]\n')
    res = CliRunner().invoke(cli, ["sweep", str(p), "--out", str(tmp_path / "o")])
    assert res.exit_code != 0
    assert isinstance(res.exception, ConfigError) and str(p) in str(res.exception) and "nope" in str(res.exception)
    assert not (tmp_path / "o").exists()


def test_axes_expand_and_hash_is_stable(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    p = _config(tmp_path / "sub", extra="load_scale: [1.0, 2.0]\noversubscription: [null, 8]\nmax_jobs: 30\n",
                policies=["fifo", "{name: tiresias, grid: {starvation_factor: [1.0, 2.0]}}"])
    _, cells = load_cells(p)
    assert len(cells) == 3 * 2 * 3 * 2 * 2
    assert len({c.cell_id for c in cells}) == len(cells)
    assert {c.labels["policy"] for c in cells} == {"fifo", "tiresias[starvation_factor=1.0]",
                                                   "tiresias[starvation_factor=2.0]"}
    _, again = load_cells(p)
    assert [c.cell_id for c in again] == [c.cell_id for c in cells]
    ov = next(c for c in cells if c.params.oversubscription == 8 and c.params.cluster == "rack256")
    out = run_cell(ov.params)
    assert out.error is None and json.loads(out.files["summary.json"])["cluster"] == "rack256(oversub=8)"


def test_ray_missing_gives_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import builtins

    real = builtins.__import__

    def fake(name: str, *a: object, **k: object) -> object:
        if name == "ray":
            raise ImportError("no ray")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    cfg = _config(tmp_path, policies=["fifo"])
    _, cells = load_cells(cfg)
    from ddlsched.errors import InputError

    with pytest.raises(InputError, match="pip install"):
        run_sweep(cells, tmp_path / "o", backend="ray")
