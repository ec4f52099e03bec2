"""SJF-BCO offline batch planner and its baselines FF, LS, RAND (Yu et al. MobiHoc'22; docs/policies/sjf-bco.md §4–§6).

Planner (``plan``): jobs get a start time and a GPU set on a simulated timeline [I, docs/policies/sjf-bco.md §4 "How
to turn
Algorithms 2–3 into a timeline"]: a clock ``t`` that never goes back, a per-GPU busy-until time and a per-GPU
accumulated execution time U_g. A job is placed at ``t`` on GPUs that are free at ``t`` and satisfy
U_g + ρ̂_j/u ≤ θ_u; if too few qualify, ``t`` advances to the next completion; if none is left the trial fails.
Its finish is estimated as ``t + F_j·τ_j`` with τ_j from eq. (8) (:class:`~ddlsched.perf.sjf_bco.SjfBcoContention`)
at the contention degree p_j it would see among the multi-server jobs running at ``t`` (a snapshot [I]).

* **SJF-BCO** (Alg. 1): jobs by G_j ascending; for every κ, jobs with G_j ≤ κ go through **FA-FFP** (the G_j
  free, capped GPUs of least U_g; ties prefer servers already running work [I]), larger ones through
  **LBSGF** (servers by ΣU_g/O_s ascending, the shortest prefix with Σ O_s ≥ λ·G_j, their capped free GPUs
  by U_g). The κ-run with the smallest estimated makespan wins; a κ-run that fails is never accepted (its
  makespan counts as T). Only κ values that split the job sizes differently are run (identical results).
* Bisection on integer θ_u ∈ [1, T] exactly as Alg. 1: a θ whose best κ beats the best so far tightens
  (right = θ − 1), otherwise loosens (left = θ + 1).
* **FF** first free capped GPUs in server order; **LS** the free capped GPUs of least U_g; both in arrival
  order [I] with their own bisection on θ. **RAND** random free GPUs, cap θ = T (no bisection).

Defaults [I]: u = 1.15, λ = 1. ρ̂_j = F_j × contention-free consolidated iteration time.

As an engine policy (:class:`PlannedPolicy`, ``sjf-bco``, ``bco-ff``, ``bco-ls``, ``bco-rand``): at a call
where some pending job is not in the current plan, the not-yet-started jobs are (re)planned from ``now``, with
busy GPUs busy until their job's estimated end (remaining iterations × current iteration time). Starts then
follow the plan's order on the plan's GPUs: a job starts once all its GPUs are free, and GPUs promised to an
earlier, still-waiting job are not given to a later one. Horizon T defaults to the serial bound
``now + Σ ρ̂_j + max busy``.

Speed (docs/policies/sjf-bco.md §9): the bisection reuses a θ step's result for every θ inside the interval it
holds for, the κ runs of one θ share their common FA-FFP prefix, and the clock advances on an exact count test; the
plans are those of running every trial in full. ``replan_every_s`` = W > 0 is an approximation (off by default):
a call with an unplanned job replans only when nothing planned is waiting or W has passed since the last replan,
otherwise the new jobs wait for the replan at W (a wake-up).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated

import numpy as np
from pydantic import Field, NonNegativeFloat, PositiveFloat, PositiveInt

from ddlsched.cluster.topology import Cluster
from ddlsched.engine.decisions import Decision, Start, WakeAt
from ddlsched.engine.model import Requirements
from ddlsched.engine.view import SchedulerView
from ddlsched.perf.base import Placement
from ddlsched.perf.sjf_bco import SjfBcoContention
from ddlsched.policies.base import Policy
from ddlsched.policies.registry import register
from ddlsched.workload.profiles import ModelProfile

ALGORITHMS = ("sjf-bco", "ff", "ls", "rand")
_MAX, _MIN = np.maximum.reduce, np.minimum.reduce
FAST_REPLAN_EVERY_S = 3600.0
"""``replan_every_s`` at or above which a planner is not paper-scale (docs/policies/sjf-bco.md §9, measured)."""


@dataclass(frozen=True)
class PlanJob:
    job_id: str
    num_gpus: int
    iterations: float
    rho_hat: float  # estimated execution time (s), contention-free
    profile: ModelProfile
    seq: int = 0
    mem_mb: float = 0.0  # per-GPU memory need: GPUs with less are never planned for the job


@dataclass(frozen=True)
class PlanEntry:
    job_id: str
    start: float
    end: float  # estimated
    gpus: tuple[int, ...]


@dataclass
class Plan:
    algorithm: str
    entries: list[PlanEntry]
    makespan: float  # estimated (planner's model)
    theta: float | None
    kappa: int | None
    feasible: bool
    trials: int = 0
    log: list[tuple[float, int | None, float]] = field(default_factory=list)  # (θ, best κ, m_θ)


class _Static:
    """Per-cluster arrays the trials read and never change (built once per cluster, see :func:`_static`)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.num_servers = cluster.num_servers
        self.server = np.asarray(cluster.gpu_server, dtype=np.intp)
        self.server_size = np.array([len(g) for g in cluster.server_gpus], dtype=float)
        self.server_ids = np.arange(self.num_servers)
        self.gpu_mem = np.array([cluster.gpu_mem_mb(g) for g in range(cluster.num_gpus)])
        self.gpu_server = list(cluster.gpu_server)
        self.one_type = len(cluster.gpu_types) == 1
        self._fit: dict[float, np.ndarray | None] = {}
        self._fit_size: dict[float, np.ndarray] = {}
        self._tau_model: SjfBcoContention | None = None
        self._taus: dict[tuple, tuple[float, ModelProfile]] = {}

    def taus(self, model: SjfBcoContention) -> dict[tuple, tuple[float, ModelProfile]] | None:
        """Memo of ``model``'s eq. (8) iteration times (see :meth:`_Trial.commit`); None for a model that overrides
        ``iteration_time`` (it may read more than the memo's key)."""
        if type(model).iteration_time is not SjfBcoContention.iteration_time:
            return None
        if self._tau_model is not model:
            self._tau_model, self._taus = model, {}
        return self._taus

    def fits(self, mem_mb: float) -> np.ndarray | None:
        """Mask of the GPUs with ≥ ``mem_mb`` MB, or None when every GPU has that much."""
        if mem_mb not in self._fit:
            mask = self.gpu_mem >= mem_mb
            self._fit[mem_mb] = None if mask.all() else mask
        return self._fit[mem_mb]

    def fit_size(self, mem_mb: float) -> np.ndarray:
        """Per server, how many of its GPUs have ≥ ``mem_mb`` MB (integers)."""
        if mem_mb not in self._fit_size:
            fit = self.fits(mem_mb)
            self._fit_size[mem_mb] = (self.server_size.astype(np.int64) if fit is None
                                      else np.bincount(self.server[fit], minlength=self.num_servers))
        return self._fit_size[mem_mb]


