"""Per-GPU-type model speeds from measured profiles.

``speedup[model][gpu_type]`` = the model's speed on ``gpu_type`` relative to V100 (the catalogue's reference GPU,
speed 1.0), so a task of the model takes ``compute_ms / speedup`` on that type. Sources, in
``data/profiles/gpu_speeds/`` (origin and licence in its README.md):

* K80, P100 — Gavel's isolated 1-GPU throughputs (steps/s): ``speedup = thr_type / thr_V100`` for the Gavel job type
  that ``mapping.csv`` names for the model (same model and batch size where Gavel has it, otherwise a proxy of the same
  family, marked [I] there);
* T4 — Sia/AdaptDL 1-GPU step times: ``speedup = step_V100 / step_T4`` at the largest local batch size measured on
  both types;
* every other (model, type) pair — no entry, so ``ModelProfile.speed_on(type, default)`` falls back to the GPU type's
  default speed (``ddlsched.cluster.presets.GPU_TYPES``).

Note that the measured matrix is not monotone in GPU generation: Gavel's Recommendation job runs faster on K80 and
P100 than on V100, and ResNet-18 (batch 16/32) faster on P100. We keep the measurements as they are.
"""

from __future__ import annotations

import csv
import dataclasses
from importlib import resources
from pathlib import Path

from ddlsched.errors import InputError
from ddlsched.workload.profiles import ModelCatalog, bundled_catalog

_DIR = ("data", "profiles", "gpu_speeds")
_CACHE: dict[str, dict[str, float]] | None = None


def _read(name: str) -> list[dict[str, str]]:
    ref = resources.files("ddlsched").joinpath(*_DIR, name)
    with resources.as_file(ref) as p, Path(p).open(newline="") as f:
        return list(csv.DictReader(f))


def _gavel() -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for line, r in enumerate(_read("gavel_1gpu_throughputs.csv"), start=2):
        try:
            out[r["job_type"]] = {t: float(r[f"{t.lower()}_steps_per_s"]) for t in ("K80", "P100", "V100")}
        except (KeyError, ValueError) as e:
            raise InputError(f"bad Gavel throughput row: {e}", path="gavel_1gpu_throughputs.csv", line=line) from None
    return out


def _sia_t4() -> dict[str, float]:
    """job → V100/T4 step-time ratio at the largest batch size both types were measured with."""
    times: dict[tuple[str, str], dict[int, float]] = {}
    for r in _read("sia_seed_1gpu_step_times.csv"):
        times.setdefault((r["job"], r["gpu_type"]), {})[int(r["local_bsz"])] = float(r["step_time_s"])
    out: dict[str, float] = {}
    for job in sorted({j for j, _ in times}):
        v, t = times.get((job, "v100"), {}), times.get((job, "t4"), {})
        common = sorted(set(v) & set(t))
        if common:
            b = common[-1]
            out[job] = v[b] / t[b]
    return out


def gpu_speedups() -> dict[str, dict[str, float]]:
    """model → {GPU type: speed relative to V100} for every model in ``mapping.csv`` (read once)."""
    global _CACHE
    if _CACHE is None:
        gavel, t4 = _gavel(), _sia_t4()
        table: dict[str, dict[str, float]] = {}
        for line, r in enumerate(_read("mapping.csv"), start=2):
            job = r["gavel_job_type"]
            if job not in gavel:
                raise InputError(f"unknown Gavel job type {job!r}", path="mapping.csv", line=line,
                                 field="gavel_job_type")
            thr = gavel[job]
            sp = {"V100": 1.0, "K80": thr["K80"] / thr["V100"], "P100": thr["P100"] / thr["V100"]}
            if r["sia_job"]:
                if r["sia_job"] not in t4:
                    raise InputError(f"no T4/V100 rows for Sia job {r['sia_job']!r}", path="mapping.csv",
                                     line=line, field="sia_job")
                sp["T4"] = t4[r["sia_job"]]
            table[r["model"]] = sp
        _CACHE = table
    return {m: dict(s) for m, s in _CACHE.items()}


def catalog_with_gpu_speeds(catalog: ModelCatalog | None = None) -> ModelCatalog:
    """``catalog`` (default: the bundled table) with ``speedup`` filled from :func:`gpu_speedups`.

    Speed-ups already set on a profile win over the measured ones (explicit beats derived).
    """
    catalog = catalog or bundled_catalog()
    speeds = gpu_speedups()
    out = []
    for name in catalog.names():
        p = catalog[name]
        if name in speeds:
            p = dataclasses.replace(p, speedup={**speeds[name], **dict(p.speedup)})
        out.append(p)
    return ModelCatalog(out)
