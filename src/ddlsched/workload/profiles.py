"""Model profiles: gradient size, per-iteration compute time, batch size, memory (ALGORITHMS.md §1.3, §3.8, §5.7).

The bundled table ``data/profiles/models.csv`` holds:

* the eight Muri models (1-GPU iteration time, batch size and GPU memory from the Muri traces, Apache-2.0);
* the four models of Wang et al.'s simulator (fw/bw times, gradient size, memory; ``vgg16_wang`` is their VGG-16);
* gradient sizes = 4 bytes × parameter count (torchvision / Hugging Face) unless the source table gives one.

``compute_ms`` is the per-iteration time of one worker on the reference GPU (speed 1.0, V100-class) excluding
gradient communication. Per-GPU-type speed-ups for a model may be set in ``speedup``; otherwise the GPU type's
default speed applies.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from ddlsched.errors import InputError


@dataclass(frozen=True, slots=True)
class ModelProfile:
    name: str
    grad_mb: float
    compute_ms: float
    batch_size: int
    mem_mb: float
    fw_ms: float | None = None
    bw_ms: float | None = None
    speedup: Mapping[str, float] = field(default_factory=dict)
    source: str = ""

    @property
    def grad_bytes(self) -> float:
        return self.grad_mb * 1e6

    @property
    def compute_s(self) -> float:
        return self.compute_ms / 1000.0

    def speed_on(self, gpu_type: str, default: float = 1.0) -> float:
        """Relative compute speed of this model on ``gpu_type`` (reference = 1.0)."""
        return self.speedup.get(gpu_type, default)


class ModelCatalog:
    """A name → :class:`ModelProfile` table with a clear error for unknown names."""

    def __init__(self, profiles: Iterable[ModelProfile]) -> None:
        self._by_name: dict[str, ModelProfile] = {}
        for p in profiles:
            self._by_name[p.name] = p

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def __getitem__(self, name: str) -> ModelProfile:
        try:
            return self._by_name[name]
        except KeyError:
            raise InputError(f"unknown model {name!r}; known models: {', '.join(sorted(self._by_name))}",
                             field="model") from None

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def with_profiles(self, profiles: Iterable[ModelProfile]) -> ModelCatalog:
        return ModelCatalog([*self._by_name.values(), *profiles])


def read_profiles_csv(path: str | Path) -> list[ModelProfile]:
    """Read a profile table with columns name,grad_mb,compute_ms,fw_ms,bw_ms,batch_size,mem_mb,source."""
    path = Path(path)
    out = []
    with path.open(newline="") as f:
        for line_no, row in enumerate(csv.DictReader(f), start=2):
            try:
                out.append(ModelProfile(
                    name=row["name"], grad_mb=float(row["grad_mb"]), compute_ms=float(row["compute_ms"]),
                    fw_ms=float(row["fw_ms"]) if row.get("fw_ms") else None,
                    bw_ms=float(row["bw_ms"]) if row.get("bw_ms") else None,
                    batch_size=int(row["batch_size"]), mem_mb=float(row["mem_mb"]),
                    source=row.get("source", ""),
                ))
            except (KeyError, TypeError, ValueError) as e:
                raise InputError(f"bad profile row: {e}", path=str(path), line=line_no) from None
    return out


_DEFAULT: ModelCatalog | None = None


def default_catalog() -> ModelCatalog:
    """The bundled catalogue (read once)."""
    global _DEFAULT
    if _DEFAULT is None:
        ref = resources.files("ddlsched") / "data" / "profiles" / "models.csv"
        with resources.as_file(ref) as p:
            _DEFAULT = ModelCatalog(read_profiles_csv(p))
    return _DEFAULT
