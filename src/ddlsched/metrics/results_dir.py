"""Find the runs in a results directory: a sweep, a ``compare`` output, or a single ``simulate`` output.

* sweep:    ``DIR/cells/<cell_id>/`` with ``cell.json`` (axis labels) and the run files;
* compare:  ``DIR/manifest.json`` of kind ``compare`` naming one sub-directory per policy;
* simulate: ``DIR/manifest.json`` of kind ``run`` beside the run files;
* a folder of complete ``simulate`` outputs: ``DIR/<name>/manifest.json``.

Only complete outputs are read (docs/outputs.md): a run folder needs its ``manifest.json`` (the completion
marker, written last) and every file it lists with the listed size (and sha256 with ``hashes=True``). A folder
that looks like a run but is not complete (no marker, a file missing or truncated, a compare without its
marker) is refused with an ``InputError`` naming the folder and what is missing; the report never silently
drops it. Hidden entries (``.NAME.tmp-<pid>`` folders of running or killed writers) are ignored. Sweep cells
are accepted without a manifest when they have ``cell.json`` + ``summary.json`` and the run files (the sweep
renames a cell into place only when it is complete); a cell that has a manifest must match it. Failed cells
(no ``summary.json``) are skipped.

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
from ddlsched.metrics.compare_out import COMPARE_JSON
from ddlsched.metrics.manifest import MANIFEST, check_folder, is_complete, read_manifest
from ddlsched.vocabulary import TEXT_FIELDS

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
    """Rows with numbers converted, except the text columns (``vocabulary.TEXT_FIELDS``)."""
    with path.open(newline="") as f:
        return [{k: v if k in TEXT_FIELDS else _num(v) for k, v in row.items()} for row in csv.DictReader(f)]


def _read_parquet(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise InputError("no records.csv or records.parquet", path=str(path.parent))
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()


def _summary(d: Path) -> dict[str, Any]:
    p = d / "summary.json"
    try:
        data = json.loads(p.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"unreadable summary ({e})", path=str(p)) from None
    if not isinstance(data, dict):
        raise InputError("not a JSON object", path=str(p))
    return data


def _absent_run_files(d: Path) -> list[str]:
    out = [n for n in ("summary.json", "timeseries.csv") if not (d / n).is_file()]
    if not (d / "records.csv").is_file() and not (d / "records.parquet").is_file():
        out.append("records.csv (or records.parquet)")
    return out


def _incomplete(d: Path, what: str) -> InputError:
    return InputError(f"incomplete run: {what}. It was interrupted, or written by an older ddlsched; run it "
                      "again (with --overwrite) — 'ddlsched report' reads complete runs only", path=str(d))


def _unmarked(d: Path) -> InputError:
    present = sorted(p.name for p in d.iterdir() if p.is_file() and not p.name.startswith("."))
    absent = _absent_run_files(d)
    what = f"no {MANIFEST} (the completion marker, written last); files present: {', '.join(present) or 'none'}"
    return _incomplete(d, what + (f"; absent: {', '.join(absent)}" if absent else ""))


def checked_run_dir(d: Path, *, hashes: bool = False) -> None:
    """Raise an InputError naming ``d`` and what is missing unless it is a complete run folder."""
    if read_manifest(d) is None:
        raise _unmarked(d)
    problems = check_folder(d, hashes=hashes) + [f"{n} is missing" for n in _absent_run_files(d)]
    if problems:
        raise _incomplete(d, "; ".join(problems))


def _cell_ok(d: Path, hashes: bool) -> bool:
    """A finished sweep cell (checked); False for a failed one (no summary.json)."""
    if not (d / "summary.json").is_file() or not (d / "cell.json").is_file():
        return False
    if (d / MANIFEST).is_file():
        checked_run_dir(d, hashes=hashes)
    elif absent := _absent_run_files(d):
        raise _incomplete(d, f"sweep cell without {', '.join(absent)}")
    return True


def _incomplete_compare(root: Path) -> InputError:
    try:
        wanted = [str(f) for f in json.loads((root / COMPARE_JSON).read_text()).get("policies", [])]
    except (OSError, ValueError, AttributeError):
        wanted = []
    done = [f for f in wanted if is_complete(root / f)]
    todo = [f for f in wanted if f not in done]
    return InputError(f"incomplete compare: no {MANIFEST} (the completion marker, written last); policies "
                      f"complete: {', '.join(done) or 'none'}; not complete: {', '.join(todo) or 'none'}. Finish it "
                      "with the same 'ddlsched compare' command and --resume", path=str(root))


def find_runs(root: Path, *, hashes: bool = False) -> tuple[str, list[Run]]:
    """(kind, runs) where kind is 'sweep', 'compare' or 'simulate'; only complete runs (module docstring)."""
    if not root.is_dir():
        raise InputError("not a directory", path=str(root))
    top = read_manifest(root)
    runs: list[Run] = []
    if (root / "cells").is_dir():
        kind = "sweep"
        if top is not None and (problems := check_folder(root, hashes=hashes)):
            raise _incomplete(root, "; ".join(problems))
        for d in sorted((root / "cells").iterdir()):
            if d.name.startswith(".") or not d.is_dir() or not _cell_ok(d, hashes):
                continue
            labels = json.loads((d / "cell.json").read_text())["labels"]
            runs.append(Run(d, str(labels["policy"]), int(labels["seed"]), labels, _summary(d)))
    elif top is not None or (root / COMPARE_JSON).is_file() or (root / "summary.json").is_file():
        if top is None:
            raise _incomplete_compare(root) if (root / COMPARE_JSON).is_file() else _unmarked(root)
        if top.get("kind") == "compare":
            kind = "compare"
            if problems := check_folder(root, hashes=hashes):
                raise InputError(f"incomplete compare: {'; '.join(problems)}", path=str(root))
            for f in top.get("runs", []):
                if not isinstance(f, str) or not f or "/" in f or f.startswith("."):
                    raise InputError(f"bad policy folder name {f!r} in {MANIFEST}", path=str(root))
                checked_run_dir(root / f, hashes=hashes)
                runs.append(_plain_run(root / f))
        elif top.get("kind") == "run":
            kind = "simulate"
            checked_run_dir(root, hashes=hashes)
            runs.append(_plain_run(root))
        else:
            raise InputError(f"{MANIFEST} of unknown kind {top.get('kind')!r}", path=str(root))
    else:
        kind = "compare"  # a folder of simulate outputs
        bad: list[str] = []
        for d in sorted(root.iterdir()):
            if d.name.startswith(".") or not d.is_dir():
                continue
            m = read_manifest(d)
            if m is None:
                if (d / "summary.json").is_file() or (d / COMPARE_JSON).is_file():
                    bad.append(d.name)
                continue
            if m.get("kind") == "run":
                checked_run_dir(d, hashes=hashes)
                runs.append(_plain_run(d))
        if bad:
            raise InputError(f"incomplete run folder(s) without {MANIFEST} (the completion marker, written last): "
                             f"{', '.join(bad)}; run them again or move them out", path=str(root))
    if not runs:
        raise InputError("no finished runs found (expected cells/*/summary.json, */manifest.json or "
                         "manifest.json)", path=str(root))
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
