"""An example policy plug-in: largest job first, consolidated placement (docs/adding-a-policy.md).

Use it from the CLI with ``--plugin examples/plugins/largest_first.py --policy largest-first``, in a sweep with
``plugins: [examples/plugins/largest_first.py]``, or from Python after ``ddlsched.load_plugin(path)``.
"""

from __future__ import annotations

from typing import Literal

import ddlsched
from ddlsched.engine.view import SchedulerView
from ddlsched.policies.placement import PLACEMENTS


@ddlsched.register
class LargestFirst(ddlsched.Policy):
    """Start pending jobs in order of most GPUs first (ties: arrival), each on the placement strategy's GPUs;
    a job that does not fit is skipped (backfilling smaller ones) unless ``backfill`` is false."""

    name = "largest-first"
    description = "largest job first (most GPUs), consolidated placement, backfill (example plug-in)"
    requirements = ddlsched.Requirements(model="fluid", preemptive=False)

    def __init__(self, placement: Literal["consolidated", "first_fit"] = "consolidated", backfill: bool = True) -> None:
        self.placement = PLACEMENTS[placement]()
        self.backfill = backfill

    def schedule(self, view: SchedulerView) -> list[ddlsched.Start]:
        free = view.allocation()  # a tentative copy of the free GPUs: plan on it, the engine applies decisions
        out = []
        for job in sorted(view.pending, key=lambda j: (-j.num_gpus, j.seq)):
            gpus = self.placement.place(job, free, view) if job.num_gpus <= free.num_free else None
            if gpus is None:
                if self.backfill:
                    continue
                break
            free.take(gpus)
            out.append(ddlsched.Start(job.job_id, tuple(gpus)))
        return out
