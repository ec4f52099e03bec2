"""ddlsched: simulate and compare scheduling policies for distributed deep-learning training on shared GPU
clusters where ring all-reduce jobs contend for the network and for GPUs.

The public API (``docs/api.md``): :func:`simulate`, :class:`Result`, :func:`load_results`, :func:`load_trace`,
:func:`load_cluster`, :func:`build_cluster`; for policy plug-ins :class:`Policy`, :func:`register`,
:class:`Requirements` and the decisions :class:`Start`, :class:`Preempt`, :class:`WakeAt`, :class:`RunTask`,
:class:`Transfer` (``docs/adding-a-policy.md``). Names are imported on first use, so ``import ddlsched`` is light.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.2.0"

from ddlsched import native as _native

_native.install()

_EXPORTS = {
    "simulate": "ddlsched.api", "Result": "ddlsched.api", "Results": "ddlsched.api",
    "load_results": "ddlsched.api", "load_trace": "ddlsched.api", "load_cluster": "ddlsched.api",
    "build_cluster": "ddlsched.api",
    "Policy": "ddlsched.policies.base", "register": "ddlsched.policies.registry",
    "load_plugin": "ddlsched.policies.registry", "list_policies": "ddlsched.policies.registry",
    "make_policy": "ddlsched.policies.registry",
    "Requirements": "ddlsched.engine.model", "Start": "ddlsched.engine.decisions",
    "Preempt": "ddlsched.engine.decisions", "WakeAt": "ddlsched.engine.decisions",
    "RunTask": "ddlsched.engine.decisions", "Transfer": "ddlsched.engine.decisions",
    "JobSpec": "ddlsched.workload.jobspec", "Cluster": "ddlsched.cluster.topology",
}
__all__ = [*sorted(_EXPORTS), "__version__"]


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'ddlsched' has no attribute {name!r}")
    value = getattr(importlib.import_module(mod), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
