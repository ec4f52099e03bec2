"""Optional compiled build of the event path (docs/engine.md "Compiled build").

The modules in :data:`MODULES` are plain, typed Python. ``make compiled`` (= ``ddlsched native build``) compiles
them in place with mypyc into C extensions that Python imports instead of the ``.py`` files. The source is the
same, so the results are the same: ``tests/test_native.py`` runs simulations both ways and compares their outputs
byte for byte. A build is used only while it matches its source: the build records the SHA-256 of every compiled
source in :data:`MANIFEST`, and :func:`install` (called by ``import ddlsched``) makes Python load the ``.py`` files
instead, with a one-line warning, as soon as one of them differs. ``DDLSCHED_PURE=1`` forces pure Python;
``ddlsched native status`` says which runs; ``ddlsched native clean`` removes a build.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

PACKAGE_DIR = Path(__file__).resolve().parent
MANIFEST = PACKAGE_DIR / "_native_manifest.json"
# The per-event path of the three execution models and the FIFO-family policies, as profiled in BENCHMARKS.md
# "Where the time goes". Classes meant to be subclassed elsewhere carry
# ``@mypyc_attr(allow_interpreted_subclasses=True)`` (docs/engine.md "Compiled build").
MODULES: tuple[str, ...] = (
    "ddlsched.engine.state",
    "ddlsched.engine.decisions",
    "ddlsched.engine.jobview",
    "ddlsched.engine.view",
    "ddlsched.engine.pending",
    "ddlsched.engine.model",
    "ddlsched.engine.allocation",
    "ddlsched.engine.records",
    "ddlsched.engine.fluid",
    "ddlsched.engine.core",
    "ddlsched.engine.rounds",
    "ddlsched.engine.taskdag",
    "ddlsched.perf.base",
    "ddlsched.perf.maxmin",
    "ddlsched.perf.phased_exact",
    "ddlsched.perf.phased",
    "ddlsched.perf.phased_tcp",
    "ddlsched.policies.placement",
    "ddlsched.policies.locality",
    "ddlsched.policies.baselines",
    "ddlsched.policies.las_queues",
    "ddlsched.policies.ordering",
)
PURE_ENV = "DDLSCHED_PURE"

_state: dict[str, str] = {"mode": "pure", "why": "not installed"}


def source_path(module: str) -> Path:
    return PACKAGE_DIR.joinpath(*module.split(".")[1:]).with_suffix(".py")


def source_digests(modules: Sequence[str] = MODULES) -> dict[str, str]:
    return {m: hashlib.sha256(source_path(m).read_bytes()).hexdigest() for m in modules}


def built_extensions() -> list[Path]:
    """The compiled extension files present: any extension module beside a ``.py`` of the package (the build's
    per-module shims, also those of modules an older build compiled) and mypyc's shared libraries."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    found = []
    for p in PACKAGE_DIR.rglob("*"):
        for suf in suffixes:
            if p.name.endswith(suf) and p.with_name(p.name[:-len(suf)] + ".py").exists():
                found.append(p)
    found += [p for p in PACKAGE_DIR.parent.glob("*__mypyc*") if p.name.endswith(suffixes)]
    return sorted(set(found))


def decide() -> tuple[str, str]:
    """("compiled" | "pure", why): compiled only when a build exists, matches every source and is not disabled."""
    if not built_extensions():
        return "pure", "no compiled build (make compiled)"
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        return "pure", f"{PURE_ENV}={os.environ[PURE_ENV]}"
    try:
        recorded = json.loads(MANIFEST.read_text())
    except (OSError, ValueError):
        return "pure", f"compiled build without a readable {MANIFEST.name}"
    if recorded != source_digests():
        stale = sorted(m for m, d in source_digests().items() if recorded.get(m) != d)
        return "pure", f"compiled build older than the source of {', '.join(stale)} (make compiled)"
    return "compiled", "build matches the source"


