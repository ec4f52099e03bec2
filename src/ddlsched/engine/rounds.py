"""The rounds execution model: heterogeneous GPUs with relaxed fixed-scale synchronisation (Hare; docs/policies/
hare.md) — paper scale.

* Job j has R_j rounds of n_j tasks. A task of j on a GPU of type k takes ``p[j,k] = m_j · compute_j / speed(j,k)``.
  The tasks of a round are independent: any GPU, any order, several back to back on one GPU (``RunTask``). When a
  round's last task ends, its gradients are synchronised: a ring all-reduce over the distinct GPUs the round used,
  alone on the network, from the run's physics model (``--perf-model``; no synchronisation for a round on one GPU,
  so a 1-GPU job never pays any; contention between synchronisations is not modelled). Then the next round is
  released; the job completes when its last round is synchronised.
* A GPU runs one task at a time. A task of a job different from the GPU's previous one first pays the switching
  overhead ``switch_s`` seconds if set, else ``switch_frac`` × one real task on a reference GPU (model parameters).
* Gang policies instead ``Start`` a job on n_j GPUs (a lease, held through synchronisation): each of its rounds runs
  one task per leased GPU as soon as the round is released and they are idle; ``Preempt`` revokes the lease.
* Trace conversion (the same for every model): R_real = duration / reference iteration (compute on a reference GPU
  + communication on the consolidated placement; for a relaxed-sync job larger than the cluster, on all its GPUs).
  To bound the event count, R_real rounds are simulated as
  R_j = min(``max_rounds``, ⌈R_real⌉) coarse rounds of m_j = R_real / R_j real rounds each (task and
  synchronisation times × m_j); coarse rounds rebalance tasks less often than real ones (documented
  approximation).

Ideal (a lower bound under relaxed synchronisation, which may run a round's tasks on fewer GPUs): per real round,
the least over GPU sets S — for each speed threshold and k = 1..n, the consolidated k GPUs whose type is at least
that fast — of max(n·p_ref / Σ_{g∈S} speed_g, p_ref / max_{g∈S} speed_g) + synchronisation alone on S.

Run-time accounts per round (docs/metrics.md): the round's active time (release → synchronised, counting only the
time the job was active) exceeds the ideal round by X; X is attributed along the round's critical path (its last
task) in this order, each part capped by what is left: switching overhead of that task, heterogeneity (its task
time over the fastest type's), spread (synchronisation over the ideal's), and the rest — waiting for GPUs held by
other tasks or running fewer tasks at a time — as sharing.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left, insort
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from types import MappingProxyType
from typing import Any

from ddlsched.cluster.topology import Cluster
from ddlsched.engine.decisions import Preempt, RunTask, Start
from ddlsched.engine.ideal import ideal_times
from ddlsched.engine.model import ExecutionModel, ModelSettings, Requirements
from ddlsched.engine.state import JobState, JobStatus
from ddlsched.errors import ConfigError, SimulationError
from ddlsched.perf import DEFAULT_PERF_MODEL, make_perf_model
from ddlsched.perf.base import Placement
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import ModelCatalog, ModelProfile

DONE, RELEASE = 0, 1
_EPS = 1e-9
_seq = attrgetter("seq")


@dataclass(slots=True, eq=False)
class RoundJob(JobState):
    """A job in the rounds model (times in seconds; task and synchronisation times are per coarse round)."""

    n: int = 0
    weight: float = 1.0
    rounds: int = 0
    scale: float = 1.0
    task_s: dict[str, float] = field(default_factory=dict)
    ref_task_s: float = 0.0
    switch_cost: float = 0.0
    ideal_round: float = 0.0  # ideal per coarse round
    ideal_sync: float = 0.0
    p_best: float = 0.0
    arrived: bool = False
    round: int = 0
    ready: int = 0
    running: int = 0
    done_in_round: int = 0
    syncing: bool = False
    sync_now: float = 0.0
    tasks_done: int = 0
    attained_ref_s: float = 0.0
    gpu_busy_s: float = 0.0
    lease: tuple[int, ...] | None = None
    active_since: float | None = None
    last_service_s: float = 0.0
    wait_since: float = 0.0
    switches: int = 0
    release_active: float = 0.0
    gpus_used: set[int] = field(default_factory=set)
    round_gpus: list[int] = field(default_factory=list)
    on_gpus: set[int] = field(default_factory=set)  # GPUs running one of its tasks now
    sync_gpus: tuple[int, ...] | None = None  # the distinct GPUs of its last synchronised round, and
    sync_base: float = 0.0  # that round's sync_alone (a gang job syncs on the same GPUs round after round)

    @property
    def done(self) -> bool:
        return self.finish is not None

    @property
    def active(self) -> bool:
        return self.running > 0 or self.syncing or self.lease is not None

    def active_total(self, now: float) -> float:
        return self.run_s + (now - self.active_since if self.active_since is not None else 0.0)


class RoundJobView:
    """Read-only view of a rounds-model job for policies."""

    __slots__ = ("_j",)

    def __init__(self, job: RoundJob) -> None:
        self._j = job

    def __repr__(self) -> str:
        return f"RoundJobView({self.job_id})"

    @property
    def job_id(self) -> str:
        return self._j.spec.job_id

    @property
    def seq(self) -> int:
        """arrival order"""
        return self._j.seq

    @property
    def arrival_s(self) -> float:
        """submission time"""
        return self._j.spec.arrival_s

    @property
    def n(self) -> int:
        """tasks per round (GPUs asked for)"""
        return self._j.n

    @property
    def weight(self) -> float:
        return self._j.weight

    @property
    def rounds(self) -> int:
        """coarse rounds"""
        return self._j.rounds

    @property
    def round(self) -> int:
        """index of the current round"""
        return self._j.round

    @property
    def remaining_rounds(self) -> int:
        return self._j.rounds - self._j.round

    @property
    def ready(self) -> int:
        """released, not yet started tasks of the current round"""
        return self._j.ready

    @property
    def running(self) -> int:
        """tasks running now"""
        return self._j.running

    @property
    def done_in_round(self) -> int:
        return self._j.done_in_round

    @property
    def syncing(self) -> bool:
        return self._j.syncing

    @property
    def task_s(self) -> Mapping[str, float]:
        """task seconds per GPU type (read-only)"""
        return MappingProxyType(self._j.task_s)

    @property
    def ref_task_s(self) -> float:
        """task seconds on a reference GPU"""
        return self._j.ref_task_s

    @property
    def sync_s(self) -> float:
        """synchronisation seconds of a round on its ideal GPUs"""
        return self._j.ideal_sync

    @property
    def switch_s(self) -> float:
        """switching overhead when a GPU changes to this job"""
        return self._j.switch_cost

    @property
    def attained_ref_s(self) -> float:
        """reference-GPU seconds of tasks done"""
        return self._j.attained_ref_s

    @property
    def gpu_busy_s(self) -> float:
        """wall GPU-seconds used (tasks and switches)"""
        return self._j.gpu_busy_s

    @property
    def last_service_s(self) -> float:
        """length of its last active stretch"""
        return self._j.last_service_s

    @property
    def wait_since(self) -> float:
        """when its current inactive stretch began"""
        return self._j.wait_since

    @property
    def lease(self) -> tuple[int, ...] | None:
        """GPUs leased to the job (gang policies), or None"""
        return self._j.lease

    @property
    def finished(self) -> bool:
        """the job has completed"""
        return self._j.finish is not None

    @property
    def running_gpus(self) -> tuple[int, ...]:
        """GPUs running one of its tasks now"""
        return tuple(sorted(self._j.on_gpus))

    @property
    def remaining_ref_s(self) -> float:
        """Clairvoyant remaining stand-alone time on n reference GPUs."""
        j = self._j
        left = (j.rounds - j.round) * (j.ref_task_s + j.ideal_sync)
        return left - (j.done_in_round + j.running) / max(1, j.n) * j.ref_task_s


class RoundsView:
    """What a rounds-model policy sees at a pass (nothing here changes state)."""

    def __init__(self, model: RoundsModel) -> None:
        self._m = model

    @property
    def now(self) -> float:
        return self._m.ctx.now

    @property
    def cluster(self) -> Cluster:
        return self._m.cluster

    @property
    def rng(self) -> random.Random:
        return self._m.rng

    @property
    def jobs(self) -> list[RoundJobView]:
        """Arrived, unfinished jobs in arrival order."""
        return self._m.active_views()

    @property
    def all_jobs(self) -> list[RoundJobView]:
        """Every job of the run that can run on this cluster, future arrivals included, in arrival order — for
        offline (clairvoyant) policies only, such as ``hare-alg1``."""
        return self._m.all_views()

    @property
    def finished_count(self) -> int:
        """How many jobs have completed so far (changes exactly when one finishes)."""
        return self._m.finished_count

    @property
    def job_events(self) -> bool:
        """A job arrived or finished, or a GPU outside any lease became idle, since the last pass."""
        return self._m.job_events

    def idle_gpus(self) -> list[int]:
        """GPUs with no running task and no lease, ascending (a new list)."""
        return list(self._m.idle_sorted())

    def running_gpus(self) -> set[int]:
        """The GPUs running a task (a new set)."""
        return set(self._m.tasked)

    def idle_by_type(self) -> dict[str, list[int]]:
        """The idle GPUs per GPU type, ascending (new lists; every type of the cluster, possibly empty)."""
        return {t: list(gs) for t, gs in self._m._idle_t.items()}

    def idle_count(self) -> int:
        """How many GPUs have no running task and no lease."""
        return len(self._m.idle_sorted())

    @property
    def ready_jobs(self) -> list[RoundJobView]:
        """The jobs of :attr:`jobs` with released, unstarted tasks (``ready > 0``), in arrival order."""
        return self._m.ready_views()

    def free_times(self) -> dict[str, list[float]]:
        """Per GPU type, :meth:`free_at` of its GPUs outside any lease, ascending (new lists)."""
        return self._m.free_times()

    def running_on(self, gpu: int) -> str | None:
        """Id of the job whose task runs on ``gpu``, or None."""
        return self._m.gpu_job[gpu]

    def free_at(self, gpu: int) -> float:
        """When ``gpu`` finishes its current task (now if idle)."""
        m = self._m
        return m.gpu_until[gpu] if m.gpu_job[gpu] is not None else m.ctx.now

    def leased_by(self, gpu: int) -> str | None:
        return self._m.gpu_lease[gpu]

    def gpu_type(self, gpu: int) -> str:
        return self._m.cluster.gpu_type[gpu]

    def freed_since(self, mark: int) -> tuple[list[int], int]:
        """The GPUs that became idle (no task, no lease) after ``mark`` (0 at the start of a run), in order —
        a GPU may since have been taken again — and the mark to pass next time."""
        log = self._m.freed
        return log[mark:], len(log)

    def last_ran(self, job: RoundJobView) -> list[int]:
        """The GPUs whose last task was one of ``job``'s (no switching overhead for it there), ascending."""
        return sorted(self._m.last_of.get(job.job_id, ()))

    def switch_cost(self, job: RoundJobView, gpu: int) -> float:
        return 0.0 if self._m.gpu_last[gpu] == job.job_id else job.switch_s

    def task_time(self, job: RoundJobView, gpu: int) -> float:
        return job._j.task_s[self._m.cluster.gpu_type[gpu]]


