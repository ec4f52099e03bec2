"""The static description of one training job."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace


@dataclass(frozen=True, slots=True)
class JobSpec:
    """One data-parallel training job as the trace (or generator) gives it.

    Exactly one of ``iterations`` and ``duration_s`` must be set by a loader. ``duration_s`` is read as the
    job's run time when alone and consolidated; the simulator turns it into
    ``iterations = duration_s / ideal_iteration_time`` with the physics model in use.

    ``source`` names where the job came from (``file:line``) so errors can point at it.

    Optional fields a trace may carry (the simulator may ignore them):

    * ``gpu_request`` — the GPU amount the trace asked for when it was not a whole number (e.g. 0.5 from
      ``gpu_milli=500``); ``num_gpus`` is then that amount rounded up (see ``docs/traces.md``).
    * ``gpu_type`` — the GPU type the job asked for (a GPU-type column), as spelled by the cluster when the
      cluster was known at load time, else as written in the trace.
    * ``group`` — the file a job came from when a folder of trace files was loaded as one trace (its stem).
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
    gpu_request: float | None = None
    gpu_type: str | None = None
    group: str | None = None

    def __post_init__(self) -> None:
        if self.num_gpus < 1:
            raise ValueError(f"job {self.job_id}: num_gpus must be >= 1, got {self.num_gpus}")
        if not (math.isfinite(self.arrival_s) and self.arrival_s >= 0):
            raise ValueError(f"job {self.job_id}: arrival must be finite and >= 0, got {self.arrival_s}")
        if self.iterations is None and self.duration_s is None:
            raise ValueError(f"job {self.job_id}: needs iterations or duration")
        if self.iterations is not None and not (math.isfinite(self.iterations) and self.iterations > 0):
            raise ValueError(f"job {self.job_id}: iterations must be finite and > 0, got {self.iterations}")
        if self.duration_s is not None and not (math.isfinite(self.duration_s) and self.duration_s > 0):
            raise ValueError(f"job {self.job_id}: duration must be finite and > 0, got {self.duration_s}")
        if self.gpu_request is not None and not (0 < self.gpu_request <= self.num_gpus):
            raise ValueError(f"job {self.job_id}: gpu_request must be in (0, num_gpus={self.num_gpus}], "
                             f"got {self.gpu_request}")

    def with_(self, **changes: object) -> JobSpec:
        return replace(self, **changes)
