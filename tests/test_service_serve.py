"""``ddlsched serve`` refuses to start, with the cause named and nothing written, on: no token, a corrupt database
file, a database of a newer schema, a database used by another service, a port in use."""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from ddlsched.cli import cli
from ddlsched.errors import ConfigError
from service_helpers import tokens_file


def serve(tmp: Path, db: Path, *extra: str, env: dict[str, str] | None = None) -> object:
    args = ["serve", "--cluster", "wang2020", "--policy", "fifo", "--db", str(db), "--port", "0", *extra]
    return CliRunner().invoke(cli, args, env=env or {})


def test_no_token_is_refused(tmp_path: Path) -> None:
    r = serve(tmp_path, tmp_path / "a.db", env={"DDLSCHED_ADMIN_TOKEN": "", "DDLSCHED_TOKENS_FILE": ""})
    assert isinstance(r.exception, ConfigError) and "no tokens" in str(r.exception)
    assert not (tmp_path / "a.db").exists()
    r = serve(tmp_path, tmp_path / "a.db", env={"DDLSCHED_ADMIN_TOKEN": "short"})
    assert isinstance(r.exception, ConfigError) and "at least 16 characters" in str(r.exception)


def test_corrupt_newer_and_locked_databases_are_refused_untouched(tmp_path: Path) -> None:
    toks = str(tokens_file(tmp_path))
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"\x00garbage" * 100)
    r = serve(tmp_path, bad, "--tokens", toks)
    assert isinstance(r.exception, ConfigError) and "--db" in str(r.exception) and "not an SQLite" in str(r.exception)
    assert bad.read_bytes() == b"\x00garbage" * 100
    from ddlsched.service.store import JobStore

    newer = tmp_path / "newer.db"
    JobStore(str(newer)).close()
    c = sqlite3.connect(newer)
    c.execute("UPDATE ddlsched_meta SET value = '99'")
    c.commit()
    c.close()
    r = serve(tmp_path, newer, "--tokens", toks)
    assert isinstance(r.exception, ConfigError) and "newer ddlsched" in str(r.exception)
    held = JobStore(str(tmp_path / "held.db"))
    try:
        r = serve(tmp_path, tmp_path / "held.db", "--tokens", toks)
        assert isinstance(r.exception, ConfigError) and "locked by another ddlsched service" in str(r.exception)
    finally:
        held.close()


def test_port_in_use_is_refused(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        r = CliRunner().invoke(cli, ["serve", "--cluster", "wang2020", "--policy", "fifo", "--db",
                                     str(tmp_path / "a.db"), "--port", str(port), "--tokens",
                                     str(tokens_file(tmp_path))])
    assert isinstance(r.exception, ConfigError) and "--port" in str(r.exception)
    assert not (tmp_path / "a.db").exists()


@pytest.mark.parametrize("flag", ["--token", "--admin-token"])
def test_no_token_flag_exists(tmp_path: Path, flag: str) -> None:
    r = CliRunner().invoke(cli, ["serve", flag, "x" * 20])
    assert r.exit_code == 2 and "No such option" in r.output


@pytest.mark.slow
def test_sigterm_stops_gracefully_and_keeps_running_jobs_open(tmp_path: Path) -> None:
    """uvicorn re-raises the signal it stopped on; serve still stops the loop first: the running job checkpoints
    and stays open (queued) for the next start; exit status 143."""
    import signal

    import httpx

    from ddlsched.service.store import JobStore
    from service_helpers import ALICE, Served, auth, wait_for

    db = tmp_path / "t.db"
    srv = Served(tmp_path, db, args=("--time-scale", "10"))
    try:
        r = httpx.post(f"{srv.url}/api/v1/jobs", headers=auth(ALICE), json={
            "id": "long", "name": "long", "gpus": 8, "model": "resnet50", "duration_s": 36000})
        assert r.status_code == 201
        wait_for(lambda: httpx.get(f"{srv.url}/api/v1/jobs/long", headers=auth(ALICE)).json()["state"] == "running")
        assert srv.proc is not None
        srv.proc.send_signal(signal.SIGTERM)
        assert srv.proc.wait(30) == 143
        assert "interrupted (SIGTERM)" in srv.output()
    finally:
        srv.close()
    store = JobStore(str(db))
    try:
        assert store.get("long")["state"] == "queued"
        assert [e["kind"] for e in store.events("long")] == ["submitted", "arrived", "started", "preempted"]
    finally:
        store.close()
