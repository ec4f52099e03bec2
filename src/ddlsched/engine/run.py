"""The one entry every policy family runs through: pick the execution model the policy requires, check the
options against it, run the core. (Loading traces and clusters is ``ddlsched.api.simulate``'s job.)"""

from __future__ import annotations

import gc
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ddlsched.cluster.topology import Cluster
from ddlsched.engine.core import Core, Progress
from ddlsched.engine.fluid import FluidModel
from ddlsched.engine.model import ExecutionModel, ModelSettings, Requirements
from ddlsched.engine.result import SimResult
from ddlsched.engine.rounds import RoundsModel
from ddlsched.engine.taskdag import TaskDagModel
from ddlsched.errors import ConfigError, DdlschedError, SimulationError
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import ModelCatalog

MODELS: dict[str, type[ExecutionModel]] = {m.name: m for m in (FluidModel, TaskDagModel, RoundsModel)}
DEFAULT_RESTART_PENALTY_S = 30.0

_FLAGS = {"perf_model": "--perf-model", "perf_params": "--perf-param", "model_params": "--model-param",
          "restart_penalty_s": "--restart-penalty"}


@dataclass
class SimConfig:
    """Engine options. ``None`` / empty means "the execution model's default"; an option given explicitly that the
    policy's execution model does not use is an error (never silently ignored)."""

    perf_model: str | None = None
    perf_params: dict[str, Any] = field(default_factory=dict)
    model_params: dict[str, Any] = field(default_factory=dict)
    restart_penalty_s: float | None = None
    seed: int = 0
    record_timeseries: bool = True
    audit: bool = False

    def given(self) -> list[str]:
        """Names of the options set explicitly."""
        out = []
        if self.perf_model is not None:
            out.append("perf_model")
        if self.perf_params:
            out.append("perf_params")
        if self.model_params:
            out.append("model_params")
        if self.restart_penalty_s is not None:
            out.append("restart_penalty_s")
        return out


def default_catalog() -> ModelCatalog:
    """The bundled model profiles with their measured per-GPU-type speeds (the same for every model)."""
    from ddlsched.workload.profiles import default_catalog as catalog

    return catalog()


def requirements_of(policy: Any) -> Requirements:
    req = getattr(policy, "requirements", None)
    if not isinstance(req, Requirements):
        raise ConfigError(f"{type(policy).__name__} is not a ddlsched Policy (no Requirements); subclass "
                          "ddlsched.Policy", field="policy")
    return req


def build_model(cluster: Cluster, policy: Any, config: SimConfig, catalog: ModelCatalog) -> ExecutionModel:
    req = requirements_of(policy)
    cls = MODELS.get(req.model)
    if cls is None:
        raise ConfigError(f"policy {policy.name!r} needs execution model {req.model!r}; known: {', '.join(MODELS)}",
                          field="policy")
    for opt in config.given():
        if opt not in cls.options:
            raise ConfigError(f"does not apply to policy {policy.name!r}: it runs on the {cls.name} "
                              f"execution model ({cls.description}), which takes "
                              f"{', '.join(sorted(_FLAGS[o] for o in cls.options)) or 'no options'}",
                              field=_FLAGS[opt])
    penalty = DEFAULT_RESTART_PENALTY_S if config.restart_penalty_s is None else config.restart_penalty_s
    settings = ModelSettings(perf_model=config.perf_model, perf_params=dict(config.perf_params),
                             model_params={**req.model_params, **config.model_params},
                             restart_penalty_s=penalty, seed=config.seed)
    return cls(cluster, catalog, req, settings)


