"""Predict a schedule's per-job communication time and JCT by replaying it through a perf model.

Like the simulator, the replay feeds job starts/finishes to the model's incremental ``add``/``remove`` and
advances piecewise-constant iteration rates between events, so jobs that start and finish at different
times are predicted with the contention they actually overlap with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ddlsched.cluster.topology import Cluster
from ddlsched.perf import PERF_MODELS, PerfModel, constructor_params, make_perf_model
from ddlsched.perf.base import IterationTime, Placement
from ddlsched.workload.profiles import ModelProfile

_EPS = 1e-12
TCP_KEYS = ("tcp_exponent", "tcp_own_queue")  # the TCP rule's calibrated parameters (calibration["tcp"])


@dataclass(frozen=True)
class JobRun:
    """One job of a testbed schedule (sizes already in emulated units: grad MB on the scaled cluster)."""

    job_id: str
    gpus: tuple[int, ...]
    grad_mb: float
    iters: int
    compute_ms: float = 0.0
    start_s: float = 0.0
    overlap: float = 0.0  # ω: share of the alone all-reduce hidden under compute (docs/physics.md §11)

    def profile(self) -> ModelProfile:
        return ModelProfile(f"tb-{self.job_id}", self.grad_mb, self.compute_ms, 1, 0.0, overlap=self.overlap)

    def hidden_ms(self, cluster: Cluster) -> float:
        """The worker's ``--hide-ms``: h = min(ω·m0, c) with m0 the all-reduce alone on ``cluster`` at line rate
        (α and efficiency of ``cluster`` as given; the executor passes the uncalibrated scaled cluster)."""
        if self.overlap <= 0 or len(self.gpus) < 2:
            return 0.0
        from ddlsched.perf.phased_exact import phased_job

        cap = [link.capacity_Bps for link in cluster.links]
        return 1e3 * phased_job(cluster, Placement(self.job_id, tuple(self.gpus), self.profile()), cap, 0.0).hidden_s


@dataclass
class JobPrediction:
    start_s: float
    finish_s: float = 0.0
    comm_total_s: float = 0.0
    iters: int = 0
    phases: list[tuple[float, float]] = field(default_factory=list)  # (time, comm_s per iteration from then)

    @property
    def jct_s(self) -> float:
        return self.finish_s - self.start_s

    @property
    def comm_s(self) -> float:
        """Mean communication time per iteration over the job's life."""
        return self.comm_total_s / max(self.iters, 1)


def model_params(name: str, calibration: Mapping[str, Any] | None) -> dict[str, Any]:
    """Calibrated constructor parameters for model ``name`` (only those its constructor accepts)."""
    if not calibration:
        return {}
    cls = PERF_MODELS[name]
    accepted = set(constructor_params(cls))
    merged = {**calibration.get("common", {}), **calibration.get("models", {}).get(name, {})}
    if "raw" in calibration:
        merged = dict(calibration["raw"].get(name, {}))
    return {k: v for k, v in merged.items() if k in accepted}


def replay(model: PerfModel, jobs: Sequence[JobRun]) -> dict[str, JobPrediction]:
    """Event-driven replay of ``jobs`` (start times, fixed iteration counts) through ``model``."""
    pending = sorted(jobs, key=lambda j: (j.start_s, j.job_id))
    preds = {j.job_id: JobPrediction(j.start_s, iters=j.iters) for j in jobs}
    remaining: dict[str, float] = {}
    times: dict[str, IterationTime] = {}
    now = 0.0
    # the model is told the time of each change, and when its times change with time alone (``phased_tcp``'s
    # phase locks end: docs/physics.md §15) the replay stops there
    i = 0
    while i < len(pending) or remaining:
        next_start = pending[i].start_s if i < len(pending) else float("inf")
        next_finish, who = float("inf"), None
        for jid, rem in remaining.items():
            t = now + rem * times[jid].total_s
            if t < next_finish:
                next_finish, who = t, jid
        t_job = min(next_start, next_finish)
        t_next = min(t_job, max(now, model.next_change()))
        dt = t_next - now
        for jid in remaining:
            done = dt / times[jid].total_s if times[jid].total_s > 0 else remaining[jid]
            done = min(done, remaining[jid])
            remaining[jid] -= done
            preds[jid].comm_total_s += done * times[jid].comm_s
        now = t_next
        for jid, t in model.advance(now).items():
            if jid in remaining:
                times[jid] = t
                preds[jid].phases.append((now, t.comm_s))
        if t_next < t_job:
            continue
        if next_finish <= next_start and who is not None:
            remaining.pop(who)
            times.pop(who)
            preds[who].finish_s = now
            changed = model.remove(who)
        else:
            job = pending[i]
            i += 1
            remaining[job.job_id] = float(job.iters)
            changed = model.add(Placement(job.job_id, tuple(job.gpus), job.profile()))
        for jid, t in changed.items():
            if jid in remaining:
                times[jid] = t
                preds[jid].phases.append((now, t.comm_s))
        for jid in [j for j, r in remaining.items() if r <= _EPS]:
            remaining.pop(jid)
            times.pop(jid)
            preds[jid].finish_s = now
            for k, t in model.remove(jid).items():
                if k in remaining:
                    times[k] = t
    return preds


def predict(cluster: Cluster, jobs: Sequence[JobRun], model_name: str, calibration: Mapping[str, Any] | None = None,
            *, extra: Mapping[str, Any] | None = None) -> dict[str, JobPrediction]:
    """Predictions of model ``model_name`` (with calibrated parameters if given, and ``extra`` ones such as
    ``fairness``; with ``fairness="tcp"`` the profile's fitted ``tcp`` γ, κ) on the scaled ``cluster``.
    ``extra={"exact": True}`` with ``phased`` replays every phase of every iteration instead of the fluid model
    (:func:`ddlsched.testbed.phase_replay.replay_phases`); ``"split": True`` adds the profile's fitted uneven
    split σ (``tcp.split_noise``; 0 without a calibration)."""
    params = {**model_params(model_name, calibration), **(extra or {})}
    tcp_rule = params.get("fairness") == "tcp" or (
        model_name in PERF_MODELS and "tcp_exponent" in constructor_params(PERF_MODELS[model_name])
        and "fairness" not in constructor_params(PERF_MODELS[model_name]))  # a model that always shares by it
    if tcp_rule and calibration and "tcp" in calibration:
        # the calibrated TCP rule (γ, κ), unless ``extra`` sets them
        params = {**{k: calibration["tcp"][k] for k in TCP_KEYS if k in calibration["tcp"]}, **params}
    if calibration and "split_noise" in (calibration.get("tcp") or {}) and model_name in PERF_MODELS \
            and "split_noise" in constructor_params(PERF_MODELS[model_name]):
        # a model whose TCP rule has the uneven split (phased_tcp's locked replay): the calibrated σ, unless set
        params.setdefault("split_noise", calibration["tcp"]["split_noise"])
    if params.pop("split", False):
        # the calibrated uneven split σ (docs/physics.md §14), unless ``extra`` sets it; uncalibrated: none
        tcp = (calibration or {}).get("tcp", {})
        params.setdefault("split_noise", tcp.get("split_noise", 0.0))
    if params.pop("exact", False):
        if model_name != "phased":
            raise ValueError(f"exact replay exists for the phased model only, not {model_name!r}")
        from ddlsched.testbed.phase_replay import replay_phases

        return replay_phases(cluster, jobs, **params)
    return replay(make_perf_model(model_name, cluster, **params), jobs)
