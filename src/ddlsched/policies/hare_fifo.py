"""``gavel-fifo``: the HPDC'22 paper's Gavel_FIFO baseline on the rounds model (docs/policies/hare.md §10).

Jobs start in arrival order; a job waits until n_j GPUs are idle at once (gang) and takes the n_j idle GPUs that
are fastest for its model; nothing starts past a job that does not fit (head-of-line blocking); a started job keeps
its GPUs until it finishes (no preemption). Every round runs one task per leased GPU and lasts as long as the
slowest of them, plus synchronisation.
"""

from __future__ import annotations

from typing import Any

from ddlsched.engine.decisions import Start
from ddlsched.engine.model import Requirements
from ddlsched.engine.rounds import RoundsView
from ddlsched.policies.base import Policy
from ddlsched.policies.registry import register


@register
class GavelFifo(Policy):
    """FIFO gang scheduling on the fastest idle GPUs, head-of-line blocking, no preemption."""

    name = "gavel-fifo"
    family = "chen2024"
    description = "Gavel_FIFO (Hare's baseline): arrival order, gang on the fastest idle GPUs, HOL blocking"
    requirements = Requirements(model="rounds", preemptive=False, gang=True)

    def schedule(self, view: RoundsView) -> list[Any]:
        # the waiting jobs and the idle GPUs change only with a job event (an arrival or a finish frees or
        # needs GPUs; leased GPUs are never idle): without one, the last pass's head of line still does not fit
        if not view.job_events:
            return []
        idle = set(view.idle_gpus())
        if not idle:
            return []  # nothing fits (every job asks for at least one GPU)
        out: list[Any] = []
        for j in view.jobs:  # arrival order
            if j.lease is not None:
                continue
            if j.n > len(idle):
                break
            pick = sorted(idle, key=lambda g: (view.task_time(j, g), g))[: j.n]
            out.append(Start(j.job_id, tuple(sorted(pick))))
            idle.difference_update(pick)
        return out
