"""Run the cells of a sweep on a local process pool or on Ray, resumably (docs/sweeps.md).

Layout of a sweep directory::

    OUT/sweep.json                 the expanded cells (id → parameters) of the last run
    OUT/results.csv                one row per finished cell: its axis values and its summary metrics
    OUT/cells/<cell_id>/           summary.json records.csv timeseries.csv run.json cell.json  (finished)
    OUT/cells/<cell_id>/           cell.json error.txt                                        (failed)

A cell directory is written under ``cells/.tmp-*`` and renamed into place, so a directory with a
``summary.json`` is always complete; a rerun skips those and retries failed or missing cells.
Workers return the files as bytes and only this process writes, so Ray workers need no shared disk
for results (they do need to read the trace and cluster files).
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ddlsched.errors import ConfigError, DdlschedError, InputError
from ddlsched.experiments.runner import CellOutput, CellParams, cell_json, run_cell
from ddlsched.experiments.shipping import Shipped, collect
from ddlsched.experiments.sweep_config import Cell

CELLS = "cells"


@dataclass
class SweepOutcome:
    total: int
    skipped: int = 0
    ran: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    wall_s: float = 0.0
    results_csv: Path | None = None


def is_finished(cell_dir: Path) -> bool:
    return (cell_dir / "summary.json").is_file() and (cell_dir / "cell.json").is_file()


PluginSources = tuple[tuple[str, bytes | None], ...]
"""Each plug-in of a sweep: (spec, the file's bytes) for a ``.py`` file, (module name, None) for a module."""


def plugin_sources(cells: list[Cell]) -> PluginSources:
    """The plug-ins of ``cells`` with the sources of file plug-ins, read once here and shipped with every cell."""
    from ddlsched.policies.registry import plugin_source

    specs = dict.fromkeys(s for c in cells for s in c.params.plugins)
    return tuple((s, plugin_source(s)) for s in specs)


def _run_cell_dict(params: dict[str, Any], plugins: PluginSources = (), shipped: Shipped | None = None
                   ) -> CellOutput:
    """A worker's task: import the sweep's plug-ins and write the trace and cluster files from the shipped
    bytes (a Ray worker on another machine has no copy of them), then run the cell on those copies."""
    from ddlsched.experiments.shipping import materialise
    from ddlsched.policies.registry import load_plugin

    shown: dict[str, str] = {}
    try:
        for spec, source in plugins:
            load_plugin(spec, source)
        params = dict(params)
        for key in ("trace", "cluster"):
            original = params[key]
            if isinstance(original, str) and shipped and original in shipped:
                params[key] = materialise(original, shipped[original])
                shown[params[key]] = original
    except Exception as e:
        return CellOutput({}, None, f"{type(e).__name__}: {e}", 0.0)
    return run_cell(params, shown=shown)


def _die_with_parent(parent: int) -> None:
    """Pool-worker initializer: end this worker when the sweep's main process dies, even by SIGKILL (which runs
    no cleanup). Linux: the kernel sends SIGKILL (PR_SET_PDEATHSIG); everywhere: a thread polls the parent id."""
    import sys
    import threading

    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    if os.getppid() != parent:  # died before the watch was set up
        os._exit(1)
    threading.Thread(target=watch, name="ddlsched-parent-watch", daemon=True).start()


def write_cell(root: Path, cell: Cell, out: CellOutput) -> Path:
    """Write a cell's files to a temp dir, then rename it to ``cells/<cell_id>`` (atomic on one filesystem)."""
    final = root / CELLS / cell.cell_id
    tmp = root / CELLS / f".tmp-{cell.cell_id}-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    for name, data in out.files.items():
        (tmp / name).write_bytes(data)
    status = "ok" if out.error is None else "failed"
    (tmp / "cell.json").write_bytes(cell_json(cell.params, cell.cell_id, {
        "hash": cell.hash, "labels": cell.labels, "status": status, "wall_s": round(out.wall_s, 3),
        "notes": out.notes}))
    if out.error is not None:
        (tmp / "error.txt").write_text(out.error)
    if final.exists():  # an earlier failed attempt
        shutil.rmtree(final)
    tmp.rename(final)
    return final


# ------------------------------------------------------------------ backends
def _local(todo: list[Cell], workers: int) -> Iterator[tuple[Cell, CellOutput]]:
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    ctx = multiprocessing.get_context("spawn")  # no fork of a process with threads (the progress bar)
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_die_with_parent,
                               initargs=(os.getpid(),))
    plugins = plugin_sources(todo)
    try:
        futures = {pool.submit(_run_cell_dict, c.params.to_dict(), plugins): c for c in todo}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in sorted(done, key=lambda f: futures[f].cell_id):
                try:
                    out = f.result()
                except Exception as e:  # e.g. a worker killed by the OS
                    out = CellOutput({}, None, f"{type(e).__name__}: {e}", 0.0)
                yield futures[f], out
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise InputError("--backend ray needs Ray: pip install 'ddlsched[ray]' (or pip install ray)",
                         field="--backend") from None
    return ray


