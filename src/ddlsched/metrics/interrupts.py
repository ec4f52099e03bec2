"""Signals while an output folder is written: SIGTERM/SIGHUP raise KeyboardInterrupt like SIGINT (so the
unfinished folder is removed), and a rename pair or a clean-up is not cut in half."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from types import FrameType
from typing import Any


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


@contextlib.contextmanager
def interrupts_raise() -> Iterator[None]:
    """SIGTERM and SIGHUP raise KeyboardInterrupt (as SIGINT does), so unfinished outputs are removed.

    A signal whose handler is not the default (e.g. SIGHUP ignored under ``nohup``) is left alone.
    """
    old: dict[int, Any] = {}
    try:
        for sig in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(sig) == signal.SIG_DFL:
                old[sig] = signal.signal(sig, _raise_interrupt)
    except ValueError:  # not the main thread: signals stay as they are
        pass
    try:
        yield
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)


_STOP = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP until the block ends, then act on the first one as its handler would (a rename
    pair is never cut in half). Python handlers run in the main thread, so this holds whichever thread the
    signal lands in (a thread mask would not); ignored signals stay ignored."""
    got: list[int] = []
    old: dict[int, Any] = {}
    try:
        for sig in _STOP:
            if signal.getsignal(sig) not in (signal.SIG_IGN, None):
                old[sig] = signal.signal(sig, lambda signum, frame: got.append(signum))
    except ValueError:  # not the main thread: signals stay as they are
        pass
    try:
        yield
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)
        if got:
            handler = old[got[0]]
            if callable(handler):
                handler(got[0], None)  # e.g. raise KeyboardInterrupt
            else:
                os.kill(os.getpid(), got[0])  # the default action


@contextlib.contextmanager
def signals_ignored() -> Iterator[None]:
    """Ignore SIGINT/SIGTERM while removing a temporary folder (a second Ctrl-C does not cut it short)."""
    old: dict[int, Any] = {}
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            old[sig] = signal.signal(sig, signal.SIG_IGN)
    except ValueError:
        pass
    try:
        yield
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)
