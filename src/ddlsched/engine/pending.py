"""The pending queue in arrival order, as a list of short chunks (docs/engine.md, "Cost per event").

A job leaves the queue from anywhere (the head under FIFO, deeper under backfilling) and a preempted job comes back
at its arrival rank; in one flat list each of those moves every later entry, which at high load (tens of thousands
queued) costs more than the rest of the event. Here each chunk holds at most ``2 · CHUNK`` entries, found by
bisecting the chunks' last ranks, so a removal or insertion moves at most one chunk. Policies see it as a read-only
``Sequence`` of job views in arrival order (iteration, ``len``, indexing and slicing); it must not be changed while
iterated (the engine changes it only between scheduling passes).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence
from itertools import chain
from typing import Generic, TypeVar, overload

from ddlsched._mypyc import mypyc_attr

T = TypeVar("T")
CHUNK = 256


@mypyc_attr(allow_interpreted_subclasses=True)
class PendingQueue(Sequence[T], Generic[T]):
    """Items ordered by a unique integer rank (arrival order), chunked; see the module docstring."""

    __slots__ = ("_items", "_last", "_len", "_ranks")

    def __init__(self) -> None:
        self._ranks: list[list[int]] = []  # per chunk, its ranks in order
        self._items: list[list[T]] = []  # per chunk, its items in the same order
        self._last: list[int] = []  # per chunk, its last rank (bisected to find a rank's chunk)
        self._len = 0

    def append(self, rank: int, item: T) -> None:
        """Add an item whose rank (≥ 0) is above every rank in the queue (a new arrival)."""
        last = self._last
        if last:
            if rank <= last[-1]:
                raise ValueError(f"rank {rank} is not above the queue's last rank {last[-1]}")
            ranks = self._ranks[-1]
            if len(ranks) < CHUNK:
                ranks.append(rank)
                self._items[-1].append(item)
                last[-1] = rank
                self._len += 1
                return
        elif rank < 0:
            raise ValueError(f"rank {rank} is negative")
        self._ranks.append([rank])
        self._items.append([item])
        last.append(rank)
        self._len += 1

    def insert(self, rank: int, item: T) -> None:
        """Add an item at its rank (a preempted job returning to the queue)."""
        if not self._last or rank > self._last[-1]:
            self.append(rank, item)
            return
        c = bisect_left(self._last, rank)
        ranks, items = self._ranks[c], self._items[c]
        k = bisect_left(ranks, rank)
        if ranks[k] == rank:
            raise ValueError(f"rank {rank} is already queued")
        ranks.insert(k, rank)
        items.insert(k, item)
        self._len += 1
        if len(ranks) > 2 * CHUNK:  # split in halves
            self._ranks[c:c + 1] = [ranks[:CHUNK], ranks[CHUNK:]]
            self._items[c:c + 1] = [items[:CHUNK], items[CHUNK:]]
            self._last[c:c + 1] = [ranks[CHUNK - 1], ranks[-1]]

    def remove(self, rank: int) -> None:
        """Take the item of this rank out of the queue (KeyError if it is not queued)."""
        last = self._last
        c = 0 if last and rank <= last[0] else bisect_left(last, rank)
        if c == len(last):
            raise KeyError(rank)
        ranks = self._ranks[c]
        k = 0 if ranks and ranks[0] == rank else bisect_left(ranks, rank)
        if k == len(ranks) or ranks[k] != rank:
            raise KeyError(rank)
        del ranks[k]
        del self._items[c][k]
        self._len -= 1
        if not ranks:
            if len(last) > 1:
                del self._ranks[c], self._items[c], last[c]
            else:
                last[0] = -1  # the only chunk stays, empty (below every rank: the next one is appended to it)
        elif k == len(ranks):
            last[c] = ranks[-1]

    # -- read-only Sequence ----------------------------------------------------------------------
    def __len__(self) -> int:
        return self._len

    def __bool__(self) -> bool:
        return self._len > 0

    def __iter__(self) -> Iterator[T]:
        return chain.from_iterable(self._items)

    def __reversed__(self) -> Iterator[T]:
        return chain.from_iterable(reversed(items) for items in reversed(self._items))

    @overload
    def __getitem__(self, i: int) -> T: ...

    @overload
    def __getitem__(self, i: slice) -> list[T]: ...

    def __getitem__(self, i: int | slice) -> T | list[T]:
        if isinstance(i, slice):
            return list(self)[i]
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError("pending queue index out of range")
        for items in self._items:
            if i < len(items):
                return items[i]
            i -= len(items)
        raise IndexError("pending queue index out of range")  # pragma: no cover - lengths are kept in step

    def __repr__(self) -> str:
        return f"PendingQueue({list(self)!r})"