def _ray(todo: list[Cell], workers: int, address: str | None, runtime_env: dict[str, Any] | None = None
         ) -> Iterator[tuple[Cell, CellOutput]]:
    ray = import_ray()
    started = not ray.is_initialized()
    if started:
        kw: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if address is None:
            kw["num_cpus"] = workers
        if runtime_env:
            kw["runtime_env"] = runtime_env
        try:
            ray.init(address=address, **kw)
        except Exception as e:  # no cluster at --address, a port in use, a bad runtime_env, ...
            with contextlib.suppress(Exception):
                ray.shutdown()
            where = f" at {address}" if address else ""
            raise DdlschedError(f"Ray failed to start{where}: {type(e).__name__}: {' '.join(str(e).split())[:300]}"
                                " (--backend local runs the sweep without Ray)") from None
    try:
        task = ray.remote(num_cpus=1, max_retries=0)(_run_cell_dict)
        plugins = plugin_sources(todo)
        shipped = ray.put(collect([x for c in todo for x in (c.params.trace, c.params.cluster)]))
        refs = {task.remote(c.params.to_dict(), plugins, shipped): c for c in todo}
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                try:
                    out = ray.get(ref)
                except Exception as e:  # a crashed worker
                    out = CellOutput({}, None, f"{type(e).__name__}: {e}", 0.0)
                yield refs[ref], out
    finally:
        if started:
            ray.shutdown()


# ------------------------------------------------------------------ the sweep
def check_backend(workers: int, backend: str, address: str | None) -> None:
    """The backend flags, checked before anything is printed or written."""
    if workers < 1:
        raise InputError("must be >= 1", field="--workers")
    if backend not in ("local", "ray"):
        raise InputError(f"unknown backend {backend!r}; use local or ray", field="--backend")
    if address is not None and backend != "ray":
        raise InputError("--address needs --backend ray", field="--address")
    if backend == "ray":
        import_ray()  # a clear error before anything starts


def parse_runtime_env(text: str | None, backend: str) -> dict[str, Any] | None:
    """``--ray-runtime-env``: JSON text, or a .json/.yaml file holding a mapping (Ray checks its keys)."""
    if text is None:
        return None
    if backend != "ray":
        raise InputError("--ray-runtime-env needs --backend ray", field="--ray-runtime-env")
    from ddlsched.safe_read import loads_json, read_structured

    if os.path.lexists(text) and not text.lstrip().startswith("{"):
        value: Any = read_structured(Path(text))  # regular files only; its errors name the file and line
    else:
        try:
            value = loads_json(text, what="--ray-runtime-env")
        except InputError as e:
            raise InputError(f"neither a file nor JSON text ({e.reason})", field="--ray-runtime-env") from None
    if not isinstance(value, dict):
        raise InputError(f"must be a mapping (e.g. {{\"working_dir\": \".\"}}), got {text!r}",
                         field="--ray-runtime-env")
    return value


