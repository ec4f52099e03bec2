"""Synthetic workloads: the Philly job-size mix of papers 1 and 2.

Sizes: job ``i`` (0-based) of ``n`` gets the first size of ``[1, 2, 4, 8, 16, 32]`` whose cumulative boundary
``[40, 47, 60, 75, 79, 80][k] * n / 80`` exceeds ``i`` (n=160 → 80/14/26/30/8/2 jobs). The size list is then
shuffled, the models (uniform from ``models``) and iterations (uniform integers in ``iterations``) drawn, and the
arrivals generated, all from one ``random.Random(seed)`` in that order — so the same arguments give the same
jobs on every run and platform.

Arrivals: ``"poisson"`` (exponential gaps at ``rate_per_s``, first job at 0), ``"uniform"`` (uniform in
``[0, window_s)``), ``"batch"`` (all at 0).
"""

from __future__ import annotations

import csv
import io
import math
import random
from collections.abc import Sequence

from ddlsched.errors import InputError
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.limits import MAX_ARRIVAL_S, MAX_ITERATIONS
from ddlsched.workload.trace import Trace

SIZES = (1, 2, 4, 8, 16, 32)
BOUNDARIES = (40, 47, 60, 75, 79, 80)
WANG_MODELS = ("resnet50", "vgg16_wang", "inception3", "lstm")


def philly_sizes(n_jobs: int) -> list[int]:
    """GPU counts of the Philly mix for ``n_jobs`` jobs, in boundary order (unshuffled)."""
    out = []
    for i in range(n_jobs):
        for size, bound in zip(SIZES, BOUNDARIES, strict=True):
            if i < bound * n_jobs / 80:
                out.append(size)
                break
    return out


def philly_mix(n_jobs: int, *, seed: int, arrival: str = "poisson", rate_per_s: float | None = None,
               window_s: float | None = None, models: Sequence[str] = WANG_MODELS,
               iterations: tuple[int, int] = (1000, 6000)) -> Trace:
    """Generate ``n_jobs`` jobs with the Philly size mix (see module docstring); returns a :class:`Trace`."""
    if n_jobs < 1:
        raise InputError(f"n_jobs must be >= 1, got {n_jobs}", field="n_jobs")
    if not models:
        raise InputError("models is empty", field="models")
    lo, hi = iterations
    if not 1 <= lo <= hi <= MAX_ITERATIONS:
        raise InputError(f"iterations range must satisfy 1 <= lo <= hi, got {iterations}", field="iterations")
    if arrival == "poisson":
        if rate_per_s is None or not (math.isfinite(rate_per_s) and rate_per_s > 0):
            raise InputError(f"arrival='poisson' needs a finite rate_per_s > 0, got {rate_per_s!r}",
                             field="rate_per_s")
    elif arrival == "uniform":
        if window_s is None or not 0 < window_s <= MAX_ARRIVAL_S:
            raise InputError(f"arrival='uniform' needs window_s in (0, {MAX_ARRIVAL_S:g}], got {window_s!r}",
                             field="window_s")
    elif arrival != "batch":
        raise InputError(f"unknown arrival process {arrival!r}; use poisson, uniform or batch", field="arrival")
    rng = random.Random(seed)
    sizes = philly_sizes(n_jobs)
    rng.shuffle(sizes)
    picked = [models[rng.randrange(len(models))] for _ in range(n_jobs)]
    iters = [rng.randint(lo, hi) for _ in range(n_jobs)]
    if arrival == "poisson":
        times, t = [], 0.0
        for _ in range(n_jobs):
            times.append(t)
            t += rng.expovariate(rate_per_s)  # type: ignore[arg-type]
    elif arrival == "uniform":
        times = [rng.random() * window_s for _ in range(n_jobs)]  # type: ignore[operator]
    else:
        times = [0.0] * n_jobs
    if times and max(times) > MAX_ARRIVAL_S:
        raise InputError(f"arrivals reach {max(times):g} s, beyond the limit of {MAX_ARRIVAL_S:g} s; raise rate_per_s",
                         field="rate_per_s")
    jobs = [JobSpec(job_id=f"syn-{i}", arrival_s=times[i], num_gpus=sizes[i], model=picked[i],
                    iterations=float(iters[i]), source=f"philly_mix:{i}") for i in range(n_jobs)]
    how = {"poisson": f"poisson rate {rate_per_s}/s", "uniform": f"uniform in [0, {window_s}) s", "batch": "all at 0"}
    notes = [f"synthetic Philly mix: n={n_jobs}, seed={seed}, arrivals {how[arrival]}, models {', '.join(models)} "
             f"(uniform), iterations uniform in [{lo}, {hi}]"]
    return Trace(jobs=jobs, path=f"synthetic:philly_mix(n={n_jobs},seed={seed})", format="synthetic", notes=notes)


def to_csv(trace: Trace) -> str:
    """The jobs as CSV text (``job_id,arrival_s,num_gpus,model,iterations,duration_s``), loadable by
    ``generic_csv``; ``repr`` of floats makes the text byte-identical for identical traces."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["job_id", "arrival_s", "num_gpus", "model", "iterations", "duration_s"])
    for j in trace.jobs:
        w.writerow([j.job_id, repr(j.arrival_s), j.num_gpus, j.model,
                    "" if j.iterations is None else repr(j.iterations),
                    "" if j.duration_s is None else repr(j.duration_s)])
    return buf.getvalue()
