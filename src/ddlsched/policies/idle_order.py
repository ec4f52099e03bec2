"""Idle GPUs in the order they became idle, kept incrementally for rounds-model policies that alone make GPUs busy
(``sched-homo``, ``hare-alg1``; docs/engine.md, "Rounds model: incremental bookkeeping").

A GPU's time is the first pass at which the policy saw it idle; the order is (that time, GPU index). Each pass
registers only the GPUs freed since the last one (the model's log, ``RoundsView.freed_since``), which join the end:
their time, now, is the latest yet. The policy deletes a GPU from ``since`` when it gives it a task and then calls
:meth:`IdleOrder.taken`.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Iterable, Sequence
from typing import Any

from ddlsched.engine.decisions import RunTask
from ddlsched.engine.rounds import RoundsView


def deal_tasks(ready: Sequence[Any], gpus: Iterable[int], since: dict[int, float]) -> list[RunTask]:
    """Give each GPU of ``gpus``, in order, the next released task of ``ready`` (jobs in priority order, each
    ``ready`` tasks), until the tasks run out; the GPUs given a task leave ``since``."""
    left = [j.ready for j in ready]
    out: list[RunTask] = []
    k = 0
    for g in gpus:
        while k < len(ready) and left[k] == 0:
            k += 1
        if k == len(ready):
            break
        out.append(RunTask(ready[k].job_id, g))
        left[k] -= 1
        del since[g]
    return out


class IdleOrder:
    """``since``: GPU → when first seen idle, for every idle GPU; ``order``: (since, GPU) ascending."""

    def __init__(self) -> None:
        self.since: dict[int, float] = {}
        self.order: list[tuple[float, int]] = []
        self._mark: int | None = None  # position in the model's log of freed GPUs (None: before the first pass)

    def update(self, view: RoundsView) -> int:
        """Register the GPUs that became idle since the last pass; the number of idle GPUs."""
        since, order = self.since, self.order
        n_idle = view.idle_count()
        if len(since) == n_idle:  # every key is idle (only the policy makes GPUs busy): nothing new
            return n_idle
        now = view.now
        if self._mark is None:
            new = sorted(set(view.idle_gpus()).difference(since))
            _, self._mark = view.freed_since(0)
        else:  # an idle GPU missing from since was freed after the last pass: in the log past the mark
            freed, self._mark = view.freed_since(self._mark)
            new = sorted({g for g in freed if g not in since and view.running_on(g) is None
                          and view.leased_by(g) is None})
        for g in new:
            since[g] = now
        if not order or order[-1][0] < now:
            order.extend((now, g) for g in new)
        else:
            for g in new:
                insort(order, (now, g))
        return n_idle

    def first(self, n: int | None = None) -> list[int]:
        """The first ``n`` idle GPUs in order (all if None)."""
        return [g for _, g in (self.order if n is None else self.order[:n])]

    def taken(self, prefix: int | None = None) -> None:
        """After the policy deleted the GPUs it gave tasks from ``since``: drop them from the order (``prefix``: they
        were its first ``prefix`` entries)."""
        if prefix is not None:
            del self.order[:prefix]
        else:
            self.order[:] = [x for x in self.order if x[1] in self.since]
