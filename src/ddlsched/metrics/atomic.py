"""Output folders that are complete or absent (docs/outputs.md).

A folder is built under a hidden sibling ``.NAME.tmp-<pid>``; when every file is written, its ``manifest.json``
(``metrics.manifest``) is written *last*, and the folder is renamed into place (with ``--overwrite`` it is
swapped with the old one, which is removed only then). Leftover ``.NAME.tmp-<pid>`` / ``.NAME.old-<pid>``
siblings of dead processes are removed by the next writer of ``NAME``; readers ignore hidden entries.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from ddlsched.errors import DdlschedError, InputError
from ddlsched.metrics.interrupts import signals_deferred, signals_ignored
from ddlsched.metrics.manifest import fsync, write_manifest

PAUSE_ENV = "DDLSCHED_TEST_PAUSE"  # tests only: "STAGE:FILE", see pause_for_test
_LEFTOVER = re.compile(r"^\.(?P<name>.+)\.(?P<tag>tmp|old)-(?P<pid>\d+)(?P<suffix>\.[A-Za-z0-9]+)?$")


class OutputError(DdlschedError):
    """Results could not be written or put in place."""


def pause_for_test(stage: str) -> None:
    """Test hook: with ``DDLSCHED_TEST_PAUSE=STAGE:FILE`` set, create FILE at STAGE and sleep 60 s.

    Lets a test send a signal at an exact point (e.g. after the files are written, before the rename).
    Stages: ``written`` (files written, no manifest), ``commit`` (manifest written, before the rename),
    ``policy-done`` (``compare``: a policy folder is in place), ``compare-written``/``compare-commit``
    (``compare --overwrite``: the whole compare folder, before its swap).
    """
    spec = os.environ.get(PAUSE_ENV)
    if not spec:
        return
    want, _, flag = spec.partition(":")
    if want == stage and flag:
        Path(flag).touch()
        time.sleep(60)



# ------------------------------------------------------------------ folders built beside their place
def sibling(final: Path, tag: str, pid: int | None = None) -> Path:
    return final.parent / f".{final.name}.{tag}-{os.getpid() if pid is None else pid}"


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # our own leftover (an earlier command in this process): not in use
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def leftovers(parent: Path) -> Iterator[tuple[Path, str, str]]:
    """(path, name, tag) of each ``.NAME.tmp-<pid>[.ext]`` / ``.NAME.old-<pid>`` in ``parent`` whose process
    is gone (NAME includes ``.ext`` for files written by ``atomic_write``)."""
    if not parent.is_dir():
        return
    for p in sorted(parent.iterdir()):
        m = _LEFTOVER.match(p.name)
        if m and not _pid_alive(int(m["pid"])):
            yield p, m["name"] + (m["suffix"] or ""), m["tag"]


def clean_leftovers(final: Path) -> list[str]:
    """Remove the leftovers of dead processes for ``final``; if ``final`` is missing, an ``.old`` folder (a
    swap cut short by SIGKILL) is put back in its place. Returns notes."""
    notes: list[str] = []
    for p, name, tag in leftovers(final.parent):
        if name != final.name:
            continue
        if tag == "old" and p.is_dir() and not final.exists():
            os.rename(p, final)
            notes.append(f"restored {final} from {p.name} (a replacement was cut short)")
        elif p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
            notes.append(f"removed leftover {p}")
        else:
            with contextlib.suppress(OSError):
                p.unlink()
    return notes


_libc: Any = None


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux ``renameat2(RENAME_EXCHANGE)``); False where unsupported."""
    global _libc
    try:
        if _libc is None:
            _libc = ctypes.CDLL(None, use_errno=True)
        fn = _libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (22, 38, 95):  # EINVAL, ENOSYS, EOPNOTSUPP: the filesystem cannot; rename twice instead
        return False
    raise OSError(err, os.strerror(err), str(a))


def _fsync_dir(d: Path) -> None:
    with contextlib.suppress(OSError):
        fsync(d)


