"""A cache of parsed trace files, so that the cells of a sweep (and repeated runs) parse a large trace once.

Key: the path and SHA-256 of the file's bytes (jobs name their file and line), the format, the loader options (a
model catalogue by its profiles), and a hash of the trace-loading source code (``ddlsched/workload``), so an edited
loader never reads an old entry. Only traces that loaded without error are stored; a bad file is parsed every time,
so its error names file, line and field.
Entries are pickles written atomically under ``$DDLSCHED_CACHE`` (default ``~/.cache/ddlsched``)``/traces``;
``DDLSCHED_CACHE=off`` disables the cache. An unreadable entry is ignored and rewritten.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from ddlsched.workload.trace import Trace

_MIN_BYTES = 1 << 20  # smaller files parse faster than a cache lookup is worth


def cache_dir() -> Path | None:
    """Where entries live, or None when the cache is off."""
    root = os.environ.get("DDLSCHED_CACHE", "")
    if root.lower() in ("off", "0", "no", "false"):
        return None
    return (Path(root) if root else Path.home() / ".cache" / "ddlsched") / "traces"


@cache
def _code_hash() -> str:
    h = hashlib.sha256()
    base = Path(__file__).parent
    for f in sorted(base.rglob("*.py")):
        h.update(f.relative_to(base).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def _option_text(value: Any) -> Any:
    if hasattr(value, "names") and hasattr(value, "__getitem__"):  # a ModelCatalog: by its profiles
        return [repr(value[n]) for n in value.names()]
    if isinstance(value, dict):
        return {str(k): _option_text(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, list | tuple | set | frozenset):
        items = [_option_text(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, set | frozenset) else items
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise TypeError(f"cannot key the trace cache on {type(value).__name__}")


def cached_load(path: Path, fmt: str, opts: dict[str, Any], load: Callable[[], Trace]) -> Trace:
    """``load()``'s trace for ``path`` read with ``fmt`` and ``opts``, from the cache when it has it."""
    root = cache_dir()
    try:
        size = path.stat().st_size
    except OSError:
        return load()  # the loader reports it
    if root is None or size < _MIN_BYTES:
        return load()
    try:
        opts_text = json.dumps(_option_text(opts), sort_keys=True)
    except TypeError:
        return load()
    h = hashlib.sha256()
    try:
        with path.open("rb") as f:  # in blocks: memory stays bounded whatever the file's size
            while block := f.read(1 << 20):
                h.update(block)
    except OSError:
        return load()  # the loader reports it
    for part in (str(path), fmt, opts_text, _code_hash()):
        h.update(b"\0" + part.encode())
    entry = root / f"{h.hexdigest()}.pickle"
    with contextlib.suppress(Exception):  # a missing, truncated or foreign entry: parse again
        with entry.open("rb") as f:
            trace = pickle.load(f)
        if isinstance(trace, Trace):
            return trace
    trace = load()
    tmp = None
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=root)
        with os.fdopen(fd, "wb") as f:
            pickle.dump(trace, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, entry)  # complete or absent
    except (OSError, pickle.PicklingError):
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return trace
