"""Shared row handling for the trace loaders: units, model names, GPU types, and the job :class:`Builder`.

Reading is in :mod:`ddlsched.workload.csvrows`. Two kinds of error come from there, both
:class:`~ddlsched.errors.InputError` naming the file and line:

* *structure* errors — bad encoding, an over-long line, an unbalanced quote, a duplicate header column — always
  stop the load, also under ``skip_invalid``, because the rows of a damaged file can no longer be counted;
* *row* errors — a wrong number of fields, a value that is not a number, out of range, unknown — name the
  field too, and are skipped and counted under ``skip_invalid``.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from ddlsched.errors import InputError
from ddlsched.workload.csvrows import Header, Row, iter_lines, read_rows, short
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.model_mapping import assign_model, canonical_model, describe_mix
from ddlsched.workload.profiles import ModelCatalog, default_catalog
from ddlsched.workload.trace import FILTER_REASONS, MAX_REASONS, Trace

TIME_UNITS: dict[str, float] = {"ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}
"""Seconds per unit for every ``time_unit`` option."""

FRACTIONAL_RULES = ("ceil", "error", "keep")
"""``fractional_gpus`` choices: round a fractional GPU request up to whole GPUs (``JobSpec.gpu_request`` keeps the
request), refuse it with a located error, or keep a request below one GPU as a share of one GPU
(``JobSpec.gpu_share``; a fractional request above one GPU is still rounded up). ``docs/traces.md`` "Fractional
GPUs and GPU sharing"."""

UNKNOWN_MODEL_RULES = ("error", "map")
"""``unknown_models`` choices: stop with a located error (default), or map to a seeded default model."""


def unit_factor(unit: str, *, field: str = "time_unit") -> float:
    try:
        return TIME_UNITS[unit]
    except (KeyError, TypeError):
        flag = "--" + field.replace("_", "-")
        raise InputError(f"unknown time unit {unit!r}; use one of {', '.join(TIME_UNITS)} ({flag})",
                         field=field) from None


def check_fractional_rule(rule: str) -> None:
    """An InputError naming ``--fractional-gpus`` unless ``rule`` is one of :data:`FRACTIONAL_RULES`."""
    if rule not in FRACTIONAL_RULES:
        raise InputError(f"fractional_gpus must be one of {', '.join(FRACTIONAL_RULES)}, got {rule!r} "
                         "(--fractional-gpus)", field="fractional_gpus")


def fractional_fields(req: float, rule: str) -> dict[str, object]:
    """The JobSpec GPU fields for a request of ``req`` GPUs under ``rule`` (already checked, and not ``error``
    when ``req`` is fractional): ``num_gpus`` = ⌈req⌉, plus ``gpu_request`` when ``req`` is not whole, plus
    ``gpu_share`` when ``rule`` is ``keep`` and ``req`` < 1."""
    n = math.ceil(req)
    if n == req:
        return {"num_gpus": n}
    if rule == "keep" and req < 1:
        return {"num_gpus": 1, "gpu_request": req, "gpu_share": req}
    return {"num_gpus": n, "gpu_request": req}


def fractional_notes(jobs: Sequence[JobSpec]) -> list[str]:
    """The load notes for fractional requests: how many were rounded up, how many kept as shares."""
    rounded = sum(j.gpu_request is not None and j.gpu_share is None for j in jobs)
    kept = sum(j.gpu_share is not None for j in jobs)
    out = []
    if rounded:
        out.append(f"{rounded:,} jobs asked for a fractional number of GPUs: rounded up to whole GPUs "
                   "(JobSpec.gpu_request keeps the fraction)")
    if kept:
        out.append(f"{kept:,} jobs asked for a share of one GPU: kept as a share (JobSpec.gpu_share; a GPU-sharing "
                   "policy packs shares summing to <= 1 on a GPU, other policies give each a whole GPU)")
    return out


def check_file(path: str | Path) -> Path:
    """Return ``path`` as a Path, or raise a clear InputError when it is missing or not a file."""
    p = Path(path)
    if not p.exists():
        raise InputError("trace file not found", path=str(p))
    if not p.is_file():
        raise InputError("trace path is not a regular file", path=str(p))
    return p


__all__ = ["FRACTIONAL_RULES", "Builder", "Header", "Row", "check_file", "check_fractional_rule", "check_gpu_type",
           "fractional_fields", "fractional_notes", "iter_lines", "read_rows", "resolve_model", "short", "unit_factor"]


def resolve_model(name: str, catalog: ModelCatalog) -> str | None:
    """Catalogue name for a trace spelling: exact catalogue name, alias table, then case-insensitive name."""
    s = name.strip()
    if s in catalog:
        return s
    canon = canonical_model(s)
    if canon is not None and canon in catalog:
        return canon
    low = s.lower()
    return next((n for n in catalog.names() if n.lower() == low), None)


