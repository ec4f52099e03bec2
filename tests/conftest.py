"""Test-session set-up shared by every test module."""

from __future__ import annotations

import signal

# A shell starts background jobs (`make test &`, `nohup ... &`) with SIGINT ignored, and children inherit that.
# The interrupt tests send Ctrl-C to the CLI (in-process and in subprocesses) and need it to act as it does for
# a user at a terminal, so the test session restores Python's default handler when it finds SIGINT ignored.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
