"""Gavel ``.trace`` files: tab-separated, no header, 7 fields per job."""

from __future__ import annotations

import re
from pathlib import Path

from ddlsched.errors import InputError
from ddlsched.workload.loaders._common import Builder, Row, check_file, read_rows
from ddlsched.workload.profiles import ModelCatalog
from ddlsched.workload.trace import Trace

FIELDS = ["job_type", "command", "num_steps_arg", "needs_data_dir", "total_steps", "arrival_time", "scale_factor"]
_JOB_TYPE = re.compile(r"^(?P<model>.+?)(?:\s*\(batch size (?P<bs>\d{1,9})\))?$")


def parse_job_type(row: Row) -> tuple[str, int | None]:
    """``'ResNet-50 (batch size 64)'`` → ``('ResNet-50', 64)``; ``'A3C'`` → ``('A3C', None)``."""
    m = _JOB_TYPE.match(row.text(0, "job_type"))
    if m is None:  # pragma: no cover - the pattern accepts any non-empty text
        raise row.error("cannot parse job type", "job_type")
    bs = int(m["bs"]) if m["bs"] else None
    if bs == 0:
        raise row.error("batch size must be > 0", "job_type")
    return m["model"], bs


def load_gavel(path: str | Path, *, skip_invalid: bool = False, seed: int = 0, unknown_models: str = "error",
               catalog: ModelCatalog | None = None) -> Trace:
    """Load a Gavel trace: model and batch size from ``job_type``, ``iterations`` = total_steps,
    arrival = arrival_time (s), GPUs = scale_factor. Job ids are ``<file stem>-<n>`` (n = line number - 1);
    user = file stem (the Philly VC id for the bundled files)."""
    p = check_file(path)
    b = Builder(p, "gavel", skip_invalid=skip_invalid, seed=seed, unknown_models=unknown_models, catalog=catalog)
    b.mapping = {"job_id": "<file stem>-<line - 1>", "arrival": "arrival_time (field 6, s)",
                 "num_gpus": "scale_factor (field 7)", "iterations": "total_steps (field 5)",
                 "model": "job_type (field 1)", "batch_size": "job_type '(batch size N)'", "user": "<file stem>"}
    for line, fields in read_rows(p, delimiter="\t"):
        try:
            r = Row(p, line, fields, expected=len(FIELDS))
            model, bs = parse_job_type(r)
            iters = r.iterations(4, "total_steps")
            arrival = r.arrival(5, "arrival_time")
            gpus = r.gpus(6, "scale_factor")
            job_id = f"{p.stem}-{line - 1}"
            b.add(r, job_id=job_id, arrival_s=arrival, num_gpus=gpus, model=b.model(model, job_id, r, "job_type"),
                  iterations=iters, batch_size=bs, user=p.stem)
        except InputError as e:
            b.reject(e)
    if not b.jobs and not b.skipped:
        raise InputError("empty file", path=str(p), line=1)
    return b.finish()
