"""The public Python API: run a simulation in one call, read results back.

>>> import ddlsched
>>> r = ddlsched.simulate("data/traces/muri/trace1.csv", "rack256", "tiresias", max_jobs=200)
>>> r.summary["avg_jct_s"], r.records_df()        # pandas if installed, else a pyarrow Table, else rows
>>> r.write("out/t1")                               # the same files as ``ddlsched simulate`` (atomic)
>>> runs = ddlsched.load_results("out")             # a simulate, compare or sweep folder

Every option that a policy's execution model does not use, given explicitly, is an error (``ConfigError``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.engine.result import Records, SimResult
from ddlsched.errors import ConfigError
from ddlsched.policies.base import Policy
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import ModelCatalog, default_catalog
from ddlsched.workload.trace import Trace


def _table(rows: list[dict[str, Any]]) -> Any:
    """Rows as a pandas DataFrame when pandas is installed, else a pyarrow Table, else the list itself."""
    try:
        import pandas as pd

        return pd.DataFrame(rows)
    except ImportError:
        pass
    try:
        import pyarrow as pa

        return pa.Table.from_pylist(rows)
    except ImportError:
        return rows


@dataclass
class Result:
    """One simulation: ``summary`` (``ddlsched.vocabulary.SUMMARY_FIELDS``), per-job ``records``
    (``RECORD_FIELDS``), the ``timeseries``, ``rejected`` and ``unfinished`` jobs, and the engine's ``raw`` result."""

    raw: SimResult
    summary: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    window: Any = None
    """The measurement window (``warmup``/``cooldown``) the summary was computed over."""

    @property
    def records(self) -> Records:
        return self.raw.records

    @property
    def timeseries(self) -> dict[str, list[float]]:
        return self.raw.timeseries

    @property
    def rejected(self) -> list[dict[str, Any]]:
        return self.raw.rejected

    @property
    def unfinished(self) -> list[str]:
        return self.raw.unfinished

    def records_df(self) -> Any:
        return _table(list(self.records))

    def timeseries_df(self) -> Any:
        ts = self.timeseries
        return _table([dict(zip(ts, row, strict=True)) for row in zip(*ts.values(), strict=True)])

    def write(self, out: str | Path, *, overwrite: bool = False, parquet: bool = False) -> Path:
        """Write the run's files into ``out`` (complete or absent, with a manifest; docs/outputs.md)."""
        from ddlsched.metrics.atomic import staged
        from ddlsched.metrics.output import write_run

        final = Path(out)
        with staged(final, overwrite=overwrite) as st:
            keep = ("trace", "load_scale", "rows_read", "rows_filtered")
            write_run(self.raw, st.tmp, parquet=parquet, extra={k: self.summary[k] for k in keep if k in self.summary},
                      window=self.window)
            st.commit("run", {"source": "ddlsched.simulate"})
        return final


def load_cluster(spec: str | Path | Cluster, *, seed: int = 0) -> Cluster:
    """A preset name (``ddlsched policies`` lists physics; presets: philly512, rack256, …) or a YAML/TOML file."""
    if isinstance(spec, Cluster):
        return spec
    from ddlsched.cluster.presets import load_cluster as load

    return load(spec, seed=seed)


def build_cluster(*, racks: int = 1, servers_per_rack: int = 4, gpus_per_server: int = 8, gpu: str = "V100",
                  nic_gbps: float = 25.0, oversubscription: float = 1.0, name: str | None = None) -> Cluster:
    """A uniform cluster: ``racks`` × ``servers_per_rack`` servers × ``gpus_per_server`` GPUs of one type."""
    from ddlsched.cluster.presets import GPU_TYPES

    if gpu not in GPU_TYPES:
        raise ConfigError(f"unknown GPU type {gpu!r}; known: {', '.join(GPU_TYPES)}", field="gpu")
    layout = [[ServerSpec(gpus_per_server, gpu, nic_gbps) for _ in range(servers_per_rack)] for _ in range(racks)]
    types: dict[str, GPUType] = {gpu: GPU_TYPES[gpu]}
    try:
        return Cluster.build(name or f"{racks}x{servers_per_rack}x{gpus_per_server}{gpu}", layout, types,
                             oversubscription=oversubscription)
    except ValueError as e:
        raise ConfigError(str(e), field="cluster") from None


