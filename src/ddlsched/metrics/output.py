"""Result files a data person opens directly: records.csv (or .parquet), timeseries.csv, summary.json."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ddlsched.engine.result import Records, SimResult
from ddlsched.metrics.loadtime import load_over_time
from ddlsched.metrics.summary import summarize
from ddlsched.metrics.window import Window


def _clean(v: Any) -> Any:
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None
    return v


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps({k: _clean(v) for k, v in data.items()}, indent=2, sort_keys=True) + "\n")


def write_records(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """Rows to ``path`` (CSV, or Parquet by suffix); engine records (:class:`Records`) go from their tuples."""
    if isinstance(rows, Records) and rows.as_rows:
        _write_tuples(path, rows)
        return
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(list(rows)), path)
        return
    with path.open("w", newline="") as f:
        if not rows:
            return
        fields = list(rows[0])
        keys = rows[0].keys()
        w = csv.writer(f, lineterminator="\n")
        w.writerow(fields)
        w.writerows([repr(v) if isinstance(v, float) else v for v in map(r.__getitem__, fields)]
                    if r.keys() == keys else _dict_row(r, fields) for r in rows)


def _write_tuples(path: Path, records: Records) -> None:
    """The same file :func:`write_records` writes from the records as dicts, straight from their tuples."""
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({c: records.column(c) for c in records.columns}) if len(records)
                       else pa.Table.from_pylist([]), path)
        return
    with path.open("w", newline="") as f:
        if not len(records):
            return
        w = csv.writer(f, lineterminator="\n")
        w.writerow(records.columns)
        w.writerows([repr(v) if isinstance(v, float) else v for v in row] for row in records.rows())


def _dict_row(r: dict[str, Any], fields: list[str]) -> list[Any]:
    """A row whose keys differ from the first row's, as ``csv.DictWriter`` writes it: a missing field empty, an
    unknown field an error."""
    extra = [k for k in r if k not in fields]
    if extra:
        raise ValueError(f"dict contains fields not in fieldnames: {', '.join(map(repr, extra))}")
    return [repr(v) if isinstance(v, float) else v for v in (r.get(k, "") for k in fields)]


def write_timeseries(path: Path, ts: dict[str, list[float]]) -> None:
    keys = list(ts)
    with path.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(keys)
        w.writerows([repr(x) if isinstance(x, float) else x for x in row]
                    for row in zip(*(ts[k] for k in keys), strict=True))


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
    tenants = getattr(result.cluster, "tenants", None)
    if tenants is not None:  # runs with tenants: per-job rho and the shares over time (docs/metrics.md)
        from ddlsched.metrics.fairness import fairness

        lo, hi = summary["window_start_s"], summary["window_end_s"]
        inside = np.array([lo <= a <= hi for a in result.records.column("arrival_s")], dtype=bool)
        _, rho_rows, share_rows = fairness(result.records, tenants, result.cluster.num_gpus, inside)
        write_records(out / "fairness.csv", rho_rows)
        write_records(out / "tenant_shares.csv", share_rows)
    write_json(out / "run.json", {"wall_s": round(result.wall_s, 3), "events": result.events,
                                  "events_per_s": round(result.events / result.wall_s) if result.wall_s else None})
    return summary
