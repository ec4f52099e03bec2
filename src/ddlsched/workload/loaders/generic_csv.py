"""Any CSV with one job per row; the caller names the columns and the time unit.

``columns`` maps logical fields to the file's column names. Logical fields: ``job_id``, ``arrival``,
``num_gpus``, ``duration``, ``iterations``, ``model``, ``batch_size``, ``user``. ``num_gpus`` and one of
``duration``/``iterations`` are required (``iterations`` wins when both are given); without ``job_id`` ids are
``<stem>-<n>``; without ``arrival`` every job arrives at 0; without ``model`` one is assigned by hash(seed, job_id).
Fields left out of ``columns`` are looked up under the common spellings in :data:`SYNONYMS`, so a file with
``job_id,submission_time,duration,num_gpu`` loads with no options at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ddlsched.errors import InputError
from ddlsched.workload.loaders._common import Builder, Header, Row, check_file, read_rows, unit_factor
from ddlsched.workload.trace import Trace

SYNONYMS: dict[str, tuple[str, ...]] = {
    "job_id": ("job_id", "jobid", "id", "job_name", "name"),
    "arrival": ("arrival", "arrival_time", "arrival_s", "submit_time", "submission_time", "submit", "time"),
    "num_gpus": ("num_gpus", "num_gpu", "gpus", "gpu_num", "n_gpus", "gpu_count"),
    "duration": ("duration", "duration_s", "runtime", "run_time"),
    "iterations": ("iterations", "iteration", "num_iterations", "total_steps", "steps"),
    "model": ("model", "model_name", "application"),
    "batch_size": ("batch_size", "batch"),
    "user": ("user", "user_id", "vc", "cluster"),
}
FIELDS = tuple(SYNONYMS)


def resolve_columns(header: list[str], columns: Mapping[str, str] | None) -> dict[str, str]:
    """Logical field → column name: explicit ``columns`` first, then the first matching synonym."""
    columns = dict(columns or {})
    unknown = sorted(set(columns) - set(FIELDS))
    if unknown:
        raise InputError(f"unknown logical field(s) {', '.join(unknown)}; use {', '.join(FIELDS)}", field="columns")
    lower = {h.lower(): h for h in header}
    out: dict[str, str] = {}
    for f in FIELDS:
        if f in columns:
            out[f] = columns[f]
            continue
        for s in SYNONYMS[f]:
            if s in lower and lower[s] not in out.values():
                out[f] = lower[s]
                break
    return out


def load_generic_csv(path: str | Path, *, skip_invalid: bool = False, seed: int = 0,
                     columns: Mapping[str, str] | None = None, time_unit: str = "s",
                     duration_unit: str | None = None, delimiter: str = ",",
                     model_mix: Mapping[str, float] | None = None) -> Trace:
    """Load a CSV described by ``columns``; ``time_unit`` ("ms", "s", "min", "h") applies to arrival and duration
    (``duration_unit`` overrides it for durations)."""
    p = check_file(path)
    t_factor = unit_factor(time_unit)
    d_factor = unit_factor(duration_unit, field="duration_unit") if duration_unit else t_factor
    b = Builder(p, "generic_csv", skip_invalid=skip_invalid, seed=seed, model_mix=model_mix)
    rows = read_rows(p, delimiter=delimiter)
    first = next(rows, None)
    if first is None:
        raise InputError("empty file", path=str(p))
    col = resolve_columns(first[1], columns)
    if "num_gpus" not in col:
        raise InputError("no GPU-count column; pass columns={'num_gpus': ...}", path=str(p), line=1,
                         field="num_gpus")
    if "duration" not in col and "iterations" not in col:
        raise InputError("no duration or iterations column; pass columns={'duration': ...}", path=str(p), line=1,
                         field="duration")
    header = Header(p, first[1], list(col.values()))
    b.notes.append("columns: " + ", ".join(f"{k}={v}" for k, v in col.items())
                   + f"; time unit {time_unit}" + (f", duration unit {duration_unit}" if duration_unit else ""))
    if "arrival" not in col:
        b.notes.append("no arrival column: every job arrives at 0")
    if "iterations" in col and "duration" in col:
        b.notes.append("both iterations and duration given: iterations used")
    for line, fields in rows:
        try:
            r = Row(p, line, fields, header)
            job_id = r.text(col["job_id"]) if "job_id" in col else f"{p.stem}-{line - 2}"
            kw: dict[str, object] = {}
            if "iterations" in col:
                kw["iterations"] = r.number(col["iterations"], positive=True)
            else:
                kw["duration_s"] = r.number(col["duration"], positive=True) * d_factor
            if "batch_size" in col:
                kw["batch_size"] = r.integer(col["batch_size"], positive=True)
            if "user" in col:
                kw["user"] = r.raw(col["user"]) or None
            model = r.raw(col["model"]) if "model" in col else None
            arrival = r.number(col["arrival"], min_value=0) * t_factor if "arrival" in col else 0.0
            b.add(r, job_id=job_id, arrival_s=arrival, num_gpus=r.integer(col["num_gpus"], positive=True),
                  model=b.model(model, job_id), **kw)
        except InputError as e:
            b.reject(e)
    return b.finish()
