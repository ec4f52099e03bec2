"""LWF-κ placement, SRSF(n) / AdaDUAL communication admission and Ada-SRSF (Wang et al. 2020;
docs/policies/adadual.md). These policies run on the task-DAG execution model (``requirements.model =
"taskdag"``); one pass returns, in order, the placements (``Start``), the admitted transfers (``Transfer``) and the
compute task to run on every idle GPU that has one ready (``RunTask``).

* **Queue order**: ``ssf`` total GPU service (fw+bw)·steps·n ascending; ``sf`` fewest GPUs; ``stf``
  (fw+bw)·steps; ``blf`` most GPUs then longest; ``random``; ``fifo``. Ties: arrival.
* **Pickers** among GPUs with enough free memory: ``bp`` first n in index order (first-fit); ``random``;
  ``lwf`` — LWF-κ: a job with n ≤ κ takes the n GPUs of least (load, server); a larger job takes servers in
  ascending mean GPU load and, inside each, its GPUs by load. Load = Σ over resident jobs of their remaining
  compute and transfer seconds (transfer counted as β·M per step for multi-server jobs).
* **Compute priority** on an idle GPU: ``srsf`` remaining GPU service, ``srtf`` remaining compute of one worker,
  ``sf`` fewest workers (ties: arrival).
* **Communication admission**, k = transfers already active (or admitted earlier in this pass) on the job's
  busiest NIC: SRSF(n) admits iff k ≤ n − 1; AdaDUAL admits iff k = 0, or k = 1 and every ongoing transfer c on
  the job's NICs has remaining(c)/M ≥ 2(β+η)/β (≈ 2.549 with the 10 GbE β, η); never k ≥ 2. Equality admits.
  Multi-server jobs are considered in priority order.
* **Ada-SRSF** = ssf order + LWF-κ + srsf priority + AdaDUAL.

β and η are the task-DAG model's physics parameters (``--perf-param beta=… eta=…``), read from the view.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import PositiveInt

from ddlsched.engine.decisions import Decision, RunTask, Start, Transfer
from ddlsched.engine.model import Requirements
from ddlsched.engine.taskdag import TaskJobView, TaskView
from ddlsched.policies.base import Policy
from ddlsched.policies.registry import register

ORDERS = ("ssf", "sf", "stf", "blf", "random", "fifo")
PICKERS = ("bp", "random", "lwf")
PRIORITIES = ("srsf", "srtf", "sf")
Order = Literal["ssf", "sf", "stf", "blf", "random", "fifo"]
Picker = Literal["bp", "random", "lwf"]


def adadual_threshold(beta: float, eta: float) -> float:
    """2(β+η)/β: share a NIC only beside a transfer with at least this many times the new job's bytes left."""
    return 2.0 * (beta + eta) / beta


def lwf_pick(n: int, kappa: int, feasible: Sequence[int], gpu_load: Any, gpu_server: Sequence[int],
             server_load: dict[int, float]) -> list[int] | None:
    """LWF-κ over ``feasible`` GPUs: spread n ≤ κ by GPU load, else fill least-loaded servers."""
    if len(feasible) < n:
        return None
    if n <= kappa:
        return sorted(feasible, key=lambda g: (gpu_load[g], gpu_server[g], g))[:n]
    by_server: dict[int, list[int]] = {}
    for g in feasible:
        by_server.setdefault(gpu_server[g], []).append(g)
    out: list[int] = []
    for s in sorted(by_server, key=lambda s: (server_load[s], s)):
        out.extend(sorted(by_server[s], key=lambda g: (gpu_load[g], g)))
        if len(out) >= n:
            return out[:n]
    return None


