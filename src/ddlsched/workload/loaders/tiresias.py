"""Tiresias simulator inputs: ``60_job.csv`` (seconds) and the single-column ``yarn-gput*.csv`` duration lists."""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from pathlib import Path

from ddlsched.errors import InputError
from ddlsched.workload.loaders._common import Builder, Header, Row, check_file, read_rows
from ddlsched.workload.trace import Trace

REQUIRED = ["job_id", "num_gpu", "submit_time", "iterations", "model_name"]


def load_tiresias(path: str | Path, *, skip_invalid: bool = False, seed: int = 0, num_gpus: int = 1,
                  arrival_rate_per_s: float | None = None, model_mix: Mapping[str, float] | None = None) -> Trace:
    """Load a Tiresias trace.

    * Job table (``job_id,num_gpu,submit_time,iterations,model_name,...``, seconds): iterations and model kept.
    * Duration list (header ``duration`` only): the file has no ids, arrivals, GPU counts or models, so
      job ids are ``<stem>-<n>``, every job gets ``num_gpus`` GPUs (default 1), arrivals are all 0 unless
      ``arrival_rate_per_s`` is given (then a Poisson process drawn from ``random.Random(seed)``), and models come
      from ``model_mix`` by hash(seed, job_id). All of this is written into ``Trace.notes``.
    """
    p = check_file(path)
    rows = read_rows(p)
    first = next(rows, None)
    if first is None:
        raise InputError("empty file", path=str(p))
    if first[1] == ["duration"]:
        return _load_durations(p, rows, skip_invalid=skip_invalid, seed=seed, num_gpus=num_gpus,
                               rate=arrival_rate_per_s, model_mix=model_mix)
    b = Builder(p, "tiresias", skip_invalid=skip_invalid, seed=seed)
    header = Header(p, first[1], REQUIRED)
    for line, fields in rows:
        try:
            r = Row(p, line, fields, header)
            job_id = r.text("job_id")
            b.add(r, job_id=job_id, arrival_s=r.number("submit_time", min_value=0),
                  num_gpus=r.integer("num_gpu", positive=True), model=b.model(r.text("model_name"), job_id),
                  iterations=r.number("iterations", positive=True))
        except InputError as e:
            b.reject(e)
    return b.finish()


def _load_durations(p: Path, rows: Iterator[tuple[int, list[str]]], *, skip_invalid: bool, seed: int, num_gpus: int,
                    rate: float | None, model_mix: Mapping[str, float] | None) -> Trace:
    if num_gpus < 1:
        raise InputError(f"num_gpus must be >= 1, got {num_gpus}", field="num_gpus")
    if rate is not None and not rate > 0:
        raise InputError(f"arrival_rate_per_s must be > 0, got {rate}", field="arrival_rate_per_s")
    b = Builder(p, "tiresias", skip_invalid=skip_invalid, seed=seed, model_mix=model_mix)
    rng = random.Random(seed)
    t = 0.0
    for line, fields in rows:
        try:
            r = Row(p, line, fields, expected=1)
            dur = r.number(0, "duration", positive=True)
            job_id = f"{p.stem}-{line - 2}"
            b.add(r, job_id=job_id, arrival_s=t, num_gpus=num_gpus, model=b.model(None, job_id), duration_s=dur)
            if rate is not None:
                t += rng.expovariate(rate)
        except InputError as e:
            b.reject(e)
    b.notes.append("duration-only file (seconds): no arrivals, GPU counts or models in the trace")
    b.notes.append(f"num_gpus = {num_gpus} for every job (option num_gpus)")
    if rate is None:
        b.notes.append("every job arrives at 0 (pass arrival_rate_per_s for seeded Poisson arrivals)")
    else:
        b.notes.append(f"arrivals generated: Poisson process, rate {rate:g}/s, random.Random(seed={seed})")
    return b.finish()
