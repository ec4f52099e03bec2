"""The profile job: each iteration a compute phase and a real ring all-reduce of the profile's gradient size.

Arguments (``DDLSCHED_JOB_ARGS``, filled by the Ray executor from the model profile and the run's time scale):
``compute_s`` — wall seconds of compute per iteration (slept: the job needs no GPU and little CPU); ``grad_bytes``
— bytes all-reduced per iteration, over the explicit ring the simulator models (reduce-scatter then all-gather,
2(n−1) steps of M/n, ranks in launch order), on the testbed's plain TCP socket ring between the ranks' addresses
(``DDLSCHED_PEERS``), so the job needs no torch: its start costs no torch import and no gloo rendezvous
(docs/live-ray.md, "Where a start goes"). Its ideal iteration time is therefore known, and its contention with
other jobs' rings is real.
"""

from __future__ import annotations

import time

import numpy as np

from ddlsched.job import Job
from ddlsched.testbed.worker import ring_allreduce


def main() -> None:
    job = Job()
    compute_s = float(job.args.get("compute_s", 0.0))
    grad_bytes = int(job.args.get("grad_bytes", 0))
    if compute_s < 0 or grad_bytes < 0:
        raise ValueError(f"compute_s and grad_bytes must be >= 0, got {compute_s}, {grad_bytes}")
    ring = job.init_socket_ring()
    buf = np.zeros(max(grad_bytes // 4, job.world_size), np.float32)
    for _ in job.steps():
        if compute_s:
            time.sleep(compute_s)
        if ring is not None and grad_bytes:
            ring_allreduce(ring, buf)


if __name__ == "__main__":
    main()
