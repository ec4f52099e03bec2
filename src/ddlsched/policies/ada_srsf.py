"""LWF-κ placement, SRSF(n) / AdaDUAL communication admission and Ada-SRSF (Wang et al. 2020;
ALGORITHMS.md §3.3–§3.7). These policies run on the task-level engine (``engine = "tasklevel"``, which the
CLI honours); their :meth:`TaskLevelPolicy.schedule` is a fluid approximation (below) for direct use with
the fluid :class:`~ddlsched.engine.Simulator`.

* **Queue order** (§3.3): ``ssf`` total GPU service (fw+bw)·iters·n ascending; ``sf`` fewest GPUs;
  ``stf`` (fw+bw)·iters; ``blf`` most GPUs then longest; ``random``; ``fifo`` (ours). Ties: arrival.
* **Pickers** among GPUs with enough free memory: ``bp`` first n in index order (first-fit); ``random``;
  ``lwf`` — LWF-κ: a job with n ≤ κ takes the n GPUs of least (load, server); a larger job takes servers in
  ascending mean GPU load and, inside each, its GPUs by load. Load = Σ over resident jobs of their remaining
  fw + bw + comm time, comm counted as β·M per iteration for multi-server jobs ([I]: the authors' code uses
  the 1 GbE constant 7.8125 ms/MB; it only changes the ranking).
* **Compute priority** (§3.4): ``srsf`` remaining GPU service, ``srtf`` remaining compute of one worker,
  ``sf`` fewest workers.
* **Communication admission** (§3.5), k = transfers already active on the job's busiest NIC:
  SRSF(n) admits iff k ≤ n − 1; AdaDUAL admits iff k = 0, or k = 1 and every ongoing transfer c on the
  job's NICs has remaining(c)/M ≥ 2(β+η)/β (≈ 2.549 with the paper's 10 GbE β, η); never k ≥ 2.
  (The paper states a strict "<" rejects; equality accepts.)
* **Ada-SRSF** = ssf order + LWF-κ + srsf priority + AdaDUAL.

Fluid approximation (``schedule``): one job per GPU, start pending jobs in the queue order on free GPUs with
the picker (load = remaining ideal work of the jobs on a GPU, 0 for a free GPU); the admission rule is
not modelled — contention then comes from the fluid physics (e.g. ``--perf-model abe``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from ddlsched.engine.decisions import Decision, Start
from ddlsched.engine.tasklevel import TaskLevelEngine, TJob
from ddlsched.engine.view import SchedulerView
from ddlsched.perf.abe import PAPER_BETA_MS_PER_MB, PAPER_ETA_MS_PER_MB
from ddlsched.policies.base import Policy
from ddlsched.policies.registry import register_policy

ORDERS = ("ssf", "sf", "stf", "blf", "random", "fifo")
PICKERS = ("bp", "random", "lwf")
PRIORITIES = ("srsf", "srtf", "sf")


def adadual_threshold(beta: float, eta: float) -> float:
    """2(β+η)/β: share a NIC only beside a transfer with at least this many times the new job's bytes left."""
    return 2.0 * (beta + eta) / beta


def lwf_pick(n: int, kappa: int, feasible: Sequence[int], gpu_load: Sequence[float], gpu_server: Sequence[int],
             server_load: dict[int, float]) -> list[int] | None:
    """LWF-κ over ``feasible`` GPUs (§3.3): spread n ≤ κ by GPU load, else fill least-loaded servers."""
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