class Staging:
    """One output folder built at ``tmp`` and put at ``final`` by ``commit`` (use ``staged``)."""

    def __init__(self, final: Path, tmp: Path, overwrite: bool, flag: str) -> None:
        self.final, self.tmp, self.overwrite, self.flag = final, tmp, overwrite, flag
        self.committed = False
        self.keep = False
        self.stage_prefix = ""  # for pause_for_test: "compare-" on a whole compare folder

    def commit(self, kind: str, inputs: dict[str, Any] | None = None, extra: dict[str, Any] | None = None) -> None:
        """Write the manifest, then rename (or, replacing an old folder, swap) ``tmp`` into ``final``."""
        pause_for_test(self.stage_prefix + "written")
        write_manifest(self.tmp, kind, inputs, extra)
        _fsync_dir(self.tmp)
        pause_for_test(self.stage_prefix + "commit")
        old: Path | None = None
        with signals_deferred():  # an interrupt now takes effect once the new folder is in place, the old gone
            try:
                if self.final.is_dir() and any(self.final.iterdir()):
                    if not self.overwrite:
                        raise FileExistsError(f"{self.final} is not empty")
                    if _exchange(self.tmp, self.final):
                        old = self.tmp
                    else:
                        old = sibling(self.final, "old")
                        os.rename(self.final, old)
                        try:
                            os.rename(self.tmp, self.final)
                        except OSError:
                            os.rename(old, self.final)  # put the old results back
                            old = None
                            raise
                else:
                    os.rename(self.tmp, self.final)  # replaces an empty folder
            except OSError as e:
                self.keep = True
                raise OutputError(f"could not put the results in place at {self.final} ({e}); they are complete "
                                  f"in {self.tmp} — move that folder where you want it") from None
            self.committed = True
            _fsync_dir(self.final.parent)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)

    def abort(self) -> None:
        """Remove the temporary folder (best effort), unless it holds results that could not be placed."""
        if not self.keep:
            with signals_ignored():
                shutil.rmtree(self.tmp, ignore_errors=True)


def _describe(e: OSError, final: Path) -> str:
    for a in final.parents:
        if a.exists():
            if not a.is_dir():
                return f"{a} exists and is not a directory"
            break
    return e.strerror or str(e)


def cannot_write(e: OSError, final: Path, flag: str = "--out") -> InputError:
    return InputError(f"cannot write results here: {_describe(e, final)}", path=str(final), field=flag)


def _is_mount(path: Path) -> bool:
    """``os.path.ismount``, plus bind mounts on the same device (listed in /proc/self/mountinfo on Linux)."""
    if os.path.ismount(path):
        return True
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return False
    unescape = re.compile(r"\\([0-7]{3})")
    points = {unescape.sub(lambda m: chr(int(m[1], 8)), ln.split()[4]) for ln in lines if len(ln.split()) > 4}
    return str(path) in points


def not_empty(final: Path, flag: str = "--out", hint: str = "") -> InputError:
    return InputError(f"directory is not empty; use --overwrite to replace its contents (the old results are "
                      f"removed only once the new run is complete){hint}, or choose another {flag}",
                      path=str(final), field=flag)


def os_error_text(e: OSError) -> str:
    """One line for an OS error: the reason and the path (``No space left on device: out/records.csv``)."""
    reason = e.strerror or type(e).__name__
    where = e.filename if e.filename is not None else ""
    if isinstance(where, bytes):
        where = os.fsdecode(where)
    if len(str(where)) > 200:
        where = str(where)[:100] + "..." + str(where)[-60:]
    return f"{reason}: {where}" if where else reason


