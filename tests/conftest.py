"""Test-session set-up shared by every test module."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

# A shell starts background jobs (`make test &`, `nohup ... &`) with SIGINT ignored, and children inherit that.
# The interrupt tests send Ctrl-C to the CLI (in-process and in subprocesses) and need it to act as it does for
# a user at a terminal, so the test session restores Python's default handler when it finds SIGINT ignored.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def luo2024_quick(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The outputs of `ddlsched reproduce luo2024 --quick`, made once for the tests that read them
    (test_luo2024.py, test_sharing.py); tests must not change them."""
    from click.testing import CliRunner

    from ddlsched.cli import cli

    out = tmp_path_factory.mktemp("luo2024-quick")
    r = CliRunner().invoke(cli, ["reproduce", "luo2024", "--quick", "--out", str(out)])
    assert r.exit_code == 0, r.output
    return out
