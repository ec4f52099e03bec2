"""Physics: per-iteration time models. ``PERF_MODELS`` maps a name to its class."""

from __future__ import annotations

import inspect
import math
from typing import Any

from ddlsched.cluster.topology import Cluster
from ddlsched.errors import ConfigError
from ddlsched.perf.abe import AbeContention
from ddlsched.perf.base import DEFAULT_PERF_MODEL, IterationTime, PerfModel, Placement
from ddlsched.perf.flat import FlatNetwork
from ddlsched.perf.maxmin import MaxMinLinkSharing
from ddlsched.perf.nocontention import NoContention
from ddlsched.perf.phased import PhasedContention
from ddlsched.perf.phased_tcp import PhasedTcpContention
from ddlsched.perf.sharing import SharingPerf
from ddlsched.perf.sjf_bco import SjfBcoContention

PERF_MODELS: dict[str, type[PerfModel]] = {
    NoContention.name: NoContention,
    FlatNetwork.name: FlatNetwork,
    MaxMinLinkSharing.name: MaxMinLinkSharing,
    PhasedContention.name: PhasedContention,
    PhasedTcpContention.name: PhasedTcpContention,
    SjfBcoContention.name: SjfBcoContention,
    AbeContention.name: AbeContention,
    SharingPerf.name: SharingPerf,
}


_NUMERIC = {"float", "int", "float|None", "int|None"}
_PARAMS_SEEN: dict[tuple[type, Any, int], dict[str, str]] = {}  # (class, its __init__, id of its init_params)


def constructor_params(cls: type[PerfModel]) -> dict[str, str]:
    """A physics model's keyword parameters after ``cluster``: name → annotation text, in signature order.

    Read from ``cls.__init__``'s signature. A class compiled by mypyc (docs/engine.md "Compiled build") shows
    only ``(self, *args, **kwargs)`` there, so a compiled model declares the same table as ``init_params``;
    tests/test_perf_params.py checks every declaration against the constructor in the source.
    """
    declared = cls.__dict__.get("init_params")
    key = (cls, cls.__init__, id(declared))  # read once per class (replays ask thousands of times)
    if key not in _PARAMS_SEEN:
        params = inspect.signature(cls.__init__).parameters
        named = {k: p for k, p in params.items()
                 if k not in ("self", "cluster") and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
        _PARAMS_SEEN[key] = (dict(declared) if declared is not None and not named  # compiled: signature hidden
                             else {k: str(p.annotation) for k, p in named.items()})
    return dict(_PARAMS_SEEN[key])


def make_perf_model(name: str, cluster: Cluster, **params: Any) -> PerfModel:
    try:
        cls = PERF_MODELS[name]
    except KeyError:
        raise ConfigError(f"unknown perf model {name!r}; choose one of {', '.join(PERF_MODELS)}",
                          field="perf_model") from None
    sig = constructor_params(cls)
    unknown = sorted(set(params) - set(sig))
    if unknown:
        raise ConfigError(f"perf model {name!r}: unknown parameter(s) {unknown} "
                          f"(allowed: {', '.join(sig) or 'none'})", field="perf_param")
    for k, v in params.items():
        ann = sig[k].replace(" ", "")
        if ann in _NUMERIC and not (v is None and ann.endswith("|None")) and (
                isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v)):
            raise ConfigError(f"perf model {name!r}: {k}={v!r} is not a finite number", field="perf_param")
        if ann == "bool" and not isinstance(v, bool):
            raise ConfigError(f"perf model {name!r}: {k} must be true or false, not {v!r}", field="perf_param")
    try:
        return cls(cluster, **params)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"perf model {name!r}: {e}", field="perf_param") from None


__all__ = ["DEFAULT_PERF_MODEL", "PERF_MODELS", "IterationTime", "PerfModel", "Placement", "constructor_params",
           "make_perf_model"]
