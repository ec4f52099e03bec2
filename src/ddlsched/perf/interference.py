"""GPU-sharing interference ξ, gradient-accumulation speed g(s) and memory (docs/policies/gpu-sharing.md §2).

* **ξ[a][b]** — slowdown of job a's iteration while it shares a GPU with job b (ξ ≥ 1). Looked up in the
  bundled table ``data/profiles/interference.csv``, which is *derived* from Gavel's measured pair throughputs
  (MIT; ``scripts/derive_interference.py``: ξ_a = isolated throughput / throughput when packed with b, V100,
  1 GPU). Some rows stand in a similar model for ours (``proxy=1``: dqn/a2c ← A3C, bert/gpt2 ← Transformer
  bs16); ``use_proxies=False`` ignores them. The measured values are used for every GPU count (Gavel profiled
  pairs on one GPU only) — a simplification [I].
  The Lucid co-location table (``/work/shared/profiles/lucid``) is **not** used or shipped: its S-Lab licence
  is non-commercial.
* **Default for pairs without data** [I] (docs/policies/gpu-sharing.md §2 suggestion): ``default="draw"`` gives each
ordered pair a
  fixed ξ uniform in ``[xi_low, xi_high]`` = [1.1, 1.9], drawn from ``random.Random("xi|a|b")`` (same value
  on every run); ``default="constant"`` uses ``xi_default`` (1.5).
* ξ is clamped to ``[1, xi_cap]`` (4.0) so a profiled near-zero throughput cannot freeze a job.
* **g(s)** = 1 + ``accum_penalty`` · (s − 1), ``accum_penalty`` = 0.1 [I]: the full-batch iteration time with
  s accumulation steps (sub-batch B/s) relative to s = 1.
* **Memory** with s accumulation steps [I]: ``mem(s) = mem · (static_share + (1 − static_share) / s)``,
  static_share = 0.3 (weights, gradients, optimiser state stay; activations shrink with the sub-batch).
"""

from __future__ import annotations

import csv
import random
from functools import lru_cache
from importlib import resources

SUB_BATCH_STEPS = (1, 2, 4, 8)
ACCUM_PENALTY = 0.1
STATIC_SHARE = 0.3


def accum_slowdown(steps: int, penalty: float = ACCUM_PENALTY) -> float:
    """g(s) = 1 + penalty · (s − 1)  (docs/policies/gpu-sharing.md §2 [I])."""
    if steps < 1:
        raise ValueError("accumulation steps must be >= 1")
    return 1.0 + penalty * (steps - 1)


def accum_mem(mem_mb: float, steps: int, static_share: float = STATIC_SHARE) -> float:
    """Per-GPU memory with ``steps`` accumulation steps: static part + activations ∝ sub-batch
    (docs/policies/gpu-sharing.md §2 [I])."""
    if steps < 1:
        raise ValueError("accumulation steps must be >= 1")
    if steps == 1:
        return mem_mb
    return mem_mb * static_share + mem_mb * (1.0 - static_share) / steps


@lru_cache(maxsize=1)
def _table() -> dict[tuple[str, str], tuple[float, bool]]:
    text = resources.files("ddlsched").joinpath("data/profiles/interference.csv").read_text()
    out: dict[tuple[str, str], tuple[float, bool]] = {}
    for row in csv.DictReader(text.splitlines()):
        out[(row["model"], row["partner"])] = (float(row["xi"]), row["proxy"] == "1")
    return out


class Interference:
    """ξ lookups with the configured fallback (see the module docstring)."""

    def __init__(self, source: str = "gavel", default: str = "draw", xi_default: float = 1.5,
                 xi_low: float = 1.1, xi_high: float = 1.9, xi_cap: float = 4.0, use_proxies: bool = True) -> None:
        if source not in ("gavel", "none"):
            raise ValueError("interference source must be 'gavel' or 'none'")
        if default not in ("draw", "constant"):
            raise ValueError("interference default must be 'draw' or 'constant'")
        if not 1.0 <= xi_low <= xi_high or xi_default < 1.0 or xi_cap < 1.0:
            raise ValueError("need 1 <= xi_low <= xi_high, xi_default >= 1 and xi_cap >= 1")
        self.source, self.default = source, default
        self.xi_default, self.xi_low, self.xi_high, self.xi_cap = xi_default, xi_low, xi_high, xi_cap
        self.use_proxies = use_proxies
        self._cache: dict[tuple[str, str], float] = {}

    def params(self) -> dict[str, object]:
        return {"source": self.source, "default": self.default, "xi_default": self.xi_default,
                "xi_low": self.xi_low, "xi_high": self.xi_high, "xi_cap": self.xi_cap,
                "use_proxies": self.use_proxies}

    def xi(self, model: str, partner: str) -> float:
        """Slowdown of ``model`` while sharing a GPU with ``partner``."""
        key = (model, partner)
        v = self._cache.get(key)
        if v is None:
            hit = _table().get(key) if self.source == "gavel" else None
            if hit is not None and (self.use_proxies or not hit[1]):
                v = hit[0]
            elif self.default == "constant":
                v = self.xi_default
            else:
                v = random.Random(f"xi|{model}|{partner}").uniform(self.xi_low, self.xi_high)
            v = min(max(v, 1.0), self.xi_cap)
            self._cache[key] = v
        return v
