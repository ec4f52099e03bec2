"""Pollux's per-job Philly table (``philly.csv``: ``timestamp,duration,num_gpus,gpu_time,cluster``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

from ddlsched.errors import InputError
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.limits import MAX_ARRIVAL_S, MAX_DURATION_S, MAX_GPUS
from ddlsched.workload.loaders import columnar
from ddlsched.workload.loaders._common import Builder, Header, Row, check_file, read_rows, short
from ddlsched.workload.model_mapping import assign_models
from ddlsched.workload.profiles import ModelCatalog
from ddlsched.workload.trace import Trace

COLUMNS = ["timestamp", "duration", "num_gpus", "gpu_time", "cluster"]
_TS = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$")


def parse_timestamp(row: Row, name: str) -> datetime:
    v = row.text(name)
    try:
        if _TS.match(v):
            return datetime.fromisoformat(v)
    except ValueError:
        pass
    raise row.error(f"unknown time format {short(v)}, expected YYYY-MM-DD HH:MM:SS", name)


def load_philly_pollux(path: str | Path, *, skip_invalid: bool = False, seed: int = 0,
                       model_mix: Mapping[str, float] | None = None, unknown_models: str = "error",
                       catalog: ModelCatalog | None = None) -> Trace:
    """Load ``philly.csv``: arrival = seconds since the earliest valid submission, ``duration_s`` from
    ``duration``, user = Philly virtual cluster. The file names no model, so one is assigned per job from
    ``model_mix`` by hash(seed, job_id) (see :mod:`ddlsched.workload.model_mapping`). Job ids are
    ``philly-<n>`` with n = line number - 2 (the 0-based data row). ``unknown_models``/``catalog`` are accepted
    for a uniform interface (the file names no model)."""
    p = check_file(path)
    b = Builder(p, "philly_pollux", skip_invalid=skip_invalid, seed=seed, model_mix=model_mix,
                unknown_models=unknown_models, catalog=catalog)
    fast = _load_fast(p, b)
    if fast is not None:
        return fast
    rows = read_rows(p)
    first = next(rows, None)
    if first is None:
        raise InputError("empty file", path=str(p), line=1)
    header = Header(p, first[1], ["timestamp", "duration", "num_gpus"])
    _describe(b, header)
    parsed: list[tuple[Row, datetime, float, int, str | None]] = []
    for line, fields in rows:
        try:
            r = Row(p, line, fields, header)
            ts = parse_timestamp(r, "timestamp")
            dur = r.duration("duration")
            gpus = r.gpus("num_gpus")
            user = (r.raw("cluster") or None) if "cluster" in header else None
            parsed.append((r, ts, dur, gpus, user))
        except InputError as e:
            b.reject(e)
    t0 = min((ts for _, ts, *_ in parsed), default=None)
    for r, ts, dur, gpus, user in parsed:
        try:
            assert t0 is not None
            arrival = (ts - t0).total_seconds()
            if arrival > MAX_ARRIVAL_S:
                raise r.error(f"arrival {arrival:g} s after the first submission is beyond the limit of "
                              f"{MAX_ARRIVAL_S:g} s", "timestamp")
            job_id = f"philly-{r.line - 2}"
            b.add(r, job_id=job_id, arrival_s=arrival, num_gpus=gpus, model=b.model(None, job_id), duration_s=dur,
                  user=user)
        except InputError as e:
            b.reject(e)
    if t0 is not None:
        b.notes.append(_origin_note(t0))
    return b.finish(epoch=t0)


def _describe(b: Builder, header: Header) -> None:
    b.mapping = {"job_id": "philly-<line - 2>", "arrival": "timestamp (wall clock, since the first)",
                 "duration": "duration (s)", "num_gpus": "num_gpus", "model": "hash(seed, job_id)"}
    if "cluster" in header:
        b.mapping["user"] = "cluster"


def _origin_note(t0: datetime) -> str:
    return f"arrival_s = seconds since the first submission ({t0:%Y-%m-%d %H:%M:%S}, wall clock)"


def _load_fast(p: Path, b: Builder) -> Trace | None:
    """The trace read column-wise (:mod:`~ddlsched.workload.loaders.columnar`) when the file is plain and every
    row passes every check; None otherwise (the row parser then reads it and names the bad row)."""
    read = columnar.read_columns(p)
    if read is None:
        return None
    fields, cols = read
    try:
        header = Header(p, fields, ["timestamp", "duration", "num_gpus"])
    except InputError:
        return None
    col = {name: cols[i] for name, i in header.index.items()}
    secs = columnar.timestamps(col["timestamp"])
    dur = columnar.plain_numbers(col["duration"])
    gpus = columnar.plain_numbers(col["num_gpus"])
    if secs is None or dur is None or gpus is None:
        return None
    if not (np.all(dur > 0) and np.all(dur <= MAX_DURATION_S)):
        return None
    if not (np.all(gpus > 0) and np.all(gpus <= MAX_GPUS) and np.all(gpus == np.floor(gpus))):
        return None
    first = int(secs.min())
    arrival = (secs - first).astype(np.float64)  # whole seconds: the same as timedelta.total_seconds()
    if not np.all(arrival <= MAX_ARRIVAL_S):
        return None
    _describe(b, header)
    n = len(secs)
    ids = [f"philly-{i}" for i in range(n)]
    models = assign_models(ids, seed=b.seed, mix=b.model_mix)
    b.assigned_models += n
    users: list[str | None] = [u or None for u in col["cluster"].to_pylist()] if "cluster" in header else [None] * n
    b.jobs = JobSpec.bulk(n, job_id=ids, arrival_s=arrival.tolist(), num_gpus=gpus.astype(np.int64).tolist(),
                          model=models, duration_s=dur.tolist(), user=users,
                          source=[f"{p}:{i + 2}" for i in range(n)])
    b.ids = set(ids)
    t0 = datetime(1970, 1, 1) + timedelta(seconds=first)
    b.notes.append(_origin_note(t0))
    return b.finish(epoch=t0)
