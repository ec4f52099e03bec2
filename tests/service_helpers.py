"""Shared pieces of the service tests: tokens, an in-process service over the fake loop, free ports, a served
subprocess that is always killed."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import httpx

from service_fake import FakeLoop

REPO = Path(__file__).resolve().parents[1]
ADMIN = "admin-token-0123456789"
ALICE = "alice-token-0123456789"
BOB = "bob-token-0123456789abc"


def tokens_file(tmp: Path) -> Path:
    p = tmp / "tokens.yaml"
    p.write_text(f"admin: {ADMIN}\ntenants:\n  alice: {ALICE}\n  bob: {BOB}\n")
    p.chmod(0o600)
    return p


def auth(tok: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {tok}"}


@contextmanager
def fake_service(tmp: Path, *, cluster: str = "wang2020", ms_per_iter: float = 1.0, max_gpus: int | None = None,
                 **store_kw: Any) -> Iterator[Any]:
    """(client, store, scheduler) of an in-process service whose loop is :class:`FakeLoop`."""
    from fastapi.testclient import TestClient

    from ddlsched.api import load_cluster
    from ddlsched.engine.run import default_catalog
    from ddlsched.policies.registry import make_policy
    from ddlsched.service.app import Settings, create_app
    from ddlsched.service.auth import load_tokens
    from ddlsched.service.scheduler import Scheduler
    from ddlsched.service.store import JobStore

    cl = load_cluster(cluster)
    store = JobStore(str(tmp / "jobs.db"), **store_kw)
    sched = Scheduler(store, cl, make_policy("fifo"), lambda pol, cb: FakeLoop(cl.num_gpus, cb, ms_per_iter, max_gpus),
                      catalog=default_catalog(), policy_name="fifo")
    try:
        sched.start()
        toks, _ = load_tokens(tokens_file(tmp), env={})
        with TestClient(create_app(store, sched, Settings(toks))) as client:
            yield client, store, sched
    finally:
        sched.stop()
        store.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def job(name: str = "j", **kw: Any) -> dict[str, Any]:
    return {"name": name, "gpus": 1, "model": "resnet50", "iterations": 100, **kw}


def wait_for(pred: Any, timeout_s: float = 20.0, every_s: float = 0.02) -> Any:
    end = time.monotonic() + timeout_s
    while True:
        got = pred()
        if got:
            return got
        if time.monotonic() > end:
            raise AssertionError("timed out waiting")
        time.sleep(every_s)


class Zygote:
    """tests/service_zygote.py as a subprocess: forks ``ddlsched serve`` children on request (see there)."""

    def __init__(self) -> None:
        e = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO / "tests")])}
        self.proc = subprocess.Popen([sys.executable, str(REPO / "tests" / "service_zygote.py")], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=e, start_new_session=True)
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "ready"

    def spawn(self, log: Path, args: list[str]) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"log": str(log), "args": args}) + "\n")
        self.proc.stdin.flush()
        return int(self.proc.stdout.readline())

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)


class Served:
    """``ddlsched serve`` in a subprocess (own process group); :meth:`kill` sends SIGKILL."""

    def __init__(self, tmp: Path, db: Path, *, args: tuple[str, ...] = (), env: dict[str, str] | None = None,
                 zygote: Zygote | None = None) -> None:
        path = tmp / f"serve-{time.monotonic_ns()}.log"
        self.log = path.open("w+")
        cmd = ["serve", "--cluster", "wang2020", "--policy", "fifo", "--db", str(db), "--port", "0",
               "--tokens", str(tokens_file(tmp)), *args]
        self.pid: int
        self.proc: subprocess.Popen[bytes] | None = None
        if zygote is not None:
            self.pid = zygote.spawn(path, cmd)
        else:
            e = {**os.environ, "PYTHONPATH": str(REPO / "src"), **(env or {})}
            self.proc = subprocess.Popen([sys.executable, "-m", "ddlsched.cli", *cmd], stdout=self.log,
                                         stderr=subprocess.STDOUT, env=e, start_new_session=True)
            self.pid = self.proc.pid
        self.url = self._wait_ready()

    def alive(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        return True

    def _wait_ready(self, timeout_s: float = 30.0) -> str:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            self.log.seek(0)
            m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", self.log.read())
            if m:
                url = m.group(1)
                try:
                    if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                        return url
                except httpx.HTTPError:
                    pass
            if not self.alive():
                break
            time.sleep(0.05)
        self.log.seek(0)
        self.kill()
        raise AssertionError(f"ddlsched serve did not start:\n{self.log.read()[-3000:]}")

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read()

    def kill(self) -> None:
        """SIGKILL the service's process group and wait until it is gone (its database lock with it)."""
        if self.alive():
            with suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(10)
        else:
            wait_for(lambda: not self.alive(), 10, 0.01)

    def close(self) -> None:
        try:
            self.kill()
        finally:
            self.log.close()


@contextmanager
def threaded_server(app: Any) -> Iterator[str]:
    """Serve an ASGI app with uvicorn in a thread on a free 127.0.0.1 port; stopped on exit."""
    import threading

    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off"))
    t = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    t.start()
    try:
        wait_for(lambda: server.started, 10)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        t.join(10)
        sock.close()


@contextmanager
def fake_http_service(tmp: Path, **kw: Any) -> Iterator[tuple[str, Any, Any]]:
    """(url, store, scheduler) of the fake-loop service behind a real HTTP server."""
    with fake_service(tmp, **kw) as (client, store, sched), threaded_server(client.app) as url:
        yield url, store, sched
