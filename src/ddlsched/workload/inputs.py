"""The workload of one run: trace (or synthetic spec) → jobs, cut and load-scaled, plus the model catalogue.

:func:`load_workload_and_models` is what ``ddlsched simulate``/``sweep`` load a trace with; it returns a
:class:`Workload` whose ``catalog`` (bundled profiles + ``--models FILE.csv``) the simulator must use for the
jobs to find their profiles. ``ddlsched.experiments.runner.load_workload`` returns the first three fields.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ddlsched.errors import InputError
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import ModelCatalog, ModelProfile, default_catalog, load_models
from ddlsched.workload.trace import Trace
from ddlsched.workload.transform import check_load_scale, scale_arrivals


@dataclass
class Workload:
    """Jobs ready for the simulator, what was assumed (notes), a label, and the model catalogue to use."""

    jobs: list[JobSpec]
    notes: list[str]
    label: str
    catalog: ModelCatalog
    models: list[ModelProfile] = field(default_factory=list)
    """Extra profiles read from ``--models`` (already in ``catalog``)."""
    trace: Trace | None = None
    """The loaded trace before ``max_jobs``/``load_scale`` (None for a synthetic workload)."""


def row_accounting(trace: Trace | None, jobs: int) -> dict[str, Any]:
    """Summary entries for a trace whose loader filtered rows (Slurm, Kubernetes): ``rows_read`` and
    ``rows_filtered`` (count per reason); ``rows_read = jobs + sum(rows_filtered)`` where ``jobs`` is the
    summary's (simulated + skipped). Empty when nothing was filtered, or the run used a cut of the trace."""
    if trace is None or not trace.filtered:
        return {}
    from ddlsched.vocabulary import TRACE_ROW_FIELDS

    out = {"rows_read": trace.rows, "rows_filtered": dict(trace.filtered)}
    assert set(out) == set(TRACE_ROW_FIELDS)
    if out["rows_read"] != jobs + sum(trace.filtered.values()):
        raise InputError(f"row accounting does not close: {trace.rows} rows read, {jobs} jobs, "
                         f"{sum(trace.filtered.values())} filtered", path=trace.path)
    return out


def catalog_with(models: str | Path | None) -> tuple[ModelCatalog, list[ModelProfile], list[str]]:
    """(bundled catalogue + the profiles in ``models``, those profiles, notes)."""
    base = default_catalog()
    if models is None:
        return base, [], []
    extra = load_models(models)
    replaced = [m.name for m in extra if m.name in base]
    notes = [f"{len(extra)} model profile(s) read from {models}: {', '.join(m.name for m in extra)}"]
    if replaced:
        notes.append(f"profiles from {models} replace the bundled ones for: {', '.join(replaced)}")
    return base.with_profiles(extra), extra, notes


def check_max_jobs(max_jobs: Any) -> int:
    if isinstance(max_jobs, bool) or not isinstance(max_jobs, int) or max_jobs < 1:
        raise InputError(f"--max-jobs must be a whole number >= 1, got {max_jobs!r}", field="max_jobs")
    return max_jobs


def parse_window(text: str) -> tuple[float, float]:
    """``START:END`` → seconds from the first arrival; each side a duration (``3600``, ``90m``, ``12h``, ``55d``)."""
    from ddlsched.metrics.window import Exclusion

    start_s, sep, end_s = str(text).partition(":")
    if not sep:
        raise InputError(f"expected START:END (e.g. 55d:70d), got {text!r}", field="--window")
    start, end = (Exclusion.parse(x, "--window") for x in (start_s or "0", end_s))
    if start.jobs or end.jobs or not end_s.strip():
        raise InputError(f"START and END are durations (3600, 90m, 12h, 55d), got {text!r}", field="--window")
    if not end.seconds > start.seconds:
        raise InputError(f"END must be after START, got {text!r}", field="--window")
    return start.seconds, end.seconds


