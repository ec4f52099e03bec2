"""Model names: trace spellings → catalogue names, and a seeded model choice for jobs without one.

Every model name found in the bundled traces (``data/traces/``) has an entry in :data:`MODEL_ALIASES`;
:func:`canonical_model` applies it. Jobs whose trace names no model (Philly, Tiresias ``yarn-gput*``, a generic
CSV without a model column) get one from :func:`assign_model`:

* ``u = int(sha256(f"{seed}:{job_id}")[:16 hex]) / 2**64`` — a uniform number in [0, 1) that depends only on the
  seed and the job's own id, so it does not change when other jobs are added, removed or reordered;
* the mix (name → weight, default :data:`DEFAULT_MIX`) is walked in sorted-name order and the model whose
  cumulative weight share first exceeds ``u`` is chosen.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Mapping

import numpy as np

from ddlsched.errors import InputError

MODEL_ALIASES: dict[str, str] = {
    # Gavel job types (the part before " (batch size N)")
    "resnet-18": "resnet18",
    "resnet-50": "resnet50",
    "transformer": "transformer",
    "lm": "lstm",
    "recommendation": "recommendation",
    "cyclegan": "cyclegan",
    "a3c": "a3c",
    # Pollux / Sia applications
    "cifar10": "resnet18",
    "imagenet": "resnet50",
    "ncf": "ncf",
    "yolov3": "yolov3",
    "deepspeech2": "deepspeech2",
    "bert": "bert",
    # Muri / SJF-BSBF
    "vgg16": "vgg16",
    "vgg19": "vgg19",
    "resnet18": "resnet18",
    "shufflenet_v2_x1_0": "shufflenet_v2_x1_0",
    "gpt2": "gpt2",
    "a2c": "a2c",
    "dqn": "dqn",
    # ElasticFlow / Tiresias
    "resnet50": "resnet50",
    "resnet101": "resnet101",
    "resnet152": "resnet152",
    "inception3": "inception3",
    "inception4": "inception4",
    "vgg11": "vgg11",
    "alexnet": "alexnet",
    "googlenet": "googlenet",
    # common spellings
    "lstm": "lstm",
    "inception_v3": "inception3",
    "inception-v3": "inception3",
    "inception_v4": "inception4",
    "vgg-16": "vgg16",
    "vgg-19": "vgg19",
    "gpt-2": "gpt2",
}

DEFAULT_MIX: dict[str, float] = {"inception3": 1.0, "lstm": 1.0, "resnet50": 1.0, "vgg16_wang": 1.0}
"""Uniform over the four models of Wang et al.'s simulator."""


def canonical_model(name: str) -> str | None:
    """The catalogue name for a trace's model spelling, or ``None`` when it is not known."""
    return MODEL_ALIASES.get(name.strip().lower())


def _unit(seed: int, job_id: str) -> float:
    digest = hashlib.sha256(f"{seed}:{job_id}".encode()).hexdigest()
    return int(digest[:16], 16) / 2.0**64


def check_mix(mix: Mapping[str, float]) -> dict[str, float]:
    """Validate a model mix (non-empty, weights >= 0, positive total) and return it as a sorted dict."""
    if not mix:
        raise InputError("model mix is empty", field="model_mix")
    for name, w in mix.items():
        if not w >= 0:
            raise InputError(f"model mix weight for {name!r} must be >= 0, got {w}", field="model_mix")
    if sum(mix.values()) <= 0:
        raise InputError("model mix weights sum to 0", field="model_mix")
    return {k: float(mix[k]) for k in sorted(mix)}


_TABLE: tuple[Mapping[str, float], tuple[tuple[str, float], ...], tuple[float, list[float], list[str]]] | None = None


def _table(mix: Mapping[str, float]) -> tuple[float, list[float], list[str]]:
    """``(total, cumulative weights, names)`` of the checked mix (sorted names, zero weights left out),
    memoised on the last mix seen (loaders ask once per row with the same mix). The cumulative weights are the
    same float sums that :func:`assign_model` has always walked."""
    global _TABLE
    items = tuple(mix.items())
    if _TABLE is None or _TABLE[0] is not mix or _TABLE[1] != items:
        m = check_mix(mix)
        total = sum(m.values())
        acc = 0.0
        cum: list[float] = []
        names: list[str] = []
        for name, w in m.items():
            if w <= 0:
                continue
            acc += w
            cum.append(acc)
            names.append(name)
        _TABLE = (mix, items, (total, cum, names))
    return _TABLE[2]


def assign_model(job_id: str, *, seed: int = 0, mix: Mapping[str, float] | None = None) -> str:
    """Pick a model for ``job_id`` from ``mix`` (default :data:`DEFAULT_MIX`); deterministic in (seed, job_id)."""
    total, cum, names = _table(mix if mix is not None else DEFAULT_MIX)
    u = _unit(seed, job_id) * total
    return names[min(bisect.bisect_right(cum, u), len(names) - 1)]


def assign_models(job_ids: list[str], *, seed: int = 0, mix: Mapping[str, float] | None = None) -> list[str]:
    """:func:`assign_model` for many jobs at once (numpy for the arithmetic); the same pick for every job."""
    total, cum, names = _table(mix if mix is not None else DEFAULT_MIX)
    sha = hashlib.sha256
    head = b"".join([sha(f"{seed}:{j}".encode()).digest()[:8] for j in job_ids])
    # uint64 -> float64 rounds to nearest like Python's int -> float; / 2**64 and * total are the same IEEE ops
    u = np.frombuffer(head, dtype=">u8").astype(np.float64) / 2.0**64 * total
    idx = np.minimum(np.searchsorted(np.asarray(cum), u, side="right"), len(names) - 1)
    return [names[i] for i in idx.tolist()]


def describe_mix(mix: Mapping[str, float] | None) -> str:
    m = check_mix(mix if mix is not None else DEFAULT_MIX)
    total = sum(m.values())
    return ", ".join(f"{k} {v / total:.0%}" for k, v in m.items())
