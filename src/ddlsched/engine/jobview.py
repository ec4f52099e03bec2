"""The read-only window a fluid-model policy gets on one job (time-dependent figures as of the engine's now).

Durations are clairvoyant knowledge: a view made for a run whose policy does not declare
``Requirements(clairvoyant=True)`` raises :class:`~ddlsched.errors.ClairvoyanceError` on ``spec`` (it carries the
trace's iterations or duration), ``total_iters``, ``ideal_run_s``, ``done_iters``, ``remaining_iters`` and
``remaining_ideal_s``. What a real scheduler knows at submission (GPUs, user, model, GPU type, arrival) and what the
run has shown (executed time, attained service, iteration time, status) stays readable."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddlsched._mypyc import mypyc_attr
from ddlsched.engine.state import JobStatus
from ddlsched.errors import ClairvoyanceError
from ddlsched.perf.base import IterationTime
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import ModelProfile

if TYPE_CHECKING:
    from ddlsched.engine.fluid import FluidJob
    from ddlsched.engine.model import EngineContext


@mypyc_attr(allow_interpreted_subclasses=True)
class JobView:
    __slots__ = ("_blind", "_ctx", "_s", "job_id")

    def __init__(self, state: FluidJob, ctx: EngineContext) -> None:
        self._s = state
        self._ctx = ctx
        self.job_id: str = state.spec.job_id
        self._blind: bool = not _clairvoyant_run(ctx)

    def _refuse(self, what: str) -> None:
        raise ClairvoyanceError(
            f"job {self.job_id}: the policy read {what!r}, a job duration, but is not clairvoyant; declare "
            "Requirements(clairvoyant=True) if it may know durations (docs/adding-a-policy.md)")

    def __repr__(self) -> str:
        return f"JobView({self.job_id}, {self.status.value}, gpus={self.num_gpus})"

    # static
    @property
    def spec(self) -> JobSpec:
        """The trace's job (clairvoyant: it carries iterations or duration; see ``user``, ``model_name``)."""
        if self._blind:
            self._refuse("spec")
        return self._s.spec

    @property
    def user(self) -> str | None:
        """The submitting user or tenant, where the trace has one."""
        return self._s.spec.user

    @property
    def model_name(self) -> str:
        """The job's model (or job name) as the trace gives it."""
        return self._s.spec.model

    @property
    def gpu_type(self) -> str | None:
        """The GPU type the job asked for, where the trace has one."""
        return self._s.spec.gpu_type

    @property
    def gpu_share(self) -> float | None:
        """The share of one GPU the job asked for when it was loaded as a share (``JobSpec.gpu_share``), else None."""
        return self._s.spec.gpu_share

    @property
    def profile(self) -> ModelProfile:
        return self._s.profile

    @property
    def num_gpus(self) -> int:
        return self._s.num_gpus

    @property
    def mem_mb(self) -> float:
        """Memory the job needs on each of its GPUs (the trace's figure, else its model profile's)."""
        return self._s.mem_mb

    @property
    def arrival_s(self) -> float:
        return self._s.arrival_s

    @property
    def seq(self) -> int:
        """Arrival order (ties broken by trace order)."""
        return self._s.seq

    @property
    def total_iters(self) -> float:
        if self._blind:
            self._refuse("total_iters")
        return self._s.work

    @property
    def ideal_iter_s(self) -> float:
        """Iteration time alone, consolidated, on the fastest GPU types (the clairvoyant size estimate)."""
        return self._s.ideal_iter_s

    @property
    def ideal_run_s(self) -> float:
        if self._blind:
            self._refuse("ideal_run_s")
        return self._s.ideal_run_s

    # dynamic
    @property
    def now(self) -> float:
        """The engine's current time."""
        return self._ctx.now

    @property
    def status(self) -> JobStatus:
        return self._s.status

    @property
    def gpus(self) -> tuple[int, ...]:
        return self._s.gpus

    @property
    def accum_steps(self) -> int:
        return self._s.accum_steps

    @property
    def preemptions(self) -> int:
        return self._s.preemptions

    @property
    def iter_time(self) -> IterationTime | None:
        return self._s.iter_time

    def _synced(self) -> FluidJob:
        s = self._s
        if s.status is JobStatus.RUNNING:
            s.sync(self._ctx.now)
        return s

    @property
    def done_iters(self) -> float:
        if self._blind:
            self._refuse("done_iters")
        return self._synced().done_iters

    @property
    def remaining_iters(self) -> float:
        if self._blind:
            self._refuse("remaining_iters")
        s = self._synced()
        return s.work - s.done_iters

    @property
    def remaining_ideal_s(self) -> float:
        """Remaining work in ideal seconds (clairvoyant; used by SJF/SRTF)."""
        if self._blind:
            self._refuse("remaining_ideal_s")
        return self.remaining_iters * self._s.ideal_iter_s

    @property
    def executed_s(self) -> float:
        """Wall time this job has held GPUs so far."""
        s = self._s
        if s.status is JobStatus.RUNNING:
            return s.run_s + max(0.0, self._ctx.now - s.last_t)
        return s.run_s

    @property
    def attained_gpu_s(self) -> float:
        """GPU-seconds of service received so far (Tiresias' 2D attained service)."""
        s = self._s
        if s.status is JobStatus.RUNNING:
            return s.attained_gpu_s + max(0.0, self._ctx.now - s.last_t) * len(s.gpus)
        return s.attained_gpu_s

    @property
    def waiting_s(self) -> float:
        """Time since the job last entered the queue (arrival or preemption); 0 while running."""
        s = self._s
        return self._ctx.now - s.wait_since if s.status is JobStatus.PENDING else 0.0

    @property
    def queued_s(self) -> float:
        """Total time spent pending so far."""
        return self._s.queue_s + self.waiting_s

    @property
    def last_start(self) -> float | None:
        return self._s.last_start


def _clairvoyant_run(ctx: object) -> bool:
    """Whether the run's policy declared it may know durations (a context without a policy: yes, e.g. a test's)."""
    req = getattr(getattr(ctx, "policy", None), "requirements", None)
    return req is None or bool(getattr(req, "clairvoyant", True))
