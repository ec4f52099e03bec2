"""Shared row parsing and validation for the trace loaders."""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator, Mapping
from pathlib import Path

from ddlsched.errors import InputError
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.model_mapping import assign_model, canonical_model, describe_mix
from ddlsched.workload.trace import MAX_REASONS, Trace

TIME_UNITS: dict[str, float] = {"ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}
"""Seconds per unit for every ``time_unit`` option."""


def unit_factor(unit: str, *, field: str = "time_unit") -> float:
    try:
        return TIME_UNITS[unit]
    except KeyError:
        raise InputError(f"unknown time unit {unit!r}; use one of {', '.join(TIME_UNITS)}", field=field) from None


def check_file(path: str | Path) -> Path:
    """Return ``path`` as a Path, or raise a clear InputError when it is missing or not a file."""
    p = Path(path)
    if not p.exists():
        raise InputError("trace file not found", path=str(p))
    if not p.is_file():
        raise InputError("trace path is not a regular file", path=str(p))
    return p


def read_rows(path: Path, *, delimiter: str = ",") -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line_number, fields)`` for every non-blank row (line 1 = first line of the file)."""
    try:
        with path.open(newline="", encoding="utf-8-sig") as f:
            reader = csv.reader(f, delimiter=delimiter)
            line = 1
            for row in reader:
                if row and any(c.strip() for c in row):
                    yield line, [c.strip() for c in row]
                line = reader.line_num + 1
    except UnicodeDecodeError as e:
        raise InputError(f"not a UTF-8 text file ({e.reason})", path=str(path)) from None
    except csv.Error as e:
        raise InputError(f"malformed CSV: {e}", path=str(path)) from None


class Header:
    """Column name → index for one CSV header line."""

    def __init__(self, path: Path, fields: list[str], required: list[str]) -> None:
        self.path = path
        self.names = fields
        self.index = {name: i for i, name in enumerate(fields)}
        missing = [c for c in required if c not in self.index]
        if missing:
            raise InputError(f"header lacks column(s) {', '.join(missing)}; header is {','.join(fields)}",
                             path=str(path), line=1)

    def __contains__(self, name: str) -> bool:
        return name in self.index


class Row:
    """One data row with typed accessors that raise InputError naming file, line and field."""

    def __init__(self, path: Path, line: int, fields: list[str], header: Header | None = None,
                 expected: int | None = None) -> None:
        self.path = path
        self.line = line
        self.fields = fields
        self.header = header
        n = expected if expected is not None else (len(header.names) if header else None)
        if n is not None and len(fields) != n:
            raise self.error(f"expected {n} fields, got {len(fields)}")

    @property
    def source(self) -> str:
        return f"{self.path}:{self.line}"

    def error(self, message: str, field: str | None = None) -> InputError:
        return InputError(message, path=str(self.path), line=self.line, field=field)

    def raw(self, name: str | int) -> str:
        if isinstance(name, int):
            return self.fields[name]
        assert self.header is not None
        return self.fields[self.header.index[name]]

    def text(self, name: str | int, label: str | None = None) -> str:
        v = self.raw(name)
        if not v:
            raise self.error("empty value", label or str(name))
        return v

    def number(self, name: str | int, label: str | None = None, *, min_value: float | None = None,
               positive: bool = False) -> float:
        label = label or str(name)
        v = self.raw(name)
        try:
            x = float(v)
        except ValueError:
            raise self.error(f"not a number: {v!r}", label) from None
        if not math.isfinite(x):
            raise self.error(f"not a finite number: {v!r}", label)
        if positive and not x > 0:
            raise self.error(f"must be > 0, got {v}", label)
        if min_value is not None and x < min_value:
            raise self.error(f"must be >= {min_value:g}, got {v}", label)
        return x

    def integer(self, name: str | int, label: str | None = None, *, positive: bool = False) -> int:
        label = label or str(name)
        x = self.number(name, label, positive=positive)
        if x != int(x):
            raise self.error(f"not a whole number: {self.raw(name)!r}", label)
        return int(x)


class Builder:
    """Collects jobs, enforces unique ids, and applies ``skip_invalid``."""

    def __init__(self, path: Path, fmt: str, *, skip_invalid: bool, seed: int = 0,
                 model_mix: Mapping[str, float] | None = None) -> None:
        self.path = path
        self.fmt = fmt
        self.skip_invalid = skip_invalid
        self.seed = seed
        self.model_mix = model_mix
        self.jobs: list[JobSpec] = []
        self.ids: set[str] = set()
        self.skipped = 0
        self.reasons: list[str] = []
        self.notes: list[str] = []
        self.assigned_models = 0
        self.unknown_models: dict[str, int] = {}

    def reject(self, err: InputError) -> None:
        """Raise ``err``, or count it when skipping invalid rows."""
        if not self.skip_invalid:
            raise err
        self.skipped += 1
        if len(self.reasons) < MAX_REASONS:
            self.reasons.append(str(err))

    def model(self, name: str | None, job_id: str) -> str:
        """Catalogue name for a trace model name, or a seeded pick from the mix when the trace has none."""
        if name is None or not name.strip():
            self.assigned_models += 1
            return assign_model(job_id, seed=self.seed, mix=self.model_mix)
        canon = canonical_model(name)
        if canon is None:
            self.unknown_models[name] = self.unknown_models.get(name, 0) + 1
            return name
        return canon

    def add(self, row: Row, **kw: object) -> None:
        job_id = str(kw["job_id"])
        if job_id in self.ids:
            raise row.error(f"duplicate job id {job_id!r}", "job_id")
        try:
            job = JobSpec(source=row.source, **kw)  # type: ignore[arg-type]
        except ValueError as e:
            raise row.error(str(e)) from None
        self.ids.add(job_id)
        self.jobs.append(job)

    def finish(self) -> Trace:
        notes = list(self.notes)
        if self.assigned_models:
            notes.append(f"{self.assigned_models} jobs had no model in the trace; models assigned by "
                         f"hash(seed={self.seed}, job_id) from the mix: {describe_mix(self.model_mix)}")
        if self.unknown_models:
            names = ", ".join(f"{k} ({v})" for k, v in sorted(self.unknown_models.items()))
            notes.append(f"model names kept as given, not in the alias table: {names}")
        if self.skipped:
            notes.append(f"{self.skipped} invalid rows skipped (skip_invalid=True)")
        return Trace(jobs=self.jobs, path=str(self.path), format=self.fmt, skipped=self.skipped,
                     skipped_reasons=self.reasons, notes=notes)

