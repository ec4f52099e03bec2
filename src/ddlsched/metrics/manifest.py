"""The completion marker of an output folder (docs/outputs.md): ``manifest.json`` lists every file with its
size and sha256 and is written last; a folder is complete when its files match it. Also: single files
written whole (temporary file + ``os.replace``)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ddlsched.errors import InputError

MANIFEST = "manifest.json"
UNLISTED = ("report.html", "report.md", "report_table.csv", "report_plots")  # derived later; not in a manifest
FORMAT = "ddlsched-output/1"


# ------------------------------------------------------------------ single files
def file_digest(path: Path) -> dict[str, Any]:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return {"bytes": path.stat().st_size, "sha256": h.hexdigest()}


def fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """``write(tmp)`` to a hidden temporary file beside ``path`` (same suffix), then ``os.replace`` it."""
    tmp = path.with_name(f".{path.stem}.tmp-{os.getpid()}{path.suffix}")
    try:
        write(tmp)
        fsync(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda p: p.write_text(text))


# ------------------------------------------------------------------ manifests
def _listing(folder: Path, prefix: str = "") -> list[str]:
    """Files under ``folder`` (sorted, posix), hidden entries and reports skipped; a sub-folder with its own
    manifest is listed by that manifest only."""
    out: list[str] = []
    for p in sorted(folder.iterdir()):
        if p.name.startswith(".") or (not prefix and p.name in UNLISTED):
            continue
        rel = f"{prefix}{p.name}"
        if p.is_dir():
            out += [f"{rel}/{MANIFEST}"] if (p / MANIFEST).is_file() else _listing(p, rel + "/")
        elif p.is_file() and rel != MANIFEST:
            out.append(rel)
    return out


def write_manifest(folder: Path, kind: str, inputs: dict[str, Any] | None = None,
                   extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write ``folder/manifest.json`` (every file's size and sha256); call it after the last other file."""
    files = {}
    for rel in _listing(folder):
        fsync(folder / rel)
        files[rel] = file_digest(folder / rel)
    data: dict[str, Any] = {"format": FORMAT, "kind": kind, "inputs": inputs or {}, **(extra or {}), "files": files}
    atomic_write_text(folder / MANIFEST, json.dumps(data, indent=2, sort_keys=True) + "\n")
    return data


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """The folder's manifest, or None when it has none; a malformed manifest is an InputError."""
    p = folder / MANIFEST
    if not p.is_file():
        return None
    try:
        data = json.loads(p.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"unreadable completion marker: {e}", path=str(p)) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("files"), dict):
        raise InputError(f"not a ddlsched manifest (expected format {FORMAT!r})", path=str(p))
    return data


def check_folder(folder: Path, *, hashes: bool = False) -> list[str]:
    """What is wrong with ``folder`` as a complete output: [] when its manifest matches every listed file
    (sizes always; sha256 too with ``hashes``)."""
    m = read_manifest(folder)
    if m is None:
        return [f"no {MANIFEST} (the completion marker, written last)"]
    problems = []
    for rel, want in sorted(m["files"].items()):
        p = folder / rel
        if not p.is_file():
            problems.append(f"{rel} is missing")
        elif p.stat().st_size != want.get("bytes"):
            problems.append(f"{rel} has {p.stat().st_size} bytes, the manifest says {want.get('bytes')}")
        elif hashes and file_digest(p)["sha256"] != want.get("sha256"):
            problems.append(f"{rel} differs from the manifest (sha256)")
    return problems


def is_complete(folder: Path, *, hashes: bool = False) -> bool:
    return folder.is_dir() and (folder / MANIFEST).is_file() and not check_folder(folder, hashes=hashes)