def cut_window(jobs: list[JobSpec], window: str) -> tuple[list[JobSpec], str]:
    """The jobs arriving in ``window`` ("START:END", durations after the first arrival, e.g. ``55d:70d``) and the
    note that says so; an InputError when none arrives in it."""
    start, end = parse_window(window)
    if not jobs:
        return jobs, f"--window {window}: no job to cut"
    t0 = min(j.arrival_s for j in jobs)
    kept = [j for j in jobs if t0 + start <= j.arrival_s < t0 + end]
    if not kept:
        raise InputError(f"no job arrives in the window {window} (the trace spans "
                         f"{(max(j.arrival_s for j in jobs) - t0) / 86400:.1f} days)", field="--window")
    return kept, (f"--window {window}: the {len(kept)} of {len(jobs)} jobs arriving "
                  f"{start / 86400:g}–{end / 86400:g} days after the first arrival are used")


def load_workload_and_models(trace: str | Path | dict[str, Any], *, seed: int, fmt: str | None = None,
                             options: dict[str, Any] | None = None, max_jobs: int | None = None,
                             load_scale: float = 1.0, models: str | Path | None = None,
                             gpu_types: Collection[str] | None = None, window: str | None = None) -> Workload:
    """Load a trace file or folder (or ``{"synthetic": {...}}``), cut it to the first ``max_jobs`` jobs by
    arrival, scale arrivals by ``load_scale``; ``models`` (or ``options["models"]``) is a profile CSV added to
    the catalogue that model names are checked against; ``gpu_types`` (the cluster's, when known) checks a
    GPU-type column; ``window`` ("START:END", durations from the first arrival such as ``55d:70d``) keeps only
    the jobs arriving in [START, END), before ``max_jobs``. Every cut, scaling and skip is in the notes."""
    opts: dict[str, Any] = dict(options or {})
    models = opts.pop("models", None) if models is None else models
    if max_jobs is not None:
        max_jobs = check_max_jobs(max_jobs)
    load_scale = check_load_scale(load_scale)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise InputError(f"--seed must be a whole number, got {seed!r}", field="seed")
    catalog, extra, notes = catalog_with(models)
    tr: Trace | None
    if isinstance(trace, dict):
        from ddlsched.workload.synthetic import philly_mix

        spec = dict(trace.get("synthetic", {}))
        n = spec.pop("jobs", None)
        if n is None:
            raise InputError("synthetic trace needs 'jobs'", field="synthetic.jobs")
        if isinstance(n, bool) or not isinstance(n, int):
            raise InputError(f"synthetic 'jobs' must be a whole number, got {n!r}", field="synthetic.jobs")
        tr = philly_mix(n, seed=seed, **spec)
        notes += tr.notes
        jobs, label, tr = tr.jobs, tr.path, None
    else:
        from ddlsched.workload.loaders import load_trace

        opts = {"seed": seed, **opts, "catalog": catalog}
        opts.setdefault("skip_invalid", False)
        if gpu_types is not None:
            opts["gpu_types"] = gpu_types
        tr = load_trace(trace, fmt, **opts)
        notes += tr.notes
        jobs, label = tr.jobs, str(trace)
        if tr.skipped:
            notes.append(f"skipped {tr.skipped} invalid row(s) of {trace}: " + "; ".join(tr.skipped_reasons[:3]))
    if window is not None:
        jobs, note = cut_window(jobs, window)
        notes.append(note)
    if max_jobs is not None and max_jobs < len(jobs):
        notes.append(f"--max-jobs {max_jobs}: the first {max_jobs} of {len(jobs)} jobs by arrival are used")
        jobs = jobs[:max_jobs]
    if load_scale != 1.0:
        jobs = scale_arrivals(jobs, load_scale)
        notes.append(f"--load-scale {load_scale:g}: inter-arrival times divided by {load_scale:g}")
    for j in jobs:  # the simulator's preconditions, checked here so that a bad value names its source
        if j.model not in catalog:
            raise InputError(f"{j.source}: job {j.job_id}: model {j.model!r} is not in the catalogue; known models: "
                             f"{', '.join(catalog.names())}", field="model")
    return Workload(jobs=list(jobs), notes=notes, label=label, catalog=catalog, models=extra, trace=tr)
