"""Short full collections in a long-running service.

CPython's cyclic garbage collector stops every thread while it walks the objects it tracks; a full collection walks
all of them. In ``ddlsched serve`` most of those live as long as the process (modules, the app, and the live loop's
state of every job it has seen), so a full collection took 60–200 ms on the benchmark's 2-core machine, growing with
the jobs served, and every API request in flight waited for it (BENCHMARKS.md, the service). A *frozen* object is
no longer walked, and reference counting still frees it when its last reference goes.

:func:`keep_full_collections_short` freezes what exists once the service is built, and again after each full
collection (what survived it is alive, and will most likely stay so): a full collection then walks only what was
created since the previous one. The cost: an object that survived a full collection and later becomes part of an
unreachable reference cycle is not reclaimed (short-lived request objects rarely are; the loop's per-job state is
kept for the whole run anyway).
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any


def _after_full(phase: str, info: dict[str, Any]) -> None:
    if phase == "stop" and info.get("generation") == 2:
        gc.freeze()


def keep_full_collections_short() -> Callable[[], None]:
    """Collect, freeze what is left, and freeze again after every full collection from now on; returns the undo
    (the callback removed; frozen objects stay frozen)."""
    gc.collect()
    gc.freeze()
    gc.callbacks.append(_after_full)

    def undo() -> None:
        if _after_full in gc.callbacks:
            gc.callbacks.remove(_after_full)

    return undo


__all__ = ["keep_full_collections_short"]