_STATIC: list[_Static] = []


def _static(cluster: Cluster) -> _Static:
    """The :class:`_Static` of ``cluster`` (one cached: replans of a run reuse it)."""
    if not _STATIC or _STATIC[0].cluster is not cluster:
        _STATIC[:] = [_Static(cluster)]
    return _STATIC[0]


class _Trial:
    """One (θ_u, κ) run of the planner's timeline (per-GPU state in numpy arrays; same arithmetic as scalars).

    ``lo``/``hi`` record the θ-interval this run is valid for: every cap test so far had its passing GPUs' charge
    ``U_g + cost`` ≤ ``lo`` and its failing GPUs' > ... ≥ ``hi``, so any θ with ``lo ≤ θ + 1e-9 < hi`` would have
    made the same choices (:func:`plan` reuses a θ step's result for such θ).
    """

    def __init__(self, st: _Static, model: SjfBcoContention, busy: np.ndarray, t0: float) -> None:
        self.st = st
        self.model = model
        self.taus = st.taus(model)
        self.busy = busy.copy()
        self.U = np.zeros(len(busy))
        self.t = t0
        self.multi_ends: dict[int, list[float]] = {}
        self.out: list[PlanEntry] = []
        self.m = -1.0
        self.lo = -math.inf
        self.hi = math.inf
        # LBSGF's server order (and chosen servers per memory need and λ·G_j) for the current U
        self.lbsgf_order: tuple[np.ndarray, np.ndarray, dict[tuple[float, float], tuple[np.ndarray, np.ndarray]]] \
            | None = None

    def copy(self) -> _Trial:
        new = _Trial.__new__(_Trial)
        new.__dict__.update(self.__dict__)
        new.busy, new.U, new.out = self.busy.copy(), self.U.copy(), list(self.out)
        new.multi_ends = {s: list(e) for s, e in self.multi_ends.items()}
        return new

    def free_capped(self, cost: float, theta: float, mem_mb: float = 0.0) -> np.ndarray:
        """GPUs free at the clock with U_g + cost ≤ θ (and enough memory), ascending; updates ``lo``/``hi``."""
        ok = self.busy <= self.t + 1e-9
        fit = self.st.fits(mem_mb)
        cand = (ok if fit is None else ok & fit).nonzero()[0]
        if not cand.size:
            return cand
        thr = theta + 1e-9
        v = self.U[cand] + cost
        top = _MAX(v)
        if top <= thr:
            if top > self.lo:
                self.lo = top
            return cand
        passing = v <= thr
        if passing.any():
            self.lo = max(self.lo, _MAX(v[passing]))
        self.hi = min(self.hi, _MIN(v[~passing]))
        return cand[passing]

    def advance(self) -> bool:
        later = self.busy[self.busy > self.t + 1e-9]
        if not later.size:
            return False
        self.t = float(_MIN(later))
        return True

    def commit(self, job: PlanJob, gpus: list[int], cost: float) -> PlanEntry:
        """Start ``job`` on ``gpus`` at the clock. τ_j (eq. 8) depends on the placement only through its servers (and
        GPU types when there are several), so it is memoised per (profile, G_j, servers or GPUs, degree)."""
        gs = self.st.gpu_server
        servers = sorted({gs[g] for g in gpus})
        degree = 0
        if len(servers) > 1:
            me = self.multi_ends
            degree = 1 + max(sum(1 for e in me.get(s, ()) if e > self.t + 1e-9) for s in servers)
        taus = self.taus
        key = (id(job.profile), job.num_gpus, tuple(servers) if self.st.one_type else tuple(sorted(gpus)), degree)
        hit = taus.get(key) if taus is not None else None
        if hit is None:
            tau = self.model.iteration_time(Placement(job.job_id, tuple(gpus), job.profile), degree).total_s
            if taus is not None:
                taus[key] = (tau, job.profile)  # the profile kept alive, so its id is not reused
        else:
            tau = hit[0]
        end = self.t + job.iterations * tau
        self.busy[gpus] = end
        self.U[gpus] += cost
        self.lbsgf_order = None
        if len(servers) > 1:
            for s in servers:
                self.multi_ends.setdefault(s, []).append(end)
        e = PlanEntry(job.job_id, self.t, end, tuple(sorted(gpus)))
        self.out.append(e)
        self.m = max(self.m, end)
        return e

    def place(self, job: PlanJob, rule: str, theta: float, cost: float, lam: float,
              rng: random.Random | None = None) -> bool:
        """Place ``job`` by ``rule`` (fa-ffp, lbsgf, ff, ls, rand) at the earliest clock it fits; False if never.

        Every rule succeeds exactly when at least G_j GPUs are free, fit, pass the cap (and, for LBSGF, sit on its
        chosen servers, which depend on U only): with ``need`` the G_j-th smallest busy-until time among those
        GPUs, that is ``need ≤ t + 1e-9``, so the clock advances without re-running the rule at each step. The
        GPUs this test reads are all free at the clock where the rule runs, so that run's θ-interval covers it.
        """
        n = job.num_gpus
        st = self.st
        ok = self.U + cost <= theta + 1e-9
        fit = st.fits(job.mem_mb)
        if fit is not None:
            ok &= fit
        if rule == "lbsgf":
            ok &= _lbsgf_chosen(self, job, lam)[1]
        eligible = self.busy[ok]
        if eligible.size < n:  # never enough: the clock runs out; the cap test at the end, as a full run makes it
            self.t = max(self.t, float(_MAX(self.busy)))
            self.free_capped(cost, theta, job.mem_mb)
            return False
        need = float(np.partition(eligible, n - 1)[n - 1])
        while True:
            while not need <= self.t + 1e-9:
                if not self.advance():  # unreachable: ``need`` is a busy-until time
                    return False
            cand = self.free_capped(cost, theta, job.mem_mb)
            gpus: list[int] | None = None
            if len(cand) >= n:
                if rule == "fa-ffp":
                    gpus = _fa_ffp(self, job, cand)
                elif rule == "lbsgf":
                    gpus = _lbsgf(self, job, cand, lam)
                elif rule == "ff":
                    gpus = cand[:n].tolist()
                elif rule == "ls":
                    gpus = cand[np.lexsort((cand, self.U[cand]))[:n]].tolist()
                else:
                    assert rng is not None
                    gpus = rng.sample(cand.tolist(), n)
            if gpus is not None:
                self.commit(job, gpus, cost)
                return True
            if not self.advance():  # unreachable (the test above is exact); kept as the plain loop's step
                return False