class TaskLevelPolicy(Policy):
    """One point of the paper-2 design space; see the module docstring."""

    engine = "tasklevel"
    preemptive = False

    def __init__(self, *, order: str = "ssf", picker: str = "lwf", kappa: int = 4, priority: str = "srsf",
                 comm: str = "adadual", n: int = 1, beta: float = PAPER_BETA_MS_PER_MB,
                 eta: float = PAPER_ETA_MS_PER_MB, max_task_iters: int | None = 200, name: str = "") -> None:
        if order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}")
        if picker not in PICKERS:
            raise ValueError(f"picker must be one of {PICKERS}")
        if priority not in PRIORITIES:
            raise ValueError(f"priority must be one of {PRIORITIES}")
        if comm not in ("srsf", "adadual"):
            raise ValueError("comm must be 'srsf' (SRSF(n)) or 'adadual'")
        if int(kappa) < 1 or int(n) < 1:
            raise ValueError("kappa and n must be >= 1")
        if beta <= 0 or eta < 0:
            raise ValueError("beta must be > 0 and eta >= 0")
        self.order_key, self.picker, self.kappa, self.priority_key = order, picker, int(kappa), priority
        self.comm, self.n, self.beta, self.eta = comm, int(n), float(beta), float(eta)
        self.max_task_iters = max_task_iters
        self.name = name or f"{order}-{picker}{self.kappa if picker == 'lwf' else ''}-{priority}-{comm}{self.n}"

    # ------------------------------------------------------------------ task-level rules
    def order(self, queue: list[TJob], rng: random.Random) -> list[TJob]:
        k = self.order_key
        if k == "fifo":
            return sorted(queue, key=lambda j: j.seq)
        if k == "random":
            q = sorted(queue, key=lambda j: j.seq)
            rng.shuffle(q)
            return q
        keys = {
            "ssf": lambda j: (j.total_service, j.seq),
            "sf": lambda j: (j.n, j.seq),
            "stf": lambda j: ((j.fw + j.bw) * j.steps, j.seq),
            "blf": lambda j: (-j.n, -(j.fw + j.bw) * j.steps, j.seq),
        }
        return sorted(queue, key=keys[k])

    def pick(self, job: TJob, engine: TaskLevelEngine) -> list[int] | None:
        c = engine.cluster
        feasible = [g for g in range(c.num_gpus) if engine.gpu_mem_free(g) + 1e-6 >= job.mem]
        if len(feasible) < job.n:
            return None
        if self.picker == "bp":
            return feasible[: job.n]
        if self.picker == "random":
            return sorted(engine.rng.sample(feasible, job.n))
        loads = {s: engine.node_load(s) for s in {c.gpu_server[g] for g in feasible}}
        return lwf_pick(job.n, self.kappa, feasible, engine.gpu_load, c.gpu_server, loads)

    def priority(self, job: TJob) -> float:
        if self.priority_key == "srsf":
            return job.remaining_service
        if self.priority_key == "srtf":
            return job.remaining_worker
        return float(job.n)

    def admit(self, job: TJob, engine: TaskLevelEngine) -> bool:
        k = engine.k_max(job)
        if self.comm == "srsf":
            return k <= self.n - 1
        if k == 0:
            return True
        if k >= 2:
            return False
        thr = adadual_threshold(self.beta, self.eta)
        return all(engine.remaining_mb(c) / job.size_mb >= thr for c in engine.ongoing(job))

    def engine_kwargs(self) -> dict[str, object]:
        return {"beta": self.beta, "eta": self.eta, "max_task_iters": self.max_task_iters}

    # ------------------------------------------------------------------ fluid approximation
    def schedule(self, view: SchedulerView) -> Sequence[Decision]:
        alloc = view.allocation()
        c = view.cluster
        load = [0.0] * c.num_gpus
        for r in view.running:
            for g in r.gpus:
                load[g] += r.remaining_ideal_s
        pending = list(view.pending)
        keys = {
            "ssf": lambda j: (j.ideal_run_s * j.num_gpus, j.seq), "sf": lambda j: (j.num_gpus, j.seq),
            "stf": lambda j: (j.ideal_run_s, j.seq), "blf": lambda j: (-j.num_gpus, -j.ideal_run_s, j.seq),
            "fifo": lambda j: j.seq, "random": lambda j: j.seq,
        }
        pending.sort(key=keys[self.order_key])
        if self.order_key == "random":
            view.rng.shuffle(pending)
        out: list[Decision] = []
        for job in pending:
            if job.num_gpus > alloc.num_free:
                continue
            feasible = alloc.all_free_gpus()
            if self.picker == "bp":
                gpus: list[int] | None = feasible[: job.num_gpus]
            elif self.picker == "random":
                gpus = sorted(view.rng.sample(feasible, job.num_gpus))
            else:
                sload = {s: sum(load[g] for g in c.server_gpus[s]) / len(c.server_gpus[s])
                         for s in {c.gpu_server[g] for g in feasible}}
                gpus = lwf_pick(job.num_gpus, self.kappa, feasible, load, c.gpu_server, sload)
            if gpus is None:
                continue
            alloc.take(gpus)
            for g in gpus:
                load[g] += job.remaining_ideal_s
            out.append(Start(job.job_id, tuple(gpus)))
        return out