class TaskDagPolicy(Policy):
    """One point of the Wang 2020 design space (see the module docstring); variants fix some choices."""

    family = "wang2020"
    requirements = Requirements(model="taskdag", clairvoyant=True)  # ssf order / srsf priority / LWF sizes
    comm: ClassVar[str] = "adadual"
    n_way: ClassVar[int] = 1
    default_picker: ClassVar[str] = "lwf"

    def __init__(self, *, order: Order = "ssf", picker: Picker | None = None, kappa: PositiveInt = 4,
                 priority: Literal["srsf", "srtf", "sf"] = "srsf") -> None:
        picker = picker or self.default_picker
        if order not in ORDERS or picker not in PICKERS or priority not in PRIORITIES:
            raise ValueError(f"order in {ORDERS}, picker in {PICKERS}, priority in {PRIORITIES}")
        if int(kappa) < 1:
            raise ValueError("kappa must be >= 1")
        self.order_key, self.picker, self.kappa, self.priority_key = order, picker, int(kappa), priority

    # ---------------------------------------------------------------- rules
    def order(self, queue: list[TaskJobView], view: TaskView) -> list[TaskJobView]:
        k = self.order_key
        if k == "fifo":
            return sorted(queue, key=lambda j: j.seq)
        if k == "random":
            q = sorted(queue, key=lambda j: j.seq)
            view.rng.shuffle(q)
            return q
        keys = {
            "ssf": lambda j: (j.total_service, j.seq),
            "sf": lambda j: (j.n, j.seq),
            "stf": lambda j: ((j.fw + j.bw) * j.steps, j.seq),
            "blf": lambda j: (-j.n, -(j.fw + j.bw) * j.steps, j.seq),
        }
        return sorted(queue, key=keys[k])

    def priority(self, job: TaskJobView) -> float:
        if self.priority_key == "srsf":
            return job.remaining_service
        if self.priority_key == "srtf":
            return job.remaining_worker
        return float(job.n)

    def admit(self, job: TaskJobView, k: int, ongoing: list[tuple[TaskJobView, float]], view: TaskView) -> bool:
        """Whether to start ``job``'s transfer beside ``ongoing`` (job, MB left) with k on its busiest NIC."""
        if self.comm == "srsf":
            return k <= self.n_way - 1
        if k == 0:
            return True
        if k >= 2:
            return False
        thr = adadual_threshold(view.beta, view.eta)
        return all(left / job.size_mb >= thr for _, left in ongoing)

    # ---------------------------------------------------------------- the pass
    def schedule(self, view: TaskView) -> list[Decision]:
        out: list[Decision] = []
        started = self._place(view, out)
        self._admit(view, out)
        self._pick(view, started, out)
        return out

    def _place(self, view: TaskView, out: list[Decision]) -> dict[int, list[TaskJobView]]:
        c = view.cluster
        queue = view.queue
        started: dict[int, list[TaskJobView]] = {}
        if not queue:
            return started
        mem = [view.gpu_mem_free(g) for g in range(c.num_gpus)]
        load = [view.gpu_load(g) for g in range(c.num_gpus)]
        for job in self.order(queue, view):
            feasible = [g for g in range(c.num_gpus) if mem[g] + 1e-6 >= job.mem]
            if len(feasible) < job.n:
                continue
            if self.picker == "bp":
                gpus: list[int] | None = feasible[: job.n]
            elif self.picker == "random":
                gpus = sorted(view.rng.sample(feasible, job.n))
            else:
                sload = {s: sum(load[g] for g in c.server_gpus[s]) / len(c.server_gpus[s])
                         for s in {c.gpu_server[g] for g in feasible}}
                gpus = lwf_pick(job.n, self.kappa, feasible, load, c.gpu_server, sload)
            if gpus is None:
                continue
            multi = len(c.servers_of(gpus)) > 1
            per_step = job.fw + job.bw + (view.beta * job.size_mb / 1000.0 if multi else 0.0)
            for g in gpus:
                mem[g] -= job.mem
                load[g] += per_step * job.steps
                started.setdefault(g, []).append(job)
            out.append(Start(job.job_id, tuple(gpus)))
        return started

    def _admit(self, view: TaskView, out: list[Decision]) -> None:
        ready = view.comm_ready
        if not ready:
            return
        c = view.cluster
        on_nic: dict[int, list[tuple[TaskJobView, float]]] = {}
        for s in range(c.num_servers):
            on_nic[s] = [(t, t.remaining_mb()) for t in view.transfers_on(s)]
        for job in sorted(ready, key=lambda j: (self.priority(j), j.seq)):
            k = max(len(on_nic[s]) for s in job.nodes)
            seen: dict[str, tuple[TaskJobView, float]] = {}
            for s in job.nodes:
                for t, left in on_nic[s]:
                    seen[t.job_id] = (t, left)
            ongoing = sorted(seen.values(), key=lambda x: x[0].seq)
            if self.admit(job, k, ongoing, view):
                out.append(Transfer(job.job_id))
                for s in job.nodes:
                    on_nic[s].append((job, job.size_mb))

    def _pick(self, view: TaskView, started: dict[int, list[TaskJobView]], out: list[Decision]) -> None:
        for g in view.idle_gpus():
            best: TaskJobView | None = None
            best_key: tuple[float, int] | None = None
            for job in view.resident(g):
                if job.ready_task_on(g):
                    key = (self.priority(job), job.seq)
                    if best_key is None or key < best_key:
                        best, best_key = job, key
            for job in started.get(g, ()):
                key = (self.priority(job), job.seq)  # a new job's forward task is ready on each of its GPUs
                if best_key is None or key < best_key:
                    best, best_key = job, key
            if best is not None:
                out.append(RunTask(best.job_id, g))


