"""Model profiles: gradient size, per-iteration compute time, batch size, memory.

The bundled table ``data/profiles/models.csv`` holds:

* the eight Muri models (1-GPU iteration time, batch size and GPU memory from the Muri traces, Apache-2.0);
* the four models of Wang et al.'s simulator (fw/bw times, gradient size, memory; ``vgg16_wang`` is their VGG-16);
* gradient sizes = 4 bytes × parameter count (torchvision / Hugging Face) unless the source table gives one.

``compute_ms`` is the per-iteration time of one worker on the reference GPU (speed 1.0, V100-class) excluding
gradient communication. Per-GPU-type speed-ups for a model may be set in ``speedup``; otherwise the GPU type's
default speed applies.
"""

from __future__ import annotations

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
    overlap: float | None = None  # share of the all-reduce hidden under backward (phased model); None: model default

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


PROFILE_COLUMNS = ("name", "grad_mb", "compute_ms", "fw_ms", "bw_ms", "batch_size", "mem_mb", "source", "overlap")
"""Columns of a model-profile CSV; ``fw_ms``, ``bw_ms``, ``source`` and ``overlap`` may be left out or empty."""
_REQUIRED = ["name", "grad_mb", "compute_ms", "batch_size", "mem_mb"]
_MAX_MB = 1e7
_MAX_MS = 1e7


def load_models(path: str | Path) -> list[ModelProfile]:
    """Read a model-profile CSV (columns :data:`PROFILE_COLUMNS`; docs/traces.md "Model profiles").

    Every value is checked, and errors name file, line and column: ``name`` non-empty and unique;
    ``grad_mb`` >= 0; ``compute_ms`` > 0; ``fw_ms``/``bw_ms`` >= 0 when given; ``batch_size`` a whole number
    >= 1; ``mem_mb`` > 0; ``overlap`` in [0, 1) when given; every number finite (MB and ms values at most 1e7).
    Unknown columns are refused."""
    from ddlsched.workload.csvrows import Header, Row, read_rows

    if not str(path).strip():
        raise InputError("the model profile path is empty (--models)", field="models")
    p = Path(path)
    if not p.is_file():
        raise InputError("model profile file not found" if not p.exists() else "not a regular file", path=str(p))
    rows = read_rows(p)
    first = next(rows, None)
    if first is None:
        raise InputError("empty model profile file", path=str(p), line=1)
    header = Header(p, first[1], _REQUIRED)
    extra = [c for c in first[1] if c not in PROFILE_COLUMNS]
    if extra:
        raise InputError(f"unknown column(s) {', '.join(extra)}; a profile file has {', '.join(PROFILE_COLUMNS)}",
                         path=str(p), line=1, field=extra[0])
    out: list[ModelProfile] = []
    seen: dict[str, int] = {}
    for line, fields in rows:
        r = Row(p, line, fields, header)
        name = r.text("name")
        if name in seen:
            raise r.error(f"model {name!r} is already defined on line {seen[name]}", "name")
        seen[name] = line
        fw, bw = (r.number(c, min_value=0, max_value=_MAX_MS) if c in header and r.raw(c) else None
                  for c in ("fw_ms", "bw_ms"))
        out.append(ModelProfile(
            name=name, grad_mb=r.number("grad_mb", min_value=0, max_value=_MAX_MB),
            compute_ms=r.number("compute_ms", positive=True, max_value=_MAX_MS), fw_ms=fw, bw_ms=bw,
            batch_size=r.batch_size("batch_size"),
            mem_mb=r.number("mem_mb", positive=True, max_value=_MAX_MB),
            source=r.raw("source") if "source" in header else "",
            overlap=(r.number("overlap", min_value=0, max_value=0.999) if "overlap" in header and r.raw("overlap")
                     else None),
        ))
    if not out:
        raise InputError("no model rows in the file (header only?)", path=str(p))
    return out


def read_profiles_csv(path: str | Path) -> list[ModelProfile]:
    """Same as :func:`load_models` (kept for existing callers)."""
    return load_models(path)


_DEFAULT: ModelCatalog | None = None
_BUNDLED: ModelCatalog | None = None


def bundled_catalog() -> ModelCatalog:
    """The bundled profile table as it is on disk (read once), without per-GPU-type speeds."""
    global _BUNDLED
    if _BUNDLED is None:
        ref = resources.files("ddlsched") / "data" / "profiles" / "models.csv"
        with resources.as_file(ref) as p:
            _BUNDLED = ModelCatalog(read_profiles_csv(p))
    return _BUNDLED


def default_catalog() -> ModelCatalog:
    """The catalogue every run uses unless given another: the bundled profiles with their measured per-GPU-type
    speeds (``ddlsched.workload.gpu_speeds``), the same for every execution model."""
    global _DEFAULT
    if _DEFAULT is None:
        from ddlsched.workload.gpu_speeds import catalog_with_gpu_speeds

        _DEFAULT = catalog_with_gpu_speeds(bundled_catalog())
    return _DEFAULT
