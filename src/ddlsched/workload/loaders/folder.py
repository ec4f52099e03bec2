"""A folder of trace files (one per cluster, virtual cluster or day) loaded as one trace.

Rules (``docs/traces.md`` "Folders"):

* the files directly in the folder whose names end in :data:`TRACE_SUFFIXES` are read, in name order; hidden
  files are skipped; other files and sub-folders are listed in a note;
* each file is loaded on its own (format detected per file unless given) and every job gets
  ``group = <file stem>`` and ``job_id = <file stem>/<job id in the file>`` (ids stay unique);
* time origins: when every file gave absolute timestamps (``Trace.epoch``), arrivals are re-based to the earliest
  epoch of all files; when none did, each file's arrival numbers are used as they are (one common clock is
  assumed, and noted); a mix of the two is an error.
"""

from __future__ import annotations

from pathlib import Path

from ddlsched.errors import InputError
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.limits import MAX_ARRIVAL_S
from ddlsched.workload.trace import MAX_REASONS, Trace

TRACE_SUFFIXES = (".csv", ".trace", ".tsv", ".txt")


def list_trace_files(folder: Path) -> tuple[list[Path], list[str]]:
    """(trace files to read, names of the entries left out)."""
    files: list[Path] = []
    ignored: list[str] = []
    for p in sorted(folder.iterdir()):
        if p.name.startswith("."):
            continue
        if p.is_file() and p.suffix.lower() in TRACE_SUFFIXES:
            files.append(p)
        else:
            ignored.append(p.name + ("/" if p.is_dir() else ""))
    if not files:
        raise InputError(f"the folder holds no trace file (names ending in {', '.join(TRACE_SUFFIXES)})",
                         path=str(folder))
    return files, ignored


def _where(job: JobSpec) -> tuple[str, int | None]:
    path, _, line = job.source.rpartition(":")
    return (path, int(line)) if line.isdigit() else (job.source, None)


def merge_traces(folder: Path, files: list[Path], traces: list[Trace], ignored: list[str]) -> Trace:
    """One :class:`Trace` from the traces of ``files`` (see the module docstring)."""
    stems = [f.stem for f in files]
    groups = stems if len(set(stems)) == len(stems) else [f.name for f in files]
    epochs = [t.epoch for t in traces]
    offsets = [0.0] * len(traces)
    notes: list[str] = [f"folder of {len(files)} trace files: JobSpec.group = file stem, job_id = <stem>/<id>"]
    if all(e is not None for e in epochs):
        zoned = {e.tzinfo is not None for e in epochs if e is not None}
        if len(zoned) > 1:
            raise InputError("the files mix timestamps with and without a time zone", path=str(folder))
        t0 = min(e for e in epochs if e is not None)
        offsets = [(e - t0).total_seconds() for e in epochs if e is not None]
        notes.append(f"arrivals re-based to the earliest time of all files ({t0.isoformat()})")
    elif any(e is not None for e in epochs):
        abs_files = [f.name for f, e in zip(files, epochs, strict=True) if e is not None]
        rel_files = [f.name for f, e in zip(files, epochs, strict=True) if e is None]
        raise InputError(f"the files mix absolute timestamps ({', '.join(abs_files[:3])}) and relative arrival "
                         f"times ({', '.join(rel_files[:3])}); they cannot be put on one clock", path=str(folder))
    elif len(traces) > 1:
        notes.append("arrival numbers of every file are used as given (one common clock assumed)")
    if ignored:
        notes.append(f"not read (not a {'/'.join(TRACE_SUFFIXES)} file): {', '.join(ignored)}")
    by_text: dict[str, list[str]] = {}
    for f, t in zip(files, traces, strict=True):
        for n in t.notes:
            by_text.setdefault(n, []).append(f.name)
    for text, names in by_text.items():
        who = "all files" if len(names) == len(files) else ", ".join(names[:4]) + (
            f" (+{len(names) - 4} more)" if len(names) > 4 else "")
        notes.append(f"{who}: {text}")
    jobs: list[JobSpec] = []
    reasons: list[str] = []
    for group, off, t in zip(groups, offsets, traces, strict=True):
        for j in t.jobs:
            arrival = j.arrival_s + off
            if arrival > MAX_ARRIVAL_S:
                path, line = _where(j)
                raise InputError(f"arrival {arrival:g} s after re-basing to the folder's earliest time is beyond "
                                 f"the limit of {MAX_ARRIVAL_S:g} s", path=path, line=line, field="arrival")
            jobs.append(j.with_(job_id=f"{group}/{j.job_id}", arrival_s=arrival, group=group))
        reasons.extend(t.skipped_reasons)
    formats = sorted({t.format for t in traces})
    mapping = {**traces[0].mapping, "group": "<file stem>", "job_id": "<file stem>/" + traces[0].mapping.get(
        "job_id", "<id>")}
    t0 = min((e for e in epochs if e is not None), default=None)
    filtered: dict[str, int] = {}
    for t in traces:
        for k, v in t.filtered.items():
            filtered[k] = filtered.get(k, 0) + v
    fmt = formats[0] if len(formats) == 1 else "+".join(formats)
    return Trace(jobs=jobs, path=str(folder), format=fmt, skipped=sum(t.skipped for t in traces),
                 filtered=filtered, skipped_reasons=reasons[:MAX_REASONS], notes=notes, mapping=mapping, epoch=t0)
