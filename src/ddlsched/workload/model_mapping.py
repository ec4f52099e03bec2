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

import hashlib
from collections.abc import Mapping

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


_CHECKED: tuple[Mapping[str, float], dict[str, float], tuple[tuple[str, float], ...]] | None = None


def _checked(mix: Mapping[str, float]) -> dict[str, float]:
    """``check_mix`` memoised on the last mix seen (loaders call this once per row with the same mix)."""
    global _CHECKED
    items = tuple(mix.items())
    if _CHECKED is None or _CHECKED[0] is not mix or _CHECKED[2] != items:
        _CHECKED = (mix, check_mix(mix), items)
    return _CHECKED[1]


def assign_model(job_id: str, *, seed: int = 0, mix: Mapping[str, float] | None = None) -> str:
    """Pick a model for ``job_id`` from ``mix`` (default :data:`DEFAULT_MIX`); deterministic in (seed, job_id)."""
    m = _checked(mix if mix is not None else DEFAULT_MIX)
    total = sum(m.values())
    u = _unit(seed, job_id) * total
    acc = 0.0
    last = ""
    for name, w in m.items():
        if w <= 0:
            continue
        acc += w
        last = name
        if u < acc:
            return name
    return last


def describe_mix(mix: Mapping[str, float] | None) -> str:
    m = check_mix(mix if mix is not None else DEFAULT_MIX)
    total = sum(m.values())
    return ", ".join(f"{k} {v / total:.0%}" for k, v in m.items())
