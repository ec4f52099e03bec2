"""Any CSV with one job per row (a Slurm, Kubernetes or scheduler export); the caller names the columns.

``columns`` maps logical fields (:data:`FIELDS`) to the file's column names (``--column FIELD=NAME``; an empty
NAME leaves the field unmapped). Fields left out are looked up under the common spellings in :data:`SYNONYMS`
(case-insensitive), so ``job_id,submission_time,duration,num_gpu`` loads with no options at all.

* GPUs: ``num_gpus`` and/or ``gpu_milli`` (thousandths of a GPU per GPU, Alibaba style) are required. A
  request that is not a whole number of GPUs (0.5, or ``gpu_milli=500``) becomes ``num_gpus = ceil(request)``
  with ``JobSpec.gpu_request`` keeping the fraction, counted in a note (``fractional_gpus="error"`` refuses
  it; ``fractional_gpus="keep"`` keeps a request below 1 as ``JobSpec.gpu_share`` on ``num_gpus = 1``).
  ``gpu_unit`` says what the ``num_gpus`` column counts: ``gpus`` (default), ``milli`` or ``percent``.
* Length: ``iterations``, else ``duration``, else ``end`` minus ``start`` (when mapped) or minus ``arrival``
  (the submission time, so the original cluster's queueing is included — a note says which).
* Times: numbers in ``time_unit`` (``duration_unit`` for durations), clock durations or ISO-8601 timestamps,
  recognised per value (:mod:`~ddlsched.workload.loaders.timevalues`). Timestamp arrivals become seconds after
  the earliest one (``Trace.epoch``).
* Without ``job_id`` ids are ``<stem>-<n>`` (n = data row, from 0); without ``arrival`` every job arrives at 0;
  without ``model`` one is assigned by hash(seed, job_id); ``gpu_type`` is kept on the job (and checked
  against ``gpu_types`` when the cluster is known).
* Missing values: an empty field, or one of ``missing`` (``--missing``; default :data:`MISSING_DEFAULT`,
  compared case-insensitively: ``Unknown``, ``None``, ``N/A``, ...). In a required field (``job_id``, the GPU
  count, the times the run time and arrival are read from) a missing value is a located error naming file, line
  and field (skipped and counted under ``skip_invalid``); in an optional one (``model``, ``batch_size``,
  ``user``, ``gpu_type``) it means the field is absent for that job.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from ddlsched.errors import InputError
from ddlsched.workload import limits
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.limits import MAX_ARRIVAL_S, MAX_BATCH_SIZE, MAX_DURATION_S, MAX_GPUS, MAX_ITERATIONS
from ddlsched.workload.loaders import columnar
from ddlsched.workload.loaders._common import (
    Builder,
    Header,
    Row,
    check_file,
    check_fractional_rule,
    check_gpu_type,
    fractional_fields,
    fractional_notes,
    read_rows,
    resolve_model,
    short,
    unit_factor,
)
from ddlsched.workload.loaders.timevalues import ABSOLUTE, TimeValue, parse_time
from ddlsched.workload.model_mapping import assign_models
from ddlsched.workload.profiles import ModelCatalog
from ddlsched.workload.trace import Trace

SYNONYMS: dict[str, tuple[str, ...]] = {
    "job_id": ("job_id", "jobid", "id", "job_name", "name"),
    "arrival": ("arrival", "arrival_time", "arrival_s", "submit_time", "submission_time", "submit", "submitted",
                "time", "creation_time", "created", "created_at"),
    "num_gpus": ("num_gpus", "num_gpu", "gpus", "gpu_num", "n_gpus", "ngpus", "gpu_count", "allocgpus", "reqgpus"),
    "gpu_milli": ("gpu_milli",),
    "duration": ("duration", "duration_s", "runtime", "run_time", "elapsed", "elapsedraw"),
    "iterations": ("iterations", "iteration", "num_iterations", "total_steps", "steps"),
    "start": ("start", "start_time", "started", "started_at"),
    "end": ("end", "end_time", "finish_time", "completion_time", "ended", "ended_at"),
    "model": ("model", "model_name", "application"),
    "batch_size": ("batch_size", "batch"),
    "user": ("user", "user_id", "vc", "cluster", "account"),
    "gpu_type": ("gpu_type", "gputype", "gpu_spec", "gpu_model"),
}
FIELDS = tuple(SYNONYMS)
GPU_UNITS: dict[str, float] = {"gpus": 1.0, "milli": 1000.0, "percent": 100.0}
"""``gpu_unit`` choices: what one unit of the ``num_gpus`` column is (value / divisor = GPUs)."""

MISSING_DEFAULT = ("unknown", "none", "null", "n/a", "na", "nan", "<none>")
"""Values that mean "no value" besides the empty field (``--missing`` replaces them; compared lower-case):
what Slurm (``Unknown``, ``None``), kubectl (``<none>``) and spreadsheet or pandas exports write."""
OPTIONAL_FIELDS = ("model", "batch_size", "user", "gpu_type")
"""Fields whose missing value means "absent" (every other mapped field is required)."""


def parse_missing(missing: str | Iterable[str] | None) -> frozenset[str]:
    """The missing-value set (lower case, always with the empty value) from ``--missing`` (comma-separated
    values; ``""`` for only the empty field) or a list; :data:`MISSING_DEFAULT` when None."""
    if missing is None:
        items: Iterable[str] = MISSING_DEFAULT
    elif isinstance(missing, str):
        items = missing.split(",")
    else:
        items = missing
    out = set()
    for v in items:
        if not isinstance(v, str):
            raise InputError(f"missing: {v!r} is not a text value (--missing)", field="missing")
        out.add(v.strip().lower())
    return frozenset(out | {""})


@dataclass(frozen=True)
class GpusFrom:
    """``--gpus-from`` parsed: ``COLUMN:KEY`` reads ``KEY=N`` from a ``key=value,...`` list (a Slurm TRES string,
    ``AllocTRES:gres/gpu``); ``COLUMN~REGEX`` reads the regex's first group (or whole match) as the number."""
    column: str
    key: str | None
    regex: re.Pattern[str] | None

    @classmethod
    def parse(cls, text: str) -> GpusFrom:
        col, sep, rest = str(text).partition("~")
        if sep and col.strip() and rest:
            try:
                rx = re.compile(rest)
            except re.error as e:
                raise InputError(f"--gpus-from {text!r}: bad regular expression ({e})", field="gpus_from") from None
            if rx.groups > 1:
                raise InputError(f"--gpus-from {text!r}: use at most one group (the GPU count)", field="gpus_from")
            return cls(col.strip(), None, rx)
        col, sep, key = str(text).rpartition(":")
        if not (sep and col.strip() and key.strip()) or "~" in text:
            raise InputError(f"--gpus-from {text!r}: expected COLUMN:KEY (e.g. AllocTRES:gres/gpu) or COLUMN~REGEX",
                             field="gpus_from")
        return cls(col.strip(), key.strip(), None)

    def read(self, r: Row) -> float:
        """The GPU count in this row (0 when the key is absent from a key=value list)."""
        v = r.raw(self.column)
        if self.regex is not None:
            m = self.regex.search(v)
            if m is None:
                raise r.error(f"{short(v)} does not match --gpus-from {self.regex.pattern!r}", self.column)
            num = m[1] if self.regex.groups else m[0]
        else:
            found = [val for k, _, val in (p.partition("=") for p in v.split(",") if p.strip())
                     if k.strip() == self.key]
            if len(found) > 1:
                raise r.error(f"{self.key} appears {len(found)} times in {short(v)}", self.column)
            if not found:
                return 0.0
            num = found[0].strip()
        try:
            x = float(num)
        except (TypeError, ValueError):
            raise r.error(f"--gpus-from: {short(str(num))} is not a number", self.column) from None
        if not (math.isfinite(x) and x >= 0):
            raise r.error(f"--gpus-from: {short(str(num))} is not a finite number >= 0", self.column)
        return x

    def describe(self) -> str:
        return f"{self.key} in {self.column}" if self.key else f"{self.column} ~ {self.regex.pattern}"  # type: ignore[union-attr]


