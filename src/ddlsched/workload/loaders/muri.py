"""Muri CSV traces (also SJF-BSBF's testbed subsets): ``job_id,num_gpu,submit_time,iterations,model_name,...``.

Units: ``duration`` and ``iteration_time`` are ms. ``submit_time`` is ms in Muri's own files, and both Muri's and
SJF-BSBF's ``jobs.py`` divide it by 1000. Some derived files do not look like Muri's, so the unit of
``submit_time`` is decided per file unless ``time_unit`` is given:

**Rule (time_unit="auto")** — ``"s"`` if any ``submit_time`` has a fractional part (Muri writes whole ms), else
``"ms"``. Whether the file's values are whole seconds × 1000 is also reported in the notes: SJF-BSBF's
``trace_data_new*.csv`` and ``cluster_trace_12.csv`` are not (their arrivals were rescaled by the authors into a
window of 600,000 resp. 220,000 units); they are read as ms like the authors' code does (a 600 s / 220 s testbed
window). Pass ``time_unit="s"`` to read them as seconds instead.
"""

from __future__ import annotations

from pathlib import Path

from ddlsched.errors import InputError
from ddlsched.workload.loaders._common import Builder, Header, Row, check_file, read_rows, unit_factor
from ddlsched.workload.trace import Trace

REQUIRED = ["job_id", "num_gpu", "iterations", "model_name"]


def detect_submit_unit(values: list[str]) -> str:
    """The per-file rule for ``time_unit="auto"``: ``"s"`` when any value has a fractional part, else ``"ms"``."""
    for v in values:
        try:
            x = float(v)
        except ValueError:
            continue
        if x != int(x):
            return "s"
    return "ms"


def load_muri(path: str | Path, *, skip_invalid: bool = False, seed: int = 0, time_unit: str = "auto") -> Trace:
    """Load a Muri-format trace. ``iterations`` and the model name are kept (preferred over ``duration``);
    ``batch_size`` when present. Files without ``submit_time`` (SJF-BSBF ``add_job.csv``) arrive at 0 (noted)."""
    p = check_file(path)
    b = Builder(p, "muri", skip_invalid=skip_invalid, seed=seed)
    rows = list(read_rows(p))
    if not rows:
        raise InputError("empty file", path=str(p))
    header = Header(p, rows[0][1], REQUIRED)
    has_submit = "submit_time" in header
    data = rows[1:]
    if has_submit:
        if time_unit == "auto":
            col = header.index["submit_time"]
            unit = detect_submit_unit([f[col] for _, f in data if len(f) > col])
            b.notes.append(f"submit_time read as {unit} (auto rule: 's' if any value is fractional, else 'ms'; "
                           "override with time_unit)")
            whole = all(f[col].endswith("000") or f[col] == "0" for _, f in data if len(f) > col)
            if unit == "ms" and not whole:
                b.notes.append("submit_time values are not whole seconds x 1000 (arrivals rescaled by the file's "
                               "authors); read as ms like Muri/SJF-BSBF jobs.py, pass time_unit='s' for seconds")
        else:
            unit = time_unit
            b.notes.append(f"submit_time read as {unit} (time_unit given)")
        factor = unit_factor(unit)
    else:
        factor = 0.0
        b.notes.append("file has no submit_time column: every job arrives at 0")
    for line, fields in data:
        try:
            r = Row(p, line, fields, header)
            job_id = r.text("job_id")
            gpus = r.integer("num_gpu", positive=True)
            arrival = r.number("submit_time", min_value=0) * factor if has_submit else 0.0
            iters = r.number("iterations", positive=True)
            model = b.model(r.text("model_name"), job_id)
            bs = r.integer("batch_size", positive=True) if "batch_size" in header else None
            b.add(r, job_id=job_id, arrival_s=arrival, num_gpus=gpus, model=model, iterations=iters, batch_size=bs)
        except InputError as e:
            b.reject(e)
    return b.finish()
