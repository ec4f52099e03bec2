"""Slurm accounting exports: ``sacct --parsable2`` (``|``-separated; a ``,``-separated file is read too).

Columns (sacct field names, case-insensitive; ``docs/traces.md`` "Slurm"):

* ``JobID`` — the job id; ``123_4`` (array task) is a job of its own; ``123.batch``, ``123.extern``, ``123.0``
  are job *steps*, counted in ``Trace.filtered["step"]``; ``123+0``, ``123+1`` are the components of a
  heterogeneous job, simulated as one job ``123`` (GPUs summed, the longest run time, the earliest
  submission; the other components' rows are counted as ``component``).
* ``Submit`` — the arrival (seconds after the earliest ``Submit``; ``Trace.epoch``).
* ``State`` — ``COMPLETED``, ``CANCELLED by 1234``, ``TIMEOUT``, ...; which states become jobs is ``states``
  (``--states``; :data:`~ddlsched.workload.loaders.states.SLURM_DEFAULT` by default).
* ``Elapsed`` (``[D-]HH:MM:SS``) or ``ElapsedRaw`` (seconds) — the run time; else ``End - Start``.
* ``Start`` — ``Unknown``/``None`` means the job never started (``never_ran``).
* ``AllocTRES`` (else ``ReqTRES``) — ``billing=8,cpu=8,gres/gpu=1,mem=32G,node=1``: the GPUs are
  ``gres/gpu=N``, or the sum of the typed ``gres/gpu:TYPE=N`` entries (one type becomes ``JobSpec.gpu_type``);
  no GPU entry means 0 GPUs (``zero_gpus``). ``AllocGRES``/``ReqGRES`` (``gpu:4``, ``gpu:a100:4``) are read
  when there is no TRES column.
* ``User`` (else ``Account``) — ``JobSpec.user``.

A row that asks only for GPU shares (``gres/shard``, ``gres/mps``) and no whole GPU is ``zero_gpus`` like a CPU
job; a note counts such rows (GPU shares are not simulated: ``docs/traces.md``, "Fractional GPUs and GPU sharing").

``Unknown``, ``None``, ``N/A`` and empty values are *missing*. A job that ran and is kept in a state other than
``COMPLETED`` carries it in ``JobSpec.state`` (a note counts them). Filtering order per row: step, never ran,
state, zero GPUs; each row is counted once, under the first reason that applies.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from ddlsched.errors import InputError
from ddlsched.workload import limits
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.limits import MAX_ARRIVAL_S, MAX_DURATION_S, MAX_GPUS
from ddlsched.workload.loaders import columnar
from ddlsched.workload.loaders._common import Builder, Header, Row, check_file, check_gpu_type, read_rows, short
from ddlsched.workload.loaders.states import SLURM_DEFAULT, SLURM_STATES, parse_states, state_notes
from ddlsched.workload.loaders.timevalues import parse_time
from ddlsched.workload.model_mapping import assign_models
from ddlsched.workload.profiles import ModelCatalog
from ddlsched.workload.trace import Trace

MISSING = frozenset({"", "unknown", "none", "n/a"})
"""Values Slurm writes for "no value" (compared lower-case)."""

DETECT = frozenset({"jobid", "submit", "state"})
"""Header columns (lower-case) that mark a sacct export, with a TRES or GRES column."""
GPU_COLUMNS = ("alloctres", "reqtres", "allocgres", "reqgres")

_STATE = re.compile(r"([A-Za-z_]+)\+?(?: by \S+)?")
_HET = re.compile(r"(\d+)\+(\d+)")
_PAIR = r"[A-Za-z0-9_/:.\-]+=[^,=]+"
_TRES = re.compile(rf"{_PAIR}(?:,{_PAIR})*")
_GRES_ITEM = re.compile(r"gpu(?::([A-Za-z0-9_.\-]+))?:(\d+)(?:\(.*\))?")
_SHARE = r"(?:^|,)(?:gres/)?(?:shard|mps)(?:[:=]|$)"
"""A Slurm request for a *share* of a GPU (``gres/shard=2``, ``gres/mps=50``; GRES ``shard:2``)."""
_SHARE_RE = re.compile(_SHARE)
_CLOCK = r"^(?:(?P<d>[0-9]{1,6})-)?(?P<h>[0-9]{1,7}):(?P<m>[0-9]{2}):(?P<s>[0-9]{2})$"


def is_slurm_header(cols: Collection[str]) -> bool:
    """Whether lower-case header ``cols`` look like a sacct export."""
    return set(cols) >= DETECT and bool(set(GPU_COLUMNS) & set(cols)) and bool(
        {"elapsed", "elapsedraw", "end"} & set(cols))


def delimiter_of(first_line: str) -> str:
    """``|`` for ``--parsable2`` output, else ``,``."""
    return "|" if "|" in first_line else ","


@dataclass
class _Cols:
    """The header's column name for each role (None when absent)."""
    job_id: str
    submit: str
    state: str
    gpus: str
    elapsed: str | None
    elapsed_raw: str | None
    start: str | None
    end: str | None
    user: str | None

    @property
    def gres(self) -> bool:
        return self.gpus.lower().endswith("gres")


