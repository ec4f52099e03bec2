"""ElasticFlow's Philly-derived CSV: ``job_id,submit_time,real_iteration,model_name,ddl,batch_size,num_gpu,...``."""

from __future__ import annotations

from pathlib import Path

from ddlsched.errors import InputError
from ddlsched.workload.loaders._common import Builder, Header, Row, check_file, read_rows
from ddlsched.workload.trace import Trace

REQUIRED = ["job_id", "submit_time", "model_name", "num_gpu", "iteration"]


def load_elasticflow(path: str | Path, *, skip_invalid: bool = False, seed: int = 0) -> Trace:
    """Load an ElasticFlow trace (all times in seconds). ``iterations`` = ``iteration`` (preferred over
    ``duration``); model and batch size kept. The ``ddl`` deadline has no JobSpec field and is not carried."""
    p = check_file(path)
    b = Builder(p, "elasticflow", skip_invalid=skip_invalid, seed=seed)
    rows = read_rows(p)
    first = next(rows, None)
    if first is None:
        raise InputError("empty file", path=str(p))
    header = Header(p, first[1], REQUIRED)
    for line, fields in rows:
        try:
            r = Row(p, line, fields, header)
            job_id = r.text("job_id")
            b.add(r, job_id=job_id, arrival_s=r.number("submit_time", min_value=0),
                  num_gpus=r.integer("num_gpu", positive=True), model=b.model(r.text("model_name"), job_id),
                  iterations=r.number("iteration", positive=True),
                  batch_size=r.integer("batch_size", positive=True) if "batch_size" in header else None)
        except InputError as e:
            b.reject(e)
    if "ddl" in header:
        b.notes.append("the ddl (deadline) column is not carried: JobSpec has no deadline field")
    return b.finish()
