"""Interrupted ``simulate``/``compare`` runs leave a complete run or none that a reader takes for one.

Each case starts the CLI in a subprocess on a workload that takes a second or two and sends SIGINT, SIGTERM or
SIGKILL either at a random time (seeded) or at an exact stage through the test-only ``DDLSCHED_TEST_PAUSE``
hook (``written``: files written, no marker yet; ``commit``: marker written, before the rename;
``policy-done``: a compare policy folder is in place). Then every folder a reader accepts must be complete,
checked independently of the manifest (records rows = jobs completed), and ``--overwrite`` must not lose the
previous results.
"""

from __future__ import annotations

import csv
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ddlsched.errors import InputError
from ddlsched.metrics.atomic import PAUSE_ENV
from ddlsched.metrics.manifest import is_complete
from ddlsched.metrics.results_dir import find_runs

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
PHILLY = ROOT / "data/traces/philly_pollux/philly.csv"
EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGKILL: -signal.SIGKILL}
WORKLOAD: list[str] = []


@pytest.fixture(scope="module", autouse=True)
def workload(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The first 4,000 Philly jobs on philly512: about a second per run, most of it simulating and writing
    (parsing the whole trace for --max-jobs would dominate)."""
    trace = tmp_path_factory.mktemp("trace") / "philly_head.csv"
    with PHILLY.open() as f:
        trace.write_text("".join(line for _, line in zip(range(4001), f, strict=False)))
    WORKLOAD[:] = ["--trace", str(trace), "--cluster", "philly512", "--quiet"]


def start(args: list[str], pause: str | None = None, flag: Path | None = None) -> subprocess.Popen[str]:
    env = {**os.environ, "COLUMNS": "1000"}
    if pause:
        env[PAUSE_ENV] = f"{pause}:{flag}"
    return subprocess.Popen([sys.executable, "-m", "ddlsched.cli", *args, *WORKLOAD], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(p: subprocess.Popen[str]) -> tuple[int, str]:
    _, err = p.communicate(timeout=120)
    return p.returncode, err


def at_stage(args: list[str], stage: str, sig: signal.Signals, tmp: Path) -> tuple[int, str]:
    """Run until the hook pauses at ``stage``, then send ``sig``."""
    flag = tmp / f"flag-{stage}-{sig.name}-{time.monotonic_ns()}"
    p = start(args, stage, flag)
    deadline = time.monotonic() + 120
    while not flag.exists():
        assert p.poll() is None, f"finished without reaching stage {stage!r}: {p.communicate()[1]}"
        assert time.monotonic() < deadline
        time.sleep(0.01)
    p.send_signal(sig)
    return finish(p)


def after(args: list[str], delay: float, sig: signal.Signals) -> tuple[int, str]:
    p = start(args)
    time.sleep(delay)
    if p.poll() is None:
        p.send_signal(sig)
    return finish(p)


def records_rows(d: Path) -> int:
    with (d / "records.csv").open() as f:
        return sum(1 for _ in csv.DictReader(f))


def assert_readers_see_only_complete_runs(parent: Path) -> list[Path]:
    """Every folder under ``parent`` that ``find_runs`` accepts holds complete runs; returns those runs."""
    seen: set[Path] = set()
    for d in [parent, *sorted(p for p in parent.iterdir() if p.is_dir() and not p.name.startswith("."))]:
        try:
            _, runs = find_runs(d, hashes=True)
        except InputError:
            continue
        for r in runs:
            assert not any(part.startswith(".") for part in r.path.relative_to(parent).parts), r.path
            assert is_complete(r.path, hashes=True)
            summary = json.loads((r.path / "summary.json").read_text())
            assert records_rows(r.path) == summary["jobs_completed"], r.path
            assert (r.path / "timeseries.csv").stat().st_size > 0
            seen.add(r.path)
    return sorted(seen)


def snapshot(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def check_interrupted(rc: int, err: str, sig: signal.Signals, out: Path) -> None:
    assert rc != 0 or is_complete(out, hashes=True)
    if rc == EXIT[sig] and sig != signal.SIGKILL:
        assert "interrupted" in err and "Traceback" not in err, err
    elif rc not in (0, EXIT[sig]):  # a signal before main() started (interpreter start-up, imports)
        assert rc in (1, -signal.SIGINT, -sig), (rc, err)
    if sig != signal.SIGKILL and rc != 0:  # temporary folders are removed on SIGINT/SIGTERM
        assert not [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")], err


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float]:
    """A complete fifo run (the 'previous results') and how long a run takes here."""
    out = tmp_path_factory.mktemp("base") / "fifo"
    t0 = time.monotonic()
    rc, err = finish(start(["simulate", "--policy", "fifo", "--out", str(out)]))
    assert rc == 0, err
    return out, time.monotonic() - t0


def test_sigint_once_started_exits_130_and_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "o"
    p = start(["simulate", "--policy", "fifo", "--out", str(out)])
    while not [q for q in tmp_path.iterdir() if q.name.startswith(".o.tmp-")]:  # --out checked, nothing run
        assert p.poll() is None
        time.sleep(0.005)
    p.send_signal(signal.SIGINT)
    rc, err = finish(p)
    assert rc == 130 and "interrupted" in err and "Traceback" not in err, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("stage", "sig"), [("written", signal.SIGKILL), ("written", signal.SIGTERM),
                                            ("commit", signal.SIGINT)])
def test_simulate_interrupted_while_writing(tmp_path: Path, stage: str, sig: signal.Signals) -> None:
    out = tmp_path / "o"
    rc, err = at_stage(["simulate", "--policy", "fifo", "--out", str(out)], stage, sig, tmp_path)
    assert rc == EXIT[sig], err
    check_interrupted(rc, err, sig, out)
    assert not out.exists()  # the run was not complete: no folder at all
    assert assert_readers_see_only_complete_runs(tmp_path) == []
    if sig == signal.SIGKILL:  # the temporary folder is left, ignored by readers, removed by the next run
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".o.tmp-")]
        rc, err = finish(start(["simulate", "--policy", "fifo", "--out", str(out)]))
        assert rc == 0, err
        assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("flag")) == ["o"]


@pytest.mark.parametrize(("stage", "sig"), [("written", signal.SIGINT), ("commit", signal.SIGKILL)])
def test_overwrite_interrupted_keeps_the_previous_results(tmp_path: Path, baseline: tuple[Path, float],
                                                          stage: str, sig: signal.Signals) -> None:
    out = tmp_path / "o"
    shutil.copytree(baseline[0], out)
    before = snapshot(out)
    rc, err = at_stage(["simulate", "--policy", "sjf", "--out", str(out), "--overwrite"], stage, sig, tmp_path)
    assert rc == EXIT[sig], err
    assert snapshot(out) == before
    assert assert_readers_see_only_complete_runs(tmp_path) == [out]


def test_random_interrupts_of_simulate(tmp_path: Path, baseline: tuple[Path, float]) -> None:
    rng = random.Random(20240611)
    span = baseline[1] * 1.2
    for i in range(5):
        sig = rng.choice([signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
        delay = rng.uniform(0.0, span) if i else 0.02  # the first one very early
        out = tmp_path / f"o{i}"
        overwrite = i % 2 == 1
        if overwrite:
            shutil.copytree(baseline[0], out)
        before = snapshot(out) if overwrite else None
        rc, err = after(["simulate", "--policy", "sjf", "--out", str(out)] + (["--overwrite"] if overwrite else []),
                        delay, sig)
        check_interrupted(rc, err, sig, out)
        if overwrite and rc != 0 and snapshot(out) != before:  # only a finished replacement may change it
            assert json.loads((out / "summary.json").read_text())["policy"] == "sjf+consolidated"
            assert is_complete(out, hashes=True)
        if not overwrite and rc != 0:
            assert not out.exists() or is_complete(out, hashes=True)
    assert_readers_see_only_complete_runs(tmp_path)


COMPARE = ["compare", "--policies", "fifo,sjf"]


def test_compare_killed_between_policies_then_resumed(tmp_path: Path) -> None:
    out = tmp_path / "c"
    rc, err = at_stage([*COMPARE, "--out", str(out)], "policy-done", signal.SIGKILL, tmp_path)
    assert rc == -signal.SIGKILL, err
    with pytest.raises(InputError, match=r"incomplete compare.*complete: fifo\+consolidated; not complete: "
                                         r"sjf\+consolidated.*--resume"):
        find_runs(out)
    assert is_complete(out / "fifo+consolidated", hashes=True)
    assert assert_readers_see_only_complete_runs(tmp_path) == []
    r = subprocess.run([sys.executable, "-m", "ddlsched.cli", "report", str(out)], capture_output=True, text=True,
                       cwd=ROOT, env={**os.environ, "COLUMNS": "1000"})
    assert r.returncode == 2 and "incomplete compare" in r.stderr and "Traceback" not in r.stderr
    kept = (out / "fifo+consolidated" / "run.json").read_bytes()
    rc, err = finish(start([*COMPARE, "--out", str(out), "--resume"]))
    assert rc == 0, err
    assert "kept fifo+consolidated" in err and (out / "fifo+consolidated" / "run.json").read_bytes() == kept
    assert len(assert_readers_see_only_complete_runs(tmp_path)) == 2


def test_compare_interrupted_by_sigint_keeps_finished_policies(tmp_path: Path) -> None:
    out = tmp_path / "c"
    rc, err = at_stage([*COMPARE, "--out", str(out)], "policy-done", signal.SIGINT, tmp_path)
    assert rc == 130 and "interrupted" in err, err
    assert sorted(p.name for p in out.iterdir()) == ["compare.json", "fifo+consolidated"]
    assert assert_readers_see_only_complete_runs(tmp_path) == []


def test_compare_overwrite_interrupted_keeps_the_previous_compare(tmp_path: Path) -> None:
    out = tmp_path / "c"
    rc, err = finish(start(["compare", "--policies", "fifo", "--out", str(out)]))
    assert rc == 0, err
    before = snapshot(out)
    for stage, sig in (("policy-done", signal.SIGKILL), ("commit", signal.SIGINT),
                       ("compare-commit", signal.SIGKILL)):
        rc, err = at_stage([*COMPARE, "--out", str(out), "--overwrite"], stage, sig, tmp_path)
        assert rc == EXIT[sig], err
        assert snapshot(out) == before
    rng = random.Random(7)
    for _ in range(2):
        sig = rng.choice([signal.SIGINT, signal.SIGKILL])
        rc, err = after([*COMPARE, "--out", str(out), "--overwrite"], rng.uniform(0.2, 2.0), sig)
        check_interrupted(rc, err, sig, out)
        if snapshot(out) != before:  # replaced: then by a complete compare of both policies
            assert is_complete(out, hashes=True) and (out / "sjf+consolidated").is_dir()
            before = snapshot(out)
    assert assert_readers_see_only_complete_runs(tmp_path)
