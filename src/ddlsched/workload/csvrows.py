"""Bounded, located CSV reading: lines, rows, a header, and typed accessors for one row.

Every error is an :class:`~ddlsched.errors.InputError` naming the file and line (and the field for a value).
*Structure* errors — bad encoding, an over-long line or field, an unbalanced quote, a duplicate header column —
come from :func:`read_rows` and :class:`Header`; *row* errors — a wrong number of fields, a value that is not a
number or out of range — come from :class:`Row`.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from pathlib import Path

from ddlsched.errors import InputError
from ddlsched.workload.limits import (
    MAX_ARRIVAL_S,
    MAX_BATCH_SIZE,
    MAX_DURATION_S,
    MAX_FIELD_CHARS,
    MAX_GPUS,
    MAX_ITERATIONS,
    MAX_LINE_BYTES,
)


def _decode(raw: bytes, path: Path, line: int) -> str:
    if line == 1 and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        hint = ""
        if line == 1 and raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
            hint = " (the file looks like UTF-16; save it as UTF-8)"
        bad = raw[e.start:e.start + 4]
        raise InputError(f"not valid UTF-8: byte(s) {bad!r} at column {e.start + 1}{hint}", path=str(path),
                         line=line) from None


def iter_lines(path: Path, *, max_bytes: int = MAX_LINE_BYTES) -> Iterator[str]:
    """Decoded lines of ``path`` (UTF-8, a leading BOM dropped), each at most ``max_bytes`` long: a longer line
    is refused after reading ``max_bytes`` of it, so memory stays bounded whatever the file holds."""
    with path.open("rb") as f:
        line = 0
        while True:
            raw = f.readline(max_bytes + 1)
            if not raw:
                return
            line += 1
            if len(raw) > max_bytes and not raw.endswith(b"\n"):
                raise InputError(f"line is longer than {max_bytes:,} bytes (the limit for a trace line)",
                                 path=str(path), line=line)
            yield _decode(raw, path, line)


def csv_error_message(e: csv.Error) -> str:
    """A plain-words reason for a ``csv.Error`` (the caller adds file and line)."""
    msg = str(e)
    if "unexpected end of data" in msg:
        return "a quote opened in this row is never closed (unbalanced quote)"
    if "field larger than field limit" in msg:
        return (f"a field is longer than {csv.field_size_limit():,} characters (the CSV field limit), or a quote "
                "opened in this row is never closed")
    if "new-line character seen in unquoted field" in msg:
        return "bare carriage return (CR) inside a line; save the file with LF or CRLF line ends"
    return f"malformed CSV: {msg}"


def read_rows(path: Path, *, delimiter: str = ",") -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line_number, fields)`` for every line that is not blank (whitespace only), line 1 being the
    first line of the file; fields are stripped of surrounding blanks. A line of empty fields (``,,``) is a row.
    A quoted field may not span lines: a quote left open is reported at the line where its row starts, never
    allowed to swallow the rows after it."""
    last = [""]

    def lines() -> Iterator[str]:
        for text in iter_lines(path):
            last[0] = text
            yield text

    reader = csv.reader(lines(), delimiter=delimiter, strict=True)
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise InputError(csv_error_message(e), path=str(path), line=start) from None
        end = reader.line_num
        text = last[0]
        if end > start:
            raise InputError(f"a quoted field spans lines {start}-{end}: a trace field may not contain a line "
                             "break (unbalanced quote?)", path=str(path), line=start)
        if "\r" in text.rstrip("\r\n"):  # csv accepted it, so it is inside quotes
            raise InputError("a quoted field holds a carriage return: a trace field may not contain a line break",
                             path=str(path), line=start)
        if len(text) > MAX_FIELD_CHARS and any(len(c) > MAX_FIELD_CHARS for c in row):
            raise InputError(f"a field is longer than {MAX_FIELD_CHARS:,} characters (the limit for a trace "
                             "field)", path=str(path), line=start)
        if text.strip():
            yield start, [c.strip() for c in row]


