"""Run folders are complete or absent: --out checks, --overwrite, --resume, readers that refuse incomplete runs."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from ddlsched.cli import cli
from ddlsched.errors import InputError
from ddlsched.metrics import atomic
from ddlsched.metrics.manifest import MANIFEST, check_folder, is_complete, read_manifest
from ddlsched.metrics.results_dir import find_runs

ROOT = Path(__file__).resolve().parents[1]
MURI = str(ROOT / "data/traces/muri/trace1.csv")
SIM = ["--trace", MURI, "--cluster", "wang2020", "--max-jobs", "25", "--quiet"]
RUN_FILES = {MANIFEST, "summary.json", "records.csv", "timeseries.csv", "load.csv", "run.json"}


ENV = {**os.environ, "COLUMNS": "1000"}  # no line wrapping in messages


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ddlsched.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300, env=ENV)


def invoke(*args: str) -> str:
    res = CliRunner().invoke(cli, list(args))
    assert res.exit_code == 0, (res.output, res.exception)
    return res.output


def names(d: Path) -> set[str]:
    return {p.name for p in d.iterdir()}


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


# ------------------------------------------------------------------ --out must be new or empty
def test_simulate_refuses_a_non_empty_out(tmp_path: Path) -> None:
    out = tmp_path / "o"
    out.mkdir()
    (out / "rejected.csv").write_text("stale\n")
    r = run("simulate", *SIM, "--policy", "fifo", "--out", str(out))
    assert r.returncode == 2, r.stderr
    assert "--out" in r.stderr and "not empty" in r.stderr and "--overwrite" in r.stderr and str(out) in r.stderr
    assert names(out) == {"rejected.csv"} and "Traceback" not in r.stderr
    invoke("simulate", *SIM, "--policy", "fifo", "--out", str(tmp_path / "empty"))  # new: fine
    (tmp_path / "e2").mkdir()
    invoke("simulate", *SIM, "--policy", "fifo", "--out", str(tmp_path / "e2"))  # existing and empty: fine
    assert names(tmp_path / "e2") == RUN_FILES


def test_overwrite_replaces_the_whole_folder(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"  # one job too big for the cluster → rejected.csv
    trace.write_text("job_id,submission_time,duration,num_gpu\n1,0,100,1\n2,0,100,512\n")
    out = tmp_path / "o"
    invoke("simulate", "--trace", str(trace), "--cluster", "wang2020", "--policy", "fifo", "--parquet",
           "--out", str(out), "--quiet", "--report")
    assert {"rejected.csv", "records.parquet", "report.html"} <= names(out)
    invoke("simulate", *SIM, "--policy", "srtf", "--out", str(out), "--overwrite")
    assert names(out) == RUN_FILES  # no stale rejected.csv, records.parquet or report.*
    assert set(read_manifest(out)["files"]) == RUN_FILES - {MANIFEST}
    assert json.loads((out / "summary.json").read_text())["policy"] == "srtf+consolidated"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary or old folder left


def test_overwrite_without_atomic_exchange_renames_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "o"
    invoke("simulate", *SIM, "--policy", "fifo", "--out", str(out))
    monkeypatch.setattr(atomic, "_exchange", lambda a, b: False)
    invoke("simulate", *SIM, "--policy", "sjf", "--out", str(out), "--overwrite")
    assert is_complete(out, hashes=True) and names(tmp_path) == {"o"}
    assert json.loads((out / "summary.json").read_text())["policy"] == "sjf+consolidated"


@pytest.mark.parametrize("atomic_exchange", [True, False])
def test_an_interrupt_during_the_swap_takes_effect_after_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            atomic_exchange: bool) -> None:
    out = tmp_path / "o"
    invoke("simulate", *SIM, "--policy", "fifo", "--out", str(out))
    real = atomic._exchange

    def interrupted_exchange(a: Path, b: Path) -> bool:
        # Ctrl-C lands in the middle of the replacement; sent to the main thread itself, so it is delivered before
        # the call returns (os.kill may hand it to another thread, e.g. a progress bar's, that runs later)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        return real(a, b) if atomic_exchange else False

    monkeypatch.setattr(atomic, "_exchange", interrupted_exchange)
    res = CliRunner().invoke(cli, ["simulate", *SIM, "--policy", "sjf", "--out", str(out), "--overwrite"])
    assert res.exit_code == 1 and "Aborted" in res.output  # the interrupt, raised once the swap is done
    assert is_complete(out, hashes=True) and names(tmp_path) == {"o"}
    assert json.loads((out / "summary.json").read_text())["policy"] == "sjf+consolidated"


def test_compare_refuses_a_non_empty_out_and_overwrite_drops_old_policy_folders(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    invoke("compare", *SIM, "--policies", "fifo,sjf", "--out", str(out), "--report")
    r = run("compare", *SIM, "--policies", "srtf", "--out", str(out))
    assert r.returncode == 2 and "not empty" in r.stderr and "--resume" in r.stderr
    invoke("compare", *SIM, "--policies", "srtf", "--out", str(out), "--overwrite", "--report")
    assert names(out) == {"srtf+consolidated", "comparison.csv", "compare.json", MANIFEST, "report.html",
                          "report.md", "report_plots", "report_table.csv"}
    page = (out / "report.html").read_text()
    assert "srtf+consolidated" in page and "fifo+consolidated" not in page and "sjf+consolidated" not in page
    kind, runs = find_runs(out, hashes=True)
    assert kind == "compare" and [r.policy for r in runs] == ["srtf+consolidated"]


def test_compare_folders_and_table_use_the_resolved_policy_name(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    invoke("compare", *SIM, "--policies", "fifo,sjf+first_fit", "--out", str(out))
    with (out / "comparison.csv").open() as f:
        table = [r["policy"] for r in csv.DictReader(f)]
    folders = ["fifo+consolidated", "sjf+first_fit"]
    assert table == folders
    assert json.loads((out / "compare.json").read_text())["policies"] == folders
    for f in folders:
        assert json.loads((out / f / "summary.json").read_text())["policy"] == f
    r = run("compare", *SIM, "--policies", "fifo,fifo+consolidated", "--out", str(tmp_path / "dup"))
    assert r.returncode == 2 and "same policy" in r.stderr and "--policies" in r.stderr
    assert not (tmp_path / "dup").exists()


# ------------------------------------------------------------------ --resume
def test_resume_keeps_complete_policies_and_runs_the_others(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    invoke("compare", *SIM, "--policies", "fifo,sjf", "--out", str(out))
    fifo_run = (out / "fifo+consolidated" / "run.json").read_bytes()  # wall time: differs on every run
    (out / "sjf+consolidated" / MANIFEST).unlink()  # as if sjf had been cut short
    (out / MANIFEST).unlink()
    with pytest.raises(InputError, match="incomplete compare"):
        find_runs(out)
    res = CliRunner().invoke(cli, ["compare", *SIM, "--policies", "fifo,sjf,srtf", "--out", str(out), "--resume"])
    assert res.exit_code == 0, res.output
    assert "kept fifo+consolidated" in res.output and "kept sjf" not in res.output
    assert (out / "fifo+consolidated" / "run.json").read_bytes() == fifo_run
    assert is_complete(out, hashes=True)
    _, runs = find_runs(out, hashes=True)
    assert [r.policy for r in runs] == ["fifo+consolidated", "sjf+consolidated", "srtf+consolidated"]
    fresh = tmp_path / "fresh"
    invoke("compare", *SIM, "--policies", "fifo,sjf,srtf", "--out", str(fresh))
    assert (out / "comparison.csv").read_bytes() == (fresh / "comparison.csv").read_bytes()
    # other inputs (a new seed): nothing is kept
    res = CliRunner().invoke(cli, ["compare", *SIM, "--seed", "1", "--policies", "fifo,sjf,srtf", "--out", str(out),
                                   "--resume"])
    assert res.exit_code == 0 and "kept" not in res.output, res.output
    assert read_manifest(out / "fifo+consolidated")["inputs"]["seed"] == 1


def test_a_report_written_after_a_resume_leaves_the_compare_readable(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    invoke("compare", *SIM, "--policies", "fifo,sjf", "--out", str(out), "--report")
    invoke("compare", *SIM, "--policies", "fifo,sjf", "--out", str(out), "--resume")  # nothing to run
    assert "report.html" not in read_manifest(out)["files"]
    invoke("report", str(out), "--title", "a longer title than before")  # rewrites report.html
    assert is_complete(out, hashes=True)
    _, runs = find_runs(out, hashes=True)
    assert len(runs) == 2


def test_resume_refuses_folders_it_did_not_write(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    invoke("compare", *SIM, "--policies", "fifo,sjf", "--out", str(out))
    r = run("compare", *SIM, "--policies", "fifo", "--out", str(out), "--resume")
    assert r.returncode == 2 and "sjf+consolidated" in r.stderr and "--overwrite" in r.stderr
    sim = tmp_path / "sim"
    invoke("simulate", *SIM, "--policy", "fifo", "--out", str(sim))
    r = run("compare", *SIM, "--policies", "fifo", "--out", str(sim), "--resume")
    assert r.returncode == 2 and "compare.json" in r.stderr
    r = run("compare", *SIM, "--policies", "fifo", "--out", str(sim), "--resume", "--overwrite")
    assert r.returncode == 2 and "either --overwrite or --resume" in r.stderr
    assert is_complete(out, hashes=True) and is_complete(sim, hashes=True)


# ------------------------------------------------------------------ unwritable --out: fail fast
def test_out_under_a_file_fails_before_loading_anything(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for cmd in (["simulate", "--policy", "fifo"], ["compare", "--policies", "fifo"]):
        # the trace does not exist: the --out error coming first shows that --out is checked before any work
        r = run(*cmd, "--trace", str(tmp_path / "missing.csv"), "--cluster", "wang2020",
                "--out", str(blocker / "sub"))
        assert r.returncode == 2, r.stderr
        assert "--out" in r.stderr and "is not a directory" in r.stderr and "Traceback" not in r.stderr
        r = run(*cmd, *SIM, "--out", str(blocker / "sub"))
        assert r.returncode == 2 and "--out" in r.stderr and "Traceback" not in r.stderr
    assert blocker.read_text() == "x"


def test_out_that_cannot_be_renamed_over_fails_fast(tmp_path: Path) -> None:
    here = tmp_path / "here"
    here.mkdir()
    r = subprocess.run([sys.executable, "-m", "ddlsched.cli", "simulate", *SIM, "--policy", "fifo", "--out", "."],
                       capture_output=True, text=True, cwd=here, env={**ENV, "PYTHONPATH": str(ROOT / "src")})
    assert r.returncode == 2 and "the current directory" in r.stderr and "--out" in r.stderr, r.stderr
    assert list(here.iterdir()) == [] and names(tmp_path) == {"here"}


def _can_unshare() -> bool:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return False
    return subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _can_unshare(), reason="needs root and unshare -m (a private read-only bind mount)")
def test_out_on_a_read_only_file_system_or_a_mount_point_fails_before_simulating(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    for cmd in (["simulate", "--policy", "fifo"], ["compare", "--policies", "fifo"]):
        args = " ".join([sys.executable, "-m", "ddlsched.cli", *cmd, "--trace", str(tmp_path / "missing.csv"),
                         "--cluster", "wang2020", "--out", str(ro / "results")])
        r = subprocess.run(["unshare", "-m", "sh", "-c", f"mount --bind -o ro {ro} {ro} && exec {args}"],
                           capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert r.returncode == 2, r.stderr
        assert "--out" in r.stderr and "Read-only file system" in r.stderr and str(ro / "results") in r.stderr
    mnt = tmp_path / "mnt"  # e.g. a container volume given as --out
    mnt.mkdir()
    args = " ".join([sys.executable, "-m", "ddlsched.cli", "simulate", "--policy", "fifo", *SIM, "--out", str(mnt)])
    r = subprocess.run(["unshare", "-m", "sh", "-c", f"mount --bind {mnt} {mnt} && exec {args}"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120, env=ENV)
    assert r.returncode == 2 and "a mount point" in r.stderr and str(mnt / "run") in r.stderr, r.stderr


# ------------------------------------------------------------------ readers
def test_report_refuses_a_folder_without_marker_naming_what_is_missing(tmp_path: Path) -> None:
    out = tmp_path / "o"  # what an interrupted run of an older version left: summary.json, a cut records.csv
    out.mkdir()
    (out / "summary.json").write_text(json.dumps({"policy": "fifo", "jobs_completed": 82247}))
    (out / "records.csv").write_text("job_id,arrival_s,finish_s,jct_s,num_gpus\n1,0,5,5,1\n")
    r = run("report", str(out))
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and "incomplete run" in r.stderr and str(out) in r.stderr
    assert "manifest.json" in r.stderr and "timeseries.csv" in r.stderr
    (out / "summary.json").write_text("")  # a 0-byte summary
    r = run("report", str(out))
    assert r.returncode == 2 and "incomplete run" in r.stderr and "Traceback" not in r.stderr


def test_report_refuses_a_run_whose_files_do_not_match_the_manifest(tmp_path: Path) -> None:
    out = tmp_path / "o"
    invoke("simulate", *SIM, "--policy", "fifo", "--out", str(out))
    rec = out / "records.csv"
    data = rec.read_bytes()
    rec.write_bytes(data[: len(data) // 2])
    r = run("report", str(out))
    assert r.returncode == 2 and "records.csv has" in r.stderr and str(out) in r.stderr, r.stderr
    rec.write_bytes(data[:-2] + (b"9" if data[-2:-1] != b"9" else b"8") + data[-1:])  # same size, other bytes
    r = run("report", str(out))
    assert r.returncode == 2 and "records.csv differs from the manifest" in r.stderr, r.stderr
    rec.write_bytes(data)
    assert run("report", str(out)).returncode == 0


def test_find_runs_ignores_temporary_folders_and_refuses_unmarked_runs(tmp_path: Path) -> None:
    invoke("simulate", *SIM, "--policy", "fifo", "--out", str(tmp_path / "a"))
    shutil.copytree(tmp_path / "a", tmp_path / ".b.tmp-123")
    (tmp_path / ".b.tmp-123" / MANIFEST).unlink()
    _, runs = find_runs(tmp_path)
    assert [r.path.name for r in runs] == ["a"]
    shutil.copytree(tmp_path / ".b.tmp-123", tmp_path / "c")
    with pytest.raises(InputError, match=r"incomplete run folder\(s\) without manifest.json.*: c"):
        find_runs(tmp_path)
    (tmp_path / "a" / "timeseries.csv").unlink()
    with pytest.raises(InputError, match=r"timeseries\.csv is missing"):
        find_runs(tmp_path / "a")
    assert check_folder(tmp_path / "a") == ["timeseries.csv is missing"]


def test_sweep_cells_without_a_manifest_are_accepted_and_checked_when_they_have_one(tmp_path: Path) -> None:
    sim = tmp_path / "sim"
    invoke("simulate", *SIM, "--policy", "fifo", "--out", str(sim))
    cells = tmp_path / "sweep" / "cells"
    for cid in ("c1", "c2"):
        shutil.copytree(sim, cells / cid)
        (cells / cid / "cell.json").write_text(json.dumps({"labels": {"policy": "fifo", "seed": int(cid[1])}}))
    (cells / "c1" / MANIFEST).unlink()  # a cell as the sweep writes it today
    failed = cells / "c3"
    failed.mkdir()
    (failed / "cell.json").write_text("{}")
    (failed / "error.txt").write_text("boom")
    (cells / ".tmp-c4-99").mkdir()
    kind, runs = find_runs(tmp_path / "sweep")
    assert kind == "sweep" and [r.path.name for r in runs] == ["c1", "c2"]
    (cells / "c2" / "records.csv").write_text("job_id\n")
    with pytest.raises(InputError, match=r"c2.*records\.csv has"):
        find_runs(tmp_path / "sweep")


# ------------------------------------------------------------------ leftovers of killed runs
def test_leftover_temporary_folders_are_removed_by_the_next_run(tmp_path: Path) -> None:
    out = tmp_path / "o"
    stale = tmp_path / f".o.tmp-{dead_pid()}"
    stale.mkdir()
    (stale / "summary.json").write_text("{}")
    invoke("simulate", *SIM, "--policy", "fifo", "--out", str(out))
    assert names(tmp_path) == {"o"}


def test_an_old_folder_left_by_a_cut_swap_is_restored(tmp_path: Path) -> None:
    out = tmp_path / "o"
    invoke("simulate", *SIM, "--policy", "fifo", "--out", str(out))
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    out.rename(tmp_path / f".o.old-{dead_pid()}")  # SIGKILL between the two renames of a replacement
    r = run("simulate", *SIM, "--policy", "sjf", "--out", str(out))
    assert r.returncode == 2 and "restored" in r.stderr and "not empty" in r.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before and names(tmp_path) == {"o"}


def test_write_records_matches_csv_dictwriter(tmp_path: Path) -> None:
    """records.csv is written row by row in the first row's column order, floats by repr, as ``csv.DictWriter``
    would (a later row missing a field leaves it empty; a field the first row lacks is an error)."""
    import csv
    import io

    from ddlsched.metrics.output import write_records

    rows = [{"a": 1.5, "b": "x,y", "c": 3, "d": True}, {"b": "z", "a": 0.1 + 0.2, "c": None, "d": 2.0},
            {"a": 1e-300, "c": 7, "b": "", "d": False}, {"c": 1, "a": 2.0}]
    want = io.StringIO()
    w = csv.DictWriter(want, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: (repr(v) if isinstance(v, float) else v) for k, v in r.items()})
    write_records(tmp_path / "r.csv", rows)
    assert (tmp_path / "r.csv").read_text() == want.getvalue()
    with pytest.raises(ValueError, match="not in fieldnames"):
        write_records(tmp_path / "bad.csv", [{"a": 1}, {"a": 2, "e": 3}])
