"""Sweep configuration (YAML or TOML), validated with pydantic; expands into a list of cells.

Every axis takes one value or a list; the sweep is the cartesian product of all axes (see docs/sweeps.md)::

    name: demo
    policies:                      # a name, or {name, label, params, grid}
      - fifo
      - name: tiresias
        grid: {starvation_factor: [1.0, 2.0]}     # a policy-parameter axis (κ, λ, timers, ...)
    traces:                        # a path (relative to this file), or {path, format, options, label}
      - path: ../data/traces/muri/trace1.csv      #   or {synthetic: {jobs: 100, rate_per_s: 0.01}}
    clusters: [wang2020, rack256]  # presets or cluster files (relative to this file)
    seeds: [0, 1, 2]
    max_jobs: 60
    load_scale: [1.0, 2.0]
    oversubscription: [null, 4]    # null keeps the cluster's own ratio
    perf_model: phased_tcp         # the default physics (docs/validation.md)
    perf_params: {}                # physics-parameter axes: {key: [v1, v2]}
    restart_penalty_s: 30
    plugins: [my_policies.py]      # policy plug-ins: .py files (relative to this file) or module names

Unknown keys are errors naming the file and the key.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ddlsched.cluster.config import read_structured, validation_error
from ddlsched.errors import ConfigError
from ddlsched.experiments.runner import CellParams
from ddlsched.perf.base import DEFAULT_PERF_MODEL
from ddlsched.workload.limits import LOAD_SCALE_RANGE, MAX_ARRIVAL_S, MAX_RESTART_PENALTY_S

MAX_SYNTHETIC_JOBS = 10_000_000


class _Strict(BaseModel):
    # strict: no silent coercion (true is not 1, '8' is not 8, 1.5 is not a count); no NaN or infinity
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


def _as_list(v: Any) -> Any:
    return v if isinstance(v, list) else [v]


def _no_nan(v: Any) -> None:
    """Free-form values (policy and physics parameters) must not hold NaN or infinity either."""
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError(f"{v} is not a finite number")
    if isinstance(v, BaseModel):
        v = v.model_dump()
    if isinstance(v, dict):
        for x in v.values():
            _no_nan(x)
    elif isinstance(v, list | tuple):
        for x in v:
            _no_nan(x)


class PolicySpec(_Strict):
    name: str
    label: str | None = None
    params: dict[str, Any] = {}
    grid: dict[str, list[Any]] = {}


class SyntheticSpec(_Strict):
    jobs: int = Field(ge=1, le=MAX_SYNTHETIC_JOBS)
    arrival: str = "poisson"
    rate_per_s: float | None = Field(None, gt=0, le=1e9)
    window_s: float | None = Field(None, gt=0, le=MAX_ARRIVAL_S)
    models: list[str] | None = None
    iterations: tuple[int, int] | None = None

    @field_validator("iterations", mode="before")
    @classmethod
    def _pair(cls, v: Any) -> Any:
        return tuple(v) if isinstance(v, list) else v


class TraceSpec(_Strict):
    path: str | None = None
    synthetic: SyntheticSpec | None = None
    format: str | None = None
    options: dict[str, Any] = {}
    label: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> TraceSpec:
        if (self.path is None) == (self.synthetic is None):
            raise ValueError("a trace needs exactly one of 'path' or 'synthetic'")
        return self


class SweepConfig(_Strict):
    name: str = "sweep"
    policies: list[PolicySpec] = Field(min_length=1)
    traces: list[TraceSpec] = Field(min_length=1)
    clusters: list[str] = Field(min_length=1)
    seeds: list[Annotated[int, Field(ge=0, le=2**63 - 1)]] = Field([0], min_length=1)
    max_jobs: list[Annotated[int, Field(ge=1)] | None] = [None]
    load_scale: list[Annotated[float, Field(ge=LOAD_SCALE_RANGE[0], le=LOAD_SCALE_RANGE[1])]] = [1.0]
    oversubscription: list[Annotated[float, Field(gt=0, le=1e9)] | None] = [None]
    perf_model: list[str] = [DEFAULT_PERF_MODEL]
    perf_params: dict[str, list[Any]] = {}
    restart_penalty_s: list[Annotated[float, Field(ge=0, le=MAX_RESTART_PENALTY_S)]] = [30.0]
    plugins: list[str] = []

    _lists = field_validator("clusters", "seeds", "max_jobs", "load_scale", "oversubscription", "perf_model",
                             "restart_penalty_s", "plugins", mode="before")(_as_list)

    @field_validator("name")
    @classmethod
    def _plain_name(cls, v: str) -> str:
        """``name`` becomes a folder under results/sweeps/: one plain folder name, never a path."""
        if (not v or len(v) > 128 or v.startswith(".") or Path(v).name != v or "\\" in v
                or any(ord(ch) < 32 or ch in "/\0" for ch in v)):
            raise ValueError(f"must be a plain folder name (no '/', '\\', leading '.' or control characters; "
                             f"at most 128 characters), got {v[:60]!r}")
        return v

    @field_validator("policies", mode="before")
    @classmethod
    def _policy_names(cls, v: Any) -> Any:
        return [{"name": x} if isinstance(x, str) else x for x in _as_list(v)]

    @field_validator("traces", mode="before")
    @classmethod
    def _trace_paths(cls, v: Any) -> Any:
        return [{"path": x} if isinstance(x, str) else x for x in _as_list(v)]

    @field_validator("perf_params", mode="before")
    @classmethod
    def _grid_lists(cls, v: Any) -> Any:
        return {k: _as_list(x) for k, x in v.items()} if isinstance(v, dict) else v

    @field_validator("perf_params", "policies")
    @classmethod
    def _finite(cls, v: Any) -> Any:
        _no_nan(v)
        return v


def _slug(text: str, n: int = 40) -> str:
    return re.sub(r"[^A-Za-z0-9+._=-]+", "-", text).strip("-")[:n] or "x"


def canonical(params: CellParams, written: dict[str, Any] | None = None) -> str:
    """A cell's identity as canonical JSON (sorted keys). ``written`` replaces fields by their form as written in
    the config (trace and cluster paths relative to the config file), so that moving the whole project does not
    change it. The plug-ins are left out: they say where a policy's code is, not what the cell is (like the
    ddlsched version), so adding ``--plugin`` to a finished sweep reruns nothing."""
    d = {**params.to_dict(), **(written or {})}
    d.pop("plugins", None)
    return json.dumps(d, sort_keys=True, separators=(",", ":"), default=str)


def cell_hash(params: CellParams, written: dict[str, Any] | None = None) -> str:
    """The full SHA-256 (64 hex digits) of :func:`canonical`: no two different cells share it in practice (the
    first 10 digits, used before, collided after about a million cells)."""
    return hashlib.sha256(canonical(params, written).encode()).hexdigest()


class Cell:
    """One point of the sweep: its parameters, a readable label per axis, and a stable directory name."""

    def __init__(self, params: CellParams, labels: dict[str, Any], written: dict[str, Any] | None = None) -> None:
        self.params = params
        self.labels = labels
        self.canonical = canonical(params, written)
        self.hash = hashlib.sha256(self.canonical.encode()).hexdigest()
        self.cell_id = "_".join([_slug(str(labels["policy"]), 48), _slug(str(labels["cluster"]), 24),
                                 _slug(str(labels["trace"]), 24), f"s{params.seed}", self.hash])


def _grid(d: dict[str, list[Any]]) -> list[dict[str, Any]]:
    keys = list(d)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(d[k] for k in keys))]


def _short(v: Any) -> str:
    return json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else str(v)


def _resolve(base: Path, p: str) -> str:
    """Paths in a config are relative to the config file's folder."""
    q = Path(p)
    return str(q if q.is_absolute() else (base / q))