class Builder:
    """Collects jobs, enforces unique ids, maps model names, and applies ``skip_invalid``."""

    def __init__(self, path: Path, fmt: str, *, skip_invalid: bool, seed: int = 0,
                 model_mix: Mapping[str, float] | None = None, unknown_models: str = "error",
                 catalog: ModelCatalog | None = None) -> None:
        if unknown_models not in UNKNOWN_MODEL_RULES:
            raise InputError(f"unknown_models must be one of {', '.join(UNKNOWN_MODEL_RULES)}, got "
                             f"{unknown_models!r} (--unknown-models)", field="unknown_models")
        self.path = path
        self.fmt = fmt
        self.skip_invalid = skip_invalid
        self.seed = seed
        self.model_mix = model_mix
        self.unknown_rule = unknown_models
        self.catalog = catalog if catalog is not None else default_catalog()
        self.jobs: list[JobSpec] = []
        self.ids: set[str] = set()
        self.skipped = 0
        self.reasons: list[str] = []
        self.notes: list[str] = []
        self.mapping: dict[str, str] = {}
        self.assigned_models = 0
        self.mapped_unknown: dict[str, int] = {}
        self.filtered: dict[str, int] = {}
        self.filter_examples: dict[str, str] = {}

    def reject(self, err: InputError) -> None:
        """Raise ``err``, or count it when skipping invalid rows."""
        if not self.skip_invalid:
            raise err
        self.skipped += 1
        if len(self.reasons) < MAX_REASONS:
            self.reasons.append(str(err))

    def filter(self, reason: str, where: str = "") -> None:
        """Count a well-formed row that is not a job (``reason``: a key of ``FILTER_REASONS``)."""
        assert reason in FILTER_REASONS, reason
        self.filtered[reason] = self.filtered.get(reason, 0) + 1
        if where and reason not in self.filter_examples:
            self.filter_examples[reason] = where

    def model(self, name: str | None, job_id: str, row: Row | None = None, field: str | None = None) -> str:
        """Catalogue name for a trace model name, or a seeded pick from the mix when the trace has none.

        A name that is not in the catalogue (nor the alias table) is an error naming file, line and field, or,
        with ``unknown_models="map"``, replaced by the seeded pick and counted in the notes."""
        if name is None or not name.strip():
            self.assigned_models += 1
            return assign_model(job_id, seed=self.seed, mix=self.model_mix)
        canon = resolve_model(name, self.catalog)
        if canon is not None:
            return canon
        if self.unknown_rule == "map":
            self.mapped_unknown[name] = self.mapped_unknown.get(name, 0) + 1
            return assign_model(job_id, seed=self.seed, mix=self.model_mix)
        msg = (f"unknown model {short(name)}; known models: {', '.join(self.catalog.names())}. Add its profile "
               "with --models FILE.csv, or pass --unknown-models map to assign a seeded default model")
        raise row.error(msg, field) if row is not None else InputError(msg, path=str(self.path), field=field)

    def add(self, row: Row, **kw: object) -> None:
        job_id = str(kw["job_id"])
        if job_id in self.ids:
            raise row.error(f"duplicate job id {short(job_id)}", "job_id")
        try:
            job = JobSpec(source=row.source, **kw)  # type: ignore[arg-type]
        except ValueError as e:
            raise row.error(str(e)) from None
        self.ids.add(job_id)
        self.jobs.append(job)

    def finish(self, **extra: object) -> Trace:
        """The :class:`Trace`; an InputError when no job was loaded (no data rows, or every row skipped)."""
        if not self.jobs:
            if self.filtered:
                raise InputError(f"no job left: {describe_filtered(self.filtered)}; choose the states with "
                                 "--states (states= in Python)", path=str(self.path))
            if self.skipped:
                raise InputError(f"no valid job: all {self.skipped} data rows were skipped; first: "
                                 f"{self.reasons[0]}", path=str(self.path))
            raise InputError("no job rows in the file (header only?)", path=str(self.path))
        notes = list(self.notes)
        if self.assigned_models:
            notes.append(f"{self.assigned_models} jobs had no model in the trace; models assigned by "
                         f"hash(seed={self.seed}, job_id) from the mix: {describe_mix(self.model_mix)}")
        if self.mapped_unknown:
            names = ", ".join(f"{k} ({v})" for k, v in sorted(self.mapped_unknown.items()))
            notes.append(f"{sum(self.mapped_unknown.values())} jobs named a model not in the catalogue: {names}; "
                         f"--unknown-models map assigned one by hash(seed={self.seed}, job_id) from the mix: "
                         f"{describe_mix(self.model_mix)}")
        if self.skipped:
            notes.append(f"{self.skipped} invalid rows skipped (skip_invalid=True)")
        if self.filtered:
            first = "; ".join(f"first {k}: {self.filter_examples[k]}" for k in FILTER_REASONS
                              if k in self.filter_examples)
            notes.append(f"rows that are not jobs: {describe_filtered(self.filtered)}" + (f" ({first})" if first
                                                                                          else ""))
        return Trace(jobs=self.jobs, path=str(self.path), format=self.fmt, skipped=self.skipped,
                     filtered={k: self.filtered[k] for k in FILTER_REASONS if k in self.filtered},
                     skipped_reasons=self.reasons, notes=notes, mapping=dict(self.mapping),
                     **extra)  # type: ignore[arg-type]


def describe_filtered(filtered: Mapping[str, int]) -> str:
    """``"3 state, 2 never_ran"``: the filtered-row counts by reason, in :data:`FILTER_REASONS` order."""
    return ", ".join(f"{filtered[k]:,} {k}" for k in FILTER_REASONS if filtered.get(k))


def check_gpu_type(row: Row, value: str, label: str, known: Collection[str] | None) -> str:
    """The cluster's spelling of a GPU type named in a trace (case-insensitive), or a located error;
    ``value`` unchanged when the cluster is not known (``known`` is None)."""
    if known is None:
        return value
    if value in known:
        return value
    low = {k.lower(): k for k in known}
    if value.lower() in low:
        return low[value.lower()]
    raise row.error(f"GPU type {short(value)} is not in the cluster (types: {', '.join(sorted(known))})", label)
