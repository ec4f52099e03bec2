"""ElasticFlow's Philly-derived CSV: ``job_id,submit_time,real_iteration,model_name,ddl,batch_size,num_gpu,...``."""

from __future__ import annotations

from pathlib import Path

from ddlsched.errors import InputError
from ddlsched.workload.loaders._common import Builder, Header, Row, check_file, read_rows
from ddlsched.workload.profiles import ModelCatalog
from ddlsched.workload.trace import Trace

REQUIRED = ["job_id", "submit_time", "model_name", "num_gpu", "iteration"]


def load_elasticflow(path: str | Path, *, skip_invalid: bool = False, seed: int = 0, unknown_models: str = "error",
                     catalog: ModelCatalog | None = None) -> Trace:
    """Load an ElasticFlow trace (all times in seconds). ``iterations`` = ``iteration`` (preferred over
    ``duration``); model and batch size kept. The ``ddl`` deadline has no JobSpec field and is not carried."""
    p = check_file(path)
    b = Builder(p, "elasticflow", skip_invalid=skip_invalid, seed=seed, unknown_models=unknown_models,
                catalog=catalog)
    rows = read_rows(p)
    first = next(rows, None)
    if first is None:
        raise InputError("empty file", path=str(p), line=1)
    header = Header(p, first[1], REQUIRED)
    b.mapping = {"job_id": "job_id", "arrival": "submit_time (s)", "num_gpus": "num_gpu", "iterations": "iteration",
                 "model": "model_name"}
    if "batch_size" in header:
        b.mapping["batch_size"] = "batch_size"
    for line, fields in rows:
        try:
            r = Row(p, line, fields, header)
            job_id = r.text("job_id")
            b.add(r, job_id=job_id, arrival_s=r.arrival("submit_time"), num_gpus=r.gpus("num_gpu"),
                  model=b.model(r.text("model_name"), job_id, r, "model_name"),
                  iterations=r.iterations("iteration"),
                  batch_size=r.batch_size("batch_size") if "batch_size" in header else None)
        except InputError as e:
            b.reject(e)
    if "ddl" in header:
        b.notes.append("the ddl (deadline) column is not carried: JobSpec has no deadline field")
    return b.finish()