def load_trace(path: str | Path, format: str | None = None, *, window: str | None = None,
               max_jobs: int | None = None, load_scale: float = 1.0, **options: Any) -> Trace:
    """Load a trace file or folder (format detected when ``format`` is None; see ``docs/traces.md``), then cut
    and scale it as the CLI's flags do: :meth:`Trace` jobs arriving in ``window`` ("START:END" after the first
    arrival, ``--window``), the first ``max_jobs`` by arrival, arrivals scaled by ``load_scale`` (notes say so).
    ``warmup``/``cooldown`` only change what is measured: give them to :func:`simulate`."""
    from ddlsched.workload.loaders import load_trace as load

    for k in ("warmup", "cooldown"):
        if k in options:
            raise ConfigError(f"{k} leaves jobs out of the metrics, not out of the trace: pass {k}= to "
                              "ddlsched.simulate", field=k)
    trace = load(path, format, **options)
    return cut_trace(trace, window=window, max_jobs=max_jobs, load_scale=load_scale)


def cut_trace(trace: Trace, *, window: str | None = None, max_jobs: int | None = None,
              load_scale: float = 1.0) -> Trace:
    """A copy of ``trace`` with the jobs arriving in ``window``, then the first ``max_jobs``, arrivals scaled by
    ``load_scale`` (the CLI's ``--window``, ``--max-jobs``, ``--load-scale``, applied in that order); ``skipped``
    and ``filtered`` are kept only while no job was cut (they count rows of the whole file)."""
    import dataclasses

    from ddlsched.workload.inputs import check_max_jobs, cut_window
    from ddlsched.workload.transform import check_load_scale, scale_arrivals

    load_scale = check_load_scale(load_scale)
    jobs, notes = list(trace.jobs), list(trace.notes)
    if window is not None:
        jobs, note = cut_window(jobs, window)
        notes.append(note)
    if max_jobs is not None and check_max_jobs(max_jobs) < len(jobs):
        notes.append(f"--max-jobs {max_jobs}: the first {max_jobs} of {len(jobs)} jobs by arrival are used")
        jobs = jobs[:max_jobs]
    if load_scale != 1.0:
        jobs = scale_arrivals(jobs, load_scale)
        notes.append(f"--load-scale {load_scale:g}: inter-arrival times divided by {load_scale:g}")
    if len(jobs) == len(trace.jobs) and load_scale == 1.0:
        return trace
    cut = len(jobs) != len(trace.jobs)
    return dataclasses.replace(trace, jobs=jobs, notes=notes, skipped=0 if cut else trace.skipped,
                               skipped_reasons=[] if cut else list(trace.skipped_reasons),
                               filtered={} if cut else dict(trace.filtered))


def _policy(policy: str | Policy, params: dict[str, Any] | None) -> Policy:
    from ddlsched.policies.registry import make_policy

    if isinstance(policy, Policy):
        if params:
            raise ConfigError("policy_params only apply to a policy given by name", field="policy_params")
        return policy
    return make_policy(policy, params)


