"""What the engine tracks for every job, whatever the execution model: status and the run-time accounts.

Each execution model extends :class:`JobState` with its own progress state and fills the common accounts; the
core turns a finished job's accounts into its record (``ddlsched.engine.records``), with the meanings defined
in ``ddlsched.vocabulary``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum

from ddlsched._mypyc import mypyc_attr
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import ModelProfile


class JobStatus(Enum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    REJECTED = "rejected"
    FAILED = "failed"  # live runs only: the job's code failed (ddlsched.live)
    CANCELLED = "cancelled"  # live runs only: cancelled by its submitter


@mypyc_attr(allow_interpreted_subclasses=True)  # the live model's job (ddlsched.live.model) subclasses FluidJob
@dataclass(slots=True, eq=False)
class JobState:
    """Common per-job state. ``work`` is the job's iterations (or synchronisation rounds); ``ideal_iter_s`` one
    iteration alone, consolidated, on its fastest GPU types, so ``ideal_run_s = work · ideal_iter_s``."""

    spec: JobSpec
    profile: ModelProfile
    seq: int
    status: JobStatus = JobStatus.PENDING
    work: float = 0.0
    ideal_iter_s: float = math.nan
    first_start: float | None = None
    finish: float | None = None
    run_s: float = 0.0
    comm_s: float = 0.0
    contention_s: float = 0.0
    spread_s: float = 0.0
    sharing_s: float = 0.0
    hetero_s: float = 0.0
    switch_s: float = 0.0
    restart_s: float = 0.0
    preemptions: int = 0
    placements: int = 0
    max_servers: int = 0
    max_racks: int = 0
    last_gpus: tuple[int, ...] = ()
    reject_reason: str = ""

    # copies of the spec's fields read on every event: plain slots (a trace's JobSpec is an interpreted class, and
    # each read of one of its fields from compiled code is a generic attribute lookup)
    job_id: str = field(init=False)
    num_gpus: int = field(init=False)
    arrival_s: float = field(init=False)
    mem_mb: float = field(init=False)  # per GPU: the trace's figure, else the model profile's

    def __post_init__(self) -> None:
        spec = self.spec
        self.job_id = spec.job_id
        self.num_gpus = spec.num_gpus
        self.arrival_s = spec.arrival_s
        self.mem_mb = spec.gpu_mem_mb or self.profile.mem_mb

    @property
    def ideal_run_s(self) -> float:
        return self.work * self.ideal_iter_s