def resolve_columns(header: list[str], columns: Mapping[str, str] | None) -> dict[str, str]:
    """Logical field → column name: explicit ``columns`` first (an empty name unmaps the field), then the
    first matching synonym (case-insensitive) among the columns not taken yet."""
    columns = dict(columns or {})
    unknown = sorted(set(columns) - set(FIELDS))
    if unknown:
        raise InputError(f"unknown field(s) {', '.join(unknown)} in --column FIELD=NAME; fields: "
                         f"{', '.join(FIELDS)}", field="columns")
    lower = {h.lower(): h for h in reversed(header)}
    out = {f: str(c) for f, c in columns.items() if str(c)}
    taken = set(out.values())
    for f in FIELDS:
        if f in columns:
            continue
        for s in SYNONYMS[f]:
            if s in lower and lower[s] not in taken:
                out[f] = lower[s]
                taken.add(lower[s])
                break
    return {f: out[f] for f in FIELDS if f in out}


def required(r: Row, name: str, missing: frozenset[str]) -> str:
    """The value of a required column, or a located error when it is missing (empty or a ``--missing`` value)."""
    v = r.raw(name)
    if v.lower() in missing:
        raise r.error(("empty value" if not v else f"missing value {short(v)}") + " in a required field "
                      "(--skip-invalid skips such rows)", name)
    return v