def _columns(p: Path, header: Header) -> _Cols:
    low = {n.lower(): n for n in header.names}
    missing = [c for c in ("JobID", "Submit", "State") if c.lower() not in low]
    if missing:
        raise InputError(f"a Slurm export needs the sacct fields {', '.join(missing)}; header: "
                         f"{', '.join(header.names)}", path=str(p), line=1)
    gpus = next((low[c] for c in GPU_COLUMNS if c in low), None)
    if gpus is None:
        raise InputError("a Slurm export needs AllocTRES (or ReqTRES, AllocGRES, ReqGRES) for the GPU count; "
                         "export it with sacct --format=...,AllocTRES", path=str(p), line=1, field="AllocTRES")
    c = _Cols(low["jobid"], low["submit"], low["state"], gpus, low.get("elapsed"), low.get("elapsedraw"),
              low.get("start"), low.get("end"), low.get("user") or low.get("account"))
    if c.elapsed is None and c.elapsed_raw is None and not (c.start and c.end):
        raise InputError("a Slurm export needs Elapsed (or ElapsedRaw, or Start and End) for the run time",
                         path=str(p), line=1, field="Elapsed")
    return c


def _missing(v: str) -> bool:
    return v.lower() in MISSING


def slurm_state(r: Row, name: str) -> str:
    """The state's name, lower case (``CANCELLED by 1234`` → ``cancelled``), or a row error."""
    v = r.raw(name)
    m = _STATE.fullmatch(v)
    s = m[1].lower() if m else ""
    if s not in SLURM_STATES:
        raise r.error(f"unknown Slurm state {short(v)}; known: {', '.join(s.upper() for s in SLURM_STATES)}", name)
    return s


def tres_gpus(r: Row, name: str, *, gres: bool = False) -> tuple[int, str | None]:
    """(GPUs, the one GPU type or None) of a TRES string (``gres/gpu=4`` or typed ``gres/gpu:a100=4``) or,
    with ``gres``, of a GRES string (``gpu:4``, ``gpu:a100:4``)."""
    v = r.raw(name)
    if _missing(v):
        return 0, None
    typed: dict[str, int] = {}
    total: int | None = None
    if gres:
        for item in v.split(","):
            m = _GRES_ITEM.fullmatch(item.strip())
            if m is None:
                if item.strip().startswith("gpu"):
                    raise r.error(f"unreadable GPU entry {short(item)} (expected gpu:N or gpu:TYPE:N)", name)
                continue
            n = int(m[2])
            if m[1]:
                typed[m[1]] = typed.get(m[1], 0) + n
            else:
                total = (total or 0) + n
    else:
        if not _TRES.fullmatch(v):
            raise r.error(f"not a TRES list (key=value,...): {short(v)}", name)
        seen: set[str] = set()
        for pair in v.split(","):
            key, _, val = pair.partition("=")
            if key != "gres/gpu" and not key.startswith("gres/gpu:"):
                continue  # other resources are not read
            if key in seen:
                raise r.error(f"{key} appears twice", name)
            seen.add(key)
            if not val.isdigit():
                raise r.error(f"{key}={short(val)}: the GPU count must be a whole number", name)
            if key == "gres/gpu":
                total = int(val)
            else:
                typed[key.split(":", 1)[1]] = int(val)
    n = total if total is not None else sum(typed.values())
    if n > MAX_GPUS:
        raise r.error(f"{n:,} GPUs is beyond the limit of {MAX_GPUS:,}", name)
    return n, (next(iter(typed)) if len(typed) == 1 else None)


