"""The static description of one training job."""

from __future__ import annotations

import gc
import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from itertools import repeat
from typing import Any


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
    * ``state`` — the scheduler's end state when it was not a plain completion (``cancelled``, ``failed``,
      ``timeout``, ...; Slurm and Kubernetes exports): the run time is then the time the job actually ran.
    * ``group`` — the file a job came from when a folder of trace files was loaded as one trace (its stem).
    * ``gpu_share`` — the share of one GPU (0 < s < 1) the job runs on when the loader kept it as a share
      (``fractional_gpus="keep"``); ``num_gpus`` is then 1. A GPU-sharing policy packs share jobs on a GPU while
      their shares sum to ≤ 1; other policies run them on a whole GPU (``docs/traces.md``).
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
    state: str | None = None
    gpu_share: float | None = None

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
        if self.gpu_share is not None and not (0 < self.gpu_share < 1 and self.num_gpus == 1):
            raise ValueError(f"job {self.job_id}: gpu_share must be in (0, 1) with num_gpus=1, got "
                             f"{self.gpu_share} with num_gpus={self.num_gpus}")

    def with_(self, **changes: object) -> JobSpec:
        return replace(self, **changes)

    @classmethod
    def bulk(cls, n: int, **columns: Sequence[Any]) -> list[JobSpec]:
        """``[JobSpec(**{k: col[i] for k, col in columns.items()}) for i in range(n)]``, built column by column
        (several times faster for a large trace); fields not given take their defaults. The invariants of
        ``__post_init__`` are checked on whole columns first; when any fails, the jobs are built one by one, so
        the error is the one a single job raises."""
        given = set(columns)
        if not _columns_valid(n, columns):
            keys = list(columns)
            return [cls(**dict(zip(keys, vals, strict=True))) for vals in zip(*columns.values(), strict=True)]
        collecting = gc.isenabled()
        gc.disable()  # n new objects would start many collections that find nothing to free
        try:
            jobs = list(map(object.__new__, repeat(cls, n)))
            for f in fields(cls):
                col = columns[f.name] if f.name in given else repeat(f.default, n)
                deque(map(cls.__dict__[f.name].__set__, jobs, col), maxlen=0)  # the slot, as __init__ sets it
        finally:
            if collecting:
                gc.enable()
        return jobs


def _columns_valid(n: int, c: dict[str, Sequence[Any]]) -> bool:
    """Whether every job of the columns ``c`` passes ``JobSpec.__post_init__`` (and the columns are complete)."""
    if any(len(v) != n for v in c.values()) or not {"job_id", "arrival_s", "num_gpus", "model"} <= set(c):
        return False
    if set(c) - {f.name for f in fields(JobSpec)} or n == 0:
        return False
    if not all(type(g) is int for g in c["num_gpus"]) or min(c["num_gpus"]) < 1:
        return False
    if not (all(map(math.isfinite, c["arrival_s"])) and min(c["arrival_s"]) >= 0):
        return False
    lengths = [c[k] for k in ("iterations", "duration_s") if k in c]
    if len(lengths) != 1 or None in lengths[0]:
        return False
    if not (all(map(math.isfinite, lengths[0])) and min(lengths[0]) > 0):
        return False
    req = c.get("gpu_request")
    if req is not None and not all(r is None or 0 < r <= g for r, g in zip(req, c["num_gpus"], strict=True)):
        return False
    share = c.get("gpu_share")
    return share is None or all(s is None or (0 < s < 1 and g == 1) for s, g in zip(share, c["num_gpus"], strict=True))
