"""What a training job does to be schedulable by a live run (in the spirit of Gavel's iterator).

Wrap the training loop::

    from ddlsched.job import Job

    def main() -> None:
        job = Job()                         # rank, world size, master, checkpoint dir: from the environment
        job.init_process_group()            # torch.distributed over gloo (world size > 1)
        model, opt = build()
        for step in job.steps(state={"model": model, "opt": opt}):
            train_one_step(step)            # the job library reports, checks the lease, checkpoints

``steps()`` resumes from the last checkpoint (it loads the state first), yields the step numbers still to run,
reports iterations to the executor (rate-limited), saves a checkpoint every ``checkpoint_every`` steps, and when the
lease is revoked saves one at once and ends the loop: a preempted job loses no work, a killed one at most one
checkpoint interval. All ranks agree on when to stop (a one-element all-reduce each step), so no rank is left
waiting in a collective. Instead of ``state`` a job may pass ``save(dir)`` / ``load(dir)`` callables.

The environment (set by the Ray executor; ``torchrun`` sets the first five, and then the job runs unscheduled:
no lease, no reports): ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``,
``DDLSCHED_JOB_ID``, ``DDLSCHED_ATTEMPT``, ``DDLSCHED_ITERATIONS`` (total steps), ``DDLSCHED_CHECKPOINT_DIR``,
``DDLSCHED_CHECKPOINT_EVERY``, ``DDLSCHED_JOB_ARGS`` (JSON object, the launch's job arguments), ``DDLSCHED_PEERS``
(``host:port`` of every rank, comma-separated: for a job's own transport, :meth:`Job.init_socket_ring`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

STATE_FILE = "state.pt"
META_FILE = "checkpoint.json"


class Lease(Protocol):
    """The executor's side of a running rank (the Ray executor's actor implements it)."""

    def revoked(self) -> bool:
        """Whether the job's lease has ended (it must checkpoint and stop)."""

    def report(self, *, iterations: int, checkpoint: int | None, started_from: int | None) -> None:
        """The job's progress: iterations done, the last checkpoint's iteration, where it resumed."""


class _NoLease:
    """Outside a live run (plain ``torchrun``): never revoked, reports go nowhere."""

    def revoked(self) -> bool:
        return False

    def report(self, *, iterations: int, checkpoint: int | None, started_from: int | None) -> None:
        return None


_lease: Lease | None = None


def attach_lease(lease: Lease | None) -> None:
    """Used by an executor in the rank's process before it runs the job's entry point."""
    global _lease
    _lease = lease


def _env_int(name: str, default: int | None) -> int | None:
    v = os.environ.get(name)
    if v is None or v == "":
        return default
    try:
        return int(v)
    except ValueError:
        raise ValueError(f"environment variable {name}={v!r} is not an integer") from None


def read_checkpoint_iterations(checkpoint_dir: str | Path) -> int | None:
    """The iteration of the last complete checkpoint in ``checkpoint_dir`` (None: none yet)."""
    try:
        meta = json.loads((Path(checkpoint_dir) / META_FILE).read_text())
    except (OSError, ValueError):
        return None
    it = meta.get("iterations")
    return int(it) if isinstance(it, int) else None