def _timestamp(r: Row, name: str) -> datetime:
    v = r.raw(name)
    if _missing(v):
        raise r.error(f"no time ({short(v)})", name)
    try:
        tv = parse_time(v)
    except ValueError as e:
        raise r.error(f"{short(v)}: {e}", name) from None
    if tv.when is None:
        raise r.error(f"{short(v)} is not a timestamp (YYYY-MM-DDTHH:MM:SS)", name)
    return tv.when


def _run_time(r: Row, c: _Cols) -> float | None:
    """Seconds the job ran; None when the export gives no run time (Unknown)."""
    if c.elapsed is not None and not _missing(r.raw(c.elapsed)):
        v = r.raw(c.elapsed)
        try:
            tv = parse_time(v)
        except ValueError as e:
            raise r.error(f"{short(v)}: {e}", c.elapsed) from None
        if tv.kind != "clock":
            raise r.error(f"{short(v)} is not a Slurm elapsed time ([D-]HH:MM:SS)", c.elapsed)
        return r.seconds(tv.seconds, c.elapsed, factor=1.0, unit="s", limit=MAX_DURATION_S, what="run time",
                         positive=False)
    if c.elapsed_raw is not None and not _missing(r.raw(c.elapsed_raw)):
        return r.seconds(r.number(c.elapsed_raw, min_value=0), c.elapsed_raw, factor=1.0, unit="s",
                         limit=MAX_DURATION_S, what="run time", positive=False)
    if c.start and c.end and not _missing(r.raw(c.start)) and not _missing(r.raw(c.end)):
        d = (_timestamp(r, c.end) - _timestamp(r, c.start)).total_seconds()
        if d < 0:
            raise r.error(f"End is before Start ({d:g} s)", c.end)
        return r.seconds(d, c.end, factor=1.0, unit="s", limit=MAX_DURATION_S, what="run time", positive=False)
    return None


@dataclass(slots=True)
class _Job:
    line: int
    source: str
    job_id: str
    submit: datetime
    run_s: float
    gpus: int
    gpu_type: str | None
    state: str
    user: str | None
    het: str | None


def load_slurm(path: str | Path, *, skip_invalid: bool = False, seed: int = 0,
               states: str | Iterable[str] | None = None, model_mix: Mapping[str, float] | None = None,
               gpu_types: Collection[str] | None = None, unknown_models: str = "error",
               catalog: ModelCatalog | None = None) -> Trace:
    """Load a ``sacct --parsable2`` export (see the module docstring for every rule). The export names no model:
    one is assigned per job by hash(seed, job_id) from ``model_mix``."""
    p = check_file(path)
    chosen = parse_states(states, SLURM_STATES, SLURM_DEFAULT, "Slurm")
    b = Builder(p, "slurm", skip_invalid=skip_invalid, seed=seed, model_mix=model_mix,
                unknown_models=unknown_models, catalog=catalog)
    with open(p, "rb") as f:
        head = f.readline(4096).decode("utf-8", "replace")
    delim = delimiter_of(head)
    fast = _load_fast(p, b, chosen, delim, gpu_types)
    if fast is not None:
        return fast
    b = Builder(p, "slurm", skip_invalid=skip_invalid, seed=seed, model_mix=model_mix,
                unknown_models=unknown_models, catalog=catalog)
    rows = read_rows(p, delimiter=delim)
    first = next(rows, None)
    if first is None:
        raise InputError("empty file", path=str(p), line=1)
    header = Header(p, first[1], [])
    c = _columns(p, header)

    def scan(bb: Builder, rows: Iterator[tuple[int, list[str]]], keep: bool) -> tuple[list[_Job], int]:
        """The jobs of every data row (a row error raised or counted on ``bb``; kept only when ``keep``) and the
        count of rows that ask only for GPU shares."""
        jobs: list[_Job] = []
        shares = 0
        for line, fields in rows:
            try:
                r = Row(p, line, fields, header)
                job_id = r.text(c.job_id)
                if "." in job_id:
                    bb.filter("step", r.source)
                    continue
                state = slurm_state(r, c.state)
                run_s = _run_time(r, c)
                never = (c.start is not None and _missing(r.raw(c.start))) or run_s is None or run_s == 0
                if never:
                    bb.filter("never_ran", r.source)
                    continue
                assert run_s is not None
                if state not in chosen:
                    bb.filter("state", r.source)
                    continue
                gpus, gtype = tres_gpus(r, c.gpus, gres=c.gres)
                if gpus == 0:
                    bb.filter("zero_gpus", r.source)
                    shares += _SHARE_RE.search(r.raw(c.gpus)) is not None
                    continue
                if gtype is not None:
                    gtype = check_gpu_type(r, gtype, c.gpus, gpu_types)
                submit = _timestamp(r, c.submit)
                user = (r.raw(c.user) or None) if c.user else None
                m = _HET.fullmatch(job_id)
                if keep:
                    jobs.append(_Job(line, r.source, m[1] if m else job_id, submit, run_s, gpus, gtype, state,
                                     user, m[1] if m else None))
            except InputError as e:
                bb.reject(e)
        return jobs, shares

    if not skip_invalid and p.stat().st_size > limits.CHECK_FIRST_BYTES:
        # a first pass that keeps nothing: a bad row late in a huge file fails in bounded memory
        again = read_rows(p, delimiter=delim)
        next(again, None)
        scan(Builder(p, "slurm", skip_invalid=False, seed=seed, model_mix=model_mix,
                     unknown_models=unknown_models, catalog=catalog), again, keep=False)
    jobs, shares = scan(b, rows, keep=True)
    jobs = _merge_het(b, jobs)
    return _finish(b, jobs, chosen, c, shares)


