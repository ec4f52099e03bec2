"""A multi-node Ray cluster on this machine, one ``ray start`` node per server (no root, for tests and trials).

Each node is a ``ray start --block`` process in a session of its own, with its own ports and a fresh temporary
folder; :meth:`LocalRayCluster.stop` ends the ``ray start`` processes, then kills whatever is left in their sessions
(raylets, workers), waits until nothing is, and removes the folder. It never touches another Ray on the machine
(no ``ray stop``). The servers' resources come from :func:`ddlsched.live.ray_executor.node_resources`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _session_pids(sid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":  # fields[3]: session id; Z: a zombie, already gone
            out.append(int(d.name))
    return out


class LocalRayCluster:
    """``nodes``: one resource mapping per node (the first is the head), e.g. from ``node_resources``."""

    def __init__(self, nodes: Sequence[Mapping[str, float]], *, num_cpus: int = 1,
                 env: Mapping[str, str] | None = None, ray_cli: str | None = None,
                 start_timeout_s: float = 90.0, retries: int = 2, num_gpus: int = 0) -> None:
        if not nodes:
            raise ValueError("a Ray cluster needs at least one node")
        self.nodes = [dict(n) for n in nodes]
        self.num_cpus = num_cpus
        self.ray_cli = ray_cli or str(Path(sys.executable).with_name("ray"))
        self.start_timeout_s = start_timeout_s
        self.retries = retries
        self.num_gpus = num_gpus
        """Real GPUs each node advertises as Ray's ``GPU`` (0: none; use ``ddl_gpu`` slots instead)."""
        self.env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled",
                    "PYTHONUNBUFFERED": "1", **(env or {})}
        self.env.pop("RAY_ADDRESS", None)
        self.port = 0
        self.tmp: Path | None = None
        self.procs: list[subprocess.Popen[bytes]] = []

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _start_node(self, i: int, resources: Mapping[str, float]) -> None:
        assert self.tmp is not None
        log = open(self.tmp / f"node{i}.log", "wb")  # noqa: SIM115  # kept open by the child
        ports = ["--node-manager-port", "--object-manager-port", "--dashboard-agent-listen-port",
                 "--dashboard-agent-grpc-port", "--metrics-export-port", "--runtime-env-agent-port"]
        args = [self.ray_cli, "start", "--block", "--node-ip-address=127.0.0.1", f"--num-cpus={self.num_cpus}",
                f"--num-gpus={self.num_gpus}", f"--resources={json.dumps(dict(resources))}",
                "--min-worker-port=0", "--max-worker-port=0", *(f"{p}={free_port()}" for p in ports)]
        if i == 0:
            args += ["--head", f"--port={self.port}", f"--temp-dir={self.tmp / 'ray'}", "--include-dashboard=false",
                     f"--dashboard-port={free_port()}"]
        else:
            args += [f"--address={self.address}"]
        self.procs.append(subprocess.Popen(args, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                           stdin=subprocess.DEVNULL, start_new_session=True, cwd=self.tmp))
        log.close()

    def _wait_started(self, i: int) -> None:
        """Until node ``i``'s ``ray start`` says the runtime started (or exits: an error with its log)."""
        deadline = time.monotonic() + self.start_timeout_s
        while "Ray runtime started" not in self.log(i):
            if self.procs[i].poll() is not None:
                raise RuntimeError(f"ray start (node {i}) exited with {self.procs[i].returncode}:\n"
                                   f"{self.log(i)[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"ray start (node {i}) did not start within {self.start_timeout_s:g} s:\n"
                                   f"{self.log(i)[-2000:]}")
            time.sleep(0.2)

    def _start_with_retries(self, i: int, resources: Mapping[str, float]) -> None:
        """Start node ``i``; on a loaded machine Ray's fixed 30 s registration wait can run out: kill what that
        node started and try again (``retries`` times)."""
        for attempt in range(self.retries + 1):
            if i == 0:
                self.port = free_port()
            self._start_node(i, resources)
            try:
                self._wait_started(i)
                return
            except RuntimeError:
                if attempt == self.retries:
                    raise
                self._kill_session(self.procs.pop())

    def _kill_session(self, proc: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + 10
        while (left := _session_pids(proc.pid)) and time.monotonic() < deadline:
            for pid in left:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.2)

    def _wait_nodes(self, n: int) -> None:
        code = (f"import json, ray; ray.init(address='{self.address}', logging_level='ERROR'); "
                "print(json.dumps(sum(1 for x in ray.nodes() if x['Alive'])))")
        deadline = time.monotonic() + self.start_timeout_s
        while True:
            for i, p in enumerate(self.procs):
                if p.poll() is not None:
                    raise RuntimeError(f"ray start (node {i}) exited with {p.returncode}: {self.log(i)[-2000:]}")
            r = subprocess.run([sys.executable, "-c", code], env=self.env, capture_output=True, text=True,
                               timeout=self.start_timeout_s, cwd=self.tmp, check=False)
            lines = r.stdout.strip().splitlines()
            if r.returncode == 0 and lines and lines[-1].isdigit() and int(lines[-1]) >= n:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the local Ray cluster did not reach {n} nodes: {r.stdout[-500:]}"
                                   f"{r.stderr[-2000:]}")
            time.sleep(0.5)

    def log(self, i: int) -> str:
        assert self.tmp is not None
        with contextlib.suppress(OSError):
            return (self.tmp / f"node{i}.log").read_text(errors="replace")
        return ""

    def start(self) -> LocalRayCluster:
        self.tmp = Path(tempfile.mkdtemp(prefix="ddlr", dir="/tmp"))  # Ray's socket paths must stay short
        self.port = free_port()
        try:
            for i, res in enumerate(self.nodes):
                self._start_with_retries(i, res)
            self._wait_nodes(len(self.nodes))
        except BaseException:
            self.stop()
            raise
        return self

    def pids(self) -> list[int]:
        """Every live process of the cluster (the ``ray start`` processes' sessions)."""
        return [p for proc in self.procs for p in _session_pids(proc.pid)]

    def stop(self, timeout_s: float = 20.0) -> list[int]:
        """End every node; returns the pids that could not be killed (empty when all are gone)."""
        for p in reversed(self.procs):  # workers first, the head last
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout_s / 2
        while time.monotonic() < deadline and any(p.poll() is None for p in self.procs):
            time.sleep(0.2)
        left: list[int] = []
        deadline = time.monotonic() + timeout_s / 2
        while True:
            left = self.pids()
            for pid in left:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            for p in self.procs:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(timeout=0.1)
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        left = self.pids()
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
        return left

    def __enter__(self) -> LocalRayCluster:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


@contextlib.contextmanager
def local_ray_cluster(nodes: Sequence[Mapping[str, float]], **kw: Any) -> Iterator[LocalRayCluster]:
    c = LocalRayCluster(nodes, **kw)
    c.start()
    try:
        yield c
    finally:
        c.stop()


__all__ = ["LocalRayCluster", "free_port", "local_ray_cluster"]