def run_simulation(cluster: Cluster, jobs: Sequence[JobSpec], policy: Any, config: SimConfig | None = None, *,
                   catalog: ModelCatalog | None = None, progress: Progress | None = None,
                   skipped: int = 0) -> SimResult:
    """Run ``policy`` over ``jobs`` on ``cluster`` and return the result (records, time series, counters)."""
    config = config or SimConfig()
    core: Core | None = None
    try:
        model = build_model(cluster, policy, config, catalog or default_catalog())
        policy.reset()
        core = Core(jobs, policy, model, record_timeseries=config.record_timeseries, audit=config.audit,
                    progress=progress, skipped=skipped)
        result = _run_frozen(core)
        result.notes.extend(share_notes(jobs, policy, model))
        return result
    except DdlschedError:
        raise
    except Exception as e:
        where = plugin_file(policy)
        if where is None:  # a bug in ddlsched itself: keep the traceback
            raise
        raise SimulationError(plugin_failure(policy, where, e, getattr(core, "now", None))) from None


def share_notes(jobs: Sequence[JobSpec], policy: Any, model: ExecutionModel) -> list[str]:
    """A note counting the share jobs (``JobSpec.gpu_share``) that ran on whole GPUs because the policy does not
    pack GPU shares (docs/traces.md "Fractional GPUs and GPU sharing")."""
    if model.packs_shares():
        return []
    n = sum(j.gpu_share is not None for j in jobs)
    if not n:
        return []
    name = getattr(policy, "name", type(policy).__name__)
    return [f"{n:,} share jobs run on whole GPUs: policy {name} does not share GPUs (shares are packed only by "
            "the GPU-sharing policies, e.g. sjf-bsbf)"]


def plugin_file(policy: Any) -> str | None:
    """The source file of a policy that is not part of ddlsched (a plug-in), else None."""
    mod = type(policy).__module__
    if mod == "ddlsched" or mod.startswith("ddlsched."):
        return None
    return str(getattr(sys.modules.get(mod), "__file__", None) or mod)


def plugin_failure(policy: Any, where: str, e: BaseException, now: float | None) -> str:
    """One line naming the plug-in policy, the file and line where it failed, the time, and what went wrong."""
    line = None
    tb = e.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == where:
            line = tb.tb_lineno
        tb = tb.tb_next
    text = " ".join(str(e).split())[:300]
    hint = ""
    if isinstance(e, TypeError) and "NoneType" in text and "iterable" in text:
        hint = " (schedule() returned None: it must return a list of decisions, e.g. [] when it has none)"
    elif isinstance(e, TypeError | IndexError | KeyError) and ("float" in text or "indices" in text):
        hint = " (a decision names GPUs by their whole-number ids, e.g. Start(job_id, (0, 1)))"
    at = f" at t={now:g} s" if now is not None else ""
    name = getattr(policy, "name", type(policy).__name__)
    return (f"policy {name!r} ({where}{f':{line}' if line else ''}) failed{at}: {type(e).__name__}: {text}{hint}")


def _run_frozen(core: Core) -> SimResult:
    """``core.run()`` with every object that exists before it (the trace, every job's prepared state) moved out of
    the cyclic collector's sight (``gc.freeze``): they live through the whole run, and re-scanning them at every
    full collection cost ≈ 10 % of a trace run (BENCHMARKS.md). Objects made during the run are collected as
    usual; a caller's own frozen objects are left as they are (then nothing is frozen here). After the run, one full
    collection while the trace is still frozen clears what the run promoted to the oldest generation, so the next
    full collection — which would re-scan the whole trace — is not due as soon as the caller allocates again."""
    frozen_here = not gc.get_freeze_count()
    if frozen_here:
        gc.freeze()
    try:
        result = core.run()
        notes = getattr(core.policy, "run_notes", None)  # Policy.run_notes: e.g. a mechanism the policy disabled
        if notes is not None:
            result.notes.extend(notes())
        return result
    finally:
        core.release()  # freed by reference counting now, not left to the next full collection
        if frozen_here:
            gc.collect()  # the run's own leftovers, while the trace is still out of sight: ≈ 2 ms, not ≈ 45 ms
            gc.unfreeze()
