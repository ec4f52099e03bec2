"""Cluster description files (YAML or TOML), validated with pydantic; unknown keys are rejected.

Example (YAML)::

    name: two-racks
    network: {intra_server_gbps: 1200, nic_gbps: 25, oversubscription: 4, hop_latency_us: 0}
    gpu_types:
      V100: {mem_gb: 32, speed: 1.0}
    racks:
      - count: 2                 # two identical racks
        servers:
          - {count: 8, gpus: 8, gpu_type: V100}           # nic_gbps may override the network default

Values are strict: counts are whole numbers (``true``, ``'8'`` and ``1.5`` are refused), every number is finite
(no ``.nan``/``.inf``) and at most ``MAX_RATE``; a cluster has at most ``MAX_CLUSTER_GPUS`` GPUs and servers. A key
given twice (also on one line), a cyclic alias and non-UTF-8 bytes are errors naming the file and line; only a
regular file of at most 8 MiB is read (:mod:`ddlsched.safe_read`). The format is documented in docs/clusters.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.errors import ConfigError
from ddlsched.safe_read import read_structured

__all__ = ["ClusterConfig", "load_cluster_file", "read_structured", "validation_error"]

MAX_CLUSTER_GPUS = 1_000_000
"""Most GPUs (and servers) a cluster file may describe; checked before anything is built."""
MAX_RATE = 1e9
"""Largest bandwidth (Gbit/s), oversubscription ratio, latency (µs), GPU memory (GB) or speed factor."""


class _Strict(BaseModel):
    # strict: no silent coercion (true is not 1 GPU, '8' is not 8, 1.5 is not a count); no NaN or infinity
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class NetworkConfig(_Strict):
    intra_server_gbps: float = Field(1200.0, gt=0, le=MAX_RATE, description="per-GPU NVLink/PCIe egress, Gbit/s")
    nic_gbps: float = Field(25.0, gt=0, le=MAX_RATE, description="default server NIC, Gbit/s per direction")
    oversubscription: float = Field(1.0, gt=0, le=MAX_RATE, description="rack uplink = Σ NIC / this")
    hop_latency_us: float = Field(0.0, ge=0, le=MAX_RATE, description="per ring step latency α, microseconds")


class GPUTypeConfig(_Strict):
    mem_gb: float = Field(gt=0, le=MAX_RATE)
    speed: float = Field(1.0, gt=0, le=MAX_RATE)


class ServerGroupConfig(_Strict):
    count: int = Field(1, ge=1, le=MAX_CLUSTER_GPUS)
    gpus: int = Field(ge=1, le=MAX_CLUSTER_GPUS)
    gpu_type: str = Field(min_length=1)
    nic_gbps: float | None = Field(None, gt=0, le=MAX_RATE)


class RackGroupConfig(_Strict):
    count: int = Field(1, ge=1, le=MAX_CLUSTER_GPUS)
    servers: list[ServerGroupConfig] = Field(min_length=1)


class ClusterConfig(_Strict):
    name: str = "cluster"
    network: NetworkConfig = NetworkConfig()
    gpu_types: dict[str, GPUTypeConfig] = Field(min_length=1)
    racks: list[RackGroupConfig] = Field(min_length=1)
    tenants: dict[str, Any] | None = None  # validated against the built cluster (ddlsched.cluster.tenants)

    def build(self) -> Cluster:
        servers = sum(rg.count * sg.count for rg in self.racks for sg in rg.servers)
        gpus = sum(rg.count * sg.count * sg.gpus for rg in self.racks for sg in rg.servers)
        if gpus > MAX_CLUSTER_GPUS or servers > MAX_CLUSTER_GPUS:
            raise ConfigError(f"{gpus:,} GPUs on {servers:,} servers; at most {MAX_CLUSTER_GPUS:,} of each",
                              field="racks")
        types = {n: GPUType(n, t.mem_gb * 1024.0, t.speed) for n, t in self.gpu_types.items()}
        racks: list[list[ServerSpec]] = []
        for rg in self.racks:
            for _ in range(rg.count):
                servers = []
                for sg in rg.servers:
                    if sg.gpu_type not in types:
                        raise ConfigError(f"unknown gpu_type {sg.gpu_type!r}; declared: {sorted(types)}",
                                          field="racks.servers.gpu_type")
                    nic = sg.nic_gbps if sg.nic_gbps is not None else self.network.nic_gbps
                    servers.extend(ServerSpec(sg.gpus, sg.gpu_type, nic) for _ in range(sg.count))
                racks.append(servers)
        return Cluster.build(
            self.name, racks, types, intra_gbps=self.network.intra_server_gbps,
            oversubscription=self.network.oversubscription,
            hop_latency_s=self.network.hop_latency_us * 1e-6,
        )


def validation_error(e: ValidationError, path: str) -> ConfigError:
    """Turn pydantic's error into one that names the file and the first offending field."""
    first = e.errors()[0]
    loc = ".".join(str(p) for p in first["loc"])
    msg = first["msg"]
    if first["type"] == "extra_forbidden":
        msg = "unknown key"
    elif "input" in first and not isinstance(first["input"], dict | list):
        msg += f", got {str(first['input'])[:40]!r}"
    return ConfigError(f"{msg} ({len(e.errors())} problem(s) in total)", path=path, field=loc)


def load_cluster_file(path: str | Path) -> Cluster:
    p = Path(path)
    data = read_structured(p)
    try:
        cfg = ClusterConfig.model_validate(data)
    except ValidationError as e:
        raise validation_error(e, str(p)) from None
    try:
        cluster = cfg.build()
    except ConfigError as e:
        raise ConfigError(e.reason, path=str(p), field=e.field) from None
    except ValueError as e:
        raise ConfigError(str(e), path=str(p)) from None
    if cfg.tenants is not None:
        from ddlsched.cluster.tenants import attach, parse_tenants

        cluster = attach(cluster, parse_tenants(cfg.tenants, cluster, str(p)))
    return cluster
