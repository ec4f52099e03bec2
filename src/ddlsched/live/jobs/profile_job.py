"""The profile job: each iteration a compute phase and a real ring all-reduce of the profile's gradient size.

Arguments (``DDLSCHED_JOB_ARGS``, filled by the Ray executor from the model profile and the run's time scale):
``compute_s`` — wall seconds of compute per iteration (slept: the job needs no GPU and little CPU); ``grad_bytes``
— bytes all-reduced per iteration, over the explicit ring the simulator models (reduce-scatter then all-gather,
2(n−1) steps of M/n, ranks in launch order; the testbed's ring over ``torch.distributed`` send/recv on gloo).
Its ideal iteration time is therefore known, and its contention with other jobs' rings is real.
"""

from __future__ import annotations

import time

import numpy as np

from ddlsched.job import Job
from ddlsched.testbed.worker import GroupRing, ring_allreduce


def main() -> None:
    job = Job()
    compute_s = float(job.args.get("compute_s", 0.0))
    grad_bytes = int(job.args.get("grad_bytes", 0))
    if compute_s < 0 or grad_bytes < 0:
        raise ValueError(f"compute_s and grad_bytes must be >= 0, got {compute_s}, {grad_bytes}")
    job.init_process_group()
    buf = np.zeros(max(grad_bytes // 4, job.world_size), np.float32)
    ring = GroupRing(job.rank, job.world_size) if job.world_size > 1 else None
    for _ in job.steps():
        if compute_s:
            time.sleep(compute_s)
        if ring is not None and grad_bytes:
            ring_allreduce(ring, buf)  # type: ignore[arg-type]  # same sendrecv/rank/n interface


if __name__ == "__main__":
    main()