def _flag_hint(field: str) -> str:
    return f"map one with --column {field}=NAME (columns={{'{field}': NAME}} in Python)"


def check_mapping(p: Path, header: list[str], col: dict[str, str]) -> None:
    """Every mapped column exists; the required fields are there. Errors name the --column flag."""
    names = set(header)
    for f, c in col.items():
        if c not in names:
            raise InputError(f"--column {f}={c}: the header has no column {c!r}; columns: {', '.join(header)}",
                             path=str(p), line=1, field=f)
    if "num_gpus" not in col and "gpu_milli" not in col:
        raise InputError(f"no GPU-count column among {', '.join(header)}; {_flag_hint('num_gpus')}",
                         path=str(p), line=1, field="num_gpus")
    if not {"iterations", "duration", "end"} & set(col):
        raise InputError(f"no duration, end or iterations column among {', '.join(header)}; "
                         f"{_flag_hint('duration')} (or end=NAME, iterations=NAME)", path=str(p), line=1,
                         field="duration")
    if "end" in col and not {"iterations", "duration"} & set(col) and not {"start", "arrival"} & set(col):
        raise InputError("an end column needs a start or arrival column to measure the run time from; "
                         + _flag_hint("start"), path=str(p), line=1, field="end")


@dataclass(slots=True)
class _Parsed:
    """One row read, held until every arrival is known (the line, not the row's fields: memory per row)."""
    line: int
    job_id: str
    arrival: TimeValue | None
    kw: dict[str, object]


class _TimeColumn:
    """One time column: remembers whether its values are relative or absolute, and their time zone state."""

    def __init__(self, name: str, missing: frozenset[str]) -> None:
        self.name = name
        self.missing = missing
        self.first: tuple[int, TimeValue] | None = None

    def parse(self, r: Row) -> TimeValue:
        v = required(r, self.name, self.missing)
        try:
            tv = parse_time(v)
        except ValueError as e:
            raise r.error(f"{short(v)}: {e}", self.name) from None
        if tv.kind == "number" and not math.isfinite(tv.seconds):
            raise r.error(f"not a finite number: {short(v)}", self.name)
        if tv.seconds < 0:
            raise r.error(f"must be >= 0, got {short(v)}", self.name)
        if self.first is None:
            self.first = (r.line, tv)
            return tv
        line, first = self.first
        if tv.cls != first.cls:
            raise r.error(f"{short(v)} is {'an absolute timestamp' if tv.cls == ABSOLUTE else 'a relative value'}"
                          f" but line {line} of this column holds "
                          f"{'an absolute timestamp' if first.cls == ABSOLUTE else 'a relative value'}", self.name)
        if tv.when is not None and first.when is not None and (tv.when.tzinfo is None) != (first.when.tzinfo is None):
            raise r.error(f"{short(v)}: timestamps with and without a time zone are mixed (line {line})", self.name)
        return tv