_FAMILY = "wang2020"


@register_policy("lwf-kappa", "Wang 2020 LWF-κ placement (ssf order, srsf priority, AdaDUAL); param kappa",
                 family=_FAMILY)
def lwf_kappa(kappa: int = 4, order: str = "ssf", priority: str = "srsf", comm: str = "adadual", n: int = 1,
              beta: float = PAPER_BETA_MS_PER_MB, eta: float = PAPER_ETA_MS_PER_MB,
              max_task_iters: int | None = 200) -> TaskLevelPolicy:
    return TaskLevelPolicy(order=order, picker="lwf", kappa=kappa, priority=priority, comm=comm, n=n, beta=beta,
                           eta=eta, max_task_iters=max_task_iters, name=f"lwf-kappa{int(kappa)}")


@register_policy("wang-first-fit", "Wang 2020 first-fit ('bp') placement baseline (ssf, srsf, AdaDUAL)",
                 family=_FAMILY)
def wang_first_fit(order: str = "ssf", priority: str = "srsf", comm: str = "adadual", n: int = 1,
                   beta: float = PAPER_BETA_MS_PER_MB, eta: float = PAPER_ETA_MS_PER_MB,
                   max_task_iters: int | None = 200) -> TaskLevelPolicy:
    return TaskLevelPolicy(order=order, picker="bp", priority=priority, comm=comm, n=n, beta=beta, eta=eta,
                           max_task_iters=max_task_iters, name="wang-first-fit")


def _srsf(n: int) -> None:
    @register_policy(f"srsf{n}", f"Wang 2020 SRSF({n}): start a transfer only if its NICs carry ≤ {n - 1} "
                     "(ssf order, srsf priority; param picker=bp|lwf|random)", family=_FAMILY)
    def factory(picker: str = "bp", kappa: int = 4, order: str = "ssf", beta: float = PAPER_BETA_MS_PER_MB,
                eta: float = PAPER_ETA_MS_PER_MB, max_task_iters: int | None = 200) -> TaskLevelPolicy:
        return TaskLevelPolicy(order=order, picker=picker, kappa=kappa, priority="srsf", comm="srsf", n=n,
                               beta=beta, eta=eta, max_task_iters=max_task_iters, name=f"srsf{n}")


for _n in (1, 2, 3):
    _srsf(_n)


@register_policy("adadual", "Wang 2020 AdaDUAL admission: 2-way only beside a transfer ≥ 2(β+η)/β× larger "
                 "(ssf order, srsf priority; param picker=bp|lwf|random)", family=_FAMILY)
def adadual(picker: str = "bp", kappa: int = 4, order: str = "ssf", beta: float = PAPER_BETA_MS_PER_MB,
            eta: float = PAPER_ETA_MS_PER_MB, max_task_iters: int | None = 200) -> TaskLevelPolicy:
    return TaskLevelPolicy(order=order, picker=picker, kappa=kappa, priority="srsf", comm="adadual", beta=beta,
                           eta=eta, max_task_iters=max_task_iters, name="adadual")


@register_policy("ada-srsf", "Wang 2020 Ada-SRSF: ssf order + LWF-κ + srsf compute priority + AdaDUAL",
                 family=_FAMILY)
def ada_srsf(kappa: int = 4, beta: float = PAPER_BETA_MS_PER_MB, eta: float = PAPER_ETA_MS_PER_MB,
             max_task_iters: int | None = 200) -> TaskLevelPolicy:
    return TaskLevelPolicy(order="ssf", picker="lwf", kappa=kappa, priority="srsf", comm="adadual", beta=beta,
                           eta=eta, max_task_iters=max_task_iters, name="ada-srsf")
