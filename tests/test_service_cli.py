"""``ddlsched job``: the client talks to a running service over HTTP (here the fake-loop service): table and JSON
output, exit codes, the token from the environment or a file, never from an argument."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ddlsched.cli import cli
from service_helpers import ALICE, BOB, fake_http_service

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def run(url: str, token: str, *args: str) -> object:
    return CliRunner().invoke(cli, ["job", *args, "--server", url], env={"DDLSCHED_TOKEN": token})


def test_submit_ls_show_logs_cancel(tmp_path: Path) -> None:
    with fake_http_service(tmp_path, ms_per_iter=0.5) as (url, store, _):
        r = run(url, ALICE, "submit", "--name", "bert", "--gpus", "2", "--model", "resnet50", "--iterations",
                "50", "--wait", "--json")
        assert r.exit_code == 0, r.output
        done = json.loads(r.output)
        assert done["state"] == "completed" and done["tenant"] == "alice"
        r = run(url, ALICE, "ls")
        assert r.exit_code == 0 and done["id"] in r.output and "completed" in r.output
        r = run(url, ALICE, "show", done["id"], "--json")
        assert json.loads(r.output)["num_gpus"] == 2
        r = run(url, ALICE, "logs", done["id"])
        assert r.output.splitlines()[0].split()[-1] == "submitted"
        assert "started" in r.output and "gpus=[" in r.output and "finished" in r.output
        r = run(url, BOB, "show", done["id"])
        assert r.exit_code == 3 and "403" in r.output
        r = run(url, ALICE, "show", "nope")
        assert r.exit_code == 4
        r = run(url, ALICE, "cancel", done["id"])
        assert r.exit_code == 5 and "already ended" in r.output
        r = run(url, ALICE, "submit", "--name", "x", "--gpus", "1", "--model", "nosuch", "--iterations", "5")
        assert r.exit_code == 2 and "model: unknown model" in r.output
        r = run(url, "wrong-token-0000000000", "ls")
        assert r.exit_code == 3 and "401" in r.output
        tok = tmp_path / "tok"
        tok.write_text(BOB + "\n")
        r = CliRunner().invoke(cli, ["job", "ls", "--server", url, "--token-file", str(tok), "--json"], env={})
        assert r.exit_code == 0 and json.loads(r.output) == []
        assert len(store.list()) == 1


def test_unreachable_server_and_no_token() -> None:
    r = CliRunner().invoke(cli, ["job", "ls", "--server", "http://127.0.0.1:9"], env={"DDLSCHED_TOKEN": ALICE})
    assert r.exit_code == 6 and "cannot reach" in r.output
    r = CliRunner().invoke(cli, ["job", "ls", "--server", "http://127.0.0.1:9"], env={"DDLSCHED_TOKEN": ""})
    assert r.exit_code == 2 and "no token" in r.output