@dataclass
class _Plan:
    """What the header says: the column of each field, and which fields give the run time and its start."""
    col: dict[str, str]
    header: Header
    length: str
    start: str


def _plan(p: Path, b: Builder, fields: list[str], columns: Mapping[str, str] | None, time_unit: str,
          duration_unit: str | None) -> _Plan:
    """Resolve and check the column mapping of header ``fields``; records the mapping and notes on ``b``."""
    col = resolve_columns(fields, columns)
    header = Header(p, fields, [])
    check_mapping(p, fields, col)
    length = "iterations" if "iterations" in col else "duration" if "duration" in col else "end"
    unused = {"iterations": ("duration", "start", "end"), "duration": ("start", "end"), "end": ()}[length]
    dropped = [col.pop(f) for f in unused if f in col]
    if dropped:
        b.notes.append(f"{length} column {col[length]!r} used; not used for the run time: {', '.join(dropped)}")
    start = "start" if "start" in col else "arrival"
    b.mapping = dict(col)
    if length == "end":
        b.mapping["duration"] = f"{col['end']} - {col[start]}"
    b.notes.append("columns: " + ", ".join(f"{k}={v}" for k, v in col.items())
                   + f"; time unit {time_unit}" + (f", duration unit {duration_unit}" if duration_unit else ""))
    if "arrival" not in col:
        b.notes.append("no arrival column: every job arrives at 0")
    if length == "end":
        b.notes.append(f"duration = {col['end']} - {col[start]}"
                       + (" (start column)" if start == "start" else
                          " (the submission time: the run time includes the job's queueing in the original "
                          "cluster; map --column start=NAME to measure from the start)"))
    return _Plan(col, header, length, start)