class _SourceFirst(importlib.abc.MetaPathFinder):
    """Loads the listed modules from their ``.py`` files even where a compiled extension sits beside them."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MODULES:
            return None
        src = source_path(fullname)
        return importlib.util.spec_from_file_location(fullname, src,
                                                      loader=importlib.machinery.SourceFileLoader(fullname, str(src)))


def install() -> None:
    """Decide once per process which modules run; warn when a build is present but not used (stale or disabled)."""
    mode, why = decide()
    _state.update(mode=mode, why=why)
    if mode == "pure" and built_extensions():
        if not any(isinstance(f, _SourceFirst) for f in sys.meta_path):
            sys.meta_path.insert(0, _SourceFirst())
        if not os.environ.get(PURE_ENV):
            print(f"ddlsched: running pure Python: {why}", file=sys.stderr)


_SOURCE_TWINS: dict[str, ModuleType] = {}


def source_class(cls: type) -> type:
    """``cls``, or — when it runs compiled — the same class from its module's source, loaded once under a private
    name. A compiled class shows ``inspect`` only ``(self, *args, **kwargs)``; its source twin shows the
    parameters, types and defaults the constructor was written with (what ``--policy-param`` is checked against,
    ``policies/registry.py``). Only for reading signatures: the twin is never run."""
    module = cls.__module__
    loaded = sys.modules.get(module)
    if module not in MODULES or loaded is None or str(getattr(loaded, "__file__", "")).endswith(".py"):
        return cls
    twin = _SOURCE_TWINS.get(module)
    if twin is None:
        name = f"_ddlsched_source_twin.{module}"
        src = source_path(module)
        spec = importlib.util.spec_from_file_location(name, src,
                                                      loader=importlib.machinery.SourceFileLoader(name, str(src)))
        assert spec is not None and spec.loader is not None
        twin = importlib.util.module_from_spec(spec)
        sys.modules[name] = twin  # typing resolves the twin's annotations through it
        spec.loader.exec_module(twin)
        _SOURCE_TWINS[module] = twin
    found = getattr(twin, cls.__qualname__, None)
    return found if isinstance(found, type) else cls


def status() -> dict[str, str]:
    """Which build this process runs: {"mode": "compiled" | "pure", "why": ...}."""
    return dict(_state)


def build() -> None:
    """Compile :data:`MODULES` in place with mypyc (needs ``mypy`` and a C compiler) and record their digests."""
    import shutil
    import subprocess
    import tempfile

    if importlib.util.find_spec("mypyc") is None:
        raise SystemExit("ddlsched native build: needs mypy (pip install 'ddlsched[native]', or make compiled)")
    clean()
    src_root = PACKAGE_DIR.parent
    files = [str(source_path(m).relative_to(src_root)) for m in MODULES]
    digests = source_digests()
    ours = [d for d in ("build", ".mypy_cache") if not (src_root / d).exists()]  # never move what was there
    with tempfile.TemporaryDirectory(prefix="ddlsched-mypyc-") as tmp:
        # PYTHONHASHSEED fixed: mypyc's generated code follows its own set/dict order, so a fixed seed gives the
        # same C source for the same Python source
        env = dict(os.environ, MYPYC_OPT_LEVEL=os.environ.get("MYPYC_OPT_LEVEL", "3"), PYTHONHASHSEED="0")
        cmd = [sys.executable, "-m", "mypyc", *files]
        print(f"ddlsched: compiling {len(files)} modules with mypyc (about a minute) …", flush=True)
        done = subprocess.run(cmd, cwd=src_root, env=env, check=False, capture_output=True, text=True)
        for leftover in ours:
            p = src_root / leftover
            if p.is_dir():
                shutil.move(str(p), str(Path(tmp) / leftover))
        if done.returncode != 0:
            print("\n".join((done.stdout + done.stderr).splitlines()[-40:]), file=sys.stderr)
            clean()
            raise SystemExit(f"ddlsched native build: mypyc failed (exit {done.returncode}; its last lines above: "
                             "a type error, or no C compiler); nothing was installed, the package runs pure Python")
        if not built_extensions():
            raise SystemExit("ddlsched native build: mypyc produced no extension")
    if source_digests() != digests:
        clean()
        raise SystemExit("ddlsched.native: a source changed during the build; build removed, run it again")
    MANIFEST.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")
    print(f"ddlsched: compiled {len(MODULES)} modules ({len(built_extensions())} extension files)")


def clean() -> None:
    """Remove a compiled build (extension files and manifest); the package runs pure Python afterwards."""
    for p in [*built_extensions(), MANIFEST]:
        p.unlink(missing_ok=True)