def load_sweep_config(path: str | Path) -> SweepConfig:
    p = Path(path)
    data = read_structured(p)
    try:
        return SweepConfig.model_validate(data)
    except ValidationError as e:
        raise validation_error(e, str(p)) from None


def resolve_plugin(spec: str, base: Path) -> str:
    """A plug-in as written → what :func:`~ddlsched.policies.registry.load_plugin` takes: a ``.py`` file or an
    existing path becomes an absolute path (relative ones against ``base``); anything else is a module name."""
    q = Path(spec)
    if q.suffix == ".py" or "/" in spec or "\\" in spec or (base / q).exists():
        return str((q if q.is_absolute() else base / q).resolve())
    return spec


def load_cells(path: str | Path, plugins: tuple[str, ...] | list[str] = ()) -> tuple[SweepConfig, list[Cell]]:
    """Validate the file and expand it; every error names the file. Unknown policy names fail here.

    The sweep's plug-ins (``plugins:`` in the file, relative to it, then ``plugins`` — e.g. ``--plugin``, relative
    to the current folder) are imported here and recorded in every cell, so each worker imports them too."""
    from ddlsched.policies import load_plugin

    p = Path(path)
    cfg = load_sweep_config(p)
    specs: list[str] = []
    for i, spec in enumerate(cfg.plugins):
        specs.append(resolve_plugin(spec, p.parent))
        try:
            load_plugin(specs[-1])
        except ConfigError as e:
            raise ConfigError(f"plug-in {spec!r}: {e.reason}", path=str(p), field=f"plugins.{i}") from None
    for spec in plugins:
        specs.append(resolve_plugin(spec, Path.cwd()))
        load_plugin(specs[-1])
    try:
        cells = expand(cfg, p.parent, tuple(dict.fromkeys(specs)))
    except ConfigError as e:
        raise ConfigError(e.reason, path=str(p), field=e.field) from None
    check_cells(cells, p)
    return cfg, cells