def _merge_het(b: Builder, jobs: list[_Job]) -> list[_Job]:
    """Heterogeneous-job components as one job (at its first component's row); the others counted."""
    first: dict[str, _Job] = {}
    out: list[_Job] = []
    for j in jobs:
        if j.het is None:
            out.append(j)
            continue
        lead = first.get(j.het)
        if lead is None:
            first[j.het] = j
            out.append(j)
            continue
        lead.gpus += j.gpus
        lead.run_s = max(lead.run_s, j.run_s)
        lead.submit = min(lead.submit, j.submit)
        if lead.gpu_type != j.gpu_type:
            lead.gpu_type = None
        b.filter("component", j.source)
    return out


def _describe(b: Builder, c: _Cols, epoch: datetime | None) -> None:
    """The mapping and its notes (both paths)."""
    b.mapping = {"job_id": c.job_id, "arrival": c.submit,
                 "num_gpus": f"gpu in {c.gpus}" if c.gres else f"gres/gpu in {c.gpus}",
                 "duration": c.elapsed or c.elapsed_raw or f"{c.end} - {c.start}", "state": c.state}
    if c.user:
        b.mapping["user"] = c.user
    b.notes.append("Slurm export: " + ", ".join(f"{k}={v}" for k, v in b.mapping.items()))
    if epoch is not None:
        b.notes.append(f"arrival_s = seconds since the earliest {c.submit} ({epoch.isoformat()}, wall clock)")


def _share_note(b: Builder, shares: int) -> None:
    if shares:
        b.notes.append(f"{shares:,} of the zero_gpus rows ask only for GPU shares (gres/shard or gres/mps, no "
                       "whole GPU): not simulated (the simulator places whole GPUs)")


def _finish(b: Builder, jobs: list[_Job], chosen: frozenset[str], c: _Cols, shares: int) -> Trace:
    """Arrivals from the earliest submission, the jobs built and checked, the notes (both paths)."""
    epoch = min((j.submit for j in jobs), default=None)
    _describe(b, c, epoch)
    models = assign_models([j.job_id for j in jobs], seed=b.seed, mix=b.model_mix)
    kept: dict[str, int] = {}
    runs: dict[str, int] = {}
    for j, model in zip(jobs, models, strict=True):
        r = Row(b.path, j.line, [])
        try:
            assert epoch is not None
            arrival = (j.submit - epoch).total_seconds()
            if arrival > MAX_ARRIVAL_S:
                raise r.error(f"arrival {arrival:g} s is beyond the limit of {MAX_ARRIVAL_S:g} s", c.submit)
            job_id = j.job_id
            if job_id in b.ids:  # a requeued job's next run (sacct --duplicates)
                runs[j.job_id] = runs.get(j.job_id, 1) + 1
                job_id = f"{j.job_id}#{runs[j.job_id]}"
                if job_id in b.ids:
                    raise r.error(f"duplicate job id {short(job_id)}", c.job_id)
            b.jobs.append(JobSpec(job_id=job_id, arrival_s=arrival, num_gpus=j.gpus, model=model,
                                  duration_s=j.run_s, user=j.user, source=j.source, gpu_type=j.gpu_type,
                                  state=None if j.state == "completed" else j.state))
            b.ids.add(job_id)
            b.assigned_models += 1
            kept[j.state] = kept.get(j.state, 0) + 1
        except InputError as e:
            b.reject(e)
    b.notes.extend(state_notes(kept, "completed", chosen))
    _share_note(b, shares)
    if runs:
        b.notes.append(f"{len(runs):,} job ids appear on several rows (a requeued job's runs): the later runs are "
                       "jobs ID#2, ID#3, ...")
    return b.finish(epoch=epoch)


