"""Time values in a generic CSV, recognised per value (``docs/traces.md`` "Time values").

* a plain number (``90``, ``1.5e3``) — in the column's unit (``--time-unit``, or ``--duration-unit`` for
  durations);
* a clock duration, Slurm style — ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS`` (seconds may
  have a fraction; hours are not limited to 24 without a day part) — always in its own units;
* an ISO-8601 timestamp — ``YYYY-MM-DD``, optionally followed by ``T`` or a space and a time, and a zone
  (``Z``, ``+02:00``); a zoned timestamp is converted to UTC, a naive one is read as wall-clock time.

Numbers and clock durations are *relative* values; timestamps are *absolute*. One column must hold one kind.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import NamedTuple

_DAYS = re.compile(r"(\d+)-(\d+)(?::(\d+)(?::(\d+(?:\.\d*)?))?)?")
_HMS = re.compile(r"(\d+):(\d+):(\d+(?:\.\d*)?)")
_MS = re.compile(r"(\d+):(\d+(?:\.\d*)?)")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ].*)?")

RELATIVE, ABSOLUTE = "relative", "absolute"


class TimeValue(NamedTuple):
    kind: str
    """``"number"``, ``"clock"`` or ``"timestamp"``."""
    seconds: float
    """The number itself (before the unit factor) or the clock duration in seconds; 0 for a timestamp."""
    when: datetime | None = None

    @property
    def cls(self) -> str:
        return ABSOLUTE if self.kind == "timestamp" else RELATIVE


def _clock(h: str, m: str | None, s: str | None, *, day_part: bool) -> float:
    hours, minutes, secs = int(h), int(m or 0), float(s or 0)
    if minutes >= 60 or secs >= 60 or (day_part and hours >= 24):
        raise ValueError("minutes and seconds must be < 60 (hours < 24 after a day part)")
    return hours * 3600.0 + minutes * 60.0 + secs


def parse_time(v: str) -> TimeValue:
    """Classify and parse one time value; ValueError (with a short reason) when it is none of the forms."""
    try:
        return TimeValue("number", float(v))
    except ValueError:
        pass
    if m := _DAYS.fullmatch(v):
        return TimeValue("clock", int(m[1]) * 86400.0 + _clock(m[2], m[3], m[4], day_part=True))
    if m := _HMS.fullmatch(v):
        return TimeValue("clock", _clock(m[1], m[2], m[3], day_part=False))
    if m := _MS.fullmatch(v):
        return TimeValue("clock", _clock("0", m[1], m[2], day_part=False))
    if _DATE.fullmatch(v):
        try:
            when = datetime.fromisoformat(v)
        except ValueError as e:
            raise ValueError(f"not a valid ISO-8601 timestamp ({e})") from None
        if when.tzinfo is not None:
            when = when.astimezone(UTC)
        return TimeValue("timestamp", 0.0, when)
    raise ValueError("not a number, a clock duration ([D-]HH:MM:SS, MM:SS) or an ISO-8601 timestamp")
