"""Kubernetes-style pod (or job) lists: one row per pod, times as ISO-8601 timestamps (``docs/traces.md``).

Columns (case-insensitive; the camelCase names of the pod object, or their snake_case spellings):

* ``name`` (required) — the job id; ``namespace`` (optional) becomes ``JobSpec.user``.
* ``phase`` (required) — ``Succeeded``, ``Failed``, ``Running``, ``Pending``, ``Unknown``; which phases become
  jobs is ``states`` (``--states``; default ``succeeded,failed``).
* ``creationTimestamp`` (required) — the arrival (seconds after the earliest one; ``Trace.epoch``).
* ``scheduledTime`` — when the pod was bound to a node; missing means it was never scheduled (``never_ran``).
* ``startTime`` — when its containers started (default: ``scheduledTime``).
* ``finishedAt`` — when its containers ended; without it the run ends at ``deletionTimestamp`` (counted in a
  note: the run time then includes any time between the end and the deletion).
* ``gpus`` (required; ``nvidia.com/gpu`` accepted) — GPUs asked for, possibly fractional (``0.5``);
  ``gpuShare`` (optional) — the share of each GPU, ``0 < share <= 1``: the request is ``gpus × gpuShare``. A
  fractional request is rounded up to whole GPUs (``JobSpec.gpu_request`` keeps it; a note counts them), an
  error with ``fractional_gpus="error"``, or, below 1 with ``fractional_gpus="keep"``, kept as a share of one GPU
  (``JobSpec.gpu_share``); 0 GPUs is ``zero_gpus``.

Missing values: empty, ``<none>``, ``null``, ``None``. Filtering order per row: never ran (no
``scheduledTime``, or phase ``Pending``), state, zero GPUs.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Iterator, Mapping
from datetime import datetime
from pathlib import Path

from ddlsched.errors import InputError
from ddlsched.workload import limits
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.limits import MAX_ARRIVAL_S, MAX_DURATION_S, MAX_GPUS
from ddlsched.workload.loaders._common import (
    Builder,
    Header,
    Row,
    check_file,
    check_fractional_rule,
    fractional_fields,
    fractional_notes,
    read_rows,
    short,
)
from ddlsched.workload.loaders.states import K8S_DEFAULT, K8S_STATES, parse_states, state_notes
from ddlsched.workload.loaders.timevalues import parse_time
from ddlsched.workload.model_mapping import assign_model
from ddlsched.workload.profiles import ModelCatalog
from ddlsched.workload.trace import Trace

MISSING = frozenset({"", "<none>", "null", "none"})

_ROLES: dict[str, tuple[str, ...]] = {
    "name": ("name", "pod", "pod_name", "job_name"),
    "namespace": ("namespace",),
    "phase": ("phase", "status.phase"),
    "created": ("creationtimestamp", "creation_timestamp", "metadata.creationtimestamp"),
    "scheduled": ("scheduledtime", "scheduled_time", "scheduled"),
    "started": ("starttime", "start_time", "status.starttime"),
    "finished": ("finishedat", "finished_at"),
    "deleted": ("deletiontimestamp", "deletion_timestamp", "metadata.deletiontimestamp"),
    "gpus": ("gpus", "nvidia.com/gpu", "gpu"),
    "share": ("gpushare", "gpu_share"),
}


_Pod = tuple[int, str, datetime, dict[str, object], str]
"""A pod that ran: (line, job id, creation time, JobSpec fields, phase)."""


def is_k8s_header(cols: Collection[str]) -> bool:
    """Whether lower-case header ``cols`` look like a pod list."""
    c = set(cols)
    return any(x in c for x in _ROLES["phase"]) and any(x in c for x in _ROLES["created"]) and any(
        x in c for x in _ROLES["gpus"])


def _roles(p: Path, names: list[str]) -> dict[str, str]:
    low = {n.lower(): n for n in names}
    out = {role: next(low[s] for s in spell if s in low) for role, spell in _ROLES.items()
           if any(s in low for s in spell)}
    missing = [r for r in ("name", "phase", "created", "gpus") if r not in out]
    if missing:
        raise InputError(f"a pod list needs the columns {', '.join(_ROLES[r][0] for r in missing)}; header: "
                         f"{', '.join(names)}", path=str(p), line=1)
    if "finished" not in out and "deleted" not in out:
        raise InputError("a pod list needs finishedAt or deletionTimestamp for the run time", path=str(p), line=1,
                         field="finishedAt")
    return out


def _missing(v: str) -> bool:
    return v.lower() in MISSING


def _when(r: Row, name: str) -> datetime:
    v = r.raw(name)
    try:
        tv = parse_time(v)
    except ValueError as e:
        raise r.error(f"{short(v)}: {e}", name) from None
    if tv.when is None or tv.when.tzinfo is None:
        raise r.error(f"{short(v)} is not a timestamp with a zone (e.g. 2024-03-01T08:00:00Z)", name)
    return tv.when


def load_kubernetes(path: str | Path, *, skip_invalid: bool = False, seed: int = 0,
                    states: str | Iterable[str] | None = None, fractional_gpus: str = "ceil",
                    model_mix: Mapping[str, float] | None = None, unknown_models: str = "error",
                    catalog: ModelCatalog | None = None) -> Trace:
    """Load a pod list (see the module docstring for every rule). The list names no model: one is assigned per
    job by hash(seed, job_id) from ``model_mix``."""
    p = check_file(path)
    chosen = parse_states(states, K8S_STATES, K8S_DEFAULT, "Kubernetes")
    check_fractional_rule(fractional_gpus)
    b = Builder(p, "kubernetes", skip_invalid=skip_invalid, seed=seed, model_mix=model_mix,
                unknown_models=unknown_models, catalog=catalog)
    rows = read_rows(p)
    first = next(rows, None)
    if first is None:
        raise InputError("empty file", path=str(p), line=1)
    header = Header(p, first[1], [])
    col = _roles(p, first[1])
    def scan(bb: Builder, rows: Iterator[tuple[int, list[str]]], keep: bool) -> tuple[list[_Pod], int]:
        """Every data row read (a row error raised or counted on ``bb``; the pods kept only when ``keep``) and
        the count of runs that end at the deletion."""
        parsed: list[_Pod] = []
        by_deletion = 0
        for line, fields in rows:
            try:
                r = Row(p, line, fields, header)
                job_id = r.text(col["name"], "name")
                phase = r.text(col["phase"]).lower()
                if phase not in K8S_STATES:
                    raise r.error(f"unknown phase {short(r.raw(col['phase']))}; known: "
                                  f"{', '.join(s.capitalize() for s in K8S_STATES)}", col["phase"])
                sched = col.get("scheduled")
                if phase == "pending" or (sched is not None and _missing(r.raw(sched))):
                    bb.filter("never_ran", r.source)
                    continue
                if phase not in chosen:
                    bb.filter("state", r.source)
                    continue
                req = r.number(col["gpus"], min_value=0)
                if "share" in col and not _missing(r.raw(col["share"])):
                    share = r.number(col["share"], positive=True, max_value=1.0)
                    req *= share
                if req == 0:
                    bb.filter("zero_gpus", r.source)
                    continue
                if req > MAX_GPUS:
                    raise r.error(f"{req:g} GPUs is beyond the limit of {MAX_GPUS:,}", col["gpus"])
                created = _when(r, col["created"])
                start_col = col.get("started") if "started" in col and not _missing(r.raw(col["started"])) else sched
                if start_col is None or _missing(r.raw(start_col)):
                    raise r.error("no start time (startTime or scheduledTime)", col.get("started", "startTime"))
                start = _when(r, start_col)
                if "finished" in col and not _missing(r.raw(col["finished"])):
                    end, end_col = _when(r, col["finished"]), col["finished"]
                elif "deleted" in col and not _missing(r.raw(col["deleted"])):
                    end, end_col = _when(r, col["deleted"]), col["deleted"]
                    by_deletion += 1
                else:
                    raise r.error("the pod ran but has no end time (finishedAt or deletionTimestamp)",
                                  col.get("finished", col.get("deleted")))
                run = (end - start).total_seconds()
                if not run > 0:
                    raise r.error(f"end {short(r.raw(end_col))} is not after the start {short(r.raw(start_col))}",
                                  end_col)
                if run > MAX_DURATION_S:
                    raise r.error(f"run time {run:g} s is beyond the limit of {MAX_DURATION_S:g} s", end_col)
                if math.ceil(req) != req and fractional_gpus == "error":
                    raise r.error(f"fractional GPU request {req:g} (pass --fractional-gpus ceil to round it up)",
                                  col.get("share", col["gpus"]))
                kw: dict[str, object] = {**fractional_fields(req, fractional_gpus), "duration_s": run}
                if "namespace" in col:
                    kw["user"] = r.raw(col["namespace"]) or None
                if keep:
                    parsed.append((line, job_id, created, kw, phase))
            except InputError as e:
                bb.reject(e)
        return parsed, by_deletion

    if not skip_invalid and p.stat().st_size > limits.CHECK_FIRST_BYTES:
        # a first pass that keeps nothing: a bad row late in a huge file fails in bounded memory
        again = read_rows(p)
        next(again, None)
        scan(Builder(p, "kubernetes", skip_invalid=False, seed=seed, model_mix=model_mix,
                     unknown_models=unknown_models, catalog=catalog), again, keep=False)
    parsed, by_deletion = scan(b, rows, keep=True)
    b.mapping = {"job_id": col["name"], "arrival": col["created"], "num_gpus": col["gpus"]
                 + (f" x {col['share']}" if "share" in col else ""), "state": col["phase"],
                 "duration": f"{col.get('finished', col.get('deleted'))} - {col.get('started', col.get('scheduled'))}"}
    if "namespace" in col:
        b.mapping["user"] = col["namespace"]
    b.notes.append("Kubernetes pod list: " + ", ".join(f"{k}={v}" for k, v in b.mapping.items()))
    epoch = min((x[2] for x in parsed), default=None)
    if epoch is not None:
        b.notes.append(f"arrival_s = seconds since the earliest {col['created']} ({epoch.isoformat()})")
    kept: dict[str, int] = {}
    for line, job_id, created, kw, phase in parsed:
        r = Row(p, line, [])
        try:
            assert epoch is not None
            arrival = (created - epoch).total_seconds()
            if arrival > MAX_ARRIVAL_S:
                raise r.error(f"arrival {arrival:g} s is beyond the limit of {MAX_ARRIVAL_S:g} s", col["created"])
            if job_id in b.ids:
                raise r.error(f"duplicate job id {short(job_id)}", col["name"])
            model = assign_model(job_id, seed=seed, mix=model_mix)
            b.jobs.append(JobSpec(job_id=job_id, arrival_s=arrival, model=model, source=r.source,
                                  state=None if phase == "succeeded" else phase, **kw))  # type: ignore[arg-type]
            b.ids.add(job_id)
            b.assigned_models += 1
            kept[phase] = kept.get(phase, 0) + 1
        except InputError as e:
            b.reject(e)
    if by_deletion:
        b.notes.append(f"{by_deletion:,} pods have no finishedAt: their run ends at {col.get('deleted')} (it may "
                       "include time after the pod finished)")
    b.notes.extend(fractional_notes(b.jobs))
    b.notes.extend(state_notes(kept, "succeeded", chosen))
    return b.finish(epoch=epoch)
