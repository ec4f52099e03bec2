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
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.errors import ConfigError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NetworkConfig(_Strict):
    intra_server_gbps: float = Field(1200.0, gt=0, description="per-GPU NVLink/PCIe egress, Gbit/s")
    nic_gbps: float = Field(25.0, gt=0, description="default server NIC, Gbit/s per direction")
    oversubscription: float = Field(1.0, gt=0, description="rack uplink = Σ NIC / this")
    hop_latency_us: float = Field(0.0, ge=0, description="per ring step latency α, microseconds")


class GPUTypeConfig(_Strict):
    mem_gb: float = Field(gt=0)
    speed: float = Field(1.0, gt=0)


class ServerGroupConfig(_Strict):
    count: int = Field(1, ge=1)
    gpus: int = Field(ge=1)
    gpu_type: str
    nic_gbps: float | None = Field(None, gt=0)


class RackGroupConfig(_Strict):
    count: int = Field(1, ge=1)
    servers: list[ServerGroupConfig] = Field(min_length=1)


class ClusterConfig(_Strict):
    name: str = "cluster"
    network: NetworkConfig = NetworkConfig()
    gpu_types: dict[str, GPUTypeConfig] = Field(min_length=1)
    racks: list[RackGroupConfig] = Field(min_length=1)

    def build(self) -> Cluster:
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


def read_structured(path: Path) -> dict[str, Any]:
    """Read a YAML or TOML file into a dict, with errors naming the file (and line for YAML)."""
    try:
        text = path.read_text()
    except OSError as e:
        raise ConfigError(f"cannot read: {e.strerror}", path=str(path)) from e
    try:
        if path.suffix.lower() == ".toml":
            data = tomllib.loads(text)
        else:
            data = yaml.safe_load(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"invalid TOML: {e}", path=str(path)) from e
    except yaml.YAMLError as e:
        line = getattr(getattr(e, "problem_mark", None), "line", None)
        raise ConfigError(f"invalid YAML: {e}", path=str(path),
                          line=None if line is None else line + 1) from e
    if not isinstance(data, dict):
        raise ConfigError("expected a mapping at the top level", path=str(path))
    return data


def validation_error(e: ValidationError, path: str) -> ConfigError:
    """Turn pydantic's error into one that names the file and the first offending field."""
    first = e.errors()[0]
    loc = ".".join(str(p) for p in first["loc"])
    msg = first["msg"]
    if first["type"] == "extra_forbidden":
        msg = "unknown key"
    return ConfigError(f"{msg} ({len(e.errors())} problem(s) in total)", path=path, field=loc)


def load_cluster_file(path: str | Path) -> Cluster:
    p = Path(path)
    data = read_structured(p)
    try:
        cfg = ClusterConfig.model_validate(data)
    except ValidationError as e:
        raise validation_error(e, str(p)) from None
    try:
        return cfg.build()
    except ConfigError as e:
        raise ConfigError(e.reason, path=str(p), field=e.field) from None
    except ValueError as e:
        raise ConfigError(str(e), path=str(p)) from None
