"""Physics: per-iteration time models. ``PERF_MODELS`` maps a name to its class."""

from __future__ import annotations

from typing import Any

from ddlsched.cluster.topology import Cluster
from ddlsched.errors import ConfigError
from ddlsched.perf.abe import AbeContention
from ddlsched.perf.base import IterationTime, PerfModel, Placement
from ddlsched.perf.flat import FlatNetwork
from ddlsched.perf.maxmin import MaxMinLinkSharing
from ddlsched.perf.nocontention import NoContention
from ddlsched.perf.phased import PhasedContention
from ddlsched.perf.sharing import SharingPerf
from ddlsched.perf.sjf_bco import SjfBcoContention

PERF_MODELS: dict[str, type[PerfModel]] = {
    NoContention.name: NoContention,
    FlatNetwork.name: FlatNetwork,
    MaxMinLinkSharing.name: MaxMinLinkSharing,
    PhasedContention.name: PhasedContention,
    SjfBcoContention.name: SjfBcoContention,
    AbeContention.name: AbeContention,
    SharingPerf.name: SharingPerf,
}


def make_perf_model(name: str, cluster: Cluster, **params: Any) -> PerfModel:
    try:
        cls = PERF_MODELS[name]
    except KeyError:
        raise ConfigError(f"unknown perf model {name!r}; choose one of {', '.join(PERF_MODELS)}",
                          field="perf_model") from None
    try:
        return cls(cluster, **params)
    except TypeError as e:
        raise ConfigError(str(e), field="perf_model") from None


__all__ = ["PERF_MODELS", "IterationTime", "PerfModel", "Placement", "make_perf_model"]
