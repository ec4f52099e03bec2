"""Trace loaders, one module per format, plus format detection and folder loading.

>>> trace = load_trace("data/traces/muri/trace1.csv")          # format detected from the header
>>> trace = load_trace("new.csv", columns={"arrival": "t"}, time_unit="min")   # columns imply generic_csv
>>> trace = load_trace("data/traces/gavel_philly_vc/seed0")    # a folder: one trace, JobSpec.group = file stem
"""

from __future__ import annotations

import csv
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from ddlsched.errors import InputError
from ddlsched.workload.cache import cached_load
from ddlsched.workload.csvrows import csv_error_message
from ddlsched.workload.loaders._common import check_file, iter_lines
from ddlsched.workload.loaders.elasticflow import load_elasticflow
from ddlsched.workload.loaders.folder import TRACE_SUFFIXES, list_trace_files, merge_traces
from ddlsched.workload.loaders.gavel import load_gavel
from ddlsched.workload.loaders.generic_csv import load_generic_csv, resolve_columns
from ddlsched.workload.loaders.kubernetes import is_k8s_header, load_kubernetes
from ddlsched.workload.loaders.muri import load_muri
from ddlsched.workload.loaders.philly_pollux import load_philly_pollux
from ddlsched.workload.loaders.pollux import load_pollux
from ddlsched.workload.loaders.slurm import delimiter_of, is_slurm_header, load_slurm
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
    "slurm": TraceFormat(load_slurm, "Slurm sacct --parsable2 export: JobID|Submit|State|Elapsed|AllocTRES|... "
                                     "(--states picks the end states; steps and never-run jobs counted)"),
    "kubernetes": TraceFormat(load_kubernetes, "Kubernetes pod list: name,phase,creationTimestamp,scheduledTime,"
                                               "startTime,finishedAt,deletionTimestamp,gpus,gpuShare (--states)"),
    "generic_csv": TraceFormat(load_generic_csv, "any CSV (Slurm/Kubernetes exports ...): columns named by --column "
                                                 "or found by common spellings; numbers, [D-]HH:MM:SS, ISO-8601"),
}

OPTION_FLAGS: dict[str, str] = {
    "columns": "--column", "time_unit": "--time-unit", "duration_unit": "--duration-unit",
    "skip_invalid": "--skip-invalid", "seed": "--seed", "unknown_models": "--unknown-models",
    "catalog": "--models", "gpu_unit": "--gpu-unit", "fractional_gpus": "--fractional-gpus",
    "gpu_types": "--cluster", "states": "--states", "gpus_from": "--gpus-from",
    "missing": "--missing",
}
"""The CLI flag behind each loader option (error messages name both)."""

OPTIONAL_OPTIONS = frozenset({"gpu_types"})
"""Options passed only to the loaders that take them (the other formats have nothing they would check)."""

_MURI_EXTRA = {"batch_size", "iteration_time", "resource_time_0", "priority"}
_TIRESIAS_JOB = {"job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration", "interval"}
_CLUSTER_SPEC = {"num_switch", "num_node_p_switch", "num_gpu_p_node"}


def _first_line(p: Path) -> str:
    for line in iter_lines(p):
        if line.strip():
            return line.rstrip("\r\n")
    return ""


def _header_fields(p: Path, line: str) -> list[str]:
    try:
        return next(csv.reader([line], strict=True), [])
    except csv.Error as e:
        raise InputError(f"header: {csv_error_message(e)}", path=str(p), line=1) from None


def detect_format(path: str | Path) -> str:
    """Name of the format of ``path``, judged from its first line; InputError when none or several fit."""
    p = check_file(path)
    line = _first_line(p)
    if not line.strip():
        raise InputError("empty file: cannot detect its format", path=str(p), line=1)
    if line.count("\t") == 6:
        return "gavel"
    if delimiter_of(line) == "|" and is_slurm_header({c.strip().lower() for c in line.split("|")}):
        return "slurm"
    fields = [c.strip() for c in _header_fields(p, line)]
    cols = {c.lower() for c in fields}
    cands: list[str] = []
    if is_slurm_header(cols):
        cands.append("slurm")
    if is_k8s_header(cols):
        cands.append("kubernetes")
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
    col = resolve_columns(fields, None)
    if ("num_gpus" in col or "gpu_milli" in col) and {"duration", "iterations", "end"} & set(col):
        return "generic_csv"
    raise InputError(f"unknown trace format (header: {line[:120]!r}); pass --format with one of "
                     f"{', '.join(FORMATS)}, or map the columns of a generic CSV with --column FIELD=NAME",
                     path=str(p), line=1)


def _flag(option: str) -> str:
    return f"{OPTION_FLAGS[option]} ({option}=)" if option in OPTION_FLAGS else f"{option}="


def load_trace(path: str | Path, format: str | None = None, **opts: Any) -> Trace:
    """Load ``path`` with the loader for ``format`` (detected when None; ``columns`` imply ``generic_csv``).

    ``opts`` go to the loader: ``skip_invalid``, ``seed``, ``unknown_models``, ``catalog`` (every format),
    ``gpu_types`` (formats with a GPU-type column), and format options such as ``time_unit`` or ``columns``.
    A folder loads every trace file in it as one trace (see :mod:`~ddlsched.workload.loaders.folder`)."""
    if not str(path).strip():
        raise InputError("the trace path is empty (--trace)", field="trace")
    if Path(path).is_dir():
        files, ignored = list_trace_files(Path(path))
        traces = [load_trace(f, format, **opts) for f in files]
        return merge_traces(Path(path), files, traces, ignored)
    fmt = format
    implied = False
    if fmt is None and (opts.get("columns") or opts.get("gpus_from")):
        fmt, implied = "generic_csv", True
    if fmt is None:
        fmt = detect_format(path)
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; known formats: {', '.join(FORMATS)} (--format)", field="format")
    loader = FORMATS[fmt].load
    params = inspect.signature(loader).parameters
    bad = sorted(k for k in opts if (k not in params or k == "path") and k not in OPTIONAL_OPTIONS)
    if bad:
        accepted = ", ".join(_flag(k) for k in params if k != "path")
        raise InputError(f"{', '.join(_flag(k) for k in bad)} is not accepted by format {fmt!r}; it accepts "
                         f"{accepted}", path=str(path), field=bad[0])
    kept = {k: v for k, v in opts.items() if k in params}
    trace = cached_load(Path(path), fmt, kept, lambda: loader(path, **kept))
    if implied:
        trace.notes.insert(0, "format 'generic_csv' implied by the column mapping (--column/--gpus-from)")
    elif format is None:
        trace.notes.insert(0, f"format {fmt!r} detected from the file's first line")
    return trace


__all__ = [
    "FORMATS",
    "OPTION_FLAGS",
    "TRACE_SUFFIXES",
    "TraceFormat",
    "detect_format",
    "load_elasticflow",
    "load_gavel",
    "load_generic_csv",
    "load_kubernetes",
    "load_muri",
    "load_philly_pollux",
    "load_pollux",
    "load_slurm",
    "load_tiresias",
    "load_trace",
]
