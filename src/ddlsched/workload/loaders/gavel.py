"""Gavel ``.trace`` files: tab-separated, no header, 7 fields per job."""

from __future__ import annotations

import re
from pathlib import Path

from ddlsched.errors import InputError
from ddlsched.workload.loaders._common import Builder, Row, check_file, read_rows
from ddlsched.workload.trace import Trace

FIELDS = ["job_type", "command", "num_steps_arg", "needs_data_dir", "total_steps", "arrival_time", "scale_factor"]
_JOB_TYPE = re.compile(r"^(?P<model>.+?)(?:\s*\(batch size (?P<bs>\d+)\))?$")


def parse_job_type(row: Row) -> tuple[str, int | None]:
    """``'ResNet-50 (batch size 64)'`` → ``('ResNet-50', 64)``; ``'A3C'`` → ``('A3C', None)``."""
    m = _JOB_TYPE.match(row.text(0, "job_type"))
    if m is None:  # pragma: no cover - the pattern accepts any non-empty text
        raise row.error("cannot parse job type", "job_type")
    return m["model"], int(m["bs"]) if m["bs"] else None


def load_gavel(path: str | Path, *, skip_invalid: bool = False, seed: int = 0) -> Trace:
    """Load a Gavel trace: model and batch size from ``job_type``, ``iterations`` = total_steps,
    arrival = arrival_time (s), GPUs = scale_factor. Job ids are ``<file stem>-<n>`` (n = line number - 1);
    user = file stem (the Philly VC id for the bundled files)."""
    p = check_file(path)
    b = Builder(p, "gavel", skip_invalid=skip_invalid, seed=seed)
    for line, fields in read_rows(p, delimiter="\t"):
        try:
            r = Row(p, line, fields, expected=len(FIELDS))
            model, bs = parse_job_type(r)
            iters = r.number(4, "total_steps", positive=True)
            arrival = r.number(5, "arrival_time", min_value=0)
            gpus = r.integer(6, "scale_factor", positive=True)
            job_id = f"{p.stem}-{line - 1}"
            b.add(r, job_id=job_id, arrival_s=arrival, num_gpus=gpus, model=b.model(model, job_id),
                  iterations=iters, batch_size=bs, user=p.stem)
        except InputError as e:
            b.reject(e)
    if not b.jobs and not b.skipped:
        raise InputError("empty file", path=str(p))
    return b.finish()
