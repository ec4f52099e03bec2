"""What a policy may ask the engine to do (ARCHITECTURE.md "policy"). The engine validates every decision."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Start:
    """Start (or restart) a pending job on exactly ``num_gpus`` GPUs.

    ``share=True`` allows GPUs that already host another job (GPU sharing, ALGORITHMS.md §5), subject to the
    engine's per-GPU job limit and memory. ``accum_steps`` > 1 runs the job with gradient accumulation
    (sub-batch = batch / accum_steps, §5.2).
    """

    job_id: str
    gpus: tuple[int, ...]
    share: bool = False
    accum_steps: int = 1


@dataclass(frozen=True, slots=True)
class Preempt:
    """Stop a running job, checkpoint it and return it to the queue (restart penalty on its next start)."""

    job_id: str


@dataclass(frozen=True, slots=True)
class WakeAt:
    """Call the policy again at ``time`` (seconds), even if nothing else happens."""

    time: float


Decision = Start | Preempt | WakeAt
