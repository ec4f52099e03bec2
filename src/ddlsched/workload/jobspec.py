"""The static description of one training job (ALGORITHMS.md §1.1)."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True, slots=True)
class JobSpec:
    """One data-parallel training job as the trace (or generator) gives it.

    Exactly one of ``iterations`` and ``duration_s`` must be set by a loader. ``duration_s`` is read as the
    job's run time when alone and consolidated; the simulator turns it into
    ``iterations = duration_s / ideal_iteration_time`` with the physics model in use.

    ``source`` names where the job came from (``file:line``) so errors can point at it.
    """

    job_id: str
    arrival_s: float
    num_gpus: int
    model: str
    iterations: float | None = None
    duration_s: float | None = None
    batch_size: int | None = None
    gpu_mem_mb: float | None = None
    user: str | None = None
    weight: float = 1.0
    source: str = ""

    def __post_init__(self) -> None:
        if self.num_gpus < 1:
            raise ValueError(f"job {self.job_id}: num_gpus must be >= 1, got {self.num_gpus}")
        if self.arrival_s < 0:
            raise ValueError(f"job {self.job_id}: arrival must be >= 0, got {self.arrival_s}")
        if self.iterations is None and self.duration_s is None:
            raise ValueError(f"job {self.job_id}: needs iterations or duration")
        if self.iterations is not None and not self.iterations > 0:
            raise ValueError(f"job {self.job_id}: iterations must be > 0, got {self.iterations}")
        if self.duration_s is not None and not self.duration_s > 0:
            raise ValueError(f"job {self.job_id}: duration must be > 0, got {self.duration_s}")

    def with_(self, **changes: object) -> JobSpec:
        return replace(self, **changes)
