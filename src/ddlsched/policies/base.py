"""The policy interface (ARCHITECTURE.md "policy"): read a :class:`SchedulerView`, return decisions."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

from ddlsched.engine.decisions import Decision
from ddlsched.engine.view import SchedulerView


class Policy(ABC):
    """A scheduling policy. ``preemptive`` policies are consulted on every event (they may evict);
    others only when a job could be placed. ``reset`` is called before each run."""

    name: str = ""
    description: ClassVar[str] = ""
    preemptive: bool = False

    def reset(self) -> None:  # noqa: B027 - optional hook
        """Forget state kept from a previous run."""

    @abstractmethod
    def schedule(self, view: SchedulerView) -> Sequence[Decision]:
        """Decide what to start, preempt, or when to be called again."""
