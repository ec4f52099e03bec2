"""Hostile or unlucky inputs and outputs (issue 33 item 6): each class ends in one clear error line and a non-zero
exit, never a hang, a traceback, a silent replacement or lost data."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ddlsched
from ddlsched.cli import main
from ddlsched.errors import ConfigError, DdlschedError, SimulationError
from ddlsched.safe_read import MAX_CONFIG_BYTES, read_structured

ROOT = Path(__file__).resolve().parents[1]
MURI = str(ROOT / "data/traces/muri/trace1.csv")


def run_main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """``ddlsched ARGS`` through ``main`` (the real error handling); (exit status, stdout + stderr)."""
    monkeypatch.setattr(sys, "argv", ["ddlsched", *args])
    code = 0
    try:
        main()
    except SystemExit as e:
        code = int(e.code or 0)
    out = capsys.readouterr()
    return code, out.out + out.err


def _one_line_error(text: str) -> str:
    assert "Traceback" not in text, text
    lines = [ln for ln in text.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, text
    return lines[0]


# ------------------------------------------------------------------ config files
def test_yaml_key_repeated_on_one_line_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("name: x\ngpu_types: {V100: {mem_gb: 32, speed: 1.0, speed: 2.0}}\n"
                 "racks:\n  - servers:\n      - {count: 1, gpus: 8, gpu_type: V100}\n")
    with pytest.raises(ConfigError, match=r"c\.yaml:2, field 'speed': key 'speed' given twice \(first at line 2"):
        ddlsched.load_cluster(f)


def test_config_that_is_a_fifo_device_or_huge_is_refused_without_reading(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a: 1\n" + b"#" * MAX_CONFIG_BYTES)
    for path, what in ((fifo, "FIFO"), (Path("/dev/zero"), "device"), (big, "at most")):
        with pytest.raises(ConfigError, match=what):
            read_structured(path)
    # through the commands that read configs: a cluster file, a sweep file, --ray-runtime-env (a subprocess, so a
    # hang on today's code fails the test by its timeout instead of hanging the suite)
    cmds = [["simulate", "--trace", MURI, "--cluster", str(fifo), "--policy", "fifo", "--out", str(tmp_path / "o")],
            ["sweep", "/dev/zero", "--out", str(tmp_path / "s")],
            ["sweep", str(ROOT / "examples/sweep.yaml"), "--out", str(tmp_path / "s2"), "--backend", "ray",
             "--ray-runtime-env", "/dev/zero"]]
    for cmd in cmds:
        r = subprocess.run([sys.executable, "-m", "ddlsched.cli", *cmd], capture_output=True, text=True, timeout=60,
                           cwd=ROOT)
        assert r.returncode == 2, (cmd, r.stderr)
        assert "regular file" in _one_line_error(r.stderr)


def test_runtime_env_json_with_repeated_key_is_refused() -> None:
    from ddlsched.experiments.sweep import parse_runtime_env

    with pytest.raises(DdlschedError, match="given twice"):
        parse_runtime_env('{"env_vars": {}, "env_vars": {"A": "1"}}', "ray")


# ------------------------------------------------------------------ plug-ins
def _plugin(tmp_path: Path, name: str, body: str, policy: str = "bad") -> Path:
    f = tmp_path / f"{name}.py"
    f.write_text("import sys\nimport ddlsched\n" + body.replace("NAME", policy))
    return f


POLICY = """
@ddlsched.register
class P(ddlsched.Policy):
    name = "NAME"
    description = "test plug-in"
    requirements = ddlsched.Requirements(model="fluid", preemptive=False)

    def schedule(self, view):
{body}
"""


def test_plugin_named_like_a_builtin_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    f = _plugin(tmp_path, "clash", POLICY.format(body="        return []"), policy="fifo")
    code, out = run_main(monkeypatch, capsys, "simulate", "--plugin", str(f), "--policy", "fifo", "--trace", MURI,
                         "--max-jobs", "5", "--cluster", "rack256", "--out", str(tmp_path / "o"), "--quiet")
    assert code == 2 and "name 'fifo' is a built-in ordering's" in _one_line_error(out)
    assert not (tmp_path / "o").exists()


def test_plugin_calling_sys_exit_at_import_is_an_error(tmp_path: Path) -> None:
    f = _plugin(tmp_path, "quits", "sys.exit(0)\n")
    r = subprocess.run([sys.executable, "-m", "ddlsched.cli", "simulate", "--plugin", str(f), "--policy", "x",
                        "--trace", MURI, "--cluster", "rack256", "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 2
    assert "quits.py" in (line := _one_line_error(r.stderr)) and "sys.exit(0)" in line


@pytest.mark.parametrize(("body", "expect"), [
    ("        return None", "schedule() returned None"),
    ("        free = view.allocation()\n        j = view.pending[0]\n"
     "        return [ddlsched.Start(j.job_id, tuple(float(g) for g in free.all_free_gpus()[:j.num_gpus]))]",
     "whole-number ids"),
    ("        raise ValueError('boom')", "ValueError: boom"),
])
def test_plugin_schedule_failure_is_one_located_line(tmp_path: Path, body: str, expect: str) -> None:
    f = _plugin(tmp_path, "sched", POLICY.format(body=body), policy=f"bad-{abs(hash(body)) % 10_000}")
    ddlsched.load_plugin(str(f))
    with pytest.raises(SimulationError) as e:
        ddlsched.simulate(MURI, "rack256", f"bad-{abs(hash(body)) % 10_000}", max_jobs=5)
    msg = str(e.value)
    assert "\n" not in msg and "sched.py" in msg and expect in msg and "policy 'bad-" in msg


# ------------------------------------------------------------------ writers
def _simulate(out: Path, *extra: str) -> list[str]:
    return ["simulate", "--trace", MURI, "--max-jobs", "5", "--cluster", "rack256", "--policy", "fifo",
            "--out", str(out), "--quiet", *extra]


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EROFS])
def test_full_disk_or_read_only_while_writing_is_one_line_and_old_results_stay(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], err: int) -> None:
    out = tmp_path / "run"
    assert run_main(monkeypatch, capsys, *_simulate(out))[0] == 0
    before = (out / "summary.json").read_bytes()
    import ddlsched.metrics.output as output

    def fail(path: Path, *a: object, **k: object) -> None:
        raise OSError(err, os.strerror(err), str(path))

    monkeypatch.setattr(output, "write_records", fail)
    code, text = run_main(monkeypatch, capsys, *_simulate(out, "--overwrite"))
    assert code != 0 and os.strerror(err) in _one_line_error(text)
    assert (out / "summary.json").read_bytes() == before  # the old results are untouched
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".run.tmp")]


def test_out_name_too_long_and_symlink_loop_are_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    for out in (tmp_path / ("x" * 300), loop / "run"):
        code, text = run_main(monkeypatch, capsys, *_simulate(out))
        assert code != 0, text
        _one_line_error(text)


def test_overwrite_refuses_an_out_that_holds_the_working_directory_or_an_input(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    data.mkdir()
    trace = data / "t.csv"
    trace.write_bytes(Path(MURI).read_bytes())
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    for out in (data, Path(".."), work):
        args = ["simulate", "--trace", str(trace), "--max-jobs", "5", "--cluster", "rack256", "--policy", "fifo",
                "--out", str(out), "--overwrite", "--quiet"]
        code, text = run_main(monkeypatch, capsys, *args)
        assert code == 2 and "--overwrite would delete" in _one_line_error(text)
        code, text = run_main(monkeypatch, capsys, "compare", *args[1:7], "--policies", "fifo,sjf", *args[9:])
        assert code == 2 and "--overwrite would delete" in _one_line_error(text)
    assert trace.read_bytes() == Path(MURI).read_bytes() and work.is_dir()


# ------------------------------------------------------------------ Ray
def test_ray_failing_to_start_is_an_error_not_a_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    import ddlsched.experiments.sweep as sweep

    class FakeRay:
        @staticmethod
        def is_initialized() -> bool:
            return False

        @staticmethod
        def init(**kw: object) -> None:
            raise ConnectionError("could not connect to the GCS at 127.0.0.1:1")

        @staticmethod
        def shutdown() -> None:
            pass

    monkeypatch.setattr(sweep, "import_ray", lambda: FakeRay)
    cfg = tmp_path / "s.yaml"
    cfg.write_text("name: t\npolicies: [fifo]\ntraces: [{synthetic: {jobs: 5, rate_per_s: 0.01}}]\n"
                   "clusters: [rack256]\n")
    code, text = run_main(monkeypatch, capsys, "sweep", str(cfg), "--out", str(tmp_path / "o"), "--backend", "ray")
    assert code == 2 and "Ray failed to start: ConnectionError" in _one_line_error(text)


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc (Linux)")
def test_sweep_output_on_a_file_system_that_refuses_writes_is_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "s.yaml"
    cfg.write_text("name: t\npolicies: [fifo]\ntraces: [{synthetic: {jobs: 5, rate_per_s: 0.01}}]\n"
                   "clusters: [rack256]\n")
    code, text = run_main(monkeypatch, capsys, "sweep", str(cfg), "--out", "/proc/ddlsched-sweep-test")
    assert code != 0
    _one_line_error(text)