def check_cells(cells: list[Cell], path: Path) -> None:
    """Everything a cell would fail on, checked once per distinct value before anything runs: policies and their
    parameters, traces (loaded once: a bad row names its file and line), clusters, physics models and their
    parameters. Errors name the sweep file and the key (or the trace/cluster file and its line)."""
    from ddlsched.errors import InputError
    from ddlsched.experiments.runner import load_cluster_for, load_workload
    from ddlsched.perf import make_perf_model
    from ddlsched.policies import make_policy

    def located(e: InputError, field: str) -> ConfigError:
        if e.path is not None and e.path != str(path):  # an error inside a trace or cluster file: keep its place
            return ConfigError(f"{e} (in {path}, key '{field}')")
        return ConfigError(e.reason, path=str(path), field=field)

    def once(key: Any, seen: set[str]) -> bool:
        k = json.dumps(key, sort_keys=True, default=str)
        if k in seen:
            return False
        seen.add(k)
        return True

    seen: set[str] = set()
    for c in cells:  # the policies first: an unknown name is the likeliest mistake
        q = c.params
        if once(("policy", q.policy, q.policy_params), seen):
            try:
                make_policy(q.policy, q.policy_params)
            except InputError as e:
                raise located(e, f"policies.{c.labels['policy']}") from None
    for c in cells:
        q = c.params
        if once(("trace", q.trace, q.trace_format, q.trace_options), seen):
            trace = q.trace
            if isinstance(trace, dict):  # a synthetic spec: its parameters are checked on a few jobs
                trace = {"synthetic": {**trace["synthetic"], "jobs": min(10, trace["synthetic"]["jobs"])}}
            try:
                load_workload(trace, seed=q.seed, fmt=q.trace_format, options=q.trace_options)
            except InputError as e:
                raise located(e, f"traces.{c.labels['trace']}") from None
            except TypeError as e:  # an unknown loader option
                raise ConfigError(f"bad trace options: {e}", path=str(path), field=f"traces.{c.labels['trace']}"
                                  ) from None
        if once(("cluster", q.cluster, q.oversubscription), seen):
            try:
                cluster = load_cluster_for(q.cluster, seed=q.seed, oversubscription=q.oversubscription)
            except InputError as e:
                raise located(e, "clusters") from None
            if once(("perf", q.perf_model, q.perf_params), seen) and q.perf_model is not None:
                try:
                    make_perf_model(q.perf_model, cluster, **q.perf_params)
                except InputError as e:
                    raise located(e, "perf_params" if e.field == "perf_param" else "perf_model") from None


