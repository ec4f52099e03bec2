"""``mypyc_attr`` for the modules of the compiled build (docs/engine.md "Compiled build"):
``@mypyc_attr(allow_interpreted_subclasses=True)`` marks a class that plain Python classes may subclass. Without
``mypy_extensions`` installed (the pure-Python install does not need it) it does nothing."""

from __future__ import annotations

from typing import Any

try:
    from mypy_extensions import mypyc_attr
except ImportError:  # pragma: no cover - exercised only where mypy_extensions is absent
    def mypyc_attr(*attrs: str, **kwattrs: object) -> Any:  # type: ignore[misc]
        return lambda cls: cls

__all__ = ["mypyc_attr"]
