"""Tiresias simulator inputs: ``60_job.csv`` (seconds) and the single-column ``yarn-gput*.csv`` duration lists."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Mapping
from pathlib import Path

from ddlsched.errors import InputError
from ddlsched.workload.limits import MAX_ARRIVAL_S, MAX_GPUS
from ddlsched.workload.loaders._common import Builder, Header, Row, check_file, read_rows
from ddlsched.workload.profiles import ModelCatalog
from ddlsched.workload.trace import Trace

REQUIRED = ["job_id", "num_gpu", "submit_time", "iterations", "model_name"]


def load_tiresias(path: str | Path, *, skip_invalid: bool = False, seed: int = 0, num_gpus: int = 1,
                  arrival_rate_per_s: float | None = None, model_mix: Mapping[str, float] | None = None,
                  unknown_models: str = "error", catalog: ModelCatalog | None = None, shuffle: bool = False) -> Trace:
    """Load a Tiresias trace.

    * Job table (``job_id,num_gpu,submit_time,iterations,model_name,...``, seconds): iterations and model kept.
    * Duration list (header ``duration`` only): the file has no ids, arrivals, GPU counts or models, so
      job ids are ``<stem>-<n>``, every job gets ``num_gpus`` GPUs (default 1), arrivals are all 0 unless
      ``arrival_rate_per_s`` is given (then a Poisson process drawn from ``random.Random(seed)``), and models come
      from ``model_mix`` by hash(seed, job_id). The bundled lists are sorted by duration, so arrivals in file
      order make every queue shortest-first: ``shuffle=True`` gives the Poisson arrivals to the rows in an order
      drawn from ``random.Random(seed + 1)`` (needs ``arrival_rate_per_s``). All of this is written into
      ``Trace.notes``.
    """
    p = check_file(path)
    rows = read_rows(p)
    first = next(rows, None)
    if first is None:
        raise InputError("empty file", path=str(p), line=1)
    if [c.lower() for c in first[1]] == ["duration"]:
        return _load_durations(p, rows, skip_invalid=skip_invalid, seed=seed, num_gpus=num_gpus,
                               rate=arrival_rate_per_s, model_mix=model_mix, shuffle=shuffle)
    b = Builder(p, "tiresias", skip_invalid=skip_invalid, seed=seed, unknown_models=unknown_models,
                catalog=catalog)
    header = Header(p, first[1], REQUIRED)
    b.mapping = {"job_id": "job_id", "arrival": "submit_time (s)", "num_gpus": "num_gpu",
                 "iterations": "iterations", "model": "model_name"}
    for line, fields in rows:
        try:
            r = Row(p, line, fields, header)
            job_id = r.text("job_id")
            b.add(r, job_id=job_id, arrival_s=r.arrival("submit_time"), num_gpus=r.gpus("num_gpu"),
                  model=b.model(r.text("model_name"), job_id, r, "model_name"),
                  iterations=r.iterations("iterations"))
        except InputError as e:
            b.reject(e)
    return b.finish()


def _load_durations(p: Path, rows: Iterator[tuple[int, list[str]]], *, skip_invalid: bool, seed: int, num_gpus: int,
                    rate: float | None, model_mix: Mapping[str, float] | None, shuffle: bool = False) -> Trace:
    if isinstance(num_gpus, bool) or not isinstance(num_gpus, int) or not 1 <= num_gpus <= MAX_GPUS:
        raise InputError(f"num_gpus must be a whole number in 1..{MAX_GPUS}, got {num_gpus!r}", field="num_gpus")
    if rate is not None and not (isinstance(rate, int | float) and math.isfinite(rate) and rate > 0):
        raise InputError(f"arrival_rate_per_s must be a finite number > 0, got {rate!r}", field="arrival_rate_per_s")
    if not isinstance(shuffle, bool):
        raise InputError(f"shuffle must be true or false, got {shuffle!r}", field="shuffle")
    if shuffle and rate is None:
        raise InputError("shuffle needs arrival_rate_per_s (without it every job arrives at 0)", field="shuffle")
    b = Builder(p, "tiresias", skip_invalid=skip_invalid, seed=seed, model_mix=model_mix)
    b.mapping = {"job_id": "<file stem>-<line - 2>", "duration": "duration (s)", "num_gpus": f"{num_gpus} (option)",
                 "arrival": "0" if rate is None else f"Poisson, rate {rate:g}/s"
                 + (", rows in a seeded random order" if shuffle else ""), "model": "hash(seed, job_id)"}
    listed = list(rows)
    rng = random.Random(seed)
    times, t = [], 0.0
    for _ in listed:  # Poisson arrival times (all 0 without a rate), one per row
        times.append(t)
        if rate is not None:
            t += rng.expovariate(rate)
    if shuffle:  # the same times, handed to the rows in a seeded random order
        random.Random(seed + 1).shuffle(times)
    for (line, fields), t in zip(listed, times, strict=True):
        try:
            r = Row(p, line, fields, expected=1)
            dur = r.duration(0, "duration")
            job_id = f"{p.stem}-{line - 2}"
            if t > MAX_ARRIVAL_S:
                raise r.error(f"generated arrival {t:g} s is beyond the limit of {MAX_ARRIVAL_S:g} s (raise "
                              "arrival_rate_per_s)", "arrival")
            b.add(r, job_id=job_id, arrival_s=t, num_gpus=num_gpus, model=b.model(None, job_id), duration_s=dur)
        except InputError as e:
            b.reject(e)
    b.notes.append("duration-only file (seconds): no arrivals, GPU counts or models in the trace")
    b.notes.append(f"num_gpus = {num_gpus} for every job (option num_gpus)")
    if rate is None:
        b.notes.append("every job arrives at 0 (pass arrival_rate_per_s for seeded Poisson arrivals)")
    else:
        b.notes.append(f"arrivals generated: Poisson process, rate {rate:g}/s, random.Random(seed={seed})"
                       + ("; rows in the order of random.Random(seed + 1).shuffle (option shuffle)" if shuffle
                          else ""))
    return b.finish()