def expand(cfg: SweepConfig, base_dir: Path, plugins: tuple[str, ...] = ()) -> list[Cell]:
    """All cells of the sweep in a fixed order (config order of every axis, seeds innermost); every cell carries
    the resolved ``plugins``."""
    from ddlsched.cluster.presets import PRESETS

    policies: list[tuple[str, str, dict[str, Any]]] = []
    for ps in cfg.policies:
        overlap = sorted(set(ps.params) & set(ps.grid))
        if overlap:
            raise ConfigError(f"parameter(s) {overlap} in both params and grid", field=f"policies.{ps.name}")
        for g in _grid(ps.grid):
            label = ps.label or ps.name
            if g:
                label += "[" + ",".join(f"{k}={_short(v)}" for k, v in g.items()) + "]"
            policies.append((ps.name, label, {**ps.params, **g}))
    traces: list[tuple[Any, str | None, dict[str, Any], str, Any]] = []
    for ts in cfg.traces:
        if ts.synthetic is not None:
            syn = {k: v for k, v in ts.synthetic.model_dump().items() if v is not None}
            if "iterations" in syn:
                syn["iterations"] = list(syn["iterations"])
            traces.append(({"synthetic": syn}, None, {}, ts.label or f"synthetic{syn['jobs']}", syn))
        else:
            assert ts.path is not None
            traces.append((_resolve(base_dir, ts.path), ts.format, dict(ts.options), ts.label or Path(ts.path).stem,
                           ts.path))
    clusters = [(c if c in PRESETS else _resolve(base_dir, c), c if c in PRESETS else Path(c).stem, c)
                for c in cfg.clusters]
    cells: list[Cell] = []
    seen: set[str] = set()
    axes = itertools.product(policies, traces, clusters, cfg.max_jobs, cfg.load_scale, cfg.oversubscription,
                             cfg.perf_model, _grid(cfg.perf_params), cfg.restart_penalty_s, cfg.seeds)
    for (pol, plabel, pparams), (trace, fmt, topts, tlabel, twritten), (cl, clabel, cwritten), *rest in axes:
        mj, ls, ov, pm, pp, rp, seed = rest
        params = CellParams(policy=pol, cluster=cl, trace=trace, seed=seed, policy_params=pparams,
                            trace_format=fmt, trace_options=topts, max_jobs=mj, load_scale=ls,
                            oversubscription=ov, perf_model=pm, perf_params=pp, restart_penalty_s=rp,
                            plugins=plugins)
        labels = {"policy": plabel, "trace": tlabel, "cluster": clabel, "seed": seed, "max_jobs": mj,
                  "load_scale": ls, "oversubscription": ov, "perf_model": pm, "restart_penalty_s": rp,
                  **{f"perf.{k}": v for k, v in pp.items()}}
        cell = Cell(params, labels, {"trace": twritten, "cluster": cwritten})
        if cell.canonical in seen:  # identical parameters, not merely an equal hash
            raise ConfigError(f"two cells with identical parameters ({cell.cell_id}); remove the duplicate axis value",
                              field="policies")
        seen.add(cell.canonical)
        cells.append(cell)
    return cells
