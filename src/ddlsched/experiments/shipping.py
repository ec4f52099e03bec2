"""Input files travel with the cells of a Ray sweep, so worker nodes need no shared disk (docs/sweeps.md, "Ray").

The driver reads every trace file (or folder) and cluster file its cells name, once; each worker writes them into
a content-addressed folder under its temp directory (``ddlsched-inputs/<sha256>/<name>``, written once, atomically)
and runs the cell on those copies. Results name the driver's paths, so a Ray run gives the same bytes as a local one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from ddlsched.cluster.presets import PRESETS

# original path → {relative file name → bytes}; a single file is one entry under the name ""
Shipped = dict[str, dict[str, bytes]]


def collect(paths: Iterable[str]) -> Shipped:
    """The bytes of every file or folder in ``paths`` (presets, synthetic specs and missing paths are left out:
    the cell then fails on the worker as it would locally)."""
    out: Shipped = {}
    for p in paths:
        if not isinstance(p, str) or p in PRESETS or p in out:
            continue
        path = Path(p)
        if path.is_file():
            out[p] = {"": path.read_bytes()}
        elif path.is_dir():
            out[p] = {f.relative_to(path).as_posix(): f.read_bytes() for f in sorted(path.rglob("*")) if f.is_file()}
    return out


def materialise(original: str, files: Mapping[str, bytes], root: Path | None = None) -> str:
    """A local copy of ``original`` (file or folder) from its shipped bytes; returns the path to use instead."""
    digest = hashlib.sha256(original.encode())
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    base = (root or Path(tempfile.gettempdir())) / "ddlsched-inputs" / digest.hexdigest()[:32]
    name = Path(original).name
    target = base / name
    if not target.exists():
        stage = Path(tempfile.mkdtemp(prefix=".stage-", dir=_mkdir(base)))
        for rel, data in files.items():
            dest = stage / name / rel if rel else stage / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
        with contextlib.suppress(OSError):  # another worker may have won the race: its copy is identical
            os.rename(stage / name, target)
        shutil.rmtree(stage, ignore_errors=True)
    return str(target)


def _mkdir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p
