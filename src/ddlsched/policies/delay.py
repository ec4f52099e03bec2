"""Network-sensitive scheduling: delay scheduling for consolidation, network-sensitive preemption, timer
auto-tuning (docs/policies/delay-sched.md §3–§5, Sharma et al. 2024) and the docs/policies/delay-sched.md §7 baselines.

Everything past the abstract of the paper is a **reconstruction [I]**: the locality levels, the timer rule, the
victim rule and the tuners follow the reference design of docs/policies/delay-sched.md and every parameter is
configurable.

**Delay scheduling (docs/policies/delay-sched.md §3).** Pending jobs, in base order (``order``: fifo | sjf | las),
each get an allowed
level ``ℓ_j = best_level(j) + ⌊wait_j / D_j⌋`` capped at L2 (``D_j = 0`` → L2 at once; ``D_j = ∞`` → never
relaxed), where ``wait_j`` is the time since arrival or last preemption and ``D_j`` the timer of j's
sensitivity class (``timer_high`` 1800 s, ``timer_medium`` 300 s, ``timer_low`` 0 s) or of the tuner. The job
starts on the tightest placement at level ≤ ℓ_j (``locality.tightest``; while ℓ_j is still the best
level an L1 placement must also use the fewest possible servers) or keeps waiting (no head-of-line
blocking). The policy asks to be woken (``WakeAt``) exactly when the next pending job's level relaxes.

**Network-sensitive preemption (docs/policies/delay-sched.md §4)** (``preemption=True``): a pending **high** job
whose best level is L0/L1,
that has waited ≥ ``preempt_wait`` (default: the configured ``timer_high``, never the tuned timer — a tuner that
drives the high timer to 0 must not make preemption fire without waiting) and has no L0/L1 placement, may evict running
**low** jobs (and **medium** jobs running at L2) that have been preempted fewer than ``max_preemptions`` (3)
times. Per server (L0) or rack (L1) the victims are taken fewest GPUs first (the engine's restart penalty is
lost per GPU), ties → most remaining work; the server/rack with the cheapest set wins. The victims are
re-placed at once anywhere if GPUs remain (their timer is 0). A high job is never a victim.

**Tuners (docs/policies/delay-sched.md §5)**: ``autotune`` = analytic (A) | feedback (B) | search (C), see
``policies.autotune``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import NonNegativeFloat, NonNegativeInt, PositiveFloat

from ddlsched.engine.decisions import Decision, Preempt, Start, WakeAt
from ddlsched.engine.jobview import JobView
from ddlsched.engine.model import Requirements
from ddlsched.engine.state import JobStatus
from ddlsched.engine.view import SchedulerView
from ddlsched.policies.autotune import ALIASES, TUNERS
from ddlsched.policies.base import Policy
from ddlsched.policies.baselines import OrderedPolicy
from ddlsched.policies.locality import L1, L2, best_level, placement_level, tightest
from ddlsched.policies.ordering import Tiresias
from ddlsched.policies.placement import FirstFit, PlacementStrategy
from ddlsched.policies.registry import register
from ddlsched.policies.sensitivity import HIGH, LOW, MEDIUM, Sensitivity

_TOL = 1e-6
ORDERS = ("fifo", "sjf", "las")


def _order_key(order: str, job: JobView) -> Any:
    if order == "sjf":
        return (job.remaining_ideal_s, job.seq)
    if order == "las":
        return (job.attained_gpu_s, job.seq)
    return job.seq


class DelayScheduling(Policy):
    """Delay scheduling + network-sensitive preemption + optional timer auto-tuning (module docstring)."""

    name = "delay-sched"
    description = "network-sensitive delay scheduling for consolidation"
    family = "network-sensitive"
    default_autotune: str | None = None

    def __init__(self, *, order: Literal["fifo", "sjf", "las"] = "fifo", high: NonNegativeFloat = 0.5,
                 medium: NonNegativeFloat = 0.1, timer_high: NonNegativeFloat = 1800.0,
                 timer_medium: NonNegativeFloat = 300.0, timer_low: NonNegativeFloat = 0.0, preemption: bool = True,
                 preempt_wait: NonNegativeFloat | None = None, max_preemptions: NonNegativeInt = 3,
                 autotune: Literal["search", "feedback", "analytic", "A", "B", "C"] | None = None,
                 tuner_params: dict[str, Any] | None = None) -> None:
        if order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}")
        if min(timer_high, timer_medium, timer_low) < 0 or max_preemptions < 0:
            raise ValueError("timers and max_preemptions must be >= 0")
        self.order = order
        self.sens = Sensitivity(high, medium)
        self.initial_timers = {HIGH: float(timer_high), MEDIUM: float(timer_medium), LOW: float(timer_low)}
        self.timers = dict(self.initial_timers)
        self.preemption = bool(preemption)
        self.preempt_wait = preempt_wait
        self.max_preemptions = max_preemptions
        autotune = autotune if autotune is not None else self.default_autotune
        self.autotune = ALIASES.get(autotune, autotune) if autotune else None
        # durations are read by the sjf order, the victim choice (remaining work) and the timer tuners
        self.requirements = Requirements(preemptive=self.preemption, clairvoyant=order == "sjf" or self.preemption
                                         or self.autotune is not None)
        if self.autotune is not None and self.autotune not in TUNERS:
            raise ValueError(f"autotune must be one of {sorted(TUNERS)} (or A/B/C)")
        self.tuner_params = dict(tuner_params or {})
        self.tuner = TUNERS[self.autotune](**self.tuner_params) if self.autotune else None
        self._mech = {"best_level_placements": 0, "relaxed_placements": 0, "relaxed_high_placements": 0,
                      "relaxed_medium_placements": 0, "expired_timer_placements": 0, "network_preemptions": 0,
                      "timer_holds": 0, "delayed_placements": 0}
        self._held: set[str] = set()  # jobs held back by their timer since their last start
        self._kw = {"order": order, "high": high, "medium": medium, "timer_low": timer_low,
                    "preemption": preemption, "preempt_wait": preempt_wait, "max_preemptions": max_preemptions}

    def reset(self) -> None:
        self.timers = dict(self.initial_timers)
        self._mech = dict.fromkeys(self._mech, 0)
        self._held = set()
        self.sens.reset()
        if self.tuner is not None:
            self.tuner.reset()

    def replay_copy(self, *, timer_high: float, timer_medium: float) -> DelayScheduling:
        """An un-tuned copy with the given class timers (used by the search tuner's replays)."""
        copy = DelayScheduling(timer_high=timer_high, timer_medium=timer_medium, autotune=None, **self._kw)
        copy.default_autotune = None
        copy.name = f"{self.name}-replay"
        return copy

    def _preempt_wait(self) -> float:
        return self.initial_timers[HIGH] if self.preempt_wait is None else self.preempt_wait

    def mechanisms(self) -> dict[str, float]:
        out: dict[str, float] = dict(self._mech)
        if self.tuner is not None:
            out["timer_updates"] = len(getattr(self.tuner, "history", ()))
            if hasattr(self.tuner, "replays"):
                out["tuner_replays"] = self.tuner.replays
        return out

    # ------------------------------------------------------------------ helpers
    def timer(self, job: JobView, view: SchedulerView) -> tuple[str, float, float]:
        sigma = self.sens.sigma(job, view)
        cls = self.sens.classify(sigma)
        d = self.tuner.timer(job, cls, sigma, self) if self.tuner is not None else self.timers[cls]
        return cls, sigma, d

    @staticmethod
    def allowed_level(best: int, wait: float, timer: float) -> int:
        if timer <= 0:
            return L2
        if math.isinf(timer):
            return best
        return min(L2, best + math.floor((wait + _TOL) / timer))

    # ------------------------------------------------------------------ pass
    def schedule(self, view: SchedulerView) -> Sequence[Decision]:
        if self.tuner is not None:
            self.tuner.observe(view, self)
        cluster = view.cluster
        alloc = view.allocation()
        out: list[Decision] = []
        wake = math.inf
        victims_taken: set[str] = set()
        self._pass_victims: list[JobView] | None = None  # eligible running jobs, built on first need
        pending = sorted(view.pending, key=lambda j: _order_key(self.order, j)) if self.order != "fifo" \
            else list(view.pending)
        for job in pending:
            n = job.num_gpus
            cls, sigma, d = self.timer(job, view)
            best = best_level(cluster, n)
            wait = job.waiting_s
            level = self.allowed_level(best, wait, d)
            got = tightest(alloc.for_mem(job.mem_mb), n, level, cluster, packed=level == best)
            if got is None and self.preemption and cls == HIGH and best <= L1:
                pw = self._preempt_wait()
                if wait + _TOL >= pw and tightest(alloc.for_mem(job.mem_mb), n, L1, cluster) is None:
                    got = self._preempt_for(job, best, view, alloc, out, victims_taken)
            if got is not None:
                gpus, lvl = got
                alloc.take(gpus)
                out.append(Start(job.job_id, tuple(gpus)))
                self._mech["best_level_placements" if lvl <= best else "relaxed_placements"] += 1
                if lvl > best:
                    if cls != LOW:
                        self._mech[f"relaxed_{cls}_placements"] += 1
                    if d > 0:  # a positive timer ran out: the delay mechanism itself relaxed the job
                        self._mech["expired_timer_placements"] += 1
                if job.job_id in self._held:
                    self._held.discard(job.job_id)
                    self._mech["delayed_placements"] += 1
                if self.tuner is not None:
                    self.tuner.placed(job, cls, sigma, lvl <= best, view)
                continue
            if level < L2 and job.job_id not in self._held \
                    and tightest(alloc.for_mem(job.mem_mb), n, L2, cluster) is not None:
                self._held.add(job.job_id)  # free GPUs at a looser level, the timer holds the job back
                self._mech["timer_holds"] += 1
            if level < L2 and not math.isinf(d) and d > 0:
                k = level - best + 1
                wake = min(wake, view.now + k * d - wait)
            if self.preemption and cls == HIGH and best <= L1:
                pw = self._preempt_wait()
                if wait < pw:
                    wake = min(wake, view.now + pw - wait)
        # victims go back anywhere at once (their timer is 0 when they are low)
        for d_ in list(out):
            if isinstance(d_, Preempt):
                v = view.job(d_.job_id)
                _, _, dv = self.timer(v, view)
                lvl_v = L2 if dv <= 0 else best_level(cluster, v.num_gpus)
                got = tightest(alloc.for_mem(v.mem_mb), v.num_gpus, lvl_v, cluster)
                if got is not None:
                    alloc.take(got[0])
                    out.append(Start(v.job_id, tuple(got[0])))
        if wake < math.inf and wake > view.now + 1e-9:
            out.append(WakeAt(wake))
        return out

    def _victim_ok(self, v: JobView, view: SchedulerView, taken: set[str]) -> bool:
        if v.status is not JobStatus.RUNNING or v.job_id in taken or v.preemptions >= self.max_preemptions:
            return False
        cls = self.sens.cls(v, view)
        return cls == LOW or (cls == MEDIUM and placement_level(view.cluster, v.gpus) == L2)

    def _preempt_for(self, job: JobView, best: int, view: SchedulerView, alloc: Any, out: list[Decision],
                     taken: set[str]) -> tuple[list[int], int] | None:
        cluster = view.cluster
        n = job.num_gpus
        if self._pass_victims is None:
            self._pass_victims = [v for v in view.running if self._victim_ok(v, view, set())]
        cands = [v for v in self._pass_victims if v.job_id not in taken]
        if not cands:
            return None
        groups = [[s] for s in range(cluster.num_servers)] if best == 0 else [list(r) for r in cluster.rack_servers]
        on_server: dict[int, list[JobView]] = {}
        for v in cands:
            for s in sorted(cluster.servers_of(v.gpus)):
                on_server.setdefault(s, []).append(v)
        best_set: tuple[tuple[int, float], list[JobView]] | None = None
        for servers in groups:
            sset = set(servers)
            free = sum(alloc.free_count(s) for s in servers)
            need = n - free
            local_ids: dict[str, JobView] = {}
            for s in servers:
                for v in on_server.get(s, ()):
                    local_ids.setdefault(v.job_id, v)
            if not local_ids:
                continue
            local = sorted(local_ids.values(), key=lambda v: (v.num_gpus, -v.remaining_ideal_s, v.seq))
            chosen: list[JobView] = []
            for v in local:
                if need <= 0:
                    break
                chosen.append(v)
                need -= sum(1 for g in v.gpus if cluster.gpu_server[g] in sset)
            if need > 0 or not chosen:
                continue
            cost = (sum(v.num_gpus for v in chosen), -sum(v.remaining_ideal_s for v in chosen))
            if best_set is None or cost < best_set[0]:
                best_set = (cost, chosen)
        if best_set is None:
            return None
        chosen = best_set[1]
        for v in chosen:
            alloc.release(v.gpus)
        got = tightest(alloc.for_mem(job.mem_mb), n, best, cluster)
        if got is None:  # only when memory rules the freed GPUs out: undo rather than evict for nothing
            for v in chosen:
                alloc.take(v.gpus)
            return None
        for v in chosen:
            taken.add(v.job_id)
            out.append(Preempt(v.job_id))
            self._mech["network_preemptions"] += 1
        return got


class StrictConsolidation(DelayScheduling):
    """Strict consolidation (docs/policies/delay-sched.md §7): always wait for the tightest level (infinite timers),
    FIFO with backfill,
    no preemption (YARN-CS style)."""

    description = "strict consolidation: wait for the tightest placement (FIFO, backfill)"

    name = "strict-consolidation"

    def __init__(self, order: Literal["fifo", "sjf", "las"] = "fifo") -> None:
        super().__init__(order=order, timer_high=math.inf, timer_medium=math.inf, timer_low=math.inf,
                         preemption=False)


class ConditionalConsolidation(PlacementStrategy):
    """Tiresias-style conditional consolidation (docs/policies/delay-sched.md §7): jobs whose sensitivity class is
    ``medium`` or
    ``high`` wait for their best level; the others take the first free GPUs. (Tiresias consolidates models
    with skewed tensor sizes; we use the physics-derived class as the criterion [I].)"""

    name = "conditional"
    description = "consolidate sensitive jobs only"

    def __init__(self, high: float = 0.5, medium: float = 0.1) -> None:
        self.sens = Sensitivity(high, medium)
        self._ff = FirstFit()

    def place(self, job: JobView, alloc: Any, view: SchedulerView) -> list[int] | None:
        if self.sens.cls(job, view) == LOW:
            return self._ff.place(job, alloc, view)
        got = tightest(alloc, job.num_gpus, best_level(view.cluster, job.num_gpus), view.cluster)
        return got[0] if got else None


class GandivaPack(Policy):
    """Gandiva-like packing (docs/policies/delay-sched.md §7 [I]): FIFO with backfill, no waiting; a job's GPUs are
    taken from servers
    that already run jobs of the same size first (Gandiva's affinity), best fit (fewest free GPUs) first,
    spilling over other servers as needed. Gandiva's time-slicing and migration are not modelled."""

    name = "gandiva-pack"
    description = "Gandiva-like affinity packing: same-size jobs on the same servers, no waiting"
    family = "network-sensitive"

    def schedule(self, view: SchedulerView) -> Sequence[Decision]:
        cluster = view.cluster
        alloc = view.allocation()
        sizes: dict[int, set[int]] = {}
        for r in view.running:
            for s in cluster.servers_of(r.gpus):
                sizes.setdefault(s, set()).add(r.num_gpus)
        out: list[Decision] = []
        for job in view.pending:
            n = job.num_gpus
            fit = alloc.for_mem(job.mem_mb)
            if n > fit.num_free:
                continue
            servers = sorted(fit.servers_with_free(),
                             key=lambda s: (n not in sizes.get(s, ()), fit.free_count(s) < n,
                                            fit.free_count(s), s))
            gpus: list[int] = []
            for s in servers:
                gpus.extend(fit.free_gpus(s)[: n - len(gpus)])
                if len(gpus) == n:
                    break
            fit.take(gpus)
            for s in cluster.servers_of(gpus):
                sizes.setdefault(s, set()).add(n)
            out.append(Start(job.job_id, tuple(gpus)))
        return out


@register
class DelaySched(DelayScheduling):
    name = "delay-sched"
    description = "network-sensitive delay scheduling + preemption, fixed class timers"


@register
class DelaySchedAutotune(DelayScheduling):
    name = "delay-sched-autotune"
    description = "delay scheduling with auto-tuned timers (autotune=search|feedback|analytic)"
    default_autotune = "search"
    paper_scale_jobs = 8_750  # measured (issue 30): jobs done in the first minute, docs/policies/README.md


@register
class StrictConsolidationPolicy(StrictConsolidation):
    name = "strict-consolidation"
    description = "always wait for the tightest placement (YARN-CS style; FIFO with backfill)"


@register
class TiresiasCC(OrderedPolicy):
    """Tiresias 2D-LAS with conditional consolidation of network-sensitive jobs."""

    name = "tiresias-cc"
    description = "Tiresias LAS with conditional consolidation of sensitive jobs"
    family = "network-sensitive"

    def __init__(self, thresholds: Sequence[PositiveFloat] = (3600.0,),
                 service: Literal["gpu_time", "time"] = "gpu_time", high: NonNegativeFloat = 0.5,
                 medium: NonNegativeFloat = 0.1) -> None:
        super().__init__(Tiresias(thresholds, service), ConditionalConsolidation(high, medium), backfill=True,
                         name="tiresias-cc")


register(GandivaPack)
