"""Named cluster presets (docs/policies/sjf-bco.md §7, docs/policies/adadual.md §2, docs/policies/delay-sched.md §2,
docs/policies/hare.md §2; docs/physics.md §10).

| preset       | what                                                                    | source (docs/...)      |
|--------------|-------------------------------------------------------------------------|------------------------|
| wang2020     | 16 servers × 4 V100-32GB, 10 GbE, one switch                            | policies/adadual.md §2 |
| yu2022       | 20 servers, GPUs/server ~ U{4,8,16,32} drawn with the seed, 10 GbE      | policies/sjf-bco.md §7 |
| rack256      | 4 racks × 8 servers × 8 GPUs, 25 Gb/s NICs, 4:1 rack uplinks            | delay-sched.md §2 [I]  |
| philly512    | 8 racks × 8 servers × 8 GPUs, 25 Gb/s, 2:1                              | assumption [I]         |
| philly2048   | 32 racks × 8 servers × 8 GPUs, 25 Gb/s, 2:1                             | assumption [I]         |
| philly8192   | 128 racks × 8 servers × 8 GPUs, 25 Gb/s, 2:1 (scaling benchmark)        | assumption [I]         |
| hetero       | 4 GPU types (V100, P100, T4, K80) × 8 GPUs: 8 servers × 4 GPUs, 10 GbE  | policies/hare.md §2    |
| gavel_hetero | 3 racks: 36 V100, 36 P100, 36 K80 servers-of-4, 10 GbE                  | Gavel-style [I]        |
| n8g8         | Muri/SJF-BSBF simulation cluster: 8 servers × 8 GPUs (48 GB), 10 GbE    | gpu-sharing.md §2, §7  |

Sources: `docs/policies/adadual.md` §2, `docs/policies/sjf-bco.md` §7 (the NIC speed is ours),
`docs/policies/delay-sched.md` §2, `docs/policies/hare.md` §2, `docs/policies/gpu-sharing.md` §2 and §7;
[I] = our assumption (docs/physics.md §10).

GPU speeds here are per-type defaults relative to V100; model-specific speed-ups from profiles
override them (see ``ddlsched.workload.profiles``).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.errors import ConfigError

GPU_TYPES: dict[str, GPUType] = {
    "A100": GPUType("A100", 40 * 1024.0, 2.0),
    "V100": GPUType("V100", 32 * 1024.0, 1.0),
    "P100": GPUType("P100", 16 * 1024.0, 0.6),
    "T4": GPUType("T4", 16 * 1024.0, 0.45),
    "K80": GPUType("K80", 12 * 1024.0, 0.25),
    "A6000": GPUType("A6000", 48 * 1024.0, 1.0),
}


def _uniform(name: str, racks: int, servers: int, gpus: int, nic: float, oversub: float,
             gpu: str = "V100") -> Cluster:
    layout = [[ServerSpec(gpus, gpu, nic) for _ in range(servers)] for _ in range(racks)]
    return Cluster.build(name, layout, {gpu: GPU_TYPES[gpu]}, oversubscription=oversub)


def wang2020(seed: int = 0) -> Cluster:
    return _uniform("wang2020", 1, 16, 4, 10.0, 1.0)


def yu2022(seed: int = 0, num_servers: int = 20) -> Cluster:
    rng = random.Random(f"yu2022-{seed}")
    servers = [ServerSpec(rng.choice((4, 8, 16, 32)), "V100", 10.0) for _ in range(num_servers)]
    return Cluster.build(f"yu2022(seed={seed})", [servers], {"V100": GPU_TYPES["V100"]})


def rack256(seed: int = 0) -> Cluster:
    return _uniform("rack256", 4, 8, 8, 25.0, 4.0)


def philly512(seed: int = 0) -> Cluster:
    return _uniform("philly512", 8, 8, 8, 25.0, 2.0)


def philly2048(seed: int = 0) -> Cluster:
    return _uniform("philly2048", 32, 8, 8, 25.0, 2.0)


def philly8192(seed: int = 0) -> Cluster:
    return _uniform("philly8192", 128, 8, 8, 25.0, 2.0)


def hetero(seed: int = 0) -> Cluster:
    types = ("V100", "P100", "T4", "K80")
    servers = [ServerSpec(4, t, 10.0) for t in types for _ in range(2)]
    return Cluster.build("hetero", [servers], {t: GPU_TYPES[t] for t in types})


def gavel_hetero(seed: int = 0) -> Cluster:
    types = ("V100", "P100", "K80")
    racks = [[ServerSpec(4, t, 10.0) for _ in range(9)] for t in types]
    return Cluster.build("gavel_hetero", racks, {t: GPU_TYPES[t] for t in types})


def n8g8(seed: int = 0) -> Cluster:
    return _uniform("n8g8", 1, 8, 8, 10.0, 1.0, gpu="A6000")


PRESETS: dict[str, Callable[..., Cluster]] = {
    "wang2020": wang2020,
    "yu2022": yu2022,
    "rack256": rack256,
    "philly512": philly512,
    "philly2048": philly2048,
    "philly8192": philly8192,
    "hetero": hetero,
    "gavel_hetero": gavel_hetero,
    "n8g8": n8g8,
}


def load_cluster(spec: str | Path, seed: int = 0) -> Cluster:
    """A preset name or a path to a YAML/TOML cluster file."""
    name = str(spec)
    if not name.strip():
        raise ConfigError("the cluster is empty: give a preset name or a .yaml/.toml file", field="cluster")
    if name in PRESETS:
        return PRESETS[name](seed=seed)
    path = Path(name)
    if path.suffix.lower() in (".yaml", ".yml", ".toml") or path.exists():
        from ddlsched.cluster.config import load_cluster_file

        return load_cluster_file(path)
    raise ConfigError(f"unknown cluster {name!r}: not a preset ({', '.join(PRESETS)}) nor a .yaml/.toml file",
                      field="cluster")
