"""Result files a data person opens directly: records.csv (or .parquet), timeseries.csv, summary.json."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

from ddlsched.engine.result import SimResult
from ddlsched.metrics.loadtime import load_over_time
from ddlsched.metrics.summary import summarize
from ddlsched.metrics.window import Window


def _clean(v: Any) -> Any:
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None
    return v


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps({k: _clean(v) for k, v in data.items()}, indent=2, sort_keys=True) + "\n")


def write_records(path: Path, rows: list[dict[str, Any]]) -> None:
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)
        return
    with path.open("w", newline="") as f:
        if not rows:
            return
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: (repr(v) if isinstance(v, float) else v) for k, v in r.items()})


def write_timeseries(path: Path, ts: dict[str, list[float]]) -> None:
    keys = list(ts)
    with path.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(keys)
        for row in zip(*(ts[k] for k in keys), strict=True):
            w.writerow([repr(x) if isinstance(x, float) else x for x in row])


def write_run(result: SimResult, out: Path, *, parquet: bool = False, extra: dict[str, Any] | None = None,
              window: Window | None = None) -> dict[str, Any]:
    """Write every file of one run under ``out``; return the summary (per-job metrics over ``window``)."""
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize(result, window)
    if extra:
        summary.update(extra)
    write_json(out / "summary.json", summary)
    write_records(out / ("records.parquet" if parquet else "records.csv"), result.records)
    write_timeseries(out / "timeseries.csv", result.timeseries)
    if result.timeseries.get("time_s"):
        write_records(out / "load.csv", load_over_time(result.records, result.timeseries, result.cluster.num_gpus))
    if result.rejected:
        write_records(out / "rejected.csv", result.rejected)
    write_json(out / "run.json", {"wall_s": round(result.wall_s, 3), "events": result.events,
                                  "events_per_s": round(result.events / result.wall_s) if result.wall_s else None})
    return summary
