"""Run one simulation from plain parameters: the unit shared by ``ddlsched simulate`` and ``ddlsched sweep``.

A *cell* is a JSON-able dict of parameters (see :class:`CellParams`); :func:`run_cell` loads the trace and
cluster exactly as ``ddlsched simulate`` does, runs the engine, and returns the result files as bytes so that
the caller (a local process pool or a Ray task on another machine) decides where they are written.
"""

from __future__ import annotations

import json
import math
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ddlsched.errors import InputError


@dataclass(frozen=True)
class CellParams:
    """Everything one simulation depends on. ``trace`` is a path, or ``{"synthetic": {...}}`` for philly_mix."""

    policy: str
    cluster: str
    trace: str | dict[str, Any]
    seed: int = 0
    policy_params: dict[str, Any] = field(default_factory=dict)
    trace_format: str | None = None
    trace_options: dict[str, Any] = field(default_factory=dict)
    max_jobs: int | None = None
    load_scale: float = 1.0
    oversubscription: float | None = None
    perf_model: str | None = None
    perf_params: dict[str, Any] = field(default_factory=dict)
    model_params: dict[str, Any] = field(default_factory=dict)
    restart_penalty_s: float | None = None
    plugins: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CellParams:
        d = dict(d)
        if "plugins" in d:
            d["plugins"] = tuple(d["plugins"])
        return cls(**d)


@dataclass
class CellOutput:
    """What :func:`run_cell` returns: result files (name → bytes) and the summary, or the error text."""

    files: dict[str, bytes]
    summary: dict[str, Any] | None
    error: str | None
    wall_s: float
    notes: list[str] = field(default_factory=list)


def with_oversubscription(cluster: Any, ratio: float) -> Any:
    """The same cluster with rack uplinks = Σ NIC / ``ratio`` (no effect on a single-rack cluster)."""
    from ddlsched.cluster.topology import Cluster, ServerSpec

    racks = [[ServerSpec(len(cluster.server_gpus[s]), cluster.gpu_type[cluster.server_gpus[s][0]],
                         cluster.nic_Bps(s) * 8.0 / 1e9) for s in ids] for ids in cluster.rack_servers]
    return Cluster.build(f"{cluster.name}(oversub={ratio:g})", racks, cluster.gpu_types,
                         intra_gbps=cluster.intra_gbps, oversubscription=ratio, hop_latency_s=cluster.hop_latency_s)


def load_workload(trace: str | dict[str, Any], *, seed: int, fmt: str | None = None,
                  options: dict[str, Any] | None = None, max_jobs: int | None = None,
                  load_scale: float = 1.0) -> tuple[list[Any], list[str], str]:
    """Jobs of a trace file, folder or synthetic spec, cut to ``max_jobs`` and load-scaled; (jobs, notes, label).

    ``options["models"]`` (a profile CSV) extends the model catalogue the trace is checked against; use
    :func:`ddlsched.workload.inputs.load_workload_and_models` to get that catalogue for the simulator."""
    from ddlsched.workload.inputs import load_workload_and_models

    if not isinstance(trace, str | Path | dict):
        raise InputError(f"a trace is a path or {{'synthetic': {{...}}}}, got {trace!r}", field="trace")
    w = load_workload_and_models(trace, seed=seed, fmt=fmt, options=options, max_jobs=max_jobs,
                                 load_scale=load_scale)
    return w.jobs, w.notes, w.label


def load_cluster_for(spec: str, *, seed: int, oversubscription: float | None = None) -> Any:
    from ddlsched.cluster import load_cluster

    cluster = load_cluster(spec, seed=seed)
    if oversubscription is not None:
        cluster = with_oversubscription(cluster, oversubscription)
    return cluster


def simulate_run(policy_name: str, policy_params: dict[str, Any], cluster: Any, jobs: list[Any], *,
                 perf_model: str | None = None, perf_params: dict[str, Any] | None = None,
                 model_params: dict[str, Any] | None = None, restart_penalty_s: float | None = None,
                 seed: int = 0, catalog: Any = None, skipped: int = 0,
                 progress: Callable[[float, int, int], None] | None = None) -> Any:
    """Build the policy and run it through the engine's one entry; returns the ``SimResult``."""
    from ddlsched.engine import SimConfig, run_simulation
    from ddlsched.policies import make_policy

    policy = make_policy(policy_name, policy_params)
    config = SimConfig(perf_model=perf_model, perf_params=dict(perf_params or {}),
                       model_params=dict(model_params or {}), restart_penalty_s=restart_penalty_s, seed=seed)
    return run_simulation(cluster, jobs, policy, config, catalog=catalog, progress=progress, skipped=skipped)


def run_cell(params: CellParams | dict[str, Any], shown: dict[str, str] | None = None) -> CellOutput:
    """Run one cell and return its files; never raises for a failing simulation (the error is returned).
    ``shown`` maps a local copy's path to the path the results should name (inputs shipped to a Ray worker)."""
    from ddlsched.metrics.output import write_run
    from ddlsched.policies import load_plugin

    p = params if isinstance(params, CellParams) else CellParams.from_dict(params)
    t0 = time.perf_counter()
    notes: list[str] = []
    try:
        from ddlsched.workload.inputs import load_workload_and_models, row_accounting

        if not isinstance(p.trace, str | Path | dict):
            raise InputError(f"a trace is a path or {{'synthetic': {{...}}}}, got {p.trace!r}", field="trace")
        w = load_workload_and_models(p.trace, seed=p.seed, fmt=p.trace_format, options=p.trace_options,
                                     max_jobs=p.max_jobs, load_scale=p.load_scale)
        jobs, notes, label = w.jobs, w.notes, w.label
        whole = w.trace if p.max_jobs is None else None  # rows filtered by reason (Slurm, Kubernetes exports)
        for local, original in (shown or {}).items():
            label = label.replace(local, original)
            notes = [n.replace(local, original) for n in notes]
        cluster = load_cluster_for(p.cluster, seed=p.seed, oversubscription=p.oversubscription)
        for plugin in p.plugins:
            load_plugin(plugin)
        result = simulate_run(p.policy, p.policy_params, cluster, jobs, perf_model=p.perf_model,
                              perf_params=p.perf_params, model_params=p.model_params,
                              restart_penalty_s=p.restart_penalty_s, seed=p.seed,
                              skipped=whole.skipped if whole is not None else 0)
        with tempfile.TemporaryDirectory(prefix="ddlsched-cell-") as tmp:
            rows = row_accounting(whole, result.jobs)
            summary = write_run(result, Path(tmp), extra={"trace": label, "load_scale": p.load_scale, **rows})
            files = {f.name: f.read_bytes() for f in sorted(Path(tmp).iterdir()) if f.is_file()}
    except Exception as e:  # a failing cell must not take the sweep down
        text = f"{type(e).__name__}: {e}\n\n{traceback.format_exc()}"
        return CellOutput({}, None, text, time.perf_counter() - t0, notes)
    summary = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in summary.items()}
    return CellOutput(files, summary, None, time.perf_counter() - t0, notes)


def cell_json(params: CellParams, cell_id: str, extra: dict[str, Any] | None = None) -> bytes:
    data = {"cell_id": cell_id, "params": params.to_dict(), **(extra or {})}
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()
