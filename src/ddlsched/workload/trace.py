"""A loaded workload: the jobs plus what the loader had to skip, assume or invent."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from ddlsched.workload.jobspec import JobSpec

_JOB_FIELDS = fields(JobSpec)

FILTER_REASONS: dict[str, str] = {
    "state": "end state not chosen by --states",
    "never_ran": "never started",
    "zero_gpus": "asked for no GPU",
    "step": "a job step row, not a job",
    "component": "heterogeneous-job component, merged into its job",
}
"""Why a well-formed row is not a job (``Trace.filtered`` keys); invalid rows are ``Trace.skipped``."""

MAX_REASONS = 10
"""How many skipped-row reasons a :class:`Trace` keeps (the count in ``skipped`` is always complete)."""


@dataclass(slots=True)
class Trace:
    """Jobs of one trace file (or folder), sorted by arrival (stable: ties keep file order).

    ``skipped`` counts rows rejected under ``skip_invalid=True``; ``skipped_reasons`` keeps the first few
    messages; every data row is either a job or counted there (``len(jobs) + skipped`` = data rows).
    ``notes`` says everything the loader assumed or generated (units, defaults, seeded choices); notes that
    start with ``warning:`` flag values that look wrong. ``mapping`` names, for each logical field (``job_id``,
    ``arrival``, ``num_gpus``, ...), the column or rule it came from. ``epoch`` is the wall-clock time that
    ``arrival_s = 0`` stands for when the file gave absolute timestamps (else ``None``).
    ``filtered`` counts the well-formed rows that are not jobs, by reason (:data:`FILTER_REASONS`: a state not
    chosen with ``--states``, a job that never ran, one that asked for no GPU, a job-step row), so that
    ``rows = len(jobs) + skipped + sum(filtered.values())``.
    """

    jobs: list[JobSpec]
    path: str
    format: str
    skipped: int = 0
    skipped_reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    mapping: dict[str, str] = field(default_factory=dict)
    epoch: datetime | None = None
    filtered: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.jobs = sorted(self.jobs, key=lambda j: j.arrival_s)

    def __len__(self) -> int:
        return len(self.jobs)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled column by column (the trace cache): one list per job field that is not all its default, so
        loading builds the jobs with :meth:`JobSpec.bulk` instead of one ``__setstate__`` call per job."""
        cols: dict[str, list[Any]] = {}
        for f in _JOB_FIELDS:
            col = [getattr(j, f.name) for j in self.jobs]
            d = f.default
            if not all(v is d or (type(v) is type(d) and v == d) for v in col):
                cols[f.name] = col
        return {"n": len(self.jobs), "columns": cols,
                **{f.name: getattr(self, f.name) for f in fields(self) if f.name != "jobs"}}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            if k not in ("n", "columns"):
                setattr(self, k, v)
        self.jobs = JobSpec.bulk(state["n"], **state["columns"])  # already in arrival order

    @property
    def rows(self) -> int:
        """Data rows read: jobs loaded plus rows skipped (invalid) plus rows filtered (by reason)."""
        return len(self.jobs) + self.skipped + sum(self.filtered.values())