def simulate(trace: str | Path | Trace | Sequence[JobSpec], cluster: str | Path | Cluster, policy: str | Policy, *,
             policy_params: dict[str, Any] | None = None, perf_model: str | None = None,
             perf_params: dict[str, Any] | None = None, model_params: dict[str, Any] | None = None,
             restart_penalty_s: float | None = None, seed: int = 0, max_jobs: int | None = None,
             load_scale: float = 1.0, window: str | None = None, warmup: str | None = None,
             cooldown: str | None = None, trace_format: str | None = None,
             trace_options: dict[str, Any] | None = None, models: str | Path | None = None,
             catalog: ModelCatalog | None = None, plugins: Iterable[str] = (), timeseries: bool = True,
             progress: Callable[[float, int, int], None] | None = None,
             tenants: str | Path | None = None) -> Result:
    """Simulate ``policy`` on ``trace`` (a path, a loaded :class:`Trace`, or JobSpecs) and ``cluster`` (a preset,
    a cluster file, or a :class:`Cluster`). Options mirror ``ddlsched simulate``'s flags: ``window`` cuts any
    trace (a path, a :class:`Trace`, JobSpecs) before ``max_jobs``; ``warmup``/``cooldown`` ("3600", "2d",
    "500jobs") leave the first/last jobs out of the summary's per-job metrics (docs/metrics.md); ``tenants``: a
    tenants file, as ``--tenants`` (it replaces a ``tenants:`` section of the cluster file)."""
    from ddlsched.engine.run import SimConfig, run_simulation
    from ddlsched.metrics.summary import summarize
    from ddlsched.metrics.window import Window
    from ddlsched.policies.registry import load_plugin
    from ddlsched.workload.inputs import row_accounting

    measured = Window.parse(warmup, cooldown)
    for p in plugins:
        load_plugin(p)
    c = load_cluster(cluster, seed=seed)
    if tenants is not None:
        from ddlsched.cluster.tenants import attach, load_tenants_file

        c = attach(c, load_tenants_file(tenants, c))
    notes: list[str] = []
    skipped = 0
    acct: Trace | None = None
    label = ""
    if isinstance(trace, str | Path):
        from ddlsched.workload.inputs import load_workload_and_models

        w = load_workload_and_models(trace, seed=seed, fmt=trace_format, options=trace_options, max_jobs=max_jobs,
                                     load_scale=load_scale, models=models, gpu_types=list(c.gpu_types),
                                     window=window)
        jobs, notes, label = w.jobs, w.notes, w.label
        catalog = catalog or w.catalog
        whole = w.trace is not None and max_jobs is None and window is None
        if whole:
            skipped = w.trace.skipped  # type: ignore[union-attr]
        acct = w.trace if whole else None
    else:
        if trace_format or trace_options or models:
            raise ConfigError("trace_format/trace_options/models apply to a trace path only", field="trace")
        loaded = trace if isinstance(trace, Trace) else Trace(jobs=list(trace), path="", format="jobs")
        loaded = cut_trace(loaded, window=window, max_jobs=max_jobs, load_scale=load_scale)
        jobs, notes, label, skipped = list(loaded.jobs), list(loaded.notes), loaded.path, loaded.skipped
        acct = loaded
    config = SimConfig(perf_model=perf_model, perf_params=dict(perf_params or {}),
                       model_params=dict(model_params or {}), restart_penalty_s=restart_penalty_s, seed=seed,
                       record_timeseries=timeseries)
    if c.tenants is not None:
        line = c.tenants.note([j.user for j in jobs])
        notes += [line] if line else []
    raw = run_simulation(c, jobs, _policy(policy, policy_params), config, catalog=catalog or default_catalog(),
                         progress=progress, skipped=skipped)
    summary = summarize(raw, measured)
    summary.update({"trace": label, "load_scale": load_scale})
    summary.update(row_accounting(acct, raw.jobs))
    return Result(raw, summary, notes + raw.notes, measured)


@dataclass
class Results:
    """The complete runs of a ``simulate``, ``compare`` or ``sweep`` folder (``load_results``)."""

    kind: str
    runs: list[Any]

    def summaries(self) -> list[dict[str, Any]]:
        return [{"scenario": r.scenario, "path": str(r.path), **r.summary} for r in self.runs]

    def summaries_df(self) -> Any:
        return _table(self.summaries())

    def records_df(self) -> Any:
        """Every run's records with its policy, seed and scenario."""
        rows = [{"policy": r.policy, "seed": r.seed, "scenario": r.scenario, **rec}
                for r in self.runs for rec in r.records()]
        return _table(rows)

    def __len__(self) -> int:
        return len(self.runs)

    def __iter__(self) -> Any:
        return iter(self.runs)


def load_results(path: str | Path) -> Results:
    """Read the complete runs under ``path`` (incomplete outputs are refused; docs/outputs.md)."""
    from ddlsched.metrics.results_dir import find_runs

    kind, runs = find_runs(Path(path))
    return Results(kind, runs)