# ------------------------------------------------------------------ columnar fast path
_FAST_COLUMNS = frozenset({"jobid", "submit", "state", "elapsed", "start", "user", "account", *GPU_COLUMNS})
"""The columns the fast path reads (any others are only counted per line)."""
def _load_fast(p: Path, b: Builder, chosen: frozenset[str], delim: str,
               gpu_types: Collection[str] | None) -> Trace | None:
    """The trace read column-wise when the file is plain and every value is in the common form (no
    heterogeneous jobs, untyped ``gres/gpu=N``, ``[D-]HH:MM:SS`` elapsed times, ``YYYY-MM-DDTHH:MM:SS``
    submissions) and no row fails a check; None otherwise (the row path then reads the file). Same jobs, notes
    and order as the row path."""
    def wanted(names: list[str]) -> list[int]:
        return [i for i, n in enumerate(names) if n.lower() in _FAST_COLUMNS]

    read = columnar.read_columns(p, delimiter=delim, keep=wanted)
    if read is None:
        return None
    names, cols = read
    pa, pc, _ = columnar._arrow()
    try:
        header = Header(p, names, [])
        c = _columns(p, header)
    except InputError:
        return None
    if c.gres or c.elapsed is None:
        return None

    def col(name: str) -> Any:
        return cols[header.index[name]]

    ids = col(c.job_id)
    n = len(ids)
    if pc.any(pc.equal(ids, "")).as_py() or pc.any(pc.match_substring(ids, "+")).as_py():
        return None
    step = np.asarray(pc.match_substring(ids, ".").to_numpy(zero_copy_only=False), dtype=bool)
    # the row path reads nothing but the id of a step row: the checks below look at the other rows only
    rest = np.flatnonzero(~step)
    rest_a = pa.array(rest)

    def of_rest(name: str) -> Any:
        return pc.take(col(name), rest_a)

    st = pc.extract_regex(of_rest(c.state), r"^(?P<s>[A-Za-z_]+)\+?(?: by \S+)?$")
    if st.null_count:
        return None
    state_rest = pc.utf8_lower(st.field("s"))
    if not pc.all(pc.is_in(state_rest, value_set=pa.array(SLURM_STATES))).as_py():
        return None
    ext = pc.extract_regex(of_rest(c.elapsed), _CLOCK)
    if ext.null_count:
        return None

    def part(name: str) -> np.ndarray:
        a = ext.field(name)
        a = pc.if_else(pc.equal(a, ""), "0", a)
        return pc.cast(a, pa.int64()).to_numpy(zero_copy_only=False)

    d, h, m, s = (part(k) for k in "dhms")
    has_day = np.asarray(pc.not_equal(ext.field("d"), "").to_numpy(zero_copy_only=False))
    if np.any(m >= 60) or np.any(s >= 60) or np.any(has_day & (h >= 24)):
        return None
    run_rest = (d * 86400 + h * 3600 + m * 60 + s).astype(np.float64)
    if np.any(run_rest > MAX_DURATION_S):
        return None
    never_rest = run_rest == 0
    if c.start is not None:
        never_rest |= np.asarray(pc.is_in(pc.utf8_lower(of_rest(c.start)), value_set=pa.array(sorted(MISSING)))
                                 .to_numpy(zero_copy_only=False), dtype=bool)
    chosen_rest = np.asarray(pc.is_in(state_rest, value_set=pa.array(sorted(chosen)))
                             .to_numpy(zero_copy_only=False), dtype=bool)
    # steps first, then never ran, then state, then GPUs (the row path's order); masks over all n rows
    run = np.zeros(n)
    run[rest] = run_rest
    never = np.zeros(n, dtype=bool)
    never[rest] = never_rest
    chosen_mask = np.zeros(n, dtype=bool)
    chosen_mask[rest] = chosen_rest
    state_pos = np.full(n, -1, dtype=np.int64)
    state_pos[rest] = np.arange(len(rest))
    r_step = step
    r_never = ~r_step & never
    r_state = ~r_step & ~r_never & ~chosen_mask
    cand = ~(r_step | r_never | r_state)
    idx = np.flatnonzero(cand)
    tres = pc.take(col(c.gpus), pa.array(idx))
    if not pc.all(pc.match_substring_regex(tres, "^" + _TRES.pattern + "$")).as_py():
        return None
    if pc.any(pc.match_substring(tres, "gres/gpu:")).as_py():
        return None
    if np.any(np.asarray(pc.count_substring_regex(tres, r"(?:^|,)gres/gpu=").to_numpy(zero_copy_only=False)) > 1):
        return None
    g = pc.extract_regex(tres, r"(?:^|,)gres/gpu=(?P<g>[^,]*)(?:,|$)")
    gv = pc.if_else(pc.is_null(g), "0", g.field("g")) if g.null_count else g.field("g")
    if not pc.all(pc.match_substring_regex(gv, r"^[0-9]+$")).as_py():
        return None
    if pc.any(pc.greater(pc.utf8_length(gv), 7)).as_py():
        return None
    gpus = pc.cast(gv, pa.int64()).to_numpy(zero_copy_only=False)
    if np.any(gpus > MAX_GPUS):
        return None
    zero = gpus == 0
    keep = idx[~zero]
    sub = pc.take(col(c.submit), pa.array(keep))
    if len(keep):
        sub = pc.replace_substring_regex(sub, r"^([0-9]{4}-[0-9]{2}-[0-9]{2})T", r"\1 ")
        secs = columnar.timestamps(sub)
        if secs is None:
            return None
    else:
        secs = np.zeros(0, dtype=np.int64)
    lines = np.arange(n) + 2

    def first(mask: np.ndarray) -> str:
        return f"{p}:{int(lines[np.argmax(mask)])}"

    r_zero = np.zeros(n, dtype=bool)
    r_zero[idx[zero]] = True
    shares = 0
    if zero.any():
        shares = int(pc.sum(pc.match_substring_regex(pc.filter(tres, pa.array(zero)), _SHARE)).as_py() or 0)
    for reason, mask in (("step", r_step), ("never_ran", r_never), ("state", r_state), ("zero_gpus", r_zero)):
        k = int(mask.sum())
        if k:
            b.filtered[reason] = k
            b.filter_examples[reason] = first(mask)
    kid = pc.take(ids, pa.array(keep)).to_pylist()
    if len(set(kid)) != len(kid):
        return None
    epoch_s = int(secs.min()) if len(secs) else 0
    arrival = (secs - epoch_s).astype(np.float64)
    if np.any(arrival > MAX_ARRIVAL_S):
        return None
    kstate = pc.take(state_rest, pa.array(state_pos[keep])).to_pylist()
    users = pc.take(col(c.user), pa.array(keep)).to_pylist() if c.user else None
    models = assign_models(kid, seed=b.seed, mix=b.model_mix)
    kept: dict[str, int] = {}
    for s_ in kstate:
        kept[s_] = kept.get(s_, 0) + 1
    kw: dict[str, list[Any]] = {"job_id": kid, "arrival_s": arrival.tolist(), "num_gpus": gpus[~zero].tolist(),
                                "model": models, "duration_s": run[keep].tolist(),
                                "state": [None if s_ == "completed" else s_ for s_ in kstate],
                                "source": [f"{p}:{x}" for x in lines[keep].tolist()]}
    if users is not None:
        kw["user"] = [u or None for u in users]
    try:
        b.jobs = JobSpec.bulk(len(keep), **kw)
    except ValueError:
        return None
    b.ids = set(kid)
    b.assigned_models = len(keep)
    # naive wall clock, as the row path reads it
    epoch = datetime.fromtimestamp(epoch_s, tz=UTC).replace(tzinfo=None) if len(keep) else None
    del gpu_types  # untyped GPUs only on this path
    _describe(b, c, epoch)
    b.notes.extend(state_notes(kept, "completed", chosen))
    _share_note(b, shares)
    return b.finish(epoch=epoch)