def refuse_overwrite_of(final: Path, inputs: Iterable[str | Path | None], flag: str = "--out") -> None:
    """With ``--overwrite``, ``final`` is replaced as a whole: refuse one that is or contains the working
    directory or any input file (``--out ..``, ``--out data``), which would delete them."""
    here = Path.cwd().resolve()
    target = Path(os.path.abspath(final))
    with contextlib.suppress(OSError, RuntimeError):
        target = target.resolve()
    guarded = [("the current directory", here)]
    for x in inputs:
        if x is None or not str(x):
            continue
        with contextlib.suppress(OSError, RuntimeError):
            if Path(x).exists():
                guarded.append((f"the input {x}", Path(x).resolve()))
    for what, p in guarded:
        if p == target or target in p.parents:
            raise InputError(f"--overwrite would delete {what}: {flag} {final} holds it; choose a new folder",
                             path=str(final), field=flag)


def prepare(final: Path, *, overwrite: bool = False, flag: str = "--out", hint: str = "",
            note: Callable[[str], None] | None = None, inputs: Iterable[str | Path | None] = ()) -> Staging:
    """Check ``final`` and create its temporary sibling; fail fast (InputError naming ``flag``) when ``final``
    is a file, is a non-empty folder without ``overwrite``, or its parent cannot be written; with ``overwrite``,
    when it holds the working directory or one of ``inputs``. Leftovers of killed runs are cleaned first
    (``note`` tells about each). A path the OS refuses (too long, a symlink loop) is an InputError too."""
    try:
        return _prepare(final, overwrite=overwrite, flag=flag, hint=hint, note=note, inputs=inputs)
    except OSError as e:
        raise InputError(f"cannot write results here: {os_error_text(e)}", field=flag) from None
    except RuntimeError as e:  # pathlib's "Symlink loop from ..."
        raise InputError(f"cannot write results here: {e}", field=flag) from None


def _prepare(final: Path, *, overwrite: bool, flag: str, hint: str, note: Callable[[str], None] | None,
             inputs: Iterable[str | Path | None]) -> Staging:
    if overwrite:
        refuse_overwrite_of(final, inputs, flag)
    final = Path(os.path.abspath(final))
    if final.is_symlink() and final.resolve().is_dir():
        final = final.resolve()
    if final == final.parent:
        raise InputError("cannot write results to the file system root", path=str(final), field=flag)
    if final.exists() and not final.is_dir():
        raise InputError("exists and is not a directory", path=str(final), field=flag)
    if final.is_dir() and (_is_mount(final) or final == Path.cwd().resolve()):
        what = "a mount point" if _is_mount(final) else "the current directory"
        raise InputError(f"is {what}; results are written beside {flag} and renamed into place, which cannot "
                         f"replace {what}: use a sub-folder, e.g. {flag} {final / 'run'}", path=str(final),
                         field=flag)
    with contextlib.suppress(OSError):
        for n in clean_leftovers(final):
            if note is not None:
                note(n)
    if final.is_dir() and not overwrite and any(final.iterdir()):
        raise not_empty(final, flag, hint)
    tmp = sibling(final, "tmp")
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise cannot_write(e, final, flag) from None
    try:  # an error or an interrupt (even one that lands as mkdir returns) removes the new folder
        tmp.mkdir()
        probe = tmp / ".probe"
        probe.write_bytes(b"")
        probe.unlink()
        return Staging(final, tmp, overwrite, flag)
    except BaseException as e:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(e, OSError):
            raise cannot_write(e, final, flag) from None
        raise


@contextlib.contextmanager
def staged(final: Path, *, overwrite: bool = False, flag: str = "--out", hint: str = "",
           note: Callable[[str], None] | None = None, inputs: Iterable[str | Path | None] = ()) -> Iterator[Staging]:
    """``prepare`` a folder; on leaving without ``commit`` (an error, an interrupt) remove its temporary. An OS
    error while writing (a full disk, a file system turned read-only) becomes one :class:`OutputError` line;
    ``final`` is left as it was."""
    st = prepare(final, overwrite=overwrite, flag=flag, hint=hint, note=note, inputs=inputs)
    try:
        yield st
    except OSError as e:
        raise OutputError(f"could not write the results ({os_error_text(e)}); {final} was left as it "
                          "was") from None
    finally:
        if not st.committed:
            st.abort()