def load_generic_csv(path: str | Path, *, skip_invalid: bool = False, seed: int = 0,
                     columns: Mapping[str, str] | None = None, time_unit: str = "s",
                     duration_unit: str | None = None, delimiter: str = ",",
                     model_mix: Mapping[str, float] | None = None, gpu_unit: str = "gpus",
                     fractional_gpus: str = "ceil", gpu_types: Collection[str] | None = None,
                     unknown_models: str = "error", catalog: ModelCatalog | None = None,
                     gpus_from: str | None = None, missing: str | Iterable[str] | None = None) -> Trace:
    """Load a CSV described by ``columns`` (see the module docstring for every rule). ``gpus_from``
    (``--gpus-from``, :class:`GpusFrom`) reads the GPU count out of a column's text; ``missing``
    (``--missing``, :func:`parse_missing`) lists the values that mean "no value"."""
    p = check_file(path)
    miss = parse_missing(missing)
    expr = GpusFrom.parse(gpus_from) if gpus_from is not None else None
    if expr is not None:
        if columns and str(columns.get("num_gpus", expr.column) or expr.column) != expr.column:
            raise InputError("--gpus-from and --column num_gpus=... name different columns; give one",
                             field="gpus_from")
        columns = {**(columns or {}), "num_gpus": expr.column}
    t_factor = unit_factor(time_unit)
    d_factor = unit_factor(duration_unit, field="duration_unit") if duration_unit else t_factor
    d_unit = duration_unit or time_unit
    if gpu_unit not in GPU_UNITS:
        raise InputError(f"unknown GPU unit {gpu_unit!r}; use one of {', '.join(GPU_UNITS)} (--gpu-unit)",
                         field="gpu_unit")
    check_fractional_rule(fractional_gpus)
    def builder() -> Builder:
        return Builder(p, "generic_csv", skip_invalid=skip_invalid, seed=seed, model_mix=model_mix,
                       unknown_models=unknown_models, catalog=catalog)

    read = columnar.read_columns(p, delimiter=delimiter) if expr is None else None
    if read is not None:
        b = builder()
        try:
            plan = _plan(p, b, read[0], columns, time_unit, duration_unit)
        except InputError:  # the row parser names it
            plan = None
        fast = None if plan is None else _load_fast(p, b, plan, read[1], t_factor=t_factor, d_factor=d_factor,
                                                    gpu_unit=gpu_unit, fractional_gpus=fractional_gpus,
                                                    gpu_types=gpu_types, missing=miss)
        if fast is not None:
            return fast
    b = builder()
    rows = read_rows(p, delimiter=delimiter)
    first = next(rows, None)
    if first is None:
        raise InputError("empty file", path=str(p), line=1)
    plan = _plan(p, b, first[1], columns, time_unit, duration_unit)
    col, header, length, start = plan.col, plan.header, plan.length, plan.start
    if expr is not None:
        b.mapping["num_gpus"] = expr.describe()
        b.notes.append(f"num_gpus read with --gpus-from: {expr.describe()}")

    def optional(r: Row, f: str) -> str | None:
        """The value of optional field ``f`` in this row; None when unmapped or missing."""
        assert f in OPTIONAL_FIELDS, f
        if f not in col:
            return None
        v = r.raw(col[f])
        return None if v.lower() in miss else v

    def point_s(r: Row, f: str, tv: TimeValue) -> float:
        """A relative time point in seconds (numbers in time_unit, clock values in seconds)."""
        if tv.kind == "number":
            return r.seconds(tv.seconds, col[f], factor=t_factor, unit=time_unit, limit=MAX_ARRIVAL_S, what=f,
                             positive=False)
        return r.seconds(tv.seconds, col[f], factor=1.0, unit="s", limit=MAX_ARRIVAL_S, what=f, positive=False)

    def parse_rows(bb: Builder, rows: Iterator[tuple[int, list[str]]], keep: bool) -> list[_Parsed]:
        """Every data row parsed (a row error raised or counted on ``bb``); kept only when ``keep``."""
        tcols: dict[str, _TimeColumn] = {f: _TimeColumn(col[f], miss) for f in ("arrival", "start", "end") if f in col}
        dcol = _TimeColumn(col["duration"], miss) if length == "duration" else None
        out: list[_Parsed] = []
        for line, fields in rows:
            try:
                r = Row(p, line, fields, header)
                job_id = required(r, col["job_id"], miss) if "job_id" in col else f"{p.stem}-{line - 2}"
                kw: dict[str, object] = {}
                # GPUs
                if expr is not None:
                    required(r, expr.column, miss)
                    req = expr.read(r) / GPU_UNITS[gpu_unit]
                    gpu_label = col["num_gpus"]
                elif "num_gpus" in col:
                    required(r, col["num_gpus"], miss)
                    req = r.number(col["num_gpus"], min_value=0) / GPU_UNITS[gpu_unit]
                    gpu_label = col["num_gpus"]
                else:
                    req = 1.0
                    gpu_label = col["gpu_milli"]
                if "gpu_milli" in col:
                    required(r, col["gpu_milli"], miss)
                    req = req * r.number(col["gpu_milli"], min_value=0) / 1000.0
                    gpu_label = col["gpu_milli"]
                if not req > 0:
                    raise r.error("the job requests no GPU (0)", gpu_label)
                if req > MAX_GPUS:
                    raise r.error(f"{req:g} GPUs is beyond the limit of {MAX_GPUS:,}", gpu_label)
                if math.ceil(req) != req and fractional_gpus == "error":
                    raise r.error(f"fractional GPU request {req:g} (pass --fractional-gpus ceil to round it up)",
                                  gpu_label)
                kw.update(fractional_fields(req, fractional_gpus))
                # length
                arrival = tcols["arrival"].parse(r) if "arrival" in tcols else None
                if length == "iterations":
                    required(r, col["iterations"], miss)
                    kw["iterations"] = r.iterations(col["iterations"])
                elif length == "duration":
                    assert dcol is not None
                    tv = dcol.parse(r)
                    if tv.cls == ABSOLUTE:
                        raise r.error(f"{short(r.raw(col['duration']))} is a timestamp, not a duration; map it with "
                                      f"--column end={col['duration']} instead", col["duration"])
                    factor, unit = (d_factor, d_unit) if tv.kind == "number" else (1.0, "s")
                    kw["duration_s"] = r.seconds(tv.seconds, col["duration"], factor=factor, unit=unit,
                                                 limit=MAX_DURATION_S, what="duration")
                else:
                    end = tcols["end"].parse(r)
                    begin = tcols[start].parse(r) if start != "arrival" else arrival
                    assert begin is not None
                    if end.cls != begin.cls:
                        raise r.error(f"{col['end']} and {col[start]} hold different kinds of time (a timestamp and a "
                                      "relative value)", col["end"])
                    if end.when is not None and begin.when is not None:
                        if (end.when.tzinfo is None) != (begin.when.tzinfo is None):
                            raise r.error(f"{col['end']} and {col[start]}: timestamps with and without a time zone",
                                          col["end"])
                        d = (end.when - begin.when).total_seconds()
                    else:
                        d = point_s(r, "end", end) - point_s(r, start, begin)
                    if not d > 0:
                        raise r.error(f"end {short(r.raw(col['end']))} is not after {start} "
                                      f"{short(r.raw(col[start]))} (run time {d:g} s)", col["end"])
                    if d > MAX_DURATION_S:
                        raise r.error(f"run time {d:g} s is beyond the limit of {MAX_DURATION_S:g} s", col["end"])
                    kw["duration_s"] = d
                if arrival is not None and arrival.cls != ABSOLUTE:
                    arrival = TimeValue(arrival.kind, point_s(r, "arrival", arrival))
                if optional(r, "batch_size") is not None:
                    kw["batch_size"] = r.batch_size(col["batch_size"])
                if "user" in col:
                    kw["user"] = optional(r, "user")
                gtype = optional(r, "gpu_type")
                if gtype is not None:
                    kw["gpu_type"] = check_gpu_type(r, gtype, col["gpu_type"], gpu_types)
                kw["model"] = bb.model(optional(r, "model"), job_id, r, col.get("model"))
                if keep:
                    out.append(_Parsed(line, job_id, arrival, kw))
            except InputError as e:
                bb.reject(e)
        return out

    if not skip_invalid and p.stat().st_size > limits.CHECK_FIRST_BYTES:
        # a first pass that keeps nothing: a bad row late in a huge file fails in bounded memory
        pass_rows = read_rows(p, delimiter=delimiter)
        next(pass_rows, None)
        parse_rows(builder(), pass_rows, keep=False)
    parsed = parse_rows(b, rows, keep=True)
    epoch: datetime | None = None
    stamps = [x.arrival.when for x in parsed if x.arrival is not None and x.arrival.when is not None]
    if stamps:
        epoch = min(stamps)
        b.notes.append(f"arrival_s = seconds since the earliest {col['arrival']} ({epoch.isoformat()}"
                       + (", wall clock)" if epoch.tzinfo is None else ")"))
    del stamps
    parsed.reverse()
    while parsed:  # each row's record is freed once its job is built (peak memory)
        x = parsed.pop()
        row = Row(p, x.line, [])
        try:
            if x.arrival is None:
                arrival_s = 0.0
            elif x.arrival.when is not None:
                assert epoch is not None
                arrival_s = row.seconds((x.arrival.when - epoch).total_seconds(), col["arrival"], factor=1.0,
                                        unit="s", limit=MAX_ARRIVAL_S, what="arrival", positive=False)
            else:
                arrival_s = x.arrival.seconds
            b.add(row, job_id=x.job_id, arrival_s=arrival_s, **x.kw)
        except InputError as e:
            b.reject(e)
    return _finish(b, length, col, epoch)


