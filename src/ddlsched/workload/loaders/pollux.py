"""Pollux / Sia workload samples: ``name,time,application,num_replicas,batch_size``.

The files give no run length: Pollux's simulator trains each application to a fixed convergence target. The
authors' generator picked the application from the Philly job's GPU-hours (< 1 h → cifar10/ncf, < 10 h →
deepspeech2/bert, < 100 h → yolov3, else imagenet). This loader therefore sets ``duration_s`` from
:data:`DEFAULT_GPU_HOURS` — the geometric middle of each application's bucket, a reconstruction [I] — as
``gpu_hours × 3600 / num_replicas``; pass ``gpu_hours={...}`` to override. The notes say so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from ddlsched.errors import InputError
from ddlsched.workload.limits import MAX_DURATION_S
from ddlsched.workload.loaders._common import Builder, Header, Row, check_file, read_rows
from ddlsched.workload.profiles import ModelCatalog
from ddlsched.workload.trace import Trace

COLUMNS = ["name", "time", "application", "num_replicas", "batch_size"]

DEFAULT_GPU_HOURS: dict[str, float] = {
    "cifar10": 0.5, "ncf": 0.5,           # bucket (0, 1) h
    "deepspeech2": 3.16, "bert": 3.16,    # bucket [1, 10) h
    "yolov3": 31.6,                       # bucket [10, 100) h
    "imagenet": 316.0,                    # bucket >= 100 h (open-ended; 10 × 31.6)
}


def load_pollux(path: str | Path, *, skip_invalid: bool = False, seed: int = 0,
                gpu_hours: Mapping[str, float] | None = None, unknown_models: str = "error",
                catalog: ModelCatalog | None = None) -> Trace:
    """Load a Pollux/Sia workload. job_id = ``name``; arrival = ``time`` (s); GPUs = ``num_replicas`` (picked by
    the authors at random from efficient configurations, not the Philly job's GPU count)."""
    p = check_file(path)
    for app, h in (gpu_hours or {}).items():
        if not (isinstance(h, int | float) and math.isfinite(h) and 0 < h * 3600 <= MAX_DURATION_S):
            raise InputError(f"gpu_hours[{app!r}] must be a number in (0, {MAX_DURATION_S / 3600:g}], got {h!r}",
                             field="gpu_hours")
    hours = {**DEFAULT_GPU_HOURS, **{k.lower(): float(v) for k, v in (gpu_hours or {}).items()}}
    b = Builder(p, "pollux", skip_invalid=skip_invalid, seed=seed, unknown_models=unknown_models, catalog=catalog)
    rows = read_rows(p)
    first = next(rows, None)
    if first is None:
        raise InputError("empty file", path=str(p), line=1)
    header = Header(p, first[1], ["name", "time", "application", "num_replicas"])
    b.mapping = {"job_id": "name", "arrival": "time (s)", "num_gpus": "num_replicas", "model": "application",
                 "duration": "gpu_hours[application] x 3600 / num_replicas"}
    if "batch_size" in header:
        b.mapping["batch_size"] = "batch_size"
    used: set[str] = set()
    for line, fields in rows:
        try:
            r = Row(p, line, fields, header)
            job_id = r.text("name")
            app = r.text("application").lower()
            if app not in hours:
                raise r.error(f"no GPU-hours for application {app!r}; known: {', '.join(sorted(hours))} "
                              f"(gpu_hours={{{app!r}: ...}} in Python)", "application")
            gpus = r.gpus("num_replicas")
            b.add(r, job_id=job_id, arrival_s=r.arrival("time"), num_gpus=gpus,
                  model=b.model(app, job_id, r, "application"), duration_s=hours[app] * 3600.0 / gpus,
                  batch_size=r.batch_size("batch_size") if "batch_size" in header else None)
            used.add(app)
        except InputError as e:
            b.reject(e)
    b.notes.append("the file has no run length: duration_s = gpu_hours[application] x 3600 / num_replicas with "
                   + ", ".join(f"{a} {hours[a]:g} h" for a in sorted(used))
                   + " (bucket middles of the authors' GPU-hour → application rule [I]; override with gpu_hours)")
    b.notes.append("num_replicas/batch_size were drawn by the workload's authors, not taken from Philly")
    return b.finish()
