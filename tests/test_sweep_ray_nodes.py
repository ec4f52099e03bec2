"""Ray across machines: inputs travel with the cells, and a sweep over a two-node Ray cluster (a head and a worker
node started as separate processes with `ray start`, from other working directories) gives the bytes of the
local process pool."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ddlsched.experiments.runner import run_cell
from ddlsched.experiments.shipping import collect, materialise
from ddlsched.experiments.sweep import _run_cell_dict, parse_runtime_env

REPO = Path(__file__).resolve().parents[1]
MURI = REPO / "data/traces/muri/trace1.csv"
RESULT_FILES = ("summary.json", "records.csv", "timeseries.csv")


def test_shipped_inputs_run_where_the_paths_do_not_exist(tmp_path: Path) -> None:
    cluster = tmp_path / "c.yaml"
    cluster.write_text("name: two\ngpu_types:\n  V100: {mem_gb: 32, speed: 1.0}\n"
                       "racks:\n  - servers:\n      - {count: 2, gpus: 4, gpu_type: V100}\n")
    trace = tmp_path / "t.csv"
    trace.write_bytes(b"".join(MURI.read_bytes().splitlines(keepends=True)[:30]))
    params = {"policy": "fifo", "cluster": str(cluster), "trace": str(trace), "seed": 0}
    here = run_cell(params)
    assert here.error is None, here.error
    shipped = collect([str(trace), str(cluster), "wang2020"])
    assert set(shipped) == {str(trace), str(cluster)}  # presets stay names
    shutil.move(trace, tmp_path / "moved.csv")  # the worker has no copy at the driver's path
    cluster.unlink()
    remote = _run_cell_dict(params, (), shipped)
    assert remote.error is None, remote.error
    for f in RESULT_FILES:
        assert remote.files[f] == here.files[f], f  # the results name the driver's paths
    assert json.loads(remote.files["summary.json"])["trace"] == str(trace)
    assert not trace.exists()


def test_materialise_is_content_addressed(tmp_path: Path) -> None:
    a = materialise("/x/t.csv", {"": b"1"}, root=tmp_path)
    assert Path(a).read_bytes() == b"1" and Path(a).name == "t.csv"
    assert materialise("/x/t.csv", {"": b"1"}, root=tmp_path) == a
    b = materialise("/x/t.csv", {"": b"2"}, root=tmp_path)
    assert b != a and Path(b).read_bytes() == b"2"
    d = materialise("/x/folder", {"a.csv": b"A", "sub/b.csv": b"B"}, root=tmp_path)
    assert (Path(d) / "sub/b.csv").read_bytes() == b"B" and Path(d).name == "folder"


def test_runtime_env_flag(tmp_path: Path) -> None:
    from ddlsched.errors import InputError

    assert parse_runtime_env('{"working_dir": "."}', "ray") == {"working_dir": "."}
    f = tmp_path / "env.yaml"
    f.write_text("pip: [ddlsched]\n")
    assert parse_runtime_env(str(f), "ray") == {"pip": ["ddlsched"]}
    for bad, backend in (("{", "ray"), ("[1]", "ray"), ("{}", "local")):
        with pytest.raises(InputError, match="--ray-runtime-env"):
            parse_runtime_env(bad, backend)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.timeout(300)
def test_two_node_ray_cluster_matches_the_local_pool(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="ray is an optional extra (pip install 'ddlsched[ray]')")
    ray_cli = Path(sys.executable).with_name("ray")
    ddl_cli = Path(sys.executable).with_name("ddlsched")
    if not ray_cli.exists() or not ddl_cli.exists():
        pytest.skip("the ray and ddlsched commands are not installed beside this Python")
    trace = tmp_path / "inputs" / "muri60.csv"
    trace.parent.mkdir()
    trace.write_bytes(b"".join(MURI.read_bytes().splitlines(keepends=True)[:61]))
    cfg = tmp_path / "inputs" / "sweep.yaml"
    cfg.write_text("name: two_nodes\npolicies: [fifo+consolidated, sjf+consolidated]\n"
                   "traces: [muri60.csv]\nclusters: [wang2020]\nseeds: [0, 1]\n")
    port = _free_port()
    short = Path(tempfile.mkdtemp(prefix="r", dir="/tmp"))  # Ray's socket paths must stay short
    # a throw-away cluster on one machine: no token authentication (a real cluster shares its token, docs/sweeps.md)
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled", "PYTHONPATH": str(REPO / "src")}
    head_dir, node_dir, driver_dir = (tmp_path / n for n in ("head", "node", "driver"))
    for d in (head_dir, node_dir, driver_dir):
        d.mkdir()

    def ray(*args: str, cwd: Path) -> None:
        r = subprocess.run([str(ray_cli), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr

    try:
        ray("start", "--head", f"--port={port}", "--num-cpus=1", "--include-dashboard=false",
            f"--temp-dir={short}", cwd=head_dir)
        ray("start", f"--address=127.0.0.1:{port}", "--num-cpus=1", cwd=node_dir)
        nodes = subprocess.run([sys.executable, "-c", "import ray, json; ray.init(address='auto'); "
                                "print(json.dumps(sum(n['Alive'] for n in ray.nodes())))"],
                               cwd=driver_dir, env={**env, "RAY_ADDRESS": f"127.0.0.1:{port}"}, capture_output=True,
                               text=True, timeout=120)
        assert nodes.stdout.strip().splitlines()[-1] == "2", nodes.stdout + nodes.stderr
        out_ray = tmp_path / "out_ray"
        r = subprocess.run([str(ddl_cli), "sweep", str(cfg), "--backend", "ray", "--address",
                            f"127.0.0.1:{port}", "--workers", "2", "--out", str(out_ray), "--quiet"],
                           cwd=driver_dir, env=env, capture_output=True, text=True, timeout=240)
        assert r.returncode == 0, r.stdout + r.stderr
    finally:
        subprocess.run([str(ray_cli), "stop", "--force"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(short, ignore_errors=True)
    out_local = tmp_path / "out_local"
    r = subprocess.run([str(ddl_cli), "sweep", str(cfg), "--workers", "2", "--out", str(out_local), "--quiet"],
                       cwd=driver_dir, env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    cells = sorted(p.name for p in (out_local / "cells").iterdir())
    assert len(cells) == 4 and cells == sorted(p.name for p in (out_ray / "cells").iterdir())
    for c in cells:
        for f in RESULT_FILES:
            assert (out_ray / "cells" / c / f).read_bytes() == (out_local / "cells" / c / f).read_bytes(), (c, f)
    assert (out_ray / "results.csv").read_bytes() == (out_local / "results.csv").read_bytes()