def _fa_ffp(tr: _Trial, job: PlanJob, cand: np.ndarray) -> list[int] | None:
    """G_j capped free GPUs of least U_g; ties: servers already running work, then server, then GPU id."""
    if len(cand) < job.num_gpus:
        return None
    st = tr.st
    hosting = np.zeros(st.num_servers, dtype=bool)
    hosting[st.server[tr.busy > tr.t + 1e-9]] = True
    srv = st.server[cand]
    order = np.lexsort((cand, srv, ~hosting[srv], tr.U[cand]))
    return cand[order[: job.num_gpus]].tolist()


def _lbsgf_chosen(tr: _Trial, job: PlanJob, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """LBSGF's chosen servers for ``job`` at the current U, as a server mask and a GPU mask (reused until U
    changes), and the servers' positions in the order."""
    st = tr.st
    if tr.lbsgf_order is None:  # U changes only at a commit: the order is reused while the clock advances
        avg = np.bincount(st.server, weights=tr.U, minlength=st.num_servers) / st.server_size  # sequential sums
        order = np.argsort(avg, kind="stable")  # = lexsort((server id, avg))
        pos = np.empty(st.num_servers, dtype=np.intp)
        pos[order] = st.server_ids
        tr.lbsgf_order = order, pos, {}
    order, pos, chosen_by = tr.lbsgf_order
    need = lam * job.num_gpus
    hit = chosen_by.get((job.mem_mb, need))
    if hit is None:
        cum = np.cumsum(st.fit_size(job.mem_mb)[order])
        k = int(np.searchsorted(cum >= need, True))  # first prefix holding enough (all if none)
        chosen = np.zeros(st.num_servers, dtype=bool)
        chosen[order[: k + 1]] = True
        hit = chosen_by[job.mem_mb, need] = chosen, chosen[st.server]
    return hit


def _lbsgf(tr: _Trial, job: PlanJob, cand: np.ndarray, lam: float) -> list[int] | None:
    """Servers by ΣU_g/O_s ascending, shortest prefix with Σ O_s ≥ λ·G_j; their capped free GPUs by U_g."""
    st = tr.st
    on_chosen = _lbsgf_chosen(tr, job, lam)[1]
    pool = cand[on_chosen[cand]]
    if len(pool) < job.num_gpus:
        return None
    pos = tr.lbsgf_order[1]  # type: ignore[index]
    sel = np.lexsort((pool, pos[st.server[pool]], tr.U[pool]))
    return pool[sel[: job.num_gpus]].tolist()


def _run_trial(cluster: Cluster, model: SjfBcoContention, jobs: Sequence[PlanJob], algorithm: str, theta: float,
               kappa: int, lam: float, u: float, busy: Sequence[float], t0: float, horizon: float,
               rng: random.Random | None, cutoff: float = math.inf) -> tuple[float, list[PlanEntry]]:
    """One trial from scratch, jobs in the given order. Returns (estimated makespan, entries); makespan =
    ``horizon`` (never accepted) on failure.

    A run whose makespan reaches ``cutoff`` (≤ horizon) stops early and also returns ``horizon``: the caller
    only accepts a run strictly below ``cutoff``, so this changes no plan (a speed-up only).
    """
    tr = _Trial(_static(cluster), model, np.array(busy, dtype=float), t0)
    stop = min(cutoff, horizon)
    for job in jobs:
        rule = ("fa-ffp" if job.num_gpus <= kappa else "lbsgf") if algorithm == "sjf-bco" else algorithm
        if not tr.place(job, rule, theta, job.rho_hat / u, lam, rng):
            return horizon, tr.out
        if tr.m >= stop:
            return horizon, tr.out
    return (tr.m if tr.m < horizon else horizon), tr.out


@dataclass
class _Step:
    """The outcome of one θ of the bisection (best κ) and the θ-interval it holds for (see :class:`_Trial`)."""

    makespan: float
    entries: list[PlanEntry] | None
    kappa: int | None
    lo: float
    hi: float

    def covers(self, theta: float) -> bool:
        thr = theta + 1e-9
        return bool(self.lo <= thr < self.hi)


def _theta_step(st: _Static, model: SjfBcoContention, order: Sequence[PlanJob], algorithm: str, theta: int,
                kappas: Sequence[int], lam: float, u: float, busy: np.ndarray, t0: float, horizon: float) -> _Step:
    """Every κ trial of one θ, as the bisection of Alg. 1 runs them (the first κ of least makespan wins, a run
    that fails or does not beat the best so far counts as ``horizon``), with the same results but shared work:
    ``order`` is by G_j ascending, so the trials of κ < κ' place the jobs with G_j ≤ κ identically (FA-FFP from
    the same start), and that prefix is run once and extended from κ to κ'. Without κ (FF, LS) one trial."""
    base = _Trial(st, model, busy, t0)
    best: float = horizon
    entries: list[PlanEntry] | None = None
    best_k: int | None = None
    lo, hi = -math.inf, math.inf
    if algorithm != "sjf-bco":
        ok = True
        for job in order:
            if not base.place(job, algorithm, theta, job.rho_hat / u, lam) or base.m >= horizon:
                ok = False
                break
        m = base.m if ok else horizon
        if m < horizon:
            return _Step(m, base.out, 0, base.lo, base.hi)  # κ = 0 stands for "no κ", as in the log
        return _Step(horizon, None, None, base.lo, base.hi)
    idx, n, dead = 0, len(order), False
    for k in kappas:
        while idx < n and order[idx].num_gpus <= k:
            job = order[idx]
            if not base.place(job, "fa-ffp", theta, job.rho_hat / u, lam) or base.m >= min(best, horizon):
                dead = True
                break
            idx += 1
        if dead or base.m >= min(best, horizon):  # the shared prefix failed or reached the best: so does
            break                                  # every κ run from here on
        tr = base.copy() if idx < n else base
        m = horizon
        for job in order[idx:]:
            if not tr.place(job, "lbsgf", theta, job.rho_hat / u, lam) or tr.m >= min(best, horizon):
                break
        else:
            m = tr.m if tr.m < horizon else horizon
        if tr is not base:
            lo, hi = max(lo, tr.lo), min(hi, tr.hi)
        if m < best:
            best, entries, best_k = m, list(tr.out), k
    return _Step(best, entries, best_k, max(lo, base.lo), min(hi, base.hi))


def kappa_classes(sizes: Sequence[int], kmax: int) -> list[int]:
    """The smallest κ of each distinct split {G ≤ κ} of the job sizes, for κ in 1..kmax."""
    if kmax < 1:
        return []
    return [1, *sorted(s for s in set(sizes) if 1 < s <= kmax)]  # the split changes exactly at a job size > 1


def plan(cluster: Cluster, jobs: Sequence[PlanJob], *, algorithm: str = "sjf-bco", horizon: float | None = None,
         u: float = 1.15, lam: float = 1.0, kappa: int | None = None, model: SjfBcoContention | None = None,
         busy_until: Sequence[float] | None = None, t0: float = 0.0, seed: int = 0) -> Plan:
    """Plan ``jobs`` with SJF-BCO or a baseline (see module docstring).

    Exact shortcuts (the plan, its log and its trial count are those of running every trial): a θ inside the
    interval an earlier θ's trials hold for (:class:`_Step`) reuses that θ's result, and the κ runs of one θ share
    their common prefix (:func:`_theta_step`).
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}")
    if u < 1 or lam < 1:
        raise ValueError("u and lambda must be >= 1")
    model = model or SjfBcoContention(cluster)
    busy = list(busy_until) if busy_until is not None else [t0] * cluster.num_gpus
    if horizon is None:
        horizon = max([t0, *busy]) + sum(j.rho_hat for j in jobs) * 1.5 + 1.0
    order = sorted(jobs, key=lambda j: (j.num_gpus, j.seq)) if algorithm == "sjf-bco" else \
        sorted(jobs, key=lambda j: j.seq)
    if not order:
        return Plan(algorithm, [], t0, None, kappa, True)
    if algorithm == "rand":
        rng = random.Random(f"bco-rand-{seed}")
        m, entries = _run_trial(cluster, model, order, "rand", math.inf, 0, lam, u, busy, t0, horizon, rng)
        return Plan("rand", entries, m, None, None, m < horizon, trials=1)
    if algorithm == "sjf-bco":
        kmax = max(j.num_gpus for j in order)
        kappas = [kappa] if kappa is not None else kappa_classes([j.num_gpus for j in order], kmax)
    else:
        kappas = [0]
    st = _static(cluster)
    busy_arr = np.array(busy, dtype=float)
    steps: list[_Step] = []
    best = Plan(algorithm, [], horizon, None, None, False)
    left, right = 1, math.ceil(horizon)
    trials = 0
    while left <= right:
        theta = (left + right) // 2
        step = next((s for s in steps if s.covers(theta)), None)
        if step is None:
            step = _theta_step(st, model, order, algorithm, theta, kappas, lam, u, busy_arr, t0, horizon)
            steps.append(step)
        trials += len(kappas)
        m_theta, y_theta, k_theta = step.makespan, step.entries, step.kappa
        best.log.append((theta, k_theta, m_theta))
        if m_theta < best.makespan and y_theta is not None:
            best = Plan(algorithm, y_theta, m_theta, theta, k_theta if algorithm == "sjf-bco" else None, True,
                        log=best.log)
            right = theta - 1
        else:
            left = theta + 1
    best.trials = trials
    return best


class PlannedPolicy(Policy):
    """Runs an SJF-BCO / FF / LS / RAND plan in an engine (see module docstring)."""

    requirements = Requirements(clairvoyant=True)  # the plan uses remaining iterations
    family = "yu2022"
    algorithm = "sjf-bco"

    def __init__(self, *, u: Annotated[float, Field(ge=1)] = 1.15, lam: Annotated[float, Field(ge=1)] = 1.0,
                 kappa: PositiveInt | None = None, horizon_s: PositiveFloat | None = None,
                 xi1: Annotated[float, Field(gt=0, le=1)] = 1.0, xi2_s: NonNegativeFloat = 0.0,
                 alpha: NonNegativeFloat = 0.1, replan_every_s: NonNegativeFloat = 0.0) -> None:
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}")
        if not math.isfinite(replan_every_s):
            raise ValueError("replan_every_s must be finite")
        self.u, self.lam, self.kappa, self.horizon_s = u, lam, kappa, horizon_s
        self.replan_every_s = replan_every_s
        if replan_every_s >= FAST_REPLAN_EVERY_S:  # measured: trace scale in well under a minute (§9)
            self.paper_scale_jobs = None
        self._last_plan_s = -math.inf
        self._wake_s = -math.inf
        self.model_params = {"xi1": xi1, "xi2_s": xi2_s, "alpha": alpha}
        # the first plan (the paper's offline plan when every job arrives at once) and the latest; every plan goes
        # to ``on_plan``. Keeping them all cost 1.8–1.9 GiB on 10,000 trace jobs (thousands of replans × the queue)
        self.first_plan: Plan | None = None
        self.last_plan: Plan | None = None
        self._entries: list[PlanEntry] = []
        self._planned: set[str] = set()
        self._jobs: dict[str, PlanJob] = {}
        self._model: SjfBcoContention | None = None
        self.on_plan: Callable[[Plan], None] | None = None
        self._mech: dict[str, float] = {}

    def reset(self) -> None:
        self.first_plan = self.last_plan = None
        self._entries, self._planned, self._model, self._jobs = [], set(), None, {}
        self._last_plan_s, self._wake_s = -math.inf, -math.inf
        self._mech = {}

    def mechanisms(self) -> dict[str, float]:
        """``plans`` made; starts by the rule that placed them (``fa_ffp_starts``: G_j ≤ the plan's κ,
        ``lbsgf_starts``: larger; SJF-BCO only) and ``multi_server_starts`` (spanning > 1 server)."""
        keys = ("plans", "multi_server_starts") + (("fa_ffp_starts", "lbsgf_starts")
                                                   if self.algorithm == "sjf-bco" else ())
        return {k: self._mech.get(k, 0) for k in keys}

    def _count_start(self, cluster: Cluster, e: PlanEntry) -> None:
        m = self._mech
        if len(cluster.servers_of(list(e.gpus))) > 1:
            m["multi_server_starts"] = m.get("multi_server_starts", 0) + 1
        if self.algorithm == "sjf-bco":
            kappa = self.last_plan.kappa if self.last_plan is not None else None
            rule = "fa_ffp_starts" if kappa is not None and len(e.gpus) <= kappa else "lbsgf_starts"
            m[rule] = m.get(rule, 0) + 1

    def _replan(self, view: SchedulerView) -> None:
        c = view.cluster
        if self._model is None:
            self._model = SjfBcoContention(c, **self.model_params)
        busy = [view.now] * c.num_gpus
        for r in view.running:
            it = r.iter_time.total_s if r.iter_time is not None else r.ideal_iter_s
            end = view.now + r.remaining_iters * it
            for g in r.gpus:
                busy[g] = max(busy[g], end)
        jobs = []
        known, cache = self._jobs, {}
        for j in view.pending:  # a waiting job's PlanJob is reused while its remaining work is unchanged
            rem = j.remaining_iters
            pj = known.get(j.job_id)
            if pj is None or pj.iterations != rem:
                pj = PlanJob(j.job_id, j.num_gpus, rem, rem * j.ideal_iter_s, j.profile, j.seq, j.mem_mb)
            cache[j.job_id] = pj
            jobs.append(pj)
        self._jobs = cache
        horizon = self.horizon_s if self.horizon_s is not None and self.horizon_s > view.now else None
        p = plan(c, jobs, algorithm=self.algorithm, horizon=horizon, u=self.u, lam=self.lam, kappa=self.kappa,
                 model=self._model, busy_until=busy, t0=view.now, seed=int(view.rng.random() * 2**31))
        bound = max([view.now, *busy]) + sum(j.rho_hat for j in jobs) * 1.5 + 1.0
        for _ in range(64):  # nothing fits under the horizon: double it (the serial bound assumes no contention,
            if p.feasible:   # so spread jobs' estimated times can exceed it; a plan that places nobody stalls)
                break
            bound *= 2.0
            p = plan(c, jobs, algorithm=self.algorithm, horizon=bound, u=self.u, lam=self.lam, kappa=self.kappa,
                     model=self._model, busy_until=busy, t0=view.now, seed=int(view.rng.random() * 2**31))
        if self.first_plan is None:
            self.first_plan = p
        self.last_plan = p
        self._mech["plans"] = self._mech.get("plans", 0) + 1
        if self.on_plan is not None:
            self.on_plan(p)
        self._entries = list(p.entries)
        self._planned = {e.job_id for e in self._entries}

    def _replan_due(self, now: float, pending: set[str]) -> bool:
        """Whether a call with an unplanned pending job replans now: always by default; with ``replan_every_s``
        = W > 0 only when nothing planned is still waiting or W has passed since the last replan."""
        w = self.replan_every_s
        if w <= 0 or now >= self._last_plan_s + w:
            return True
        return not any(e.job_id in pending for e in self._entries)

    def schedule(self, view: SchedulerView) -> list[Decision]:
        pending = {j.job_id for j in view.pending}
        out: list[Decision] = []
        if pending - self._planned:
            if self._replan_due(view.now, pending):
                self._replan(view)
                self._last_plan_s = view.now
            elif self._wake_s != (due := self._last_plan_s + self.replan_every_s):
                self._wake_s = due  # the unplanned jobs are planned at the next replan, W after the last one
                out.append(WakeAt(due))
        alloc = view.allocation()
        reserved: set[int] = set()
        remaining: list[PlanEntry] = []
        for e in self._entries:
            if e.job_id not in pending:
                continue
            if not reserved.intersection(e.gpus) and all(alloc.is_free(g) for g in e.gpus):
                alloc.take(list(e.gpus))
                out.append(Start(e.job_id, e.gpus))
                self._count_start(view.cluster, e)
            else:
                reserved.update(e.gpus)
                remaining.append(e)
        self._entries = remaining
        return out


@register
class SjfBco(PlannedPolicy):
    name = "sjf-bco"
    description = "Yu 2022 SJF-BCO planner: bisection on θ, κ sweep, FA-FFP + LBSGF (params u, lam, kappa, ...)"
    algorithm = "sjf-bco"
    paper_scale_jobs = 3_700  # measured (issue 30): jobs done in the first minute, docs/policies/README.md


@register
class BcoFf(PlannedPolicy):
    name = "bco-ff"
    paper_scale_jobs = 4_500
    description = "Yu 2022 baseline FF: first free GPUs in server order under its own bisected cap"
    algorithm = "ff"


@register
class BcoLs(PlannedPolicy):
    name = "bco-ls"
    paper_scale_jobs = 4_500
    description = "Yu 2022 baseline LS: least-accumulated-time GPUs under its own bisected cap"
    algorithm = "ls"


@register
class BcoRand(PlannedPolicy):
    name = "bco-rand"
    paper_scale_jobs = 3_000
    description = "Yu 2022 baseline RAND: random free GPUs, cap = T"
    algorithm = "rand"


def planned_policy(algorithm: str, **params: object) -> PlannedPolicy:
    """The registered planner policy for ``algorithm`` (sjf-bco, ff, ls, rand) with ``params``."""
    by_algorithm: dict[str, type[PlannedPolicy]] = {c.algorithm: c for c in (SjfBco, BcoFf, BcoLs, BcoRand)}
    if algorithm not in by_algorithm:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}")
    return by_algorithm[algorithm](**params)  # type: ignore[arg-type]
