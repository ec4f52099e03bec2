"""Registry of paper reproductions, listed by ``ddlsched reproduce --list``.

A reproduction module registers a runner with :func:`register_reproduction`; the runner takes
``out_dir`` (Path), ``seeds`` (list[int]), ``quick`` (bool) and a ``progress`` callable(str), writes its
tables/plots under ``out_dir`` and returns a short text summary to print.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ddlsched.errors import ConfigError

Runner = Callable[..., str]


@dataclass(frozen=True)
class Reproduction:
    name: str
    description: str
    runner: Runner


_REPRODUCTIONS: dict[str, Reproduction] = {}
# Modules that register reproductions on import.
_MODULES: list[str] = [
    "ddlsched.experiments.yu2022",
    "ddlsched.experiments.wang2020",
    "ddlsched.experiments.sharma2024",
    "ddlsched.experiments.luo2024",
    "ddlsched.experiments.chen2024",
]


def register_reproduction(name: str, description: str) -> Callable[[Runner], Runner]:
    def deco(fn: Runner) -> Runner:
        _REPRODUCTIONS[name] = Reproduction(name, description, fn)
        return fn
    return deco


def reproductions() -> dict[str, Reproduction]:
    for m in _MODULES:
        importlib.import_module(m)
    return dict(sorted(_REPRODUCTIONS.items()))


def run_reproduction(name: str, out_dir: Path, seeds: list[int], quick: bool,
                     progress: Callable[[str], None] = print) -> str:
    reps = reproductions()
    if name not in reps:
        raise ConfigError(f"unknown reproduction {name!r}; available: {', '.join(reps) or 'none'}",
                          field="reproduction")
    return reps[name].runner(out_dir=out_dir, seeds=seeds, quick=quick, progress=progress)
