"""Every policy by name, with a one-line description (``ddlsched policies``).

Names:
* ``ORDER+PLACEMENT`` composes a baseline, e.g. ``fifo+consolidated``, ``tiresias+first_fit``; a bare
  ordering name uses consolidated placement.
* Named policies registered by their modules with :func:`register_policy` (listed in ``_MODULES``).

Parameters come as a dict (``--policy-param key=value`` on the CLI); unknown keys are an error.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ddlsched.errors import ConfigError
from ddlsched.policies.base import Policy
from ddlsched.policies.baselines import OrderedPolicy
from ddlsched.policies.ordering import ORDERINGS
from ddlsched.policies.placement import PLACEMENTS


@dataclass(frozen=True)
class PolicyEntry:
    name: str
    description: str
    factory: Callable[..., Policy]
    family: str


_NAMED: dict[str, PolicyEntry] = {}

# Modules that register named policies on import (appended to by each policy family).
_MODULES: list[str] = [
    "ddlsched.policies.ada_srsf",
    "ddlsched.policies.sjf_bco",
    "ddlsched.policies.delay",
    "ddlsched.policies.sharing",
    "ddlsched.policies.hare",
]


def register_policy(name: str, description: str, family: str = "") -> Callable[[Callable[..., Policy]],
                                                                                 Callable[..., Policy]]:
    def deco(factory: Callable[..., Policy]) -> Callable[..., Policy]:
        if name in _NAMED:
            raise ValueError(f"policy {name!r} registered twice")
        _NAMED[name] = PolicyEntry(name, description, factory, family)
        return factory
    return deco


def _load_modules() -> None:
    for mod in _MODULES:
        importlib.import_module(mod)


def _check_params(factory: Callable[..., Any], params: dict[str, Any], what: str) -> None:
    sig = inspect.signature(factory)
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return
    unknown = sorted(set(params) - set(sig.parameters))
    if unknown:
        allowed = ", ".join(k for k in sig.parameters if k != "self") or "none"
        raise ConfigError(f"unknown parameter(s) {unknown} for {what}; allowed: {allowed}", field="policy_param")


def _ordering_params(params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    policy_keys = {"backfill"}
    return ({k: v for k, v in params.items() if k not in policy_keys},
            {k: v for k, v in params.items() if k in policy_keys})


def make_policy(name: str, params: dict[str, Any] | None = None) -> Policy:
    """Build a policy from its name (see module docstring)."""
    params = dict(params or {})
    _load_modules()
    if name in _NAMED:
        entry = _NAMED[name]
        _check_params(entry.factory, params, f"policy {name!r}")
        try:
            return entry.factory(**params)
        except (TypeError, ValueError) as e:
            raise ConfigError(f"policy {name!r}: {e}", field="policy_param") from None
    order_name, _, place_name = name.partition("+")
    place_name = place_name or "consolidated"
    if order_name not in ORDERINGS or place_name not in PLACEMENTS:
        raise ConfigError(f"unknown policy {name!r}; run 'ddlsched policies' to list them "
                          f"(orderings: {', '.join(ORDERINGS)}; placements: {', '.join(PLACEMENTS)})",
                          field="policy")
    order_cls = ORDERINGS[order_name]
    o_params, p_params = _ordering_params(params)
    _check_params(order_cls, o_params, f"ordering {order_name!r}")
    try:
        ordering = order_cls(**o_params)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"ordering {order_name!r}: {e}", field="policy_param") from None
    backfill = p_params.get("backfill", order_name != "fifo")
    return OrderedPolicy(ordering, PLACEMENTS[place_name](), backfill=bool(backfill),
                         name=f"{order_name}+{place_name}")


def list_policies() -> list[tuple[str, str]]:
    """(name, description) of every ordering+placement combination and every named policy."""
    _load_modules()
    out: list[tuple[str, str]] = []
    for o in ORDERINGS.values():
        for p in PLACEMENTS.values():
            out.append((f"{o.name}+{p.name}", f"{o.description}; placement: {p.description}"))
    for e in sorted(_NAMED.values(), key=lambda e: e.name):
        out.append((e.name, e.description))
    return out
