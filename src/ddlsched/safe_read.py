"""Reading configuration files safely: regular files only, a size limit, strict YAML/TOML/JSON.

Every config file ddlsched reads — cluster files, sweep files, ``--ray-runtime-env`` files, and any other
YAML/TOML mapping (e.g. tenants) — goes through :func:`read_structured`:

* only a *regular* file is opened (a FIFO, a device such as ``/dev/zero``, a socket or a directory is refused
  without reading, so nothing hangs), and at most :data:`MAX_CONFIG_BYTES` are read (a larger file is refused);
* the text must be UTF-8; YAML is read with PyYAML's safe loader, but a key given twice in one mapping is an
  error — also inside a flow mapping on one line (``{a: 1, a: 2}``), where plain PyYAML keeps the last value;
* a cyclic alias, nesting too deep, or a top level that is not a mapping are errors naming the file.

:func:`loads_json` is the same strictness for JSON text given on the command line.
"""

from __future__ import annotations

import json
import os
import stat
import tomllib
from pathlib import Path
from typing import Any

import yaml

from ddlsched.errors import ConfigError

MAX_CONFIG_BYTES = 8 << 20
"""Largest config file read (8 MiB); real cluster and sweep files are a few KiB."""


def read_config_bytes(path: str | Path, *, limit: int = MAX_CONFIG_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (at most ``limit``); a ConfigError naming the file otherwise."""
    p = str(path)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as e:
        raise ConfigError(f"cannot open: {e.strerror}", path=p) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = ("a directory" if stat.S_ISDIR(st.st_mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(st.st_mode)
                    else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "a socket"
                    if stat.S_ISSOCK(st.st_mode) else "not a regular file")
            raise ConfigError(f"is {kind}; a config must be a regular file", path=p)
        if st.st_size > limit:
            raise ConfigError(f"is {st.st_size:,} bytes; a config file may hold at most {limit:,}", path=p)
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:  # it grew while being read
                raise ConfigError(f"holds more than {limit:,} bytes, the most a config file may hold", path=p)
        return b"".join(chunks)
    except OSError as e:
        raise ConfigError(f"cannot read: {e.strerror}", path=p) from None
    finally:
        os.close(fd)


class UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, but a key given twice in one mapping is an error (PyYAML keeps the last silently),
    wherever the two keys are: on separate lines or in one flow mapping on one line."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, tuple[int, int]] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            where = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            try:
                first = seen.setdefault(key, where)
            except TypeError:  # an unhashable key: PyYAML reports it below
                continue
            if first != where:
                at = f"line {first[0]}" + (f", column {first[1]}" if first[0] == where[0] else "")
                raise ConfigError(f"key {str(key)[:60]!r} given twice (first at {at})", line=where[0],
                                  field=str(key)[:60])
        return super().construct_mapping(node, deep=deep)


def check_acyclic(data: Any, path: str, stack: tuple[int, ...] = ()) -> None:
    """A YAML alias that refers to its own ancestor (``a: &x {b: *x}``) makes a cyclic structure: refuse it."""
    if isinstance(data, dict | list):
        if id(data) in stack:
            raise ConfigError("a cyclic YAML alias (an anchor used inside itself)", path=path)
        for v in data.values() if isinstance(data, dict) else data:
            check_acyclic(v, path, (*stack, id(data)))


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ConfigError(f"key {k[:60]!r} given twice", field=k[:60])
        out[k] = v
    return out


def loads_json(text: str, *, what: str) -> Any:
    """JSON text with repeated keys and non-finite numbers refused (ConfigError naming ``what``)."""
    def bad(name: str) -> Any:
        raise ConfigError(f"{name} is not a finite number", field=what)

    try:
        return json.loads(text, object_pairs_hook=_unique_pairs, parse_constant=bad)
    except ConfigError as e:
        raise ConfigError(e.reason, field=what) from None
    except (ValueError, RecursionError) as e:
        raise ConfigError(f"not JSON ({e})", field=what) from None


def read_structured(path: Path) -> dict[str, Any]:
    """Read a YAML (or JSON) or TOML file into a dict, with errors naming the file (and line for YAML, decoding,
    keys given twice). Only regular files up to :data:`MAX_CONFIG_BYTES` are read."""
    raw = read_config_bytes(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise ConfigError(f"not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start})", path=str(path),
                          line=line) from None
    try:
        if path.suffix.lower() == ".toml":
            data = tomllib.loads(text)
        else:
            data = yaml.load(text, Loader=UniqueKeyLoader)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"invalid TOML: {e}", path=str(path)) from None
    except ConfigError as e:
        raise ConfigError(e.reason, path=str(path), line=e.line, field=e.field) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        line = getattr(mark, "line", None)
        msg = " ".join(str(e).split())  # one line
        raise ConfigError(f"invalid YAML: {msg}", path=str(path), line=None if line is None else line + 1) from None
    except RecursionError:
        raise ConfigError("nested too deeply", path=str(path)) from None
    if not isinstance(data, dict):
        raise ConfigError("expected a mapping at the top level", path=str(path))
    check_acyclic(data, str(path))
    return data
