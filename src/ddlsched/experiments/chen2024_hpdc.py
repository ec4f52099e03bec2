"""The HPDC'22 setup of ``ddlsched reproduce chen2024`` (docs/reproductions.md "chen2024"; docs/policies/hare.md
§9–§11). Values marked [I] are our reconstruction, chosen before any result was seen.

* clusters: ``testbed15`` — the paper's testbed, 4 servers: 8 × V100, 4 × T4, 1 × K80, 2 × M60, 25 Gb/s;
  ``sim160`` — the 160-GPU simulation with the testbed's mix rounded to whole servers [I]: 80 V100 (10 × 8),
  40 T4 (10 × 4), 16 K80 (2 × 8), 24 M60 (12 × 2), 25 Gb/s;
* models: the paper's Table 2 in four categories drawn with 25 % each — vision (vgg19, resnet50, inception3),
  language (bert, transformer), speech (deepspeech2), graph (graphsage, fastgcn) — uniform within a category.
  Speeds per GPU type from the bundled profiles (``ddlsched.workload.gpu_speeds``) where they exist. Reconstructed:
  M60 = 1.2 × the model's K80 speed (the ratio of the two boards' per-GPU FP32 peaks) [I]; graphsage and fastgcn
  are not bundled: 40 ms per iteration on V100, 1 MB of gradients, speeds V100 1, T4 0.8, P100 0.8, M60 0.6,
  K80 0.5 (the paper reports GraphSAGE only ≈ 2× faster on V100 than on K80) [I];
* jobs: per seed, a window of consecutive jobs of the bundled Philly trace gives arrival gaps and durations
  (clipped to [60 s, 4 h]); the Google cluster trace the paper used is not bundled, so Philly's arrival process is
  the nearest bundled equivalent. Each job gets a scale n_j uniform in {1, 2, 4, 8, 16} [I] (the paper's scales
  are not stated; Philly's are ~90 % one GPU) and a weight uniform in {1, …, 5} [I]. Arrivals are rescaled so that
  the offered load (Σ n_j · duration_j over GPU count × arrival span) is jobs / 200: the arrival window is fixed
  and more jobs mean more load, as when the paper varies the job count on one cluster [I];
* rounds model with switching overhead 3 % of a task (the paper measured 1.1–4.5 %) and at most 20 coarse rounds
  per job.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

from ddlsched.cluster.presets import GPU_TYPES
from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.workload.gpu_speeds import catalog_with_gpu_speeds
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import ModelCatalog, ModelProfile

M60 = GPUType("M60", 8 * 1024.0, 0.3)  # [I] default speed, used only where a model has no entry
TYPES = {"V100": GPU_TYPES["V100"], "T4": GPU_TYPES["T4"], "K80": GPU_TYPES["K80"], "M60": M60}
CATEGORIES: dict[str, tuple[str, ...]] = {
    "vision": ("vgg19", "resnet50", "inception3"),
    "language": ("bert", "transformer"),
    "speech": ("deepspeech2",),
    "graph": ("graphsage", "fastgcn"),
}
SCALES = (1, 2, 4, 8, 16)
WEIGHTS = (1, 2, 3, 4, 5)
MODEL_PARAMS = {"switch_frac": 0.03, "max_rounds": 20}
M60_OVER_K80 = 1.2
_GRAPH_SPEED = {"V100": 1.0, "T4": 0.8, "P100": 0.8, "M60": 0.6, "K80": 0.5}


def cluster(kind: str) -> Cluster:
    """``testbed15`` or ``sim160`` (module docstring)."""
    layouts = {
        "testbed15": [(1, 8, "V100"), (1, 4, "T4"), (1, 1, "K80"), (1, 2, "M60")],
        "sim160": [(10, 8, "V100"), (10, 4, "T4"), (2, 8, "K80"), (12, 2, "M60")],
    }
    if kind not in layouts:
        raise ValueError(f"unknown HPDC cluster {kind!r}")
    servers = [ServerSpec(g, t, 25.0) for count, g, t in layouts[kind] for _ in range(count)]
    return Cluster.build(kind, [servers], dict(TYPES))


def catalog() -> ModelCatalog:
    """Bundled profiles with measured speeds, M60 entries and the two graph models (module docstring)."""
    base = catalog_with_gpu_speeds()
    out = []
    for name in base.names():
        p = base[name]
        sp = dict(p.speedup)
        if "K80" in sp and "M60" not in sp:
            sp["M60"] = M60_OVER_K80 * sp["K80"]
        out.append(dataclasses.replace(p, speedup=sp))
    for name in CATEGORIES["graph"]:
        out.append(ModelProfile(name, grad_mb=1.0, compute_ms=40.0, batch_size=16, mem_mb=1024.0,
                                speedup=dict(_GRAPH_SPEED), source="reconstructed [I] (docs/policies/hare.md §11)"))
    return ModelCatalog(out)


def sample_jobs(all_jobs: list[JobSpec], seed: int, n_jobs: int, cl: Cluster, load: float,
                scales: tuple[int, ...] = SCALES, min_dur_s: float = 60.0, max_dur_s: float = 4 * 3600.0
                ) -> list[JobSpec]:
    """A seeded Philly window with HPDC models, scales and weights; arrivals rescaled to offered ``load``."""
    rng = random.Random(f"chen2024-hpdc-{seed}")
    fits = [j for j in all_jobs if j.duration_s is not None]
    start = rng.randrange(0, len(fits) - n_jobs)
    win = fits[start:start + n_jobs]
    cats = sorted(CATEGORIES)
    out = []
    for j in win:
        model = rng.choice(CATEGORIES[rng.choice(cats)])
        n = rng.choice(scales)
        w = float(rng.choice(WEIGHTS))
        dur = min(max(float(j.duration_s), min_dur_s), max_dur_s)  # type: ignore[arg-type]
        out.append(j.with_(model=model, num_gpus=n, weight=w, duration_s=dur, iterations=None))
    work = sum(j.num_gpus * float(j.duration_s) for j in out)  # type: ignore[arg-type]
    t0, span = out[0].arrival_s, out[-1].arrival_s - out[0].arrival_s
    target = work / (cl.num_gpus * load)
    f = target / span if span > 0 else 0.0
    return [j.with_(arrival_s=(j.arrival_s - t0) * f if span > 0 else i * target / max(1, n_jobs - 1))
            for i, j in enumerate(out)]


TRACE = Path(__file__).resolve().parents[3] / "data" / "traces" / "philly_pollux" / "philly.csv"
