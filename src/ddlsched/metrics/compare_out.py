"""A ``compare`` output folder (docs/outputs.md): ``compare.json`` first, one complete folder per policy,
``comparison.csv``, and ``manifest.json`` last.

* new or empty ``--out``: built in place, so finished policies survive an interrupt (``--resume`` goes on);
* ``--overwrite`` of a non-empty ``--out``: built beside it (``.NAME.tmp-<pid>``) and swapped in at the end;
* ``--resume``: ``--out`` must be a compare folder; policies whose folder is complete with the same inputs are
  kept, the others are run again; entries that belong to no requested policy are refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from ddlsched.errors import InputError
from ddlsched.metrics.atomic import (
    Staging,
    cannot_write,
    clean_leftovers,
    leftovers,
    not_empty,
    prepare,
    refuse_overwrite_of,
    staged,
)
from ddlsched.metrics.manifest import (
    MANIFEST,
    UNLISTED,
    atomic_write,
    atomic_write_text,
    is_complete,
    read_manifest,
    write_manifest,
)

COMPARE_JSON = "compare.json"
COMPARISON_CSV = "comparison.csv"
REPORT_FILES = UNLISTED
RESUME_HINT = " or --resume to finish an interrupted compare"


def _abs(out: Path) -> Path:
    final = Path(os.path.abspath(out))
    return final.resolve() if final.is_symlink() and final.resolve().is_dir() else final


class CompareOut:
    """Where a compare writes; ``policy_dir`` stages one policy, ``finish`` writes the table and the marker."""

    def __init__(self, final: Path, root: Path, folders: list[str], inputs: dict[str, dict[str, Any]],
                 staging: Staging | None, created: bool) -> None:
        self.final, self.root, self.folders, self.inputs = final, root, folders, inputs
        self.staging, self.created = staging, created
        self.finished = False

    def is_done(self, folder: str) -> bool:
        """The policy's folder is complete and was made from the same inputs."""
        d = self.root / folder
        if not is_complete(d):
            return False
        m = read_manifest(d)
        return m is not None and m.get("inputs") == self.inputs[folder]

    @contextlib.contextmanager
    def policy_dir(self, folder: str) -> Iterator[Staging]:
        """Stage ``ROOT/folder``; the caller writes into ``.tmp`` and calls ``commit_policy``."""
        with staged(self.root / folder, overwrite=True) as st:
            yield st

    def commit_policy(self, st: Staging, folder: str) -> None:
        st.commit("run", self.inputs[folder])

    def summaries(self) -> list[dict[str, Any]]:
        return [json.loads((self.root / f / "summary.json").read_text()) for f in self.folders]

    def finish(self, shared: dict[str, Any]) -> None:
        """``comparison.csv`` (from the policies' ``summary.json``, so a resumed compare writes the same
        bytes as a fresh one), then the manifest; a compare built beside ``--out`` is swapped in."""
        from ddlsched.metrics.output import write_records

        rows = self.summaries()
        keys = sorted({k for r in rows for k in r} - {"policy"})
        table = [{"policy": r.get("policy"), **{k: r.get(k) for k in keys}} for r in rows]
        atomic_write(self.root / COMPARISON_CSV, lambda p: write_records(p, table))
        extra = {"runs": self.folders}
        if self.staging is not None:
            self.staging.commit("compare", shared, extra)
        else:
            write_manifest(self.root, "compare", shared, extra)
        self.finished = True

    def abort(self) -> None:
        """After an error or interrupt: drop a staged compare; drop an in-place one that holds no result."""
        if self.staging is not None:
            if not self.staging.committed:
                self.staging.abort()
        elif self.created and self.root.is_dir() and all(p.name == COMPARE_JSON for p in self.root.iterdir()):
            shutil.rmtree(self.root, ignore_errors=True)


def _check_resume(final: Path, folders: list[str]) -> None:
    if not (final / COMPARE_JSON).is_file():
        raise InputError(f"--resume needs a compare output folder (with {COMPARE_JSON}); this one has none — "
                         "use --overwrite to replace it", path=str(final), field="--resume")
    allowed = {COMPARE_JSON, MANIFEST, COMPARISON_CSV, *REPORT_FILES, *folders}
    foreign = sorted(p.name for p in final.iterdir() if not p.name.startswith(".") and p.name not in allowed)
    if foreign:
        raise InputError(f"holds entries that belong to none of the requested policies: {', '.join(foreign)} "
                         "(a different policy list?); use --overwrite to replace the folder",
                         path=str(final), field="--resume")


@contextlib.contextmanager
def open_compare(out: Path, folders: list[str], inputs: dict[str, dict[str, Any]], shared: dict[str, Any], *,
                 overwrite: bool = False, resume: bool = False, note: Callable[[str], None] = print,
                 protect: Iterable[str | Path | None] = ()) -> Iterator[CompareOut]:
    """Check ``--out`` (fail fast, before any simulation), write ``compare.json``, yield the target."""
    if overwrite and resume:
        raise InputError("use either --overwrite or --resume, not both", field="--resume")
    if overwrite:
        refuse_overwrite_of(out, protect)
    final = _abs(out)
    if final.exists() and not final.is_dir():
        raise InputError("exists and is not a directory", path=str(final), field="--out")
    with contextlib.suppress(OSError):
        for n in clean_leftovers(final):
            note(n)
    nonempty = final.is_dir() and any(final.iterdir())
    if nonempty and not overwrite and not resume:
        raise not_empty(final, hint=RESUME_HINT)
    if nonempty and resume:
        _check_resume(final, folders)
    target = CompareOut(final, final, folders, inputs, None, created=not final.exists())
    try:  # from here on an error or an interrupt undoes what was created (CompareOut.abort)
        if nonempty and overwrite:
            target.staging = prepare(final, overwrite=True)
            target.staging.stage_prefix = "compare-"
            target.root = target.staging.tmp
        else:
            try:
                final.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise cannot_write(e, final) from None
        root = target.root
        if nonempty and resume:
            for p, _, _ in leftovers(root):
                shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
            with contextlib.suppress(FileNotFoundError):
                (root / MANIFEST).unlink()  # from here on the folder reads as an unfinished compare
            if not all(target.is_done(f) for f in folders):
                stale = [n for n in REPORT_FILES if (root / n).exists()]
                for n in stale:
                    shutil.rmtree(root / n) if (root / n).is_dir() else (root / n).unlink()
                if stale:
                    note(f"removed the out-of-date report ({', '.join(stale)})")
        try:
            atomic_write_text(root / COMPARE_JSON, json.dumps(
                {"policies": folders, "inputs": shared}, indent=2, sort_keys=True) + "\n")
        except OSError as e:
            raise cannot_write(e, final) from None
        yield target
    finally:
        if not target.finished:
            target.abort()
