"""The executor interface: who carries out a live run's decisions, and where its events come from.

A live run is the one core (``engine/core.py``) with a live execution model behind it: the policy is asked through
the same view as in a simulation, but a ``Start`` or ``Preempt`` is *carried out* by an executor, and what happens to
a job afterwards (it reports iterations, finishes, fails, its worker is lost) comes back from the executor as
:class:`ExecEvent`\\ s. Two executors implement it:

* the **Ray executor** (``ddlsched.live.ray_executor``): each GPU slot a placement group pinned to its server with a
  warm rank actor (or a placement group per job), the job's ranks on the actors of the GPUs the policy chose,
  preemption by lease revocation and checkpoint;
* the **simulated executor** (``ddlsched.live.sim_executor``, the *digital twin*): each job progresses at the rate the
  simulator's physics gives, in wall time scaled by the clock, so a service or a shadow run needs no GPUs.

Times in events are **run seconds**: seconds since the run's start on the run's clock (wall seconds × time scale),
the same unit as a trace's arrival times and every record. The executor never decides anything: it starts what it is
told on exactly the GPUs it is told, and reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from ddlsched.cluster.topology import Cluster
from ddlsched.workload.jobspec import JobSpec


class EventKind(StrEnum):
    """What an executor reports about a job."""

    STARTED = "started"
    """The job's workers are up and its first iteration began (``iterations`` = where it resumed)."""
    PROGRESS = "progress"
    """An iteration report: ``iterations`` done so far, ``iter_s`` the measured mean iteration time since the last."""
    CHECKPOINTED = "checkpointed"
    """After a revoked lease: the job saved its state at ``iterations`` and released its GPUs."""
    FINISHED = "finished"
    """The job completed all its iterations and released its GPUs."""
    FAILED = "failed"
    """The job's code failed (``reason``); its GPUs are released. Not retried by the executor."""
    LOST = "lost"
    """A worker died (process killed, node lost); its GPUs are released; the job may restart from its last
    checkpoint at ``iterations``."""


@dataclass(frozen=True, slots=True)
class ExecEvent:
    """One report from an executor (see :class:`EventKind`)."""

    kind: EventKind
    job_id: str
    time_s: float
    """Run seconds at which it happened."""
    attempt: int
    """The launch it belongs to (events of an older attempt of a restarted job are stale and ignored)."""
    iterations: float = 0.0
    iter_s: float | None = None
    reason: str = ""
    killed: bool = False
    """CHECKPOINTED only: the job did not checkpoint within the grace period and was killed (work since its last
    checkpoint is lost; ``iterations`` is that checkpoint)."""
    checkpoint: float | None = None
    """PROGRESS only, where the executor knows it: the iterations of the job's last saved checkpoint (a service
    stores it, so that a job running when the service dies resumes from there; docs/service.md)."""


@dataclass(frozen=True, slots=True)
class Launch:
    """Start (or restart) one job on exactly these GPUs."""

    job_id: str
    attempt: int
    """1 for the first launch, +1 for every restart after a preemption or a lost worker."""
    spec: JobSpec
    gpus: tuple[int, ...]
    servers: tuple[str, ...]
    """The server name of each GPU, in ``gpus`` order (rank r runs on ``servers[r]``)."""
    iterations: int
    """Total iterations the job runs (it resumes from its checkpoint, if any, and stops at this count)."""
    ideal_iter_s: float
    """The simulator's ideal iteration time (compute + communication alone, consolidated), run seconds."""
    predicted_iter_s: float
    """The physics' prediction of its iteration time on this placement with the jobs running now, run seconds."""
    options: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Executor(Protocol):
    """What the live execution model needs from whatever runs the jobs. Every method but :meth:`poll` returns at
    once; errors a caller can act on are raised as :class:`ddlsched.errors.InputError` / ``ConfigError`` (named
    cause), everything else the executor reports as FAILED or LOST events."""

    name: str

    def open(self, cluster: Cluster) -> None:
        """Connect and check that the cluster description matches what the executor runs on (name every
        mismatch); nothing is started yet. Raises on a mismatch or an unreachable backend."""

    def launch(self, launch: Launch) -> None:
        """Start the job's workers on the given GPUs (asynchronously: STARTED follows)."""

    def revoke(self, job_id: str, grace_s: float) -> None:
        """Preempt: end the job's lease; it checkpoints within ``grace_s`` run seconds, then its GPUs are released
        (CHECKPOINTED follows, ``killed`` if it had to be killed)."""

    def cancel(self, job_id: str) -> None:
        """Stop the job now without a checkpoint and release its GPUs (no further event for it)."""

    def poll(self, timeout_s: float) -> Sequence[ExecEvent]:
        """Events since the last call, in time order; waits up to ``timeout_s`` wall seconds for the first one."""

    def close(self) -> None:
        """Stop every job and release everything this executor started; afterwards nothing of it is running.
        Safe to call twice and after a failed :meth:`open`."""


__all__ = ["EventKind", "ExecEvent", "Executor", "Launch"]