@register
class LwfKappa(TaskDagPolicy):
    name = "lwf-kappa"
    paper_scale_jobs = 400
    description = "Wang 2020 LWF-κ placement (ssf order, srsf priority, AdaDUAL); param kappa"


@register
class WangFirstFit(TaskDagPolicy):
    name = "wang-first-fit"
    paper_scale_jobs = 400
    description = "Wang 2020 first-fit ('bp') placement baseline (ssf, srsf, AdaDUAL)"
    default_picker = "bp"


class _Srsf(TaskDagPolicy):
    comm = "srsf"
    default_picker = "bp"


@register
class Srsf1(_Srsf):
    name = "srsf1"
    paper_scale_jobs = 300
    description = "Wang 2020 SRSF(1): start a transfer only if its NICs carry none (ssf, srsf; param picker)"
    n_way = 1


@register
class Srsf2(_Srsf):
    name = "srsf2"
    paper_scale_jobs = 300
    description = "Wang 2020 SRSF(2): start a transfer only if its NICs carry ≤ 1 (ssf, srsf; param picker)"
    n_way = 2


@register
class Srsf3(_Srsf):
    name = "srsf3"
    paper_scale_jobs = 400
    description = "Wang 2020 SRSF(3): start a transfer only if its NICs carry ≤ 2 (ssf, srsf; param picker)"
    n_way = 3


@register
class AdaDual(TaskDagPolicy):
    name = "adadual"
    paper_scale_jobs = 100
    description = "Wang 2020 AdaDUAL admission: 2-way only beside a transfer ≥ 2(β+η)/β× larger (param picker)"
    default_picker = "bp"


@register
class AdaSrsf(TaskDagPolicy):
    name = "ada-srsf"
    paper_scale_jobs = 200
    description = "Wang 2020 Ada-SRSF: ssf order + LWF-κ + srsf compute priority + AdaDUAL"


def task_dag_policy(*, picker: str, comm: str, n: int = 1, **kw: Any) -> TaskDagPolicy:
    """A policy of the design space by its parts (used by the wang2020 reproduction)."""
    cls: type[TaskDagPolicy]
    if comm == "adadual":
        cls = AdaDual
    else:
        cls = {1: Srsf1, 2: Srsf2, 3: Srsf3}[n]
    p = cls(picker=picker, **kw)  # type: ignore[arg-type]
    p.name = f"{kw.get('order', 'ssf')}-{picker}{p.kappa if picker == 'lwf' else ''}-{comm}{n}"
    return p
