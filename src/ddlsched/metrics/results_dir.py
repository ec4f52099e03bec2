"""Find the runs in a results directory: a sweep, a ``compare`` output, or a single ``simulate`` output.

* sweep:    ``DIR/cells/<cell_id>/`` with ``cell.json`` (axis labels) and the run files;
* compare:  ``DIR/<policy>/summary.json`` (one sub-directory per policy);
* simulate: ``DIR/summary.json``.

Each run gets a ``policy`` label, a ``seed`` and a ``scenario`` (every other axis that varies), so that the
report compares policies within a scenario and aggregates over seeds.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ddlsched.errors import InputError

_NOT_SCENARIO = ("policy", "seed")


@dataclass
class Run:
    path: Path
    policy: str
    seed: int
    labels: dict[str, Any]
    summary: dict[str, Any]
    scenario: str = ""
    _records: list[dict[str, Any]] | None = field(default=None, repr=False)

    def records(self) -> list[dict[str, Any]]:
        if self._records is None:
            self._records = read_csv(self.path / "records.csv") if (self.path / "records.csv").is_file() \
                else _read_parquet(self.path / "records.parquet")
        return self._records

    def timeseries(self) -> dict[str, list[float]]:
        rows = read_csv(self.path / "timeseries.csv")
        keys = list(rows[0]) if rows else ["time_s", "busy_gpus", "pending", "running"]
        return {k: [float(r[k]) for r in rows] for k in keys}


def _num(v: str) -> Any:
    if v == "":
        return None
    try:
        return int(v)
    except ValueError:
        try:
            return float(v)
        except ValueError:
            return v


def read_csv(path: Path) -> list[dict[str, Any]]:
    with path.open(newline="") as f:
        return [{k: _num(v) for k, v in row.items()} for row in csv.DictReader(f)]


def _read_parquet(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise InputError("no records.csv or records.parquet", path=str(path.parent))
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()


def _summary(d: Path) -> dict[str, Any]:
    return json.loads((d / "summary.json").read_text())


def find_runs(root: Path) -> tuple[str, list[Run]]:
    """(kind, runs) where kind is 'sweep', 'compare' or 'simulate'."""
    if not root.is_dir():
        raise InputError("not a directory", path=str(root))
    runs: list[Run] = []
    if (root / "cells").is_dir():
        kind = "sweep"
        for d in sorted((root / "cells").iterdir()):
            if d.name.startswith(".") or not (d / "summary.json").is_file() or not (d / "cell.json").is_file():
                continue
            labels = json.loads((d / "cell.json").read_text())["labels"]
            runs.append(Run(d, str(labels["policy"]), int(labels["seed"]), labels, _summary(d)))
    elif (root / "summary.json").is_file():
        kind = "simulate"
        runs.append(_plain_run(root))
    else:
        kind = "compare"
        runs = [_plain_run(d) for d in sorted(root.iterdir()) if d.is_dir() and (d / "summary.json").is_file()]
    if not runs:
        raise InputError("no finished runs found (expected cells/*/summary.json, */summary.json or summary.json)",
                         path=str(root))
    _assign_scenarios(runs)
    return kind, runs


def _plain_run(d: Path) -> Run:
    s = _summary(d)
    labels = {"policy": s.get("policy", d.name), "seed": s.get("seed", 0), "cluster": s.get("cluster"),
              "trace": Path(str(s.get("trace", ""))).stem, "load_scale": s.get("load_scale"),
              "perf_model": s.get("perf_model")}
    return Run(d, str(labels["policy"]), int(labels["seed"] or 0), labels, s)


def _assign_scenarios(runs: list[Run]) -> None:
    keys: list[str] = []
    for r in runs:
        keys.extend(k for k in r.labels if k not in keys and k not in _NOT_SCENARIO)
    varying = [k for k in keys if len({json.dumps(r.labels.get(k), sort_keys=True) for r in runs}) > 1]
    for r in runs:
        if varying:
            r.scenario = ", ".join(f"{k}={r.labels.get(k)}" for k in varying)
        else:
            r.scenario = str(r.labels.get("cluster") or "all")