def run_sweep(cells: list[Cell], out_dir: Path, *, workers: int = 2, backend: str = "local",
              address: str | None = None, on_done: Callable[[Cell, CellOutput | None], None] | None = None,
              runtime_env: dict[str, Any] | None = None) -> SweepOutcome:
    """Run every unfinished cell; ``on_done(cell, output)`` is called per cell (output None = skipped)."""
    check_backend(workers, backend, address)
    t0 = time.perf_counter()
    root = out_dir / CELLS
    root.mkdir(parents=True, exist_ok=True)
    for tmp in root.glob(".tmp-*"):  # leftovers of a killed run
        shutil.rmtree(tmp, ignore_errors=True)
    adopt_earlier_cells(out_dir, cells)
    _write_manifest(out_dir, cells)
    outcome = SweepOutcome(total=len(cells))
    todo = []
    for c in cells:
        if is_finished(root / c.cell_id):
            outcome.skipped += 1
            if on_done:
                on_done(c, None)
        else:
            todo.append(c)
    if todo:
        if backend == "ray":
            import_ray()  # a clear error before anything starts
        it = _ray(todo, workers, address, runtime_env) if backend == "ray" else _local(todo, workers)
        for cell, out in it:
            write_cell(out_dir, cell, out)
            outcome.ran += 1
            if out.error is not None:
                outcome.failed.append((cell.cell_id, out.error.splitlines()[0] if out.error else "error"))
            if on_done:
                on_done(cell, out)
    outcome.results_csv = write_results_csv(out_dir, cells)
    outcome.wall_s = time.perf_counter() - t0
    return outcome


def _same_params(params: dict[str, Any]) -> str | None:
    """A cell's parameters as comparable JSON (plug-ins left out, as in its hash); None if they do not parse."""
    try:
        d = CellParams.from_dict(params).to_dict()
    except TypeError:
        return None
    d.pop("plugins", None)
    return json.dumps(d, sort_keys=True, default=str)


def adopt_earlier_cells(out_dir: Path, cells: list[Cell]) -> int:
    """Rename the finished cell folders of an earlier ddlsched (ids ending in a 10-digit hash) to their current
    id, when their ``cell.json`` holds exactly the parameters of a current cell; returns how many. Folders that
    match no cell are left alone (and ignored)."""
    root = out_dir / CELLS
    by_prefix: dict[str, list[Cell]] = {}
    for c in cells:
        if not is_finished(root / c.cell_id):
            by_prefix.setdefault(c.cell_id.rsplit("_", 1)[0], []).append(c)
    if not by_prefix or not root.is_dir():
        return 0
    ids = {c.cell_id for c in cells}
    adopted = 0
    for d in sorted(root.iterdir()):
        want = by_prefix.get(d.name.rsplit("_", 1)[0])
        if d.name.startswith(".") or d.name in ids or not want or not is_finished(d):
            continue
        try:
            meta = json.loads((d / "cell.json").read_text())
            key = _same_params(meta["params"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        match = next((c for c in want if key is not None and _same_params(c.params.to_dict()) == key), None)
        if match is None or (root / match.cell_id).exists():
            continue
        meta.update({"cell_id": match.cell_id, "hash": match.hash})
        (d / "cell.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
        d.rename(root / match.cell_id)
        want.remove(match)
        adopted += 1
    return adopted


def _write_manifest(out_dir: Path, cells: list[Cell]) -> None:
    data = {"cells": [{"cell_id": c.cell_id, "hash": c.hash, "labels": c.labels, "params": c.params.to_dict()}
                      for c in cells]}
    tmp = out_dir / ".sweep.json.tmp"
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    tmp.replace(out_dir / "sweep.json")


def results_rows(out_dir: Path, cells: list[Cell]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for c in cells:
        d = out_dir / CELLS / c.cell_id
        if not is_finished(d):
            continue
        summary = json.loads((d / "summary.json").read_text())
        row: dict[str, Any] = {"cell_id": c.cell_id}
        row.update({k: ("" if v is None else v) for k, v in c.labels.items()})
        row["policy_name"] = summary.get("policy")
        row["policy_params"] = json.dumps(c.params.policy_params, sort_keys=True)
        for k, v in summary.items():
            if k not in ("policy", "seed", "load_scale", "trace", "perf_model"):
                row[k] = v
        rows.append(row)
    return rows


def write_results_csv(out_dir: Path, cells: list[Cell]) -> Path:
    """``results.csv``: one row per finished cell, columns = union of axis labels and summary keys."""
    rows = results_rows(out_dir, cells)
    keys: list[str] = []
    for r in rows:
        keys.extend(k for k in r if k not in keys)
    path = out_dir / "results.csv"
    tmp = out_dir / ".results.csv.tmp"
    with tmp.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys or ["cell_id"], lineterminator="\n", restval="")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if v is None else repr(v) if isinstance(v, float) else v) for k, v in r.items()})
    tmp.replace(path)
    return path


def check_out_dir(out_dir: Path) -> None:
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError("exists and is not a directory", path=str(out_dir))
