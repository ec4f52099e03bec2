"""Pollux's per-job Philly table (``philly.csv``: ``timestamp,duration,num_gpus,gpu_time,cluster``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

from ddlsched.errors import InputError
from ddlsched.workload.limits import MAX_ARRIVAL_S
from ddlsched.workload.loaders._common import Builder, Header, Row, check_file, read_rows, short
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
    rows = read_rows(p)
    first = next(rows, None)
    if first is None:
        raise InputError("empty file", path=str(p), line=1)
    header = Header(p, first[1], ["timestamp", "duration", "num_gpus"])
    b.mapping = {"job_id": "philly-<line - 2>", "arrival": "timestamp (wall clock, since the first)",
                 "duration": "duration (s)", "num_gpus": "num_gpus", "model": "hash(seed, job_id)"}
    if "cluster" in header:
        b.mapping["user"] = "cluster"
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
        b.notes.append(f"arrival_s = seconds since the first submission ({t0:%Y-%m-%d %H:%M:%S}, wall clock)")
    return b.finish(epoch=t0)
