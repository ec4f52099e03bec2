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
given twice, a cyclic alias and non-UTF-8 bytes are errors naming the file and line.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.errors import ConfigError

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


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, but a key given twice in one mapping is an error (PyYAML keeps the last silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node.start_mark.line + 1)
            except TypeError:  # an unhashable key: PyYAML reports it below
                continue
            if first != key_node.start_mark.line + 1:
                raise ConfigError(f"key {str(key)[:60]!r} given twice (first on line {first})",
                                  line=key_node.start_mark.line + 1, field=str(key)[:60])
        return super().construct_mapping(node, deep=deep)


def _check_acyclic(data: Any, path: str, stack: tuple[int, ...] = ()) -> None:
    """A YAML alias that refers to its own ancestor (``a: &x {b: *x}``) makes a cyclic structure: refuse it."""
    if isinstance(data, dict | list):
        if id(data) in stack:
            raise ConfigError("a cyclic YAML alias (an anchor used inside itself)", path=path)
        for v in data.values() if isinstance(data, dict) else data:
            _check_acyclic(v, path, (*stack, id(data)))


def read_structured(path: Path) -> dict[str, Any]:
    """Read a YAML or TOML file into a dict, with errors naming the file (and line for YAML, decoding, keys
    given twice). Non-UTF-8 bytes, duplicate keys and cyclic aliases are errors."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ConfigError(f"cannot read: {e.strerror}", path=str(path)) from e
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
            data = yaml.load(text, Loader=_UniqueKeyLoader)
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
    _check_acyclic(data, str(path))
    return data


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
