"""Random scenarios that compare the ``phased`` fluid approximation with the exact phase simulation
(``benchmarks/phased_error.py`` runs 200 of them; the tests run a few; docs/physics.md §11 reports them).

A scenario: 2–5 jobs of 2–4 workers on a 4×4-GPU rack (10 Gb/s NICs) or on two racks of 4×4 GPUs with 2:1
uplinks; each job's GPUs on distinct random servers; compute c ~ U(50, 300) ms; alone all-reduce m0 = ρ·c with
ρ log-uniform in [0.25, 4]; overlap ω = 0 for half the jobs, else U(0, 0.6). The exact reference is the mean,
over ``draws`` random start offsets (each job's offset ~ U(0, its alone iteration)), of each job's steady-state
iteration time: the approximation assumes random relative phases, and two jobs of equal period keep their
offset forever (docs/physics.md §11), so a single offset is no fair reference.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from ddlsched.cluster.topology import GBIT, Cluster, GPUType, ServerSpec
from ddlsched.perf.base import Placement, ring_bytes_per_hop
from ddlsched.perf.maxmin import MaxMinLinkSharing
from ddlsched.perf.phased import PhasedContention
from ddlsched.perf.phased_exact import phased_job, simulate_phases
from ddlsched.workload.profiles import ModelProfile


@dataclass(frozen=True, slots=True)
class JobError:
    scenario: int
    job_id: str
    exact_s: float  # mean over offsets of the exact steady-state iteration
    exact_min_s: float  # best and worst offset
    exact_max_s: float
    phased_s: float  # the fluid approximation
    maxmin_s: float  # always-communicating max-min, for comparison
    alone_s: float

    @property
    def rel_err(self) -> float:
        return self.phased_s / self.exact_s - 1.0

    @property
    def maxmin_rel_err(self) -> float:
        return self.maxmin_s / self.exact_s - 1.0


def _cluster(two_racks: bool) -> Cluster:
    gt = {"V100": GPUType("V100", 32768)}
    if two_racks:
        racks = [[ServerSpec(4, "V100", 10.0) for _ in range(4)] for _ in range(2)]
        return Cluster.build("two-racks", racks, gt, oversubscription=2.0)
    return Cluster.build("rack", [[ServerSpec(4, "V100", 10.0) for _ in range(4)]], gt)


def random_scenario(rng: random.Random) -> tuple[Cluster, list[Placement]]:
    c = _cluster(rng.random() < 0.3)
    free = {s: list(g) for s, g in enumerate(c.server_gpus)}
    out: list[Placement] = []
    for i in range(rng.randint(2, 5)):
        servers = [s for s in free if free[s]]
        w = min(rng.randint(2, 4), len(servers))
        if w < 2:
            break
        gpus = tuple(free[s].pop(0) for s in sorted(rng.sample(servers, w)))
        compute_ms = rng.uniform(50.0, 300.0)
        rho = math.exp(rng.uniform(math.log(0.25), math.log(4.0)))
        nic = 10 * GBIT
        grad_mb = rho * compute_ms / 1e3 * nic / ring_bytes_per_hop(1.0, w) / 1e6
        overlap = 0.0 if rng.random() < 0.5 else rng.uniform(0.0, 0.6)
        prof = ModelProfile(f"p{i}", grad_mb, compute_ms, 32, 1000.0, overlap=overlap)
        out.append(Placement(f"j{i}", gpus, prof))
    return c, out


def compare(index: int, cluster: Cluster, placements: list[Placement], rng: random.Random, draws: int = 6,
            iterations: int = 40, warmup: int = 8) -> list[JobError]:
    cap = [link.capacity_Bps for link in cluster.links]
    jobs = [phased_job(cluster, p, cap, 0.0) for p in placements]
    alone = {j.job_id: j.iteration(j.alone_comm_s) for j in jobs}
    runs = []
    for _ in range(draws):
        offsets = {j.job_id: rng.uniform(0.0, alone[j.job_id]) for j in jobs}
        runs.append(simulate_phases(jobs, cap, offsets, iterations=iterations, warmup=warmup))
    ph = PhasedContention(cluster)
    mm = MaxMinLinkSharing(cluster)
    for p in placements:
        ph.add(p)
        mm.add(p)
    return [JobError(index, j.job_id, sum(r[j.job_id] for r in runs) / draws, min(r[j.job_id] for r in runs),
                     max(r[j.job_id] for r in runs), ph.current(j.job_id).total_s,
                     # maxmin knows no overlap: its communication is all exposed
                     mm.current(j.job_id).total_s, alone[j.job_id])
            for j in jobs]


def campaign(n: int, seed: int = 0, draws: int = 6, iterations: int = 40, warmup: int = 8) -> list[JobError]:
    rng = random.Random(seed)
    out: list[JobError] = []
    for i in range(n):
        c, ps = random_scenario(rng)
        out.extend(compare(i, c, ps, rng, draws, iterations, warmup))
    return out