class Header:
    """Column name → index for one CSV header line (exact names; lower-case names when unambiguous)."""

    def __init__(self, path: Path, fields: list[str], required: list[str]) -> None:
        self.path = path
        self.names = fields
        self.index: dict[str, int] = {}
        for i, name in enumerate(fields):
            if name and name in self.index:
                raise InputError(f"column {name!r} appears twice in the header (columns {self.index[name] + 1} "
                                 f"and {i + 1}); rename one", path=str(path), line=1, field=name)
            self.index[name] = i
        lower: dict[str, list[int]] = {}
        for i, name in enumerate(fields):
            lower.setdefault(name.lower(), []).append(i)
        for name, idx in lower.items():
            if len(idx) == 1 and name not in self.index:
                self.index[name] = idx[0]
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
               positive: bool = False, max_value: float | None = None) -> float:
        label = label or str(name)
        v = self.raw(name)
        if not v:
            raise self.error("empty value", label)
        try:
            x = float(v)
        except ValueError:
            raise self.error(f"not a number: {short(v)}", label) from None
        if not math.isfinite(x):
            raise self.error(f"not a finite number: {short(v)}", label)
        if positive and not x > 0:
            raise self.error(f"must be > 0, got {short(v)}", label)
        if min_value is not None and x < min_value:
            raise self.error(f"must be >= {min_value:g}, got {short(v)}", label)
        if max_value is not None and x > max_value:
            raise self.error(f"must be <= {max_value:g}, got {short(v)}", label)
        return x

    def integer(self, name: str | int, label: str | None = None, *, positive: bool = False,
                max_value: float | None = None) -> int:
        label = label or str(name)
        x = self.number(name, label, positive=positive, max_value=max_value)
        if x != int(x):
            raise self.error(f"not a whole number: {short(self.raw(name))}", label)
        return int(x)

    # ---- job quantities, bounded (docs/traces.md "Limits")
    def arrival(self, name: str | int, label: str | None = None, *, factor: float = 1.0, unit: str = "s") -> float:
        """Arrival in seconds: a finite number >= 0 times ``factor``, at most :data:`MAX_ARRIVAL_S`."""
        label = label or str(name)
        return self.seconds(self.number(name, label, min_value=0), label, factor=factor, unit=unit,
                            limit=MAX_ARRIVAL_S, what="arrival")

    def duration(self, name: str | int, label: str | None = None, *, factor: float = 1.0,
                 unit: str = "s") -> float:
        """Run time in seconds: a finite number > 0 times ``factor``, at most :data:`MAX_DURATION_S`."""
        label = label or str(name)
        return self.seconds(self.number(name, label, positive=True), label, factor=factor, unit=unit,
                            limit=MAX_DURATION_S, what="duration")

    def seconds(self, x: float, label: str, *, factor: float, unit: str, limit: float, what: str,
                positive: bool | None = None) -> float:
        """``x * factor`` checked against ``limit`` (and > 0 for durations) after the unit conversion."""
        s = x * factor
        conv = "" if factor == 1.0 else f" ({x:g} {unit})"
        if not s <= limit:
            raise self.error(f"{what} {s:g} s{conv} is beyond the limit of {limit:g} s", label)
        if (what == "duration" if positive is None else positive) and not s > 0:
            raise self.error(f"{what} {x:g} {unit} is 0 s after conversion to seconds", label)
        return s

    def iterations(self, name: str | int, label: str | None = None) -> float:
        return self.number(name, label, positive=True, max_value=MAX_ITERATIONS)

    def gpus(self, name: str | int, label: str | None = None) -> int:
        return self.integer(name, label, positive=True, max_value=MAX_GPUS)

    def batch_size(self, name: str | int, label: str | None = None) -> int:
        return self.integer(name, label, positive=True, max_value=MAX_BATCH_SIZE)


def short(v: str, n: int = 40) -> str:
    """``repr`` of ``v`` cut to ``n`` characters (huge fields stay readable in messages)."""
    return repr(v) if len(v) <= n else repr(v[:n]) + f"... ({len(v):,} characters)"


