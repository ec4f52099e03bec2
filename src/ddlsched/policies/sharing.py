"""GPU-sharing schedulers of Luo et al. 2024 (docs/policies/gpu-sharing.md §3–§5): SJF-BSBF, its consolidated variant,
SJF-FFS, and the preemptive baselines SJF/SRTF and Tiresias with the ">100 remaining iterations" rule.

**Share-now-or-wait test (docs/policies/gpu-sharing.md §3, [C][D]).** Job a is queued, job b runs on the GPUs a would
share. With
remaining exclusive times E_a, E_b and slowdowns ξ_a, ξ_b (Ê = ξ·E):

    t_seq = E_b + E_a / 2
    t_con = E_a/2 + (1 − 1/(2ξ_a))·Ê_b   if Ê_a ≥ Ê_b (b finishes first)
            E_b/2 + (1 − 1/(2ξ_b))·Ê_a   otherwise
    share ⇔ t_con < t_seq

(symmetric ξ and b finishing first: share ⇔ ξ < 1.5). The sub-batch search (docs/policies/gpu-sharing.md §3 [A][I])
evaluates t_con for
every accumulation step s_a ∈ {1, 2, 4, 8} whose memory (``perf.interference.accum_mem``) fits next to b,
with E_a(s) = E_a·g(s), and keeps the smallest; b's setting is not changed (the simple default of
docs/policies/gpu-sharing.md §3).
E_a = remaining iterations × alone-and-consolidated iteration time; E_b = b's remaining iterations × its
isolated iteration time on its GPUs. ξ comes from the same table the ``sharing`` perf model uses.

**SJF-BSBF (docs/policies/gpu-sharing.md §4).** Pending jobs shortest remaining time first (``sort="gpu_time"``
multiplies by GPUs).
Candidate GPUs host ≤ 1 job and have memory for a at its smallest sub-batch; servers are visited by ascending
number of resident jobs. Idle GPUs are used first; if they do not suffice, running partners that pass the test
are taken by ascending t_con (``rank="t_con"``, the authors' code) or descending benefit t_seq − t_con
(``rank="benefit"``) until the job has its GPUs; otherwise it waits. The job runs with the largest
accumulation step chosen for any of its partners. No preemption.
``consolidated=True`` (``sjf-bsbf-consolidated``, the code's ``sjf-bsbfs``) first tries a single server chosen by
best fit on its *idle* GPUs with key (free − need if free ≥ need else GPUs/server, −free, #jobs) (the authors'
``bsbf_alloc_res_consolidate``), applying the free-then-shared walk inside each server in that order, then falls
back to the multi-server walk.
**SJF-FFS**: the same walk without the benefit test (first-fit sharing), smallest sub-batch step that fits.
Only running jobs are sharing partners (a job started earlier in the same pass is not).

**Share jobs** (``JobSpec.gpu_share``, loaded with ``fractional_gpus="keep"``; docs/traces.md "Fractional GPUs
and GPU sharing"). Before the walk, a pending share job packs onto a GPU that holds only share jobs, running or
started earlier in the pass, when the shares sum to ≤ 1 with its own and its memory fits (the fullest such GPU
first: best fit, so idle GPUs stay whole); no benefit test, since packed share jobs run at their trace speed
(no ξ). Otherwise it goes through the walk above like any 1-GPU job, except that a GPU whose one resident is a
share job is not a sharing partner for it (their shares decided that already).

**Preemptive baselines (docs/policies/gpu-sharing.md §5, [C]).** Exclusive GPUs, YARN-style consolidated placement
(one server if
G ≤ GPUs/server, else whole servers in one rack); jobs ranked by (class, running first, key); when a pending job
cannot be placed, running jobs of a strictly worse class with > ``min_remaining_iters`` (100) remaining
iterations are preempted from the tail of the ranking, one at a time, until it fits (undone if it never fits).
``sjf-preempt``: SRTF key. ``tiresias-700``: 2 queues, threshold 700 s of *executed time*, starvation factor 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import NonNegativeFloat, PositiveFloat, PositiveInt

from ddlsched.engine.decisions import Decision, Start
from ddlsched.engine.jobview import JobView
from ddlsched.engine.model import Requirements, share_fits
from ddlsched.engine.view import SchedulerView
from ddlsched.perf.interference import SUB_BATCH_STEPS, Interference, accum_mem, accum_slowdown
from ddlsched.policies.base import Policy
from ddlsched.policies.baselines import OrderedPolicy
from ddlsched.policies.locality import best_level, tightest
from ddlsched.policies.ordering import Ordering, Srtf, Tiresias
from ddlsched.policies.placement import PlacementStrategy
from ddlsched.policies.registry import register


@dataclass(frozen=True)
class ShareDecision:
    share: bool
    t_con: float
    t_seq: float
    steps: int = 1

    @property
    def benefit(self) -> float:
        return self.t_seq - self.t_con


def share_check(e_a: float, e_b: float, xi_a: float, xi_b: float) -> ShareDecision:
    """The pairwise test of docs/policies/gpu-sharing.md §3 (see the module docstring)."""
    ha, hb = xi_a * e_a, xi_b * e_b
    t_seq = e_b + e_a / 2.0
    if ha >= hb:
        t_con = e_a / 2.0 + (1.0 - 1.0 / (2.0 * xi_a)) * hb
    else:
        t_con = e_b / 2.0 + (1.0 - 1.0 / (2.0 * xi_b)) * ha
    return ShareDecision(t_con < t_seq, t_con, t_seq)


def best_sub_batch(e_a: float, e_b: float, xi_a: float, xi_b: float, mem_a: float, mem_free: float,
                   steps: Sequence[int] = SUB_BATCH_STEPS, accum_penalty: float = 0.1) -> ShareDecision | None:
    """Smallest t_con over the accumulation steps whose memory fits (t_seq uses s = 1); ``None`` if none fits."""
    best: ShareDecision | None = None
    t_seq = e_b + e_a / 2.0
    for s in steps:
        if accum_mem(mem_a, s) > mem_free + 1e-6:
            continue
        d = share_check(e_a * accum_slowdown(s, accum_penalty), e_b, xi_a, xi_b)
        cand = ShareDecision(d.t_con < t_seq, d.t_con, t_seq, s)
        if best is None or cand.t_con < best.t_con:
            best = cand
    return best


def _mem(job: JobView) -> float:
    return job.spec.gpu_mem_mb or job.profile.mem_mb


class SharingSJF(Policy):
    """SJF-BSBF / SJF-FFS (module docstring)."""

    description = "SJF with GPU sharing"
    family = "gpu-sharing"
    requirements = Requirements(jobs_per_gpu=2, clairvoyant=True)
    mode = "bsbf"
    default_consolidated = False

    def __init__(self, *, consolidated: bool | None = None, rank: Literal["t_con", "benefit"] = "t_con",
                 sort: Literal["time", "gpu_time"] = "time", steps: Sequence[PositiveInt] = SUB_BATCH_STEPS,
                 accum_penalty: NonNegativeFloat = 0.1, interference: dict[str, Any] | None = None) -> None:
        if not steps or min(steps) < 1:
            raise ValueError("steps must be positive integers")
        self.consolidated = self.default_consolidated if consolidated is None else consolidated
        self.rank, self.sort = rank, sort
        self.steps = tuple(sorted(int(s) for s in steps))
        self.accum_penalty = accum_penalty
        self.xi = Interference(**(interference or {}))

    def _e_running(self, b: JobView, view: SchedulerView) -> float:
        return b.remaining_iters * view.estimate(b, b.gpus, b.accum_steps).total_s

    def schedule(self, view: SchedulerView) -> Sequence[Decision]:
        cluster = view.cluster
        residents: dict[int, list[str]] = {}
        mem_used: dict[int, float] = {}
        alloc = view.allocation()
        def key(j: JobView) -> tuple[float, int]:
            return (j.remaining_ideal_s * (j.num_gpus if self.sort == "gpu_time" else 1), j.seq)

        out: list[Decision] = []
        running = {j.job_id: j for j in view.running}
        # share jobs (JobSpec.gpu_share): their shares, and the GPUs that hold one (module docstring)
        share_of = {k: j.gpu_share for k, j in running.items() if j.gpu_share is not None}
        share_gpus = {g for k in share_of for g in running[k].gpus}

        def res(g: int) -> list[str]:
            r = residents.get(g)
            if r is None:
                r = residents[g] = list(view.gpu_jobs(g))
            return r

        def free_mem(g: int) -> float:
            return view.gpu_mem_free_mb(g) - mem_used.get(g, 0.0)

        # The cluster's state as this pass sees it changes only when a job is placed; between placements it is
        # read from a snapshot (servers by resident count, and per GPU: idle, or shared by one running job and
        # its free memory) instead of rescanning every GPU for every waiting job.
        snapshot: tuple[dict[int, int], list[int], dict[int, list[tuple[int, bool, float]]]] | None = None

        def take_snapshot() -> tuple[dict[int, int], list[int], dict[int, list[tuple[int, bool, float]]]]:
            server_jobs = {s: len({j for g in cluster.server_gpus[s] for j in res(g)})
                           for s in range(cluster.num_servers)}
            order = sorted(range(cluster.num_servers), key=lambda s: (server_jobs[s], s))
            gpus = {s: [(g, not res(g), len(res(g)) == 1 and res(g)[0] in running, free_mem(g))
                        for g in cluster.server_gpus[s] if len(res(g)) <= 1] for s in order}
            return server_jobs, order, gpus

        def shares(g: int) -> list[float]:
            return [share_of.get(k, 0.0) for k in res(g)]

        for a in sorted(view.pending, key=key):
            n = a.num_gpus
            mem_a = _mem(a)
            s_a = a.gpu_share or 0.0
            if s_a:
                g_pack = self._pack(s_a, mem_a, share_gpus, shares, free_mem, view.max_jobs_per_gpu)
                if g_pack is not None:
                    res(g_pack).append(a.job_id)
                    mem_used[g_pack] = mem_used.get(g_pack, 0.0) + mem_a
                    share_of[a.job_id] = s_a
                    out.append(Start(a.job_id, (g_pack,), share=True))
                    snapshot = None
                    continue
            mem_min = accum_mem(mem_a, self.steps[-1])
            if snapshot is None:
                snapshot = take_snapshot()
            server_jobs, order, gpus_by_server = snapshot
            # a share job pairs only with a whole-GPU job: beside share jobs, its shares decide (_pack)
            cand_by_server = {s: [g for g, idle, solo, fm in gpus_by_server[s]
                                  if idle or (solo and fm >= mem_min and not (s_a and res(g)[0] in share_of))]
                              for s in order}
            plan = None
            if self.consolidated:
                gps = cluster.max_gpus_per_server
                nfree = {s: sum(1 for g in cand_by_server[s] if not res(g)) for s in order}
                for s in sorted(order, key=lambda s: (nfree[s] - n if nfree[s] >= n else gps, -nfree[s],
                                                      server_jobs[s], s)):
                    if len(cand_by_server[s]) < n:
                        continue
                    plan = self._plan(a, n, mem_a, cand_by_server[s], res, free_mem, running, view)
                    if plan is not None:
                        break
            if plan is None:
                cands = [g for s in order for g in cand_by_server[s]]
                plan = self._plan(a, n, mem_a, cands, res, free_mem, running, view)
            if plan is None:
                continue
            gpus, steps, shared = plan
            m = accum_mem(mem_a, steps)
            newly = [g for g in gpus if not res(g)]
            alloc.take(newly)
            for g in gpus:
                res(g).append(a.job_id)
                mem_used[g] = mem_used.get(g, 0.0) + m
            if s_a:
                share_of[a.job_id] = s_a
                share_gpus.update(gpus)
            out.append(Start(a.job_id, tuple(gpus), share=shared, accum_steps=steps))
            snapshot = None
        return out

    @staticmethod
    def _pack(s_a: float, mem_a: float, share_gpus: set[int], shares: Any, free_mem: Any,
              jobs_per_gpu: int) -> int | None:
        """The GPU a share job of share ``s_a`` packs onto beside share jobs only, by its share
        (``engine.model.share_fits``) and memory: the fullest such GPU (best fit), then the lowest id; None if
        none has room."""
        best: tuple[float, int] | None = None
        for g in share_gpus:
            held = shares(g)
            if not held or min(held) <= 0.0 or not share_fits(s_a, held, jobs_per_gpu) or free_mem(g) < mem_a:
                continue
            k = (-sum(held), g)
            if best is None or k < best:
                best = k
        return None if best is None else best[1]

    def _plan(self, a: JobView, n: int, mem_a: float, cands: list[int], res: Any, free_mem: Any,
              running: dict[str, JobView], view: SchedulerView) -> tuple[list[int], int, bool] | None:
        free = [g for g in cands if not res(g) and free_mem(g) >= mem_a]
        if len(free) >= n:
            return free[:n], 1, False
        shared = [g for g in cands if len(res(g)) == 1]
        if len(free) + len(shared) < n:
            return None
        chosen = list(free)
        partners: list[str] = []
        for g in shared:
            b = res(g)[0]
            if b not in partners:
                partners.append(b)
        if self.mode == "ffs":
            take = shared[: n - len(chosen)]
            room = min(free_mem(g) for g in take)
            fits = [s for s in self.steps if accum_mem(mem_a, s) <= room + 1e-6]
            if not fits:
                return None
            return chosen + take, fits[0], True
        e_a = a.remaining_ideal_s
        ok: list[tuple[Any, str, int]] = []
        for b_id in partners:
            b = running[b_id]
            gs = [g for g in shared if res(g)[0] == b_id]
            d = best_sub_batch(e_a, self._e_running(b, view), self.xi.xi(a.profile.name, b.profile.name),
                               self.xi.xi(b.profile.name, a.profile.name), mem_a, min(free_mem(g) for g in gs),
                               self.steps, self.accum_penalty)
            if d is not None and d.share:
                ok.append((d.t_con if self.rank == "t_con" else -d.benefit, b_id, d.steps))
        steps = 1
        for _, b_id, s in sorted(ok):
            for g in shared:
                if len(chosen) < n and res(g)[0] == b_id:
                    chosen.append(g)
                    steps = max(steps, s)
            if len(chosen) == n:
                return chosen, steps, True
        return None


class YarnPlacement(PlacementStrategy):
    """One server if the job fits in one, else the fewest whole servers inside one rack (YARN-CS;
    docs/policies/gpu-sharing.md §5)."""

    name = "yarn"
    description = "one server, else whole servers in one rack"

    def place(self, job: JobView, alloc: Any, view: SchedulerView) -> list[int] | None:
        n = job.num_gpus
        got = tightest(alloc, n, best_level(view.cluster, n), view.cluster, packed=True)
        return got[0] if got else None


class TailPreemptive(OrderedPolicy):
    """Preemptive ordering + YARN placement + preempt from the tail only jobs with > ``min_remaining_iters``
    remaining iterations (docs/policies/gpu-sharing.md §5)."""

    family = "gpu-sharing"

    def __init__(self, ordering: Ordering, *, min_remaining_iters: float = 100.0, name: str) -> None:
        super().__init__(ordering, YarnPlacement(), backfill=True, name=name)
        self.min_remaining_iters = min_remaining_iters
        # the victim rule reads remaining iterations, whatever the order
        self.requirements = Requirements(preemptive=ordering.preemptive, clairvoyant=True)

    def may_preempt(self, job: JobView) -> bool:
        return job.remaining_iters > self.min_remaining_iters


@register
class SjfBsbf(SharingSJF):
    name = "sjf-bsbf"
    description = "SJF + best-sharing-benefit-first GPU sharing, sub-batch search"
    mode = "bsbf"
    paper_scale_jobs = 3_900  # measured (issue 30): jobs done in the first minute, docs/policies/README.md


@register
class SjfBsbfConsolidated(SharingSJF):
    name = "sjf-bsbf-consolidated"
    description = "SJF-BSBF trying one server first (the authors' sjf-bsbfs)"
    mode = "bsbf"
    default_consolidated = True
    paper_scale_jobs = 7_400  # measured (issue 30): jobs done in the first minute, docs/policies/README.md


@register
class SjfFfs(SharingSJF):
    name = "sjf-ffs"
    description = "SJF + first-fit GPU sharing, no benefit test"
    mode = "ffs"
    paper_scale_jobs = 6_050  # measured (issue 30): jobs done in the first minute, docs/policies/README.md


@register
class SjfPreempt(TailPreemptive):
    name = "sjf-preempt"
    description = "preemptive SRTF, exclusive YARN placement, preempts jobs with >100 iterations left"

    def __init__(self, min_remaining_iters: NonNegativeFloat = 100.0) -> None:
        super().__init__(Srtf(), min_remaining_iters=min_remaining_iters, name="sjf-preempt")


@register
class Tiresias700(TailPreemptive):
    name = "tiresias-700"
    description = "Tiresias, 2 queues at 700 s executed time, starvation factor 1, >100-iteration preemption rule"

    def __init__(self, threshold_s: PositiveFloat = 700.0, starvation_factor: NonNegativeFloat = 1.0,
                 min_remaining_iters: NonNegativeFloat = 100.0) -> None:
        super().__init__(Tiresias((threshold_s,), "time", starvation_factor),
                         min_remaining_iters=min_remaining_iters, name="tiresias-700")