def _finish(b: Builder, length: str, col: dict[str, str], epoch: Any) -> Trace:
    """The notes both loading paths add (fractional GPUs rounded up or kept as shares, absolute durations), then
    the trace."""
    b.notes.extend(fractional_notes(b.jobs))
    if length == "duration":
        _warn_absolute_durations(b, col["duration"])
    return b.finish(epoch=epoch)


def _warn_absolute_durations(b: Builder, name: str) -> None:
    """A ``warning:`` note when a duration column looks like absolute times (e.g. ``duration=deletion_time``):
    at least 10 jobs, every value >= its job's arrival, and values that rise with the arrivals (Pearson
    correlation >= 0.9). Real run times do not follow the submission clock."""
    pairs = [(j.arrival_s, j.duration_s) for j in b.jobs if j.duration_s is not None]
    if len(pairs) < 10 or any(d < a for a, d in pairs):
        return
    try:
        r = statistics.correlation([a for a, _ in pairs], [d for _, d in pairs])
    except statistics.StatisticsError:  # constant arrivals or durations
        return
    if r >= 0.9:
        b.notes.append(f"warning: duration column {name!r} rises with the arrival times (correlation {r:.2f}) and "
                       "is never below them: it looks like absolute end times, not run times; if so, map it "
                       f"with --column end={name}")


