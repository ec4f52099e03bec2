"""Columnar fast path for plain CSV traces: pyarrow's CSV reader plus vectorised (numpy) checks.

The fast path is optional and never changes a result. :func:`read_columns` returns ``None`` — and the loader
runs its row parser (:mod:`ddlsched.workload.csvrows`) instead — when pyarrow is not installed, when
``DDLSCHED_FAST_CSV=off``, when the file is smaller than :data:`MIN_BYTES`, or when the file is not *plain*:
plain means ASCII with no quote, no control character other than the line feed (LF or CRLF line ends) and the
delimiter, no empty line (but at the end), lines within the row parser's limits, at least two columns, and the
same number of fields on every line. Data row ``i`` (from 0) of a plain file is then line ``i + 2``, exactly as
the row parser counts. The helpers below (:func:`plain_numbers`, :func:`timestamps`) return ``None`` when any
value is not in the one form they accept; the loaders then run the row parser too, so every error names the
file, line and field exactly as before (``docs/traces.md`` "Fast loading").
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import numpy as np

from ddlsched.errors import ConfigError
from ddlsched.workload.limits import MAX_FIELD_CHARS, MAX_LINE_BYTES

ENV = "DDLSCHED_FAST_CSV"
"""Environment variable: ``off`` (or ``0``, ``no``, ``false``) turns the fast path off; ``always`` uses it for
files of any size (for tests and fuzzing)."""

MIN_BYTES = 1 << 16
"""Smaller files go to the row parser (importing pyarrow costs more than it saves on them)."""

MAX_BYTES = 256 << 20
"""Larger files go to the row parser, which reads line by line: the columnar path holds the whole file, its
columns and their numeric copies in memory (measured: a 145 MiB Slurm export peaks at about 720 MiB), so above this
size a malformed file could no longer fail within bounded memory (``benchmarks/malformed_memory.py``)."""


_MODES = {"": "auto", "auto": "auto", "on": "auto", "1": "auto", "yes": "auto", "true": "auto",
          "off": "off", "0": "off", "no": "off", "false": "off", "always": "always"}


def _mode() -> str:
    """``auto``, ``off`` or ``always`` from the environment variable; any other value is an error (a typo must not
    silently leave the fast path on)."""
    raw = os.environ.get(ENV, "")
    mode = _MODES.get(raw.strip().lower())
    if mode is None:
        raise ConfigError(f"environment variable {ENV}={raw!r}: expected off, on or always")
    return mode

_NUMBER = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"
"""Decimal numbers that Python's ``float`` reads to the same (correctly rounded) value as Arrow's cast."""

_TIMESTAMP = r"^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}$"


def enabled() -> bool:
    """Whether the fast path may run (the environment variable is not ``off``)."""
    return _mode() != "off"


def _arrow() -> Any:
    """The pyarrow modules (csv, compute), or None when pyarrow is not installed."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.csv as pcsv
    except ImportError:
        return None
    return pa, pc, pcsv


def _plain(buf: np.ndarray, delimiter: int) -> bool:
    """ASCII; no quote; no control byte but LF, CR before LF, and the delimiter; no empty or over-long line.
    ``buf`` ends with LF."""
    if buf.size == 0 or buf[-1] != 10 or buf.max() >= 128:
        return False
    ctrl = buf < 32
    if ctrl.any():
        cr = np.flatnonzero(buf == 13)
        if cr.size and not np.all(buf[cr + 1] == 10):  # a bare CR (buf ends with LF: cr + 1 is inside)
            return False
        if np.any(ctrl & (buf != 10) & (buf != 13) & (buf != delimiter)):
            return False
    if (buf == ord('"')).any():
        return False
    ends = np.flatnonzero(buf == 10)
    starts = np.concatenate(([0], ends[:-1] + 1))
    content = ends - starts - (buf[np.maximum(ends - 1, 0)] == 13)
    if (content <= 0).any():  # an empty line
        return False
    return bool((ends - starts).max() < min(MAX_LINE_BYTES, MAX_FIELD_CHARS))


def _plain_file(path: Path, delimiter: int, block: int = 8 << 20) -> bool:
    """:func:`_plain` of the file's bytes with its trailing empty lines dropped, read in blocks cut at line ends
    (memory: a few blocks, whatever the file's size), so a file that is not plain is never read whole."""
    try:
        with path.open("rb") as f:
            rest = b""
            newlines = 0  # LFs held back from the end of what was checked (more than one = an empty line)
            while True:
                chunk = f.read(block)
                if not chunk:
                    break
                buf = rest + chunk
                cut = buf.rfind(b"\n") + 1
                rest = buf[cut:]
                if len(rest) >= MAX_LINE_BYTES:
                    return False
                body = buf[:cut].rstrip(b"\n")
                if not body:
                    newlines += cut
                    continue
                if newlines > 1 or not _plain(np.frombuffer(body + b"\n", dtype=np.uint8), delimiter):
                    return False
                newlines = cut - len(body)
            if rest:
                return newlines <= 1 and _plain(np.frombuffer(rest + b"\n", dtype=np.uint8), delimiter)
        return True
    except OSError:
        return False


