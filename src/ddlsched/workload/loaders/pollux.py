"""Pollux / Sia workload samples: ``name,time,application,num_replicas,batch_size``.

The files give no run length: Pollux's simulator trains each application to a fixed convergence target. The
authors' generator picked the application from the Philly job's GPU-hours (< 1 h → cifar10/ncf, < 10 h →
deepspeech2/bert, < 100 h → yolov3, else imagenet). This loader therefore sets ``duration_s`` from
:data:`DEFAULT_GPU_HOURS` — the geometric middle of each application's bucket, a reconstruction [I] — as
``gpu_hours × 3600 / num_replicas``; pass ``gpu_hours={...}`` to override. The notes say so.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ddlsched.errors import InputError
from ddlsched.workload.loaders._common import Builder, Header, Row, check_file, read_rows
from ddlsched.workload.trace import Trace

COLUMNS = ["name", "time", "application", "num_replicas", "batch_size"]

DEFAULT_GPU_HOURS: dict[str, float] = {
    "cifar10": 0.5, "ncf": 0.5,           # bucket (0, 1) h
    "deepspeech2": 3.16, "bert": 3.16,    # bucket [1, 10) h
    "yolov3": 31.6,                       # bucket [10, 100) h
    "imagenet": 316.0,                    # bucket >= 100 h (open-ended; 10 × 31.6)
}


def load_pollux(path: str | Path, *, skip_invalid: bool = False, seed: int = 0,
                gpu_hours: Mapping[str, float] | None = None) -> Trace:
    """Load a Pollux/Sia workload. job_id = ``name``; arrival = ``time`` (s); GPUs = ``num_replicas`` (picked by
    the authors at random from efficient configurations, not the Philly job's GPU count)."""
    p = check_file(path)
    hours = {**DEFAULT_GPU_HOURS, **(gpu_hours or {})}
    b = Builder(p, "pollux", skip_invalid=skip_invalid, seed=seed)
    rows = read_rows(p)
    first = next(rows, None)
    if first is None:
        raise InputError("empty file", path=str(p))
    header = Header(p, first[1], ["name", "time", "application", "num_replicas"])
    used: set[str] = set()
    for line, fields in rows:
        try:
            r = Row(p, line, fields, header)
            job_id = r.text("name")
            app = r.text("application").lower()
            if app not in hours:
                raise r.error(f"no GPU-hours for application {app!r}; pass gpu_hours={{{app!r}: ...}}",
                              "application")
            gpus = r.integer("num_replicas", positive=True)
            used.add(app)
            b.add(r, job_id=job_id, arrival_s=r.number("time", min_value=0), num_gpus=gpus,
                  model=b.model(app, job_id), duration_s=hours[app] * 3600.0 / gpus,
                  batch_size=r.integer("batch_size", positive=True) if "batch_size" in header else None)
        except InputError as e:
            b.reject(e)
    b.notes.append("the file has no run length: duration_s = gpu_hours[application] x 3600 / num_replicas with "
                   + ", ".join(f"{a} {hours[a]:g} h" for a in sorted(used))
                   + " (bucket middles of the authors' GPU-hour → application rule [I]; override with gpu_hours)")
    b.notes.append("num_replicas/batch_size were drawn by the workload's authors, not taken from Philly")
    return b.finish()
