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

import math
from pathlib import Path

from ddlsched.errors import InputError
from ddlsched.workload.loaders._common import Builder, Header, Row, check_file, read_rows, unit_factor
from ddlsched.workload.profiles import ModelCatalog
from ddlsched.workload.trace import Trace

REQUIRED = ["job_id", "num_gpu", "iterations", "model_name"]


def detect_submit_unit(values: list[str]) -> str:
    """The per-file rule for ``time_unit="auto"``: ``"s"`` when any finite value has a fractional part, else
    ``"ms"`` (values that are not finite numbers are left to the row checks)."""
    for v in values:
        try:
            x = float(v)
        except ValueError:
            continue
        if math.isfinite(x) and x != int(x):
            return "s"
    return "ms"


def load_muri(path: str | Path, *, skip_invalid: bool = False, seed: int = 0, time_unit: str = "auto",
              unknown_models: str = "error", catalog: ModelCatalog | None = None) -> Trace:
    """Load a Muri-format trace. ``iterations`` and the model name are kept (preferred over ``duration``);
    ``batch_size`` when present. Files without ``submit_time`` (SJF-BSBF ``add_job.csv``) arrive at 0 (noted)."""
    p = check_file(path)
    b = Builder(p, "muri", skip_invalid=skip_invalid, seed=seed, unknown_models=unknown_models, catalog=catalog)
    rows = list(read_rows(p))
    if not rows:
        raise InputError("empty file", path=str(p), line=1)
    header = Header(p, rows[0][1], REQUIRED)
    has_submit = "submit_time" in header
    data = rows[1:]
    unit = "s"
    if has_submit:
        if time_unit == "auto":
            col = header.index["submit_time"]
            unit = detect_submit_unit([f[col] for _, f in data if len(f) > col])
            b.notes.append(f"submit_time read as {unit} (auto rule: 's' if any value is fractional, else 'ms'; "
                           "override with --time-unit)")
            whole = all(f[col].endswith("000") or f[col] == "0" for _, f in data if len(f) > col)
            if unit == "ms" and not whole:
                b.notes.append("submit_time values are not whole seconds x 1000 (arrivals rescaled by the file's "
                               "authors); read as ms like Muri/SJF-BSBF jobs.py, pass --time-unit s for seconds")
        else:
            unit = time_unit
            b.notes.append(f"submit_time read as {unit} (time unit given)")
        factor = unit_factor(unit)
    else:
        factor = 0.0
        b.notes.append("file has no submit_time column: every job arrives at 0")
    b.mapping = {"job_id": "job_id", "arrival": f"submit_time ({unit})" if has_submit else "0 (no submit_time)",
                 "num_gpus": "num_gpu", "iterations": "iterations", "model": "model_name"}
    if "batch_size" in header:
        b.mapping["batch_size"] = "batch_size"
    for line, fields in data:
        try:
            r = Row(p, line, fields, header)
            job_id = r.text("job_id")
            gpus = r.gpus("num_gpu")
            arrival = r.arrival("submit_time", factor=factor, unit=unit) if has_submit else 0.0
            iters = r.iterations("iterations")
            model = b.model(r.text("model_name"), job_id, r, "model_name")
            bs = r.batch_size("batch_size") if "batch_size" in header else None
            b.add(r, job_id=job_id, arrival_s=arrival, num_gpus=gpus, model=model, iterations=iters, batch_size=bs)
        except InputError as e:
            b.reject(e)
    return b.finish()