def read_columns(path: Path, *, delimiter: str = ",", keep: Callable[[list[str]], Collection[int]] | None = None
                 ) -> tuple[list[str], list[Any]] | None:
    """The header fields (stripped) and one pyarrow string array per column (values stripped of blanks) of a
    plain CSV file with at least one data row, or None when the row parser must read it (see the module
    docstring). ``keep(header)`` names the column indices the caller reads; the others are None (not converted,
    still counted on every line)."""
    if not enabled() or len(delimiter) != 1 or ord(delimiter) >= 128 or delimiter in ' "':
        return None
    try:
        size = path.stat().st_size
    except OSError:
        return None
    if (size < MIN_BYTES and _mode() != "always") or size > MAX_BYTES:
        return None
    mods = _arrow()
    if mods is None:
        return None
    pa, pc, pcsv = mods
    if not _plain_file(path, ord(delimiter)):
        return None
    data = path.read_bytes()
    if not data.endswith(b"\n") or data.endswith(b"\n\n"):  # empty lines at the end hold no row
        data = data.rstrip(b"\n") + b"\n"  # (a copy of the whole file: only when needed)
    first = data[:data.find(b"\n")].decode("ascii").rstrip("\r")
    header = [c.strip() for c in first.split(delimiter)]
    if len(header) < 2:
        return None
    names = [f"c{i}" for i in range(len(header))]
    wanted = sorted(set(keep(header))) if keep is not None else list(range(len(header)))
    if not wanted or not all(0 <= i < len(header) for i in wanted):
        return None
    try:
        table = pcsv.read_csv(
            pa.py_buffer(data),
            read_options=pcsv.ReadOptions(column_names=names, skip_rows=1),
            parse_options=pcsv.ParseOptions(delimiter=delimiter, quote_char=False, escape_char=False,
                                            newlines_in_values=False, ignore_empty_lines=False),
            convert_options=pcsv.ConvertOptions(column_types={names[i]: pa.string() for i in wanted},
                                                include_columns=[names[i] for i in wanted],
                                                strings_can_be_null=False, quoted_strings_can_be_null=False,
                                                null_values=[]))
    except (pa.ArrowInvalid, ValueError):  # a row with another number of fields, ...
        return None
    if table.num_rows == 0 or table.num_columns != len(wanted):
        return None
    cols: list[Any] = [None] * len(header)
    for k, i in enumerate(wanted):
        cols[i] = pc.ascii_trim(table.column(k).combine_chunks(), " ")
    return header, cols


def plain_numbers(arr: Any) -> np.ndarray | None:
    """float64 values of a string column when every value is a plain decimal number (as :data:`_NUMBER`), else
    None. For such values Arrow's cast and Python's ``float`` give the same double."""
    pa, pc, _ = _arrow()
    if not pc.all(pc.match_substring_regex(arr, _NUMBER)).as_py():
        return None
    try:
        return pc.cast(arr, pa.float64()).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid:  # e.g. an exponent out of range
        return None


def timestamps(arr: Any) -> np.ndarray | None:
    """Seconds since 1970 (int64) of a column of ``YYYY-MM-DD HH:MM:SS`` wall-clock values, or None when any
    value is not one that ``datetime.fromisoformat`` reads in that form (year 0, month 13, February 30,
    hour 24, second 60, ...)."""
    _, pc, _ = _arrow()
    if not pc.all(pc.match_substring_regex(arr, _TIMESTAMP)).as_py():
        return None
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32)[arr.offset:arr.offset + n + 1]
    if not np.all(np.diff(offsets) == 19):
        return None
    text = np.frombuffer(arr.buffers()[2], dtype=np.uint8)[offsets[0]:offsets[0] + 19 * n]
    d = text.reshape(n, 19).astype(np.int64) - ord("0")

    def num(i: int, k: int) -> np.ndarray:
        out = np.zeros(n, dtype=np.int64)
        for j in range(i, i + k):
            out = out * 10 + d[:, j]
        return out

    year, month, day = num(0, 4), num(5, 2), num(8, 2)
    hour, minute, second = num(11, 2), num(14, 2), num(17, 2)
    if not (np.all(year >= 1) and np.all((month >= 1) & (month <= 12)) and np.all(day >= 1)
            and np.all(hour < 24) and np.all(minute < 60) and np.all(second < 60)):
        return None
    first = (year - 1970).astype("datetime64[Y]").astype("datetime64[M]") + (month - 1).astype("timedelta64[M]")
    start = first.astype("datetime64[D]")
    month_days = ((first + np.timedelta64(1, "M")).astype("datetime64[D]") - start).astype(np.int64)
    if not np.all(day <= month_days):
        return None
    days = (start - np.datetime64("1970-01-01", "D")).astype(np.int64) + (day - 1)
    return days * 86400 + hour * 3600 + minute * 60 + second
