"""The policy contract: read the execution model's view, return decisions (``ddlsched.engine.decisions``).

Every policy subclasses :class:`Policy`, declares what it needs in ``requirements`` (execution model, preemptive,
jobs per GPU; never probed), and registers once with :func:`ddlsched.policies.registry.register`. Its
constructor's typed parameters are its ``--policy-param``s: they are validated (type, range, finite) before the
run. See ``docs/adding-a-policy.md``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from ddlsched.engine.decisions import Decision
from ddlsched.engine.model import Requirements


class Policy(ABC):
    """A scheduling policy. ``reset`` is called before each run; ``schedule`` once per engine pass."""

    name: str = ""
    description: ClassVar[str] = ""
    family: ClassVar[str] = ""
    requirements: Requirements = Requirements()
    paper_scale_jobs: int | None = None
    """Paper-scale only: above this many jobs a run was measured to take over a minute (BENCHMARKS.md, "Every
    policy at ~0.7 load"); ``ddlsched simulate``/``compare`` print a one-line warning. ``None``: no limit."""

    def reset(self) -> None:  # noqa: B027 - optional hook
        """Forget state kept from a previous run."""

    def run_notes(self) -> list[str]:
        """Lines for the run's notes (e.g. a mechanism the policy disabled because the trace lacks a field); read
        once after the run."""
        return []

    def mechanisms(self) -> dict[str, float]:
        """Counts of how often the policy's own mechanisms fired in the run (e.g. delayed placements); names are
        documented in ``ddlsched.vocabulary.MECHANISMS``. Reported in the summary under ``mechanisms``."""
        return {}

    @abstractmethod
    def schedule(self, view: Any) -> Sequence[Decision]:
        """Decide what to start, preempt, run or admit, or when to be called again."""
