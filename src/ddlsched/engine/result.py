"""What one simulation produces (every execution model, one schema)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain
from operator import itemgetter
from typing import Any, overload

import numpy as np

from ddlsched.cluster.topology import Cluster
from ddlsched.engine.records import RECORD_COLUMNS


class Records(Sequence[dict[str, Any]]):
    """The completed jobs' records (columns and meanings: ``ddlsched.vocabulary.RECORD_FIELDS``), in completion
    order. The engine stores one tuple per job in ``RECORD_COLUMNS`` order; read as a sequence, each record is a
    dict. The dicts are built once, on the first read by item or iteration, and the same dict objects are returned
    from then on (so the sequence behaves like the list of dicts it used to be, edits included). Readers that want
    columns (:meth:`column`, :meth:`float_columns`, :meth:`rows`) take them from the tuples without building dicts
    — what the summary and the output files do, so a run that is only summarised and written never builds them
    (docs/engine.md, "Records as rows")."""

    __slots__ = ("_columns", "_dicts", "_rows")

    def __init__(self, rows: list[tuple[Any, ...]] | None = None,
                 columns: tuple[str, ...] = RECORD_COLUMNS) -> None:
        self._columns = columns
        self._rows: list[tuple[Any, ...]] = [] if rows is None else rows
        self._dicts: list[dict[str, Any]] | None = None

    @classmethod
    def of(cls, records: Iterable[dict[str, Any]]) -> Records:
        """Records read from dicts (e.g. measured on a testbed): the dicts are kept as they are."""
        if isinstance(records, Records):
            return records
        out = cls(columns=())
        out._dicts = list(records)
        out._columns = tuple(out._dicts[0]) if out._dicts else RECORD_COLUMNS
        return out

    @property
    def columns(self) -> tuple[str, ...]:
        return self._columns

    @property
    def as_rows(self) -> bool:
        """Whether the records are still the engine's tuples (no dict has been built or given)."""
        return self._dicts is None

    def dicts(self) -> list[dict[str, Any]]:
        """The records as dicts (built on the first call, then the same list)."""
        if self._dicts is None:
            cols = self._columns
            self._dicts = [dict(zip(cols, row, strict=True)) for row in self._rows]
            self._rows = []  # the dicts are the records from now on
        return self._dicts

    def rows(self) -> Iterator[tuple[Any, ...]]:
        """One tuple per record in :attr:`columns` order (a record missing a column reads as ``""`` there)."""
        if self._dicts is None:
            return iter(self._rows)
        cols = self._columns
        return (tuple(d.get(c, "") for c in cols) for d in self._dicts)

    def column(self, name: str) -> list[Any]:
        """Every record's value under ``name``."""
        if self._dicts is None:
            k = self._columns.index(name)
            return [row[k] for row in self._rows]
        return [d[name] for d in self._dicts]

    def float_columns(self, names: Sequence[str]) -> list[np.ndarray]:
        """The values under ``names`` as float arrays (contiguous), one pass over the records."""
        n = len(self)
        if not names:
            return []
        if self._dicts is None:
            get = itemgetter(*(self._columns.index(c) for c in names))
            source: Iterable[Any] = self._rows
        else:
            get = itemgetter(*names)
            source = self._dicts
        if len(names) == 1:
            return [np.fromiter(map(get, source), dtype=float, count=n)]
        flat = np.fromiter(chain.from_iterable(map(get, source)), dtype=float, count=n * len(names))
        return [c.copy() for c in flat.reshape(n, len(names)).T]

    def subset(self, keep: Sequence[bool]) -> Records:
        """The records where ``keep`` is true, in order."""
        if self._dicts is None:
            return Records([row for row, k in zip(self._rows, keep, strict=True) if k], self._columns)
        return Records.of([d for d, k in zip(self._dicts, keep, strict=True) if k])

    def __len__(self) -> int:
        return len(self._rows) if self._dicts is None else len(self._dicts)

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, i: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        return self.dicts()[i]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.dicts())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Records):
            return self._columns == other._columns and list(self.rows()) == list(other.rows())
        if isinstance(other, list):
            return self.dicts() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like the list it stands for

    def __repr__(self) -> str:
        return f"Records({len(self)} jobs)"


@dataclass
class SimResult:
    """Per-job records (``ddlsched.vocabulary.RECORD_FIELDS``; :class:`Records`, a sequence of dicts), rejected
    jobs, unfinished ids, a time series (``TIMESERIES_FIELDS``), and run facts. ``busy_gpu_s`` integrates
    ``busy_gpus`` over the run."""

    records: Records
    rejected: list[dict[str, Any]]
    unfinished: list[str]
    timeseries: dict[str, list[float]]
    cluster: Cluster
    policy: str
    execution_model: str
    perf_model: str
    perf_params: dict[str, Any]
    seed: int
    events: int
    wall_s: float
    busy_gpu_s: float
    skipped: int = 0
    notes: list[str] = field(default_factory=list)
    mechanisms: dict[str, float] = field(default_factory=dict)
    audit: list[tuple[float, str, str, float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.records = Records.of(self.records)  # a list of dicts (e.g. testbed measurements) is accepted as such

    @property
    def jobs(self) -> int:
        """Jobs read: completed + rejected + unfinished + skipped."""
        return len(self.records) + len(self.rejected) + len(self.unfinished) + self.skipped
