"""The execution-model interface the core drives, and what a policy declares it needs (:class:`Requirements`).

An execution model holds only what is specific to how jobs execute between events (fluid rates, task DAGs,
synchronisation rounds): per-job preparation, its own events, validating and applying decisions, and its view
for policies. The core (``engine/core.py``) owns time, the event heap, arrivals, the policy call, sampling,
progress, rejection and records. ``docs/engine.md`` lists what each model models.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from ddlsched._mypyc import mypyc_attr
from ddlsched.cluster.topology import Cluster
from ddlsched.engine.state import JobState
from ddlsched.workload.profiles import ModelCatalog


@dataclass(frozen=True)
class Requirements:
    """What a policy needs from the engine; the engine reads this, it never probes a policy.

    * ``model``: execution model name (``fluid``, ``taskdag``, ``rounds``);
    * ``preemptive``: consult the policy at every instant with an event (it may evict); otherwise the fluid model
      asks only when a pending job could start;
    * ``jobs_per_gpu``: > 1 lets GPUs host several jobs (GPU sharing; the fluid model then adds the sharing
      slowdown to the chosen network physics);
    * ``model_params``: defaults for the execution model's parameters (a user's ``--model-param`` wins);
    * ``gang``: a job needs all its GPUs at once (so a job larger than the cluster is rejected); relaxed-sync
      policies of the rounds model set it False (a round's tasks may share fewer GPUs);
    * ``clairvoyant``: the policy may know job durations (iterations, ideal run time, remaining work). False (the
      default): the fluid model's job views refuse to give them (``engine/jobview.py``, ``ClairvoyanceError``).
    """

    model: str = "fluid"
    preemptive: bool = False
    jobs_per_gpu: int = 1
    gang: bool = True
    clairvoyant: bool = False
    model_params: Mapping[str, Any] = field(default_factory=dict)


class EngineContext(Protocol):
    """What an execution model may ask of the core."""

    now: float
    auditing: bool

    def push(self, t: float, kind: int, key: str = "", version: int = 0) -> None: ...
    def complete(self, st: JobState) -> None: ...
    def audit(self, kind: str, job_id: str, value: float = 0.0) -> None: ...


SHARE_EPS = 1e-9
"""Tolerance of the share capacity test (shares read from a trace, e.g. 0.1 + 0.2 + 0.7)."""


def share_fits(new_share: float, resident_shares: Sequence[float], jobs_per_gpu: int) -> bool:
    """Whether a job may join a GPU whose resident jobs hold ``resident_shares`` (``0.0``: a whole-GPU job; a share
    job holds its ``JobSpec.gpu_share``), under a policy that allows ``jobs_per_gpu`` jobs per GPU (docs/traces.md
    "Fractional GPUs and GPU sharing"): a share job joins share jobs while the shares sum to ≤ 1, however many
    they are; any other mix (a whole-GPU job on either side) is the pair rule, fewer than ``jobs_per_gpu``
    residents. An idle GPU takes any job. Memory is checked separately."""
    if not resident_shares:
        return True
    if new_share > 0.0 and min(resident_shares) > 0.0:
        return sum(resident_shares) + new_share <= 1.0 + SHARE_EPS
    return len(resident_shares) < jobs_per_gpu


@dataclass
class ModelSettings:
    """Engine options as resolved for one run (see :func:`ddlsched.engine.run.run_policy`)."""

    perf_model: str | None = None
    perf_params: dict[str, Any] = field(default_factory=dict)
    model_params: dict[str, Any] = field(default_factory=dict)
    restart_penalty_s: float = 30.0
    seed: int = 0


@mypyc_attr(allow_interpreted_subclasses=True)
class ExecutionModel(ABC):
    """Base class of the execution models (fluid, task DAG, rounds)."""

    name: ClassVar[str]
    description: ClassVar[str]
    decision_types: ClassVar[tuple[type, ...]]
    options: ClassVar[frozenset[str]]
    """Engine options that apply to this model (others given explicitly are an error)."""
    stale_is_final: bool = False
    """Whether an event :meth:`is_stale` calls stale stays stale for the rest of the run (a per-job version that
    only grows). The core may then drop stale events from its heap in bulk instead of one by one when they come up
    (docs/engine.md, "Cost per event")."""
    nonphysical: frozenset[str] = frozenset()
    """Run-time causes this run may drive below 0 (only a deliberately non-physical mode sets it, e.g. the task-DAG
    model's ``poll_defect``); every other cause stays checked ≥ 0 at every finish."""

    def __init__(self, cluster: Cluster, catalog: ModelCatalog, requirements: Requirements,
                 settings: ModelSettings) -> None:
        self.cluster = cluster
        self.catalog = catalog
        self.requirements = requirements
        self.settings = settings
        self.rng = random.Random(f"policy-{settings.seed}")
        self.ctx: EngineContext

    def bind(self, ctx: EngineContext) -> None:
        self.ctx = ctx

    # ---------------------------------------------------------------- per job
    @abstractmethod
    def new_state(self, spec: Any, profile: Any, seq: int) -> JobState:
        """The model's state object for a job."""

    @abstractmethod
    def prepare(self, st: JobState) -> str:
        """Fill static per-job data (``work``, ``ideal_iter_s``); return a rejection reason or ''."""

    @abstractmethod
    def arrive(self, st: JobState) -> None:
        """The job arrived: queue it."""

    # ---------------------------------------------------------------- events and passes
    def is_stale(self, kind: int, key: str, version: int) -> bool:
        """Whether a popped event was superseded (lazy invalidation)."""
        return False

    @abstractmethod
    def on_event(self, kind: int, key: str, version: int) -> None:
        """Process one of the model's own events at the core's ``now``."""

    def hold(self, t_next: float) -> bool:
        """Live models only (their time is a clock's, not the heap's): wait in real time until ``t_next`` (the core's
        next event or arrival, ``inf`` if none) or until something happens outside the run (an executor reports a job,
        a job is submitted through :meth:`ddlsched.engine.core.Core.submit`), whichever comes first. Return True when
        the outside world pushed events or arrivals (the core then looks again), False to go on to ``t_next``
        (``inf``: the run is over). A simulation never waits: the base class is not called (the core checks whether a
        model overrides it)."""
        return False

    def settle(self) -> None:  # noqa: B027 - optional hook
        """Work that happens at an instant after its events and arrivals, before the policy is asked (e.g. instant
        synchronisations, re-timing after resources were released)."""

    @abstractmethod
    def wants_pass(self, woken: bool) -> bool:
        """Whether the policy must be asked at this instant (``woken``: a policy wake-up fired)."""

    @abstractmethod
    def view(self) -> Any:
        """The read-only view the policy decides from."""

    @abstractmethod
    def apply(self, decisions: Sequence[Any]) -> bool:
        """Validate and apply the decisions of one pass (``WakeAt`` excluded; possibly none); return whether any
        changed the state. Called after every pass."""

    # ---------------------------------------------------------------- observation
    @abstractmethod
    def busy_gpus(self) -> int:
        """GPUs held by at least one job right now."""

    @abstractmethod
    def counts(self) -> tuple[int, int]:
        """(pending, running) jobs right now."""

    @abstractmethod
    def unfinished(self) -> list[str]:
        """Ids of arrived jobs that have not finished, pending first in arrival order."""

    def physics(self) -> tuple[str, dict[str, Any]]:
        """(name, parameters) of the physics the run used, for the summary."""
        return self.settings.perf_model or "", dict(self.settings.perf_params)

    def mechanisms(self) -> dict[str, float]:
        """Counts of the model's mechanisms that fired (``ddlsched.vocabulary.MECHANISMS``)."""
        return {}

    def packs_shares(self) -> bool:
        """Whether jobs with a ``JobSpec.gpu_share`` run as shares of a GPU (:func:`share_fits`); otherwise each
        runs on a whole GPU, and the run says so in a note (``engine/run.py``)."""
        return False

    def finish_checks(self) -> None:  # noqa: B027 - optional hook
        """Invariants checked once at the end of the run (e.g. nothing left allocated)."""

    def release(self) -> None:  # noqa: B027 - optional hook
        """The run is over and its result built: drop the per-job state. A model whose job states sit in reference
        cycles (a state and its view) breaks them here, so that they are freed by reference counting at once
        rather than by the next full cyclic collection, which costs ≈ 3× as much (docs/engine.md, "Memory:
        releasing the per-job state")."""
