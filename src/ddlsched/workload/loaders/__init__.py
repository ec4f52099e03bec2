"""Trace loaders, one module per format, plus format detection.

>>> trace = load_trace("data/traces/muri/trace1.csv")          # format detected from the header
>>> trace = load_trace("new.csv", format="generic_csv", columns={"arrival": "t"}, time_unit="min")
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from ddlsched.errors import InputError
from ddlsched.workload.loaders._common import check_file
from ddlsched.workload.loaders.elasticflow import load_elasticflow
from ddlsched.workload.loaders.gavel import load_gavel
from ddlsched.workload.loaders.generic_csv import load_generic_csv, resolve_columns
from ddlsched.workload.loaders.muri import load_muri
from ddlsched.workload.loaders.philly_pollux import load_philly_pollux
from ddlsched.workload.loaders.pollux import load_pollux
from ddlsched.workload.loaders.tiresias import load_tiresias
from ddlsched.workload.trace import Trace


class TraceFormat(NamedTuple):
    load: Callable[..., Trace]
    description: str


FORMATS: dict[str, TraceFormat] = {
    "philly_pollux": TraceFormat(load_philly_pollux, "Pollux's Philly job table: timestamp,duration,num_gpus,"
                                                     "gpu_time,cluster (wall clock, seconds)"),
    "gavel": TraceFormat(load_gavel, "Gavel .trace: 7 tab-separated fields, no header (steps, seconds)"),
    "muri": TraceFormat(load_muri, "Muri / SJF-BSBF CSV: job_id,num_gpu,submit_time,iterations,model_name,"
                                   "batch_size,... (ms)"),
    "elasticflow": TraceFormat(load_elasticflow, "ElasticFlow CSV: job_id,submit_time,real_iteration,model_name,"
                                                 "ddl,... (seconds)"),
    "pollux": TraceFormat(load_pollux, "Pollux/Sia workload: name,time,application,num_replicas,batch_size"),
    "tiresias": TraceFormat(load_tiresias, "Tiresias job table (seconds) or single-column duration list"),
    "generic_csv": TraceFormat(load_generic_csv, "any CSV; columns and time unit named by the caller"),
}

_MURI_EXTRA = {"batch_size", "iteration_time", "resource_time_0", "priority"}
_TIRESIAS_JOB = {"job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration", "interval"}
_CLUSTER_SPEC = {"num_switch", "num_node_p_switch", "num_gpu_p_node"}


def _first_line(p: Path) -> str:
    try:
        with p.open(encoding="utf-8-sig") as f:
            return f.readline().rstrip("\r\n")
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file", path=str(p)) from None


def detect_format(path: str | Path) -> str:
    """Name of the format of ``path``, judged from its first line; InputError when none or several fit."""
    p = check_file(path)
    line = _first_line(p)
    if not line.strip():
        raise InputError("empty file: cannot detect its format", path=str(p), line=1)
    if line.count("\t") == 6:
        return "gavel"
    cols = {c.strip().lower() for c in line.split(",")}
    cands: list[str] = []
    if {"timestamp", "duration", "num_gpus"} <= cols:
        cands.append("philly_pollux")
    if {"real_iteration", "ddl", "iteration", "num_gpu", "submit_time"} <= cols:
        cands.append("elasticflow")
    if {"name", "time", "application", "num_replicas"} <= cols:
        cands.append("pollux")
    muri_like = {"job_id", "num_gpu", "iterations", "model_name"} <= cols and "ddl" not in cols
    if muri_like and cols & _MURI_EXTRA:
        cands.append("muri")
    if cols == {"duration"} or (cols >= _TIRESIAS_JOB and not cols & _MURI_EXTRA):
        cands.append("tiresias")
    if muri_like and not cands:
        cands = ["muri", "tiresias"]  # same columns, different units (ms vs s)
    if len(cands) == 1:
        return cands[0]
    if len(cands) > 1:
        raise InputError(f"format is ambiguous: could be {', '.join(cands)}; pass --format NAME "
                         "(format= in Python)", path=str(p), line=1)
    if cols >= _CLUSTER_SPEC:
        raise InputError("this is a cluster spec (num_switch,num_node_p_switch,...), not a job trace", path=str(p))
    col = resolve_columns([c.strip() for c in line.split(",")], None)
    if "num_gpus" in col and ("duration" in col or "iterations" in col):
        return "generic_csv"
    raise InputError(f"unknown trace format (header: {line[:120]!r}); pass --format with one of "
                     f"{', '.join(FORMATS)}", path=str(p), line=1)


def load_trace(path: str | Path, format: str | None = None, **opts: Any) -> Trace:
    """Load ``path`` with the loader for ``format`` (detected when None). ``opts`` go to the loader
    (``skip_invalid``, ``seed``, and format options such as ``time_unit`` or ``columns``)."""
    fmt = format or detect_format(path)
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; known formats: {', '.join(FORMATS)}", field="format")
    loader = FORMATS[fmt].load
    params = inspect.signature(loader).parameters
    bad = sorted(k for k in opts if k not in params or k == "path")
    if bad:
        accepted = ", ".join(k for k in params if k != "path")
        raise InputError(f"option(s) {', '.join(bad)} not accepted by format {fmt!r}; it accepts {accepted}",
                         field=bad[0])
    trace = loader(path, **opts)
    if format is None:
        trace.notes.insert(0, f"format {fmt!r} detected from the file's first line")
    return trace


__all__ = [
    "FORMATS",
    "TraceFormat",
    "detect_format",
    "load_elasticflow",
    "load_gavel",
    "load_generic_csv",
    "load_muri",
    "load_philly_pollux",
    "load_pollux",
    "load_tiresias",
    "load_trace",
]
