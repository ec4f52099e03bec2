"""A loaded workload: the jobs plus what the loader had to skip, assume or invent."""

from __future__ import annotations

from dataclasses import dataclass, field

from ddlsched.workload.jobspec import JobSpec

MAX_REASONS = 10
"""How many skipped-row reasons a :class:`Trace` keeps (the count in ``skipped`` is always complete)."""


@dataclass(slots=True)
class Trace:
    """Jobs of one trace file, sorted by arrival (stable: ties keep file order).

    ``skipped`` counts rows rejected under ``skip_invalid=True``; ``skipped_reasons`` keeps the first few
    messages. ``notes`` says everything the loader assumed or generated (units, defaults, seeded choices).
    """

    jobs: list[JobSpec]
    path: str
    format: str
    skipped: int = 0
    skipped_reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.jobs = sorted(self.jobs, key=lambda j: j.arrival_s)

    def __len__(self) -> int:
        return len(self.jobs)