def _finite(arr: Any) -> np.ndarray | None:
    """Plain finite numbers of a column (:func:`~ddlsched.workload.loaders.columnar.plain_numbers`), or None."""
    x = columnar.plain_numbers(arr)
    return x if x is not None and bool(np.all(np.isfinite(x))) else None


def _load_fast(p: Path, b: Builder, plan: _Plan, cols: list[Any], *, t_factor: float, d_factor: float,
               gpu_unit: str, fractional_gpus: str, gpu_types: Collection[str] | None,
               missing: frozenset[str]) -> Trace | None:
    """The trace read column-wise when every mapped value is in the plain form the fast path handles (time
    values: plain numbers; no timestamps or clock durations) and every row passes every check the row loop
    makes; None otherwise, and the row loop reads the file. Same jobs, notes and order as the row loop."""
    col, length, start = plan.col, plan.length, plan.start

    def arr(f: str) -> Any:
        return cols[plan.header.index[col[f]]]

    def texts(f: str) -> list[str]:
        """An optional text column's values, a missing value as ``""``."""
        return [v if v.lower() not in missing else "" for v in arr(f).to_pylist()]

    def count(f: str, *, nonneg: bool = True) -> np.ndarray | None:
        x = _finite(arr(f))
        return None if x is None or (nonneg and not np.all(x >= 0)) else x

    def point(x: np.ndarray) -> np.ndarray | None:
        s = x * t_factor
        return s if np.all(s <= MAX_ARRIVAL_S) else None

    n = len(cols[0])
    if "job_id" in col:
        ids: list[str] = arr("job_id").to_pylist()
        if not all(ids) or any(v.lower() in missing for v in set(ids)):
            return None
    else:
        ids = [f"{p.stem}-{i}" for i in range(n)]
    if len(set(ids)) != n:
        return None
    # GPUs
    req = np.ones(n)
    if "num_gpus" in col:
        x = count("num_gpus")
        if x is None:
            return None
        req = x / GPU_UNITS[gpu_unit]
    if "gpu_milli" in col:
        m = count("gpu_milli")
        if m is None:
            return None
        req = req * m / 1000.0
    if not (np.all(req > 0) and np.all(req <= MAX_GPUS)):
        return None
    whole = np.ceil(req)
    frac = whole != req
    if fractional_gpus == "error" and frac.any():
        return None
    # times (relative numbers only)
    arrival = np.zeros(n)
    if "arrival" in col:
        xa = count("arrival")
        a = None if xa is None else point(xa)
        if a is None:
            return None
        arrival = a
    if length == "iterations":
        it = _finite(arr("iterations"))
        if it is None or not (np.all(it > 0) and np.all(it <= MAX_ITERATIONS)):
            return None
        run = it
    elif length == "duration":
        xd = count("duration")
        if xd is None:
            return None
        run = xd * d_factor
        if not (np.all(run <= MAX_DURATION_S) and np.all(run > 0)):
            return None
    else:
        xe, xb = count("end"), count(start)
        e = None if xe is None else point(xe)
        s = None if xb is None else point(xb)
        if e is None or s is None:
            return None
        run = e - s
        if not (np.all(run > 0) and np.all(run <= MAX_DURATION_S)):
            return None
    batch: list[int] | None = None
    if "batch_size" in col:
        bs = _finite(arr("batch_size"))
        if bs is None or not (np.all(bs > 0) and np.all(bs <= MAX_BATCH_SIZE) and np.all(bs == np.floor(bs))):
            return None
        batch = bs.astype(np.int64).tolist()
    users = [u or None for u in texts("user")] if "user" in col else None
    types: list[str | None] | None = None
    if "gpu_type" in col:
        raw = texts("gpu_type")
        spelled: dict[str, str] = {}
        try:
            for v in set(raw) - {""}:
                spelled[v] = check_gpu_type(Row(p, 0, []), v, col["gpu_type"], gpu_types)
        except InputError:
            return None
        types = [spelled[v] if v else None for v in raw]
    models = _models(b, ids, texts("model") if "model" in col else None)
    if models is None:
        return None
    kw: dict[str, list[Any]] = {"job_id": ids, "arrival_s": arrival.tolist(),
                                "num_gpus": whole.astype(np.int64).tolist(),
                                "iterations" if length == "iterations" else "duration_s": run.tolist(),
                                "model": models}
    if frac.any():
        kw["gpu_request"] = [r if f else None for r, f in zip(req.tolist(), frac.tolist(), strict=True)]
        if fractional_gpus == "keep":
            share = frac & (req < 1)
            kw["num_gpus"] = np.where(share, 1, whole).astype(np.int64).tolist()
            kw["gpu_share"] = [r if f else None for r, f in zip(req.tolist(), share.tolist(), strict=True)]
    if batch is not None:
        kw["batch_size"] = batch
    if users is not None:
        kw["user"] = users
    if types is not None:
        kw["gpu_type"] = types
    try:
        b.jobs = JobSpec.bulk(n, source=[f"{p}:{i + 2}" for i in range(n)], **kw)
    except ValueError:
        return None
    b.ids = set(ids)
    return _finish(b, length, col, None)


def _models(b: Builder, ids: list[str], names: list[str] | None) -> list[str] | None:
    """The model of every job as :meth:`Builder.model` picks it (catalogue name, or seeded for an empty or, under
    ``unknown_models="map"``, unknown name); None when a name is unknown and unknown names are errors."""
    if names is None:
        names = [""] * len(ids)
    canon: dict[str, str | None] = {}
    for v in set(names) - {""}:
        c = resolve_model(v, b.catalog)
        if c is None and b.unknown_rule != "map":
            return None
        canon[v] = c
    out: list[str | None] = [canon[v] if v else None for v in names]
    todo = [i for i, m in enumerate(out) if m is None]
    for i in todo:
        if names[i]:
            b.mapped_unknown[names[i]] = b.mapped_unknown.get(names[i], 0) + 1
        else:
            b.assigned_models += 1
    for i, m in zip(todo, assign_models([ids[i] for i in todo], seed=b.seed, mix=b.model_mix), strict=True):
        out[i] = m
    return out  # type: ignore[return-value]