class Job:
    """One rank of a data-parallel job under a live scheduler (see the module docstring)."""

    def __init__(self, *, total_iterations: int | None = None, checkpoint_dir: str | Path | None = None,
                 checkpoint_every: int | None = None, report_every_s: float = 0.5) -> None:
        self.rank = _env_int("RANK", 0) or 0
        self.world_size = _env_int("WORLD_SIZE", 1) or 1
        self.local_rank = _env_int("LOCAL_RANK", 0) or 0
        self.master_addr = os.environ.get("MASTER_ADDR", "127.0.0.1")
        self.master_port = _env_int("MASTER_PORT", 29500) or 29500
        self.job_id = os.environ.get("DDLSCHED_JOB_ID", "job")
        self.attempt = _env_int("DDLSCHED_ATTEMPT", 1) or 1
        self.total_iterations = total_iterations if total_iterations is not None else _env_int(
            "DDLSCHED_ITERATIONS", None)
        ckpt = checkpoint_dir if checkpoint_dir is not None else os.environ.get("DDLSCHED_CHECKPOINT_DIR")
        self.checkpoint_dir = Path(ckpt) if ckpt else None
        self.checkpoint_every = checkpoint_every if checkpoint_every is not None else _env_int(
            "DDLSCHED_CHECKPOINT_EVERY", None)
        if self.checkpoint_every is not None and self.checkpoint_every < 1:
            raise ValueError(f"checkpoint_every must be >= 1, got {self.checkpoint_every}")
        self.args: dict[str, Any] = json.loads(os.environ.get("DDLSCHED_JOB_ARGS") or "{}")
        self.report_every_s = report_every_s
        self.lease: Lease = _lease if _lease is not None else _NoLease()
        self.iterations = 0
        """Steps completed (including those before a resume)."""
        self.checkpointed: int | None = None
        """Iteration of the last checkpoint this run saved or resumed from."""
        self.preempted = False
        """The loop ended because the lease was revoked (a checkpoint was saved)."""
        self._dist: Any = None
        self._ring: Any = None
        peers = os.environ.get("DDLSCHED_PEERS", "")
        self.peers: list[tuple[str, int]] = [(h, int(p)) for h, _, p in (x.rpartition(":") for x in peers.split(","))
                                             if h and p.isdigit()]
        """Every rank's ``(host, port)`` for a job's own transport (the executor's; empty under ``torchrun``)."""

    # ------------------------------------------------------------------ distributed
    def init_process_group(self, backend: str = "gloo", timeout_s: float = 120.0) -> None:
        """``torch.distributed.init_process_group`` from the environment (no-op for one rank or if done)."""
        if self.world_size <= 1:
            return
        import datetime

        import torch.distributed as dist

        if not dist.is_initialized():
            dist.init_process_group(backend, init_method=f"tcp://{self.master_addr}:{self.master_port}",
                                    rank=self.rank, world_size=self.world_size,
                                    timeout=datetime.timedelta(seconds=timeout_s))
        self._dist = dist

    def init_socket_ring(self, timeout_s: float = 120.0) -> Any:
        """Instead of a torch process group: a plain TCP ring over :attr:`peers` (no torch; the testbed's
        ``SocketRing``), used for the ranks' stop agreement and barriers and returned for the job's own traffic
        (``ddlsched.testbed.worker.ring_allreduce``). None for one rank."""
        if self.world_size <= 1:
            return None
        if len(self.peers) != self.world_size:
            raise RuntimeError(f"a socket ring needs {self.world_size} peers in DDLSCHED_PEERS, got {self.peers}")
        from ddlsched.testbed.worker import SocketRing

        self._ring = SocketRing(self.rank, self.peers, timeout_s=timeout_s)
        return self._ring

    def close(self) -> None:
        """Tear the process group (or socket ring) down (called by :meth:`steps` when it ends)."""
        if self._dist is not None and self._dist.is_initialized():
            self._dist.destroy_process_group()
        self._dist = None
        if self._ring is not None:
            self._ring.close()
        self._ring = None

    def _agree_stop(self, mine: bool) -> bool:
        """Every rank stops at the same step: the OR of the ranks' lease flags."""
        if self.world_size <= 1:
            return mine
        if self._ring is not None:
            import numpy as np

            from ddlsched.testbed.worker import ring_allreduce

            flags = np.zeros(self.world_size, np.float32)
            flags[self.rank] = 1.0 if mine else 0.0
            ring_allreduce(self._ring, flags)
            return bool(flags.sum() > 0)
        if self._dist is None:
            raise RuntimeError("a job with more than one rank must call job.init_process_group() (or "
                               "job.init_socket_ring()) before steps()")
        import torch

        flag = torch.tensor([1 if mine else 0], dtype=torch.int32)
        if self._dist.get_backend() == "nccl":  # NCCL reduces GPU tensors only
            flag = flag.cuda()
        self._dist.all_reduce(flag, op=self._dist.ReduceOp.MAX)
        return bool(flag.item())

    def _barrier(self) -> None:
        if self._ring is not None:
            self._ring.barrier()
        elif self._dist is not None and self.world_size > 1:
            self._dist.barrier()

    # ------------------------------------------------------------------ checkpoints
    def save(self, iterations: int, state: Mapping[str, Any] | None,
             save: Callable[[Path], None] | None) -> None:
        """Rank 0 writes the state, then the meta file naming its iteration (atomic renames); all ranks wait."""
        if self.checkpoint_dir is None:
            return
        if self.rank == 0:
            self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
            if state is not None:
                import torch

                blob = {k: v.state_dict() for k, v in state.items()}
                blob["__torch_rng__"] = torch.get_rng_state()
                tmp = self.checkpoint_dir / (STATE_FILE + ".tmp")
                torch.save(blob, tmp)
                os.replace(tmp, self.checkpoint_dir / STATE_FILE)
            if save is not None:
                save(self.checkpoint_dir)
            meta = {"iterations": iterations, "attempt": self.attempt, "time": time.time()}
            tmp = self.checkpoint_dir / (META_FILE + ".tmp")
            tmp.write_text(json.dumps(meta))
            os.replace(tmp, self.checkpoint_dir / META_FILE)
        self._barrier()
        self.checkpointed = iterations

    def _load(self, state: Mapping[str, Any] | None, load: Callable[[Path], None] | None) -> int:
        if self.checkpoint_dir is None:
            return 0
        it = read_checkpoint_iterations(self.checkpoint_dir)
        if it is None:
            return 0
        if state is not None:
            import torch

            blob = torch.load(self.checkpoint_dir / STATE_FILE, weights_only=False)
            for k, v in state.items():
                v.load_state_dict(blob[k])
            torch.set_rng_state(blob["__torch_rng__"])
        if load is not None:
            load(self.checkpoint_dir)
        self.checkpointed = it
        return it

    # ------------------------------------------------------------------ the loop
    def steps(self, total: int | None = None, *, state: Mapping[str, Any] | None = None,
              save: Callable[[Path], None] | None = None, load: Callable[[Path], None] | None = None
              ) -> Iterator[int]:
        """Yield the steps still to run (resuming from the last checkpoint); see the module docstring."""
        total = total if total is not None else self.total_iterations
        if total is None:
            raise ValueError("the number of steps is unknown: pass total= or set DDLSCHED_ITERATIONS")
        self.total_iterations = total
        start = self._load(state, load)
        self.iterations = start
        self.lease.report(iterations=start, checkpoint=self.checkpointed, started_from=start)
        last_report = time.monotonic()
        try:
            for step in range(start, total):
                yield step
                self.iterations = step + 1
                now = time.monotonic()
                if now - last_report >= self.report_every_s:
                    self.lease.report(iterations=self.iterations, checkpoint=self.checkpointed, started_from=None)
                    last_report = now
                if self.iterations >= total:
                    break
                if self._agree_stop(self.lease.revoked()):
                    self.save(self.iterations, state, save)
                    self.preempted = True
                    break
                if self.checkpoint_every and self.iterations % self.checkpoint_every == 0:
                    self.save(self.iterations, state, save)
            self.lease.report(iterations=self.iterations, checkpoint=self.checkpointed, started_from=None)
        finally:
            self.close()

    @property
    def finished(self) -> bool:
        """The loop ran to its total."""
        return self.total_iterations is not None and self.iterations >= self.total_iterations and not self.preempted


__all__ = ["Job", "Lease", "attach_lease", "read_checkpoint_iterations"]