class RoundsModel(ExecutionModel):
    name = "rounds"
    description = "tasks of a round on any GPUs (relaxed synchronisation) or gang leases; heterogeneous; paper scale"
    decision_types = (RunTask, Start, Preempt)
    options = frozenset({"perf_model", "perf_params", "model_params"})

    def __init__(self, cluster: Cluster, catalog: ModelCatalog, requirements: Requirements,
                 settings: ModelSettings) -> None:
        super().__init__(cluster, catalog, requirements, settings)
        mp = dict(settings.model_params)
        unknown = sorted(set(mp) - {"max_rounds", "switch_frac", "switch_s"})
        if unknown:
            raise ConfigError(f"unknown model parameter(s) {unknown} for the rounds model; it takes max_rounds, "
                              "switch_frac, switch_s", field="model_param")
        self.max_rounds = mp.get("max_rounds", 100)
        self.switch_frac = mp.get("switch_frac", 0.05)
        self.switch_s = mp.get("switch_s")
        if isinstance(self.max_rounds, bool) or not isinstance(self.max_rounds, int) or self.max_rounds < 1:
            raise ConfigError("max_rounds must be a positive integer", field="model_param")
        for name, v in (("switch_frac", self.switch_frac), ("switch_s", self.switch_s)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v)
                                  or v < 0):
                raise ConfigError(f"{name} must be a finite number >= 0", field="model_param")
        self.perf = make_perf_model(settings.perf_model or DEFAULT_PERF_MODEL, cluster, **settings.perf_params)
        G = cluster.num_gpus
        self.gpu_job: list[str | None] = [None] * G
        self.gpu_until: list[float] = [0.0] * G
        self.gpu_last: list[str | None] = [None] * G
        self.gpu_lease: list[str | None] = [None] * G
        self.gpu_task: list[tuple[float, float, float]] = [(0.0, 0.0, 0.0)] * G  # (active at start, switch, p)
        self.jobs: dict[str, RoundJob] = {}
        self.views: dict[str, RoundJobView] = {}
        self.job_events = True
        # incremental state (docs/engine.md, "Rounds model: incremental bookkeeping"): the arrived, unfinished
        # jobs in arrival order, how many of them are active, the idle GPUs, the busy unleased GPUs' end times per
        # type, and the leased jobs whose lease may start a round at the next pass
        self._arrived: dict[str, RoundJob] = {}
        self._active: list[RoundJob] = []
        self._active_views: list[RoundJobView] = []
        self._active_dirty = True
        self._n_active = 0
        self._idle: list[int] = list(range(G))  # ascending
        self._idle_t: dict[str, list[int]] = {t: [] for t in cluster.gpu_types}  # the same, per GPU type
        for g in range(G):
            self._idle_t[cluster.gpu_type[g]].append(g)
        self._ready: dict[str, RoundJob] = {}  # jobs with released, unstarted tasks
        self.finished_count = 0
        self.tasked: set[int] = set()  # GPUs running a task
        self.freed: list[int] = []  # every GPU that became idle, in order (RoundsView.freed_since)
        self.last_of: dict[str, set[int]] = {}  # job -> GPUs whose last task was the job's (gpu_last inverted)
        self._ready_views: list[RoundJobView] | None = None
        self._until: dict[str, list[float]] = {t: [] for t in cluster.gpu_types}
        self._type_gpus: dict[str, int] = {t: 0 for t in cluster.gpu_types}
        for g in range(G):
            self._type_gpus[cluster.gpu_type[g]] += 1
        self._n_leased = {t: 0 for t in cluster.gpu_types}  # leased GPUs per type
        self._lease_dirty: dict[str, RoundJob] = {}
        self._busy = 0
        self._ideal_cache: dict[tuple[str, int], tuple[float, float, float] | None] = {}
        self._view = RoundsView(self)
        self._mech = {"rounds": 0, "relaxed_rounds": 0, "switches": 0, "leases": 0, "revocations": 0}

    def mechanisms(self) -> dict[str, float]:
        return dict(self._mech)

    # ---------------------------------------------------------------- helpers
    def sync_alone(self, profile: ModelProfile, gpus: Sequence[int]) -> float:
        """One real round's synchronisation alone on ``gpus`` (distinct GPUs; 0 for one GPU)."""
        gs = tuple(sorted(set(gpus)))
        if len(gs) <= 1:
            return 0.0
        return self.perf.isolated(Placement("__sync__", gs, profile)).comm_s

    def _speed(self, profile: ModelProfile, t: str) -> float:
        return profile.speed_on(t, self.cluster.gpu_types[t].speed)

    def _ideal(self, profile: ModelProfile, n: int) -> tuple[float, float, float] | None:
        """(reference round, ideal round, its synchronisation) per real round; see the module docstring."""
        key = (profile.name, n)
        if key in self._ideal_cache:
            return self._ideal_cache[key]
        c = self.cluster
        width = min(n, c.num_gpus)  # a relaxed-sync job larger than the cluster runs its rounds on fewer GPUs
        ref = ideal_times(c, width, profile.compute_s, lambda t: self._speed(profile, t),
                          lambda gpus: self.sync_alone(profile, gpus))
        out: tuple[float, float, float] | None = None
        if ref is not None:
            best = (math.inf, 0.0)
            speeds = {t: self._speed(profile, t) for t in c.gpu_types}
            nics = sorted({c.nic_Bps(s) for s in range(c.num_servers)}, reverse=True)
            for s in sorted(set(speeds.values()), reverse=True):
                allowed = {t for t, v in speeds.items() if v >= s}
                for k in range(1, width + 1):
                    for b in nics if k > 1 else nics[-1:]:
                        gpus = c.consolidated_gpus(k, types=allowed, min_nic_Bps=b)
                        if gpus is None:
                            continue
                        sp = [speeds[c.gpu_type[g]] for g in gpus]
                        compute = max(n * profile.compute_s / sum(sp), profile.compute_s / max(sp))
                        sync = self.sync_alone(profile, gpus)
                        if compute + sync < best[0]:
                            best = (compute + sync, sync)
            # A round may mix types (fast GPUs taking several tasks while slow ones take one), which no set above
            # holds: bound compute by the k fastest GPUs and synchronisation by the tightest k GPUs of any type,
            # each on its own, so the ideal stays below every round (it was not: issue 30, "below its ideal").
            by_speed = sorted((speeds[c.gpu_type[g]] for g in range(c.num_gpus)), reverse=True)
            top = 0.0
            for k in range(1, width + 1):
                top += by_speed[k - 1]
                compute = max(n * profile.compute_s / top, profile.compute_s / by_speed[0])
                sync = math.inf
                for b in nics if k > 1 else nics[-1:]:
                    gpus = c.consolidated_gpus(k, min_nic_Bps=b)
                    if gpus is not None:
                        sync = min(sync, self.sync_alone(profile, gpus))
                if compute + sync < best[0]:
                    best = (compute + sync, sync)
            out = (ref.reference_iter_s, best[0], best[1])
        self._ideal_cache[key] = out
        return out

    def _refresh_active(self) -> list[RoundJob]:
        if self._active_dirty:
            self._active = list(self._arrived.values())
            views = self.views
            self._active_views = [views[j.spec.job_id] for j in self._active]
            self._active_dirty = False
        return self._active

    def all_views(self) -> list[RoundJobView]:
        return [self.views[j.job_id] for j in self.jobs.values() if j.rounds > 0 and not j.reject_reason]

    def active_views(self) -> list[RoundJobView]:
        self._refresh_active()
        return list(self._active_views)

    def idle_sorted(self) -> list[int]:
        """The idle GPUs (no task, no lease), ascending — kept up to date, do not modify."""
        return self._idle

    def ready_views(self) -> list[RoundJobView]:
        """Views of the jobs with released, unstarted tasks (``ready > 0``), in arrival order (a new list)."""
        if self._ready_views is None:
            views = self.views
            self._ready_views = [views[j.job_id] for j in sorted(self._ready.values(), key=_seq)]
        return list(self._ready_views)

    def _set_ready(self, job: RoundJob, ready: int) -> None:
        if (ready > 0) != (job.ready > 0):
            if ready > 0:
                self._ready[job.job_id] = job
            else:
                del self._ready[job.job_id]
            self._ready_views = None
        job.ready = ready

    def free_times(self) -> dict[str, list[float]]:
        """Per GPU type, when each of its GPUs outside any lease is free (now if idle), ascending (new lists)."""
        now = self.ctx.now
        out: dict[str, list[float]] = {}
        for t, until in self._until.items():
            n_idle = self._type_gpus[t] - self._n_leased[t] - len(until)
            out[t] = [now] * n_idle + until if not until or until[0] >= now else sorted([now] * n_idle + until)
        return out

    def _set_active(self, job: RoundJob) -> None:
        now = self.ctx.now
        if job.active and job.active_since is None:
            job.active_since = now
            self._n_active += 1
        elif not job.active and job.active_since is not None:
            self._n_active -= 1
            stretch = now - job.active_since
            job.run_s += stretch
            job.last_service_s = stretch
            job.active_since = None
            job.wait_since = now

    # ---------------------------------------------------------------- per job
    def new_state(self, spec: JobSpec, profile: ModelProfile, seq: int) -> RoundJob:
        job = RoundJob(spec=spec, profile=profile, seq=seq, weight=spec.weight)
        self.jobs[spec.job_id] = job
        self.views[spec.job_id] = RoundJobView(job)
        return job

    def prepare(self, st: JobState) -> str:
        assert isinstance(st, RoundJob)
        spec, prof, c = st.spec, st.profile, self.cluster
        if self.requirements.gang and spec.num_gpus > c.num_gpus:
            return f"asks for {spec.num_gpus} GPUs at once (gang policy); the cluster has {c.num_gpus}"
        ideal = self._ideal(prof, spec.num_gpus)
        assert ideal is not None
        reference, ideal_round, ideal_sync = ideal
        real = float(spec.iterations) if spec.iterations is not None else spec.duration_s / reference  # type: ignore[operator]
        rounds = max(1, min(self.max_rounds, math.ceil(real - 1e-9)))
        m = real / rounds
        st.n, st.rounds, st.scale, st.work = spec.num_gpus, rounds, m, real
        st.task_s = {t: m * prof.compute_s / self._speed(prof, t) for t in c.gpu_types}
        st.ref_task_s = m * prof.compute_s
        st.p_best = min(st.task_s.values())
        st.switch_cost = self.switch_s if self.switch_s is not None else self.switch_frac * prof.compute_s
        st.ideal_iter_s = ideal_round
        st.ideal_round, st.ideal_sync = m * ideal_round, m * ideal_sync
        return ""

    def arrive(self, st: JobState) -> None:
        assert isinstance(st, RoundJob)
        st.arrived = True
        self._set_ready(st, st.n)
        st.wait_since = self.ctx.now
        st.release_active = 0.0
        live = self._arrived
        if live and next(reversed(live.values())).seq > st.seq:  # not in arrival order: keep the list sorted
            items = sorted([*live.values(), st], key=lambda j: j.seq)
            live.clear()
            live.update((j.spec.job_id, j) for j in items)
        else:
            live[st.spec.job_id] = st
        self._active_dirty = True
        self.job_events = True

    # ---------------------------------------------------------------- events
    def on_event(self, kind: int, key: str, version: int) -> None:
        job = self.jobs[key]
        if kind == DONE:
            self._on_done(job, version)
        else:
            self._on_release(job)

    def wants_pass(self, woken: bool) -> bool:
        return True

    def view(self) -> RoundsView:
        return self._view

    def apply(self, decisions: Sequence[Any]) -> bool:
        for d in decisions:
            if isinstance(d, Preempt):
                job = self._live(d.job_id)
                if job.lease is None:
                    raise SimulationError(f"t={self.ctx.now}: Preempt {job.job_id}: it holds no lease")
                self._drop_lease(job)
                self._mech["revocations"] += 1
                job.preemptions += 1
                self._set_active(job)
        for d in decisions:
            if isinstance(d, Start):
                self._lease(d)
            elif isinstance(d, RunTask):
                job = self._live(d.job_id)
                if self.gpu_lease[d.gpu] not in (None, job.job_id):
                    raise SimulationError(f"t={self.ctx.now}: GPU {d.gpu} is leased to {self.gpu_lease[d.gpu]}")
                self._start_task(job, d.gpu)
        if self._lease_dirty:
            # only a leased job whose lease, round or tasks changed since the last pass can start a round now;
            # in arrival order, as a scan of every active job would
            dirty = sorted(self._lease_dirty.values(), key=lambda j: j.seq)
            self._lease_dirty.clear()
            for job in dirty:
                if job.lease is not None and not job.done:
                    self._run_lease(job)
        self.job_events = False
        return bool(decisions)

    # ---------------------------------------------------------------- observation
    def busy_gpus(self) -> int:
        return self._busy

    def counts(self) -> tuple[int, int]:
        return len(self._arrived) - self._n_active, self._n_active

    def unfinished(self) -> list[str]:
        return [j.job_id for j in self.jobs.values() if j.arrived and not j.done]

    def physics(self) -> tuple[str, dict[str, Any]]:
        return self.perf.name, {**self.perf.params(), "max_rounds": self.max_rounds,
                                "switch_frac": self.switch_frac, "switch_s": self.switch_s}

    def release(self) -> None:
        for jobs in (self.jobs, self.views, self._arrived, self._ready, self._lease_dirty, self.last_of):
            jobs.clear()
        self._active.clear()
        self._active_views.clear()
        self._ready_views = None

    def finish_checks(self) -> None:
        if self._busy or any(g is not None for g in self.gpu_job) or any(g is not None for g in self.gpu_lease):
            raise SimulationError("rounds model: GPUs still held after every job finished")

    # ---------------------------------------------------------------- internals
    def _recount_busy(self, g: int, before: bool) -> None:
        after = self.gpu_job[g] is not None or self.gpu_lease[g] is not None
        if after != before:
            self._busy += int(after) - int(before)
            idle, idle_t = self._idle, self._idle_t[self.cluster.gpu_type[g]]
            if after:
                del idle[bisect_left(idle, g)]
                del idle_t[bisect_left(idle_t, g)]
            else:
                insort(idle, g)
                insort(idle_t, g)
                self.freed.append(g)

    def _free_until(self, g: int, busy: bool) -> None:
        """GPU g, outside any lease, starts (busy) or stops running a task ending at ``gpu_until[g]``."""
        lst = self._until[self.cluster.gpu_type[g]]
        if busy:
            insort(lst, self.gpu_until[g])
        else:
            del lst[bisect_left(lst, self.gpu_until[g])]

    def _held(self, g: int) -> bool:
        return self.gpu_job[g] is not None or self.gpu_lease[g] is not None

    def _live(self, job_id: str) -> RoundJob:
        job = self.jobs.get(job_id)
        if job is None or not job.arrived or job.done:
            raise SimulationError(f"t={self.ctx.now}: decision for a job that is not active: {job_id!r}")
        return job

    def _lease(self, d: Start) -> None:
        now = self.ctx.now
        job = self._live(d.job_id)
        if job.lease is not None:
            raise SimulationError(f"t={now}: {job.job_id} already holds a lease")
        if len(d.gpus) != job.n or len(set(d.gpus)) != job.n:
            raise SimulationError(f"t={now}: lease for {job.job_id} needs {job.n} distinct GPUs")
        for g in d.gpus:
            if self.gpu_lease[g] is not None or self.gpu_job[g] not in (None, job.job_id):
                raise SimulationError(f"t={now}: GPU {g} is not free for {job.job_id}'s lease")
        for g in d.gpus:
            before = self._held(g)
            if self.gpu_job[g] is not None:
                self._free_until(g, False)
            self.gpu_lease[g] = job.job_id
            self._n_leased[self.cluster.gpu_type[g]] += 1
            self._recount_busy(g, before)
        job.lease = tuple(d.gpus)
        self._lease_dirty[job.job_id] = job
        self._mech["leases"] += 1
        self._set_active(job)

    def _drop_lease(self, job: RoundJob) -> None:
        for g in job.lease or ():
            before = self._held(g)
            self.gpu_lease[g] = None
            self._n_leased[self.cluster.gpu_type[g]] -= 1
            if self.gpu_job[g] is not None:
                self._free_until(g, True)
            self._recount_busy(g, before)
        job.lease = None
        self.job_events = True

    def _start_task(self, job: RoundJob, g: int) -> None:
        now = self.ctx.now
        if job.ready <= 0:
            raise SimulationError(f"t={now}: {job.job_id} has no ready task for GPU {g}")
        if self.gpu_job[g] is not None:
            raise SimulationError(f"t={now}: GPU {g} is busy with {self.gpu_job[g]}")
        o = 0.0 if self.gpu_last[g] == job.job_id else job.switch_cost
        if o > 0:
            job.switches += 1
            self._mech["switches"] += 1
        p = job.task_s[self.cluster.gpu_type[g]]
        dur = o + p
        self.gpu_task[g] = (job.active_total(now), o, p)
        self._set_ready(job, job.ready - 1)
        job.running += 1
        job.gpu_busy_s += dur
        job.gpus_used.add(g)
        job.round_gpus.append(g)
        if job.first_start is None:
            job.first_start = now
        self.gpu_job[g] = job.job_id
        self.tasked.add(g)
        job.on_gpus.add(g)
        prev = self.gpu_last[g]
        if prev != job.job_id:
            if prev is not None and prev in self.last_of:
                self.last_of[prev].discard(g)
            self.last_of.setdefault(job.job_id, set()).add(g)
        self.gpu_last[g] = job.job_id
        until = self.gpu_until[g] = now + dur
        if self.gpu_lease[g] is None:  # an idle GPU becomes busy (as _recount_busy and _free_until would do)
            self._busy += 1
            t = self.cluster.gpu_type[g]
            idle = self._idle
            del idle[bisect_left(idle, g)]
            idle = self._idle_t[t]
            del idle[bisect_left(idle, g)]
            insort(self._until[t], until)
        self._set_active(job)
        self.ctx.push(until, DONE, job.job_id, g)

    def _run_lease(self, job: RoundJob) -> None:
        if job.lease is None or job.ready != job.n or job.running:
            return
        if any(self.gpu_job[g] is not None for g in job.lease):
            return
        for g in job.lease:
            self._start_task(job, g)

    def _on_done(self, job: RoundJob, g: int) -> None:
        now = self.ctx.now
        self.gpu_job[g] = None
        self.tasked.discard(g)
        job.on_gpus.discard(g)
        if self.gpu_lease[g] is None:  # the GPU becomes idle (as _recount_busy and _free_until would do)
            t = self.cluster.gpu_type[g]
            lst = self._until[t]
            del lst[bisect_left(lst, self.gpu_until[g])]
            self._busy -= 1
            insort(self._idle, g)
            insort(self._idle_t[t], g)
            self.freed.append(g)
            self.job_events = True
        if job.lease is not None:
            self._lease_dirty[job.job_id] = job
        job.running -= 1
        job.done_in_round += 1
        job.tasks_done += 1
        job.attained_ref_s += job.ref_task_s
        if job.done_in_round > job.n:
            raise SimulationError(f"{job.job_id}: round {job.round} ran {job.done_in_round} > {job.n} tasks")
        if job.done_in_round == job.n:
            if job.ready or job.running:
                raise SimulationError(f"{job.job_id}: round {job.round} complete with tasks outstanding")
            job.last_gpus = tuple(job.round_gpus)
            self._mech["rounds"] += 1
            gs = tuple(sorted(set(job.round_gpus)))
            if len(gs) < job.n:
                self._mech["relaxed_rounds"] += 1
            if gs != job.sync_gpus:  # sync_alone is a pure function of the profile and the GPUs
                job.sync_gpus, job.sync_base = gs, self.sync_alone(job.profile, gs)
            sync = job.scale * job.sync_base
            self._account_round(job, self.gpu_task[g], sync)
            job.round_gpus = []
            job.syncing = True
            job.sync_now = sync
            self.ctx.push(now + sync, RELEASE, job.job_id)
        self._set_active(job)

    def _account_round(self, job: RoundJob, crit: tuple[float, float, float], sync: float) -> None:
        """Attribute the round's excess over the ideal (module docstring). Uses active time up to the critical task's
        start; the synchronisation that follows is active by construction."""
        active_at_start, o, p = crit
        waited = active_at_start - job.release_active
        total = waited + o + p + sync
        left = total - job.ideal_round
        if left < -1e-9 * max(1.0, total):
            raise SimulationError(f"t={self.ctx.now}: {job.job_id} round {job.round} took {total} s, below its "
                                  f"ideal {job.ideal_round} s")
        left = max(left, 0.0)
        parts = []
        for amount in (o, p - job.p_best, sync - job.ideal_sync):
            x = min(max(amount, 0.0), left)
            parts.append(x)
            left -= x
        job.switch_s += parts[0]
        job.hetero_s += parts[1]
        job.spread_s += parts[2]
        job.sharing_s += left
        job.comm_s += sync

    def _on_release(self, job: RoundJob) -> None:
        job.syncing = False
        job.round += 1
        job.done_in_round = 0
        if job.round >= job.rounds:
            self._finish(job)
            return
        self._set_ready(job, job.n)
        job.release_active = job.active_total(self.ctx.now)
        if job.lease is not None:
            self._lease_dirty[job.job_id] = job
        self._set_active(job)

    def _finish(self, job: RoundJob) -> None:
        if job.tasks_done != job.rounds * job.n:
            raise SimulationError(f"{job.job_id}: finished with {job.tasks_done} of {job.rounds * job.n} tasks")
        if job.lease is not None:
            self._drop_lease(job)
        job.finish = self.ctx.now
        self._set_active(job)
        del self._arrived[job.spec.job_id]
        self.finished_count += 1
        self.last_of.pop(job.job_id, None)
        self._lease_dirty.pop(job.spec.job_id, None)
        self._active_dirty = True
        self.job_events = True
        c = self.cluster
        servers = {c.gpu_server[g] for g in job.gpus_used}
        job.placements = len(job.gpus_used)
        job.max_servers = len(servers)
        job.max_racks = len({c.server_rack[s] for s in servers})
        job.status = JobStatus.DONE
        self.ctx.complete(job)
