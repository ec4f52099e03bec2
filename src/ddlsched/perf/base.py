"""The pluggable per-iteration time model ("physics") interface.

A perf model is *incremental*: the engine tells it when a job is placed (:meth:`PerfModel.add`) and when it
leaves (:meth:`PerfModel.remove`); each call returns the new :class:`IterationTime` of every job whose time
changed (the added job included). Models keep a resource → jobs index so a change only touches the jobs
connected to it (docs/physics.md §9).

Iteration time = compute + communication, with no overlap (docs/physics.md §1, docs/policies/sjf-bco.md §2 eq. 8,
docs/policies/adadual.md §2):

* compute: the slowest worker paces the ring, ``max_g compute_s / speed(model, type(g))``;
* communication: model specific (see each module).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ddlsched._mypyc import mypyc_attr
from ddlsched.cluster.topology import Cluster
from ddlsched.workload.profiles import ModelProfile

# The physics a fluid or rounds simulation runs with when none is named: the most accurate trace-level model
# measured against real ring all-reduce traffic on the emulated cluster (docs/validation.md, first table).
DEFAULT_PERF_MODEL = "phased_tcp"


@dataclass(slots=True, init=False, unsafe_hash=True)
class Placement:
    """A running job as the physics sees it. Made per start and read per event: a slotted dataclass with its
    ``__init__`` written out, so the compiled build makes it a native class (as the decisions,
    ``ddlsched.engine.decisions``); not frozen at run time, and nothing changes one once made."""

    job_id: str
    gpus: tuple[int, ...]
    profile: ModelProfile
    accum_steps: int = 1  # gradient-accumulation steps, sub-batch = batch / accum_steps (docs/physics.md §8)
    share: float = 0.0  # the share of its GPU a share job runs on (JobSpec.gpu_share, packed by share); 0: whole GPU

    def __init__(self, job_id: str, gpus: tuple[int, ...], profile: ModelProfile, accum_steps: int = 1,
                 share: float = 0.0) -> None:
        self.job_id = job_id
        self.gpus = gpus
        self.profile = profile
        self.accum_steps = accum_steps
        self.share = share

    @property
    def num_gpus(self) -> int:
        return len(self.gpus)


@dataclass(slots=True, init=False, unsafe_hash=True)
class IterationTime:
    """One iteration of a job: compute and communication seconds (no overlap). A value, as :class:`Placement`."""

    compute_s: float
    comm_s: float

    def __init__(self, compute_s: float, comm_s: float) -> None:
        self.compute_s = compute_s
        self.comm_s = comm_s

    @property
    def total_s(self) -> float:
        return self.compute_s + self.comm_s


def ring_bytes_per_hop(grad_bytes: float, n: int) -> float:
    """Bytes each ring hop carries in one all-reduce: 2(n−1)/n · M (docs/physics.md §2)."""
    return 0.0 if n <= 1 else 2.0 * (n - 1) / n * grad_bytes


def compute_time(cluster: Cluster, placement: Placement) -> float:
    """Per-iteration compute of the slowest worker: ``compute_s / speed(model, gpu type)``."""
    prof = placement.profile
    if len(cluster.gpu_types) == 1:  # one GPU type: no need to look at the placement
        (t, gt), = cluster.gpu_types.items()
        return prof.compute_s / prof.speed_on(t, gt.speed)
    types = {cluster.gpu_type[g] for g in placement.gpus}
    slowest = min(prof.speed_on(t, cluster.gpu_types[t].speed) for t in types)
    return prof.compute_s / slowest


@mypyc_attr(allow_interpreted_subclasses=True)
class PerfModel(ABC):
    """Base class of every physics model. Subclasses set ``name`` and ``description``."""

    name: ClassVar[str]
    description: ClassVar[str]

    def __init__(self, cluster: Cluster, **params: Any) -> None:
        if params:
            raise TypeError(f"perf model {self.name!r}: unknown parameter(s) {sorted(params)}")
        self.cluster = cluster
        self._placements: dict[str, Placement] = {}
        self._times: dict[str, IterationTime] = {}

    # -- the incremental protocol -------------------------------------------------------------
    @abstractmethod
    def add(self, placement: Placement) -> Mapping[str, IterationTime]:
        """Register a newly started job; return the times of every job whose time changed (incl. it)."""

    @abstractmethod
    def remove(self, job_id: str) -> Mapping[str, IterationTime]:
        """Unregister a job; return the new times of the jobs that changed because it left."""

    # -- time (optional): models whose times also change as time passes ---------------------------------------
    def advance(self, now: float) -> Mapping[str, IterationTime]:
        """Tell the model the current time (seconds, never decreasing): before every ``add``/``remove``, and at
        :meth:`next_change`. Returns the jobs whose time changed because time passed (``phased_tcp``: a phase
        lock that ended, docs/physics.md §15). By default time changes nothing."""
        return {}

    def next_change(self) -> float:
        """The earliest time at which a job's iteration time changes with no ``add``/``remove`` (``math.inf``:
        none); a caller that passes the clock calls :meth:`advance` then."""
        return math.inf

    def isolated(self, placement: Placement) -> IterationTime:
        """The job's time with this placement alone in the cluster (no state change)."""
        return type(self)(self.cluster, **self.params()).add(placement)[placement.job_id]

    def alone(self, job_id: str) -> IterationTime:
        """A placed job's iteration if it ran alone on its placement: no other job on any link or GPU, no gradient
        accumulation (the reference the engine splits contention and sharing from)."""
        p = self._placements[job_id]
        return self.isolated(Placement(p.job_id, p.gpus, p.profile))

    def params(self) -> dict[str, Any]:
        """Constructor parameters (so a model can be copied or reported)."""
        return {}

    def current(self, job_id: str) -> IterationTime:
        return self._times[job_id]

    def running(self) -> Mapping[str, Placement]:
        return self._placements
