"""The engine's chunked pending queue behaves as a list kept sorted by arrival rank (random operations, checked
against a plain list after every step)."""

from __future__ import annotations

import random
from bisect import insort

import pytest

from ddlsched.engine import pending
from ddlsched.engine.pending import PendingQueue


@pytest.mark.parametrize("chunk", [1, 2, 3, 256])
def test_matches_a_sorted_list(chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pending, "CHUNK", chunk)
    rng = random.Random(chunk)
    q: PendingQueue[str] = PendingQueue()
    ref: list[int] = []
    out: list[int] = []  # ranks taken out, which may come back (preempted)
    nxt = 0
    for _ in range(3000):
        op = rng.random()
        if op < 0.45:
            q.append(nxt, f"j{nxt}")
            ref.append(nxt)
            nxt += 1
        elif op < 0.85 and ref:
            r = ref.pop(0 if rng.random() < 0.5 else rng.randrange(len(ref)))
            q.remove(r)
            out.append(r)
        elif out:
            r = out.pop(rng.randrange(len(out)))
            q.insert(r, f"j{r}")
            insort(ref, r)
        want = [f"j{r}" for r in ref]
        assert list(q) == want and len(q) == len(want) and bool(q) == bool(want)
    assert list(reversed(q)) == want[::-1] and q[1:5] == want[1:5]
    for i in (0, len(want) // 2, -1):
        assert q[i] == want[i]


def test_bad_operations_are_errors() -> None:
    q: PendingQueue[str] = PendingQueue()
    with pytest.raises(ValueError, match="negative"):
        q.append(-1, "x")
    with pytest.raises(KeyError):
        q.remove(3)
    q.append(3, "a")
    with pytest.raises(ValueError, match="not above"):
        q.append(2, "b")
    with pytest.raises(ValueError, match="already queued"):
        q.insert(3, "c")
    with pytest.raises(KeyError):
        q.remove(4)
    with pytest.raises(IndexError):
        q[1]
    q.remove(3)  # emptied: the next rank goes in whatever it is, a lower one too (a preempted job)
    with pytest.raises(KeyError):
        q.remove(3)
    q.insert(1, "p")
    q.append(5, "n")
    assert list(q) == ["p", "n"] and len(q) == 2
