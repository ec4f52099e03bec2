"""Sweep bugs of issue 11, each with its reproducer: hash collisions, ``name`` escaping the results folder, pool
workers outliving a killed sweep, and the Ray install hint eaten by console markup."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ddlsched.errors import ConfigError
from ddlsched.experiments.sweep import run_sweep
from ddlsched.experiments.sweep_config import Cell, load_cells

SRC = Path(__file__).resolve().parents[1] / "src"
ENV = {**os.environ, "PYTHONPATH": str(SRC)}  # subprocesses import this tree, whatever their cwd

# Two seeds whose cells had the same 40-bit id hash (found by a birthday search over 1.4 million seeds, with
# perf_model maxmin, the default physics then: the reproducer names it).
COLLIDING_SEEDS = (535773, 1391644)


def _legacy_hash(cell: Cell) -> str:
    """The id hash of ddlsched before the fix: the first 10 hex digits of SHA-256 of the canonical JSON (with the
    plug-ins, always empty then)."""
    d = {**json.loads(cell.canonical), "plugins": []}
    return hashlib.sha256(json.dumps(d, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:10]


def _cfg(tmp: Path, seeds: str = "[0]", extra: str = "") -> Path:
    p = tmp / "sweep.yaml"
    p.write_text(f"policies: [fifo]\ntraces: [{{synthetic: {{jobs: 10, rate_per_s: 0.1}}}}]\nclusters: [wang2020]\n"
                 f"seeds: {seeds}\n{extra}")
    return p


def test_cells_whose_short_hashes_collide_get_distinct_ids(tmp_path: Path) -> None:
    _, cells = load_cells(_cfg(tmp_path, str(list(COLLIDING_SEEDS)), "perf_model: maxmin\n"))  # was: "two cells
    # with identical parameters"
    a, b = cells
    assert _legacy_hash(a) == _legacy_hash(b)  # the reproducer still collides under the old scheme
    assert a.cell_id != b.cell_id and len(a.hash) == 64 and a.cell_id.endswith(a.hash)


def test_true_duplicates_are_still_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="identical parameters"):
        load_cells(_cfg(tmp_path, "[3, 3]"))


def test_resume_adopts_cells_written_with_the_old_short_ids(tmp_path: Path) -> None:
    _, cells = load_cells(_cfg(tmp_path, "[0, 1]"))
    out = tmp_path / "out"
    assert run_sweep(cells, out, workers=1).ran == 2
    before = {c.cell_id: (out / "cells" / c.cell_id / "records.csv").read_bytes() for c in cells}
    for c in cells:  # make them look like an earlier ddlsched's folders
        old_id = f"{c.cell_id.rsplit('_', 1)[0]}_{_legacy_hash(c)}"
        meta = json.loads((out / "cells" / c.cell_id / "cell.json").read_text())
        meta.update({"cell_id": old_id, "hash": _legacy_hash(c)})
        (out / "cells" / c.cell_id / "cell.json").write_text(json.dumps(meta))
        (out / "cells" / c.cell_id).rename(out / "cells" / old_id)
    stray = out / "cells" / "fifo_wang2020_synthetic10_s9_0123456789"  # an old cell of another config: untouched
    (stray).mkdir()
    (stray / "summary.json").write_text("{}")
    (stray / "cell.json").write_text(json.dumps({"params": {**cells[0].params.to_dict(), "seed": 9}}))
    outcome = run_sweep(cells, out, workers=1)
    assert outcome.ran == 0 and outcome.skipped == 2
    assert {c.cell_id: (out / "cells" / c.cell_id / "records.csv").read_bytes() for c in cells} == before
    assert json.loads((out / "cells" / cells[0].cell_id / "cell.json").read_text())["hash"] == cells[0].hash
    assert stray.is_dir()


@pytest.mark.parametrize("name", ["../../x", "..", ".", "a/b", "/tmp/x", ".hidden", "", "a\\b", "x\ny", "n" * 129])
def test_name_must_be_a_plain_folder_name(tmp_path: Path, name: str) -> None:
    p = tmp_path / "sweep.yaml"
    p.write_text(f"name: {json.dumps(name)}\n" + _cfg(tmp_path).read_text())
    with pytest.raises(ConfigError) as ei:
        load_cells(p)
    assert str(ei.value).startswith(f"{p}, field 'name': ") and "plain folder name" in str(ei.value)


def test_name_cannot_write_outside_the_results_folder(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    p = _cfg(tmp_path / "work", extra="name: ../../escaped\n")
    r = subprocess.run([sys.executable, "-m", "ddlsched.cli", "sweep", str(p), "--quiet"], cwd=tmp_path / "work",
                       env=ENV, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "field 'name'" in r.stderr and "Traceback" not in r.stderr
    assert sorted(x.name for x in tmp_path.rglob("*")) == ["sweep.yaml", "work"]  # nothing written anywhere


def _children(pid: int) -> set[int]:
    out = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(d.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has exited (reparented to an init that may not reap it at once)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_pool_workers_die_with_a_killed_sweep(tmp_path: Path) -> None:
    p = _cfg(tmp_path, "[0, 1, 2, 3, 4, 5, 6, 7]")
    p.write_text(p.read_text().replace("jobs: 10", "jobs: 400"))
    proc = subprocess.Popen([sys.executable, "-m", "ddlsched.cli", "sweep", str(p), "--out", str(tmp_path / "o"),
                             "--workers", "2", "--quiet"], cwd=tmp_path, env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            workers = {c for c in _children(proc.pid)
                       if b"spawn_main" in (Path("/proc") / str(c) / "cmdline").read_bytes()}
            if len(workers) >= 2:
                break
            time.sleep(0.05)
        assert len(workers) >= 2 and proc.poll() is None, "the sweep should be running with 2 pool workers"
        time.sleep(0.5)  # the workers are past their initializer and busy with cells
        os.kill(proc.pid, signal.SIGKILL)  # the main process only, as the OOM killer would
        proc.wait()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(_alive(w) for w in workers):
            time.sleep(0.05)
        assert not [w for w in workers if _alive(w)], "pool workers outlived the killed sweep"
    finally:
        for w in workers:  # never leave a stray process behind, whatever happened
            if _alive(w):
                os.kill(w, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()


def test_ray_install_hint_is_printed_literally(tmp_path: Path) -> None:
    p = _cfg(tmp_path)
    code = ("import sys; sys.modules['ray'] = None\n"  # as if Ray were not installed
            "from ddlsched.cli import main\n"
            f"sys.argv = ['ddlsched', 'sweep', {str(p)!r}, '--backend', 'ray', '--out', 'o']\n"
            "main()\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=ENV, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "pip install 'ddlsched[ray]'" in r.stderr  # rich markup must not eat '[ray]'

