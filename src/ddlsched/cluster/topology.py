"""Cluster topology: GPU types → GPUs → servers → racks, and the links a ring all-reduce crosses.

The network is a two-level tree (docs/physics.md §1, docs/policies/delay-sched.md §2):

* every GPU has an intra-server egress link (NVLink/PCIe), used by ring hops between GPUs of one server;
* every server has a full-duplex NIC: a transmit link and a receive link;
* every rack has a full-duplex uplink to the spine whose capacity is the sum of its servers' NIC
  capacities divided by the oversubscription ratio. A single-rack cluster has no uplinks.

A ring hop from GPU a to GPU b crosses:

* same server: ``gpu_tx[a]``;
* same rack:   ``nic_tx[server(a)]``, ``nic_rx[server(b)]``;
* other rack:  ``nic_tx[server(a)]``, ``rack_up[rack(a)]``, ``rack_down[rack(b)]``, ``nic_rx[server(b)]``.

Capacities are stored in bytes per second; configuration files speak Gbit/s.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import Any

GBIT = 1e9 / 8.0  # bytes per second in one Gbit/s


class LinkKind(StrEnum):
    GPU_TX = "gpu_tx"
    NIC_TX = "nic_tx"
    NIC_RX = "nic_rx"
    RACK_UP = "rack_up"
    RACK_DOWN = "rack_down"


@dataclass(frozen=True, slots=True)
class GPUType:
    """A GPU model. ``speed`` is its default compute speed relative to the reference type (1.0)."""

    name: str
    mem_mb: float
    speed: float = 1.0


@dataclass(frozen=True, slots=True)
class Link:
    link_id: int
    name: str
    kind: LinkKind
    capacity_Bps: float


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """Input description of one server (used to build a :class:`Cluster`)."""

    num_gpus: int
    gpu_type: str
    nic_gbps: float


@dataclass
class Cluster:
    """An immutable-after-build description of GPUs, servers, racks and links.

    Build one with :meth:`Cluster.build` (or a preset / config file, see ``presets.py`` and ``config.py``).
    GPU, server and rack ids are dense integers starting at 0; GPUs of a server are contiguous.
    """

    name: str
    gpu_types: dict[str, GPUType]
    gpu_server: list[int]
    gpu_type: list[str]
    server_rack: list[int]
    server_gpus: list[tuple[int, ...]]
    rack_servers: list[tuple[int, ...]]
    links: list[Link]
    intra_gbps: float
    oversubscription: float
    hop_latency_s: float = 0.0
    _gpu_tx: list[int] = field(default_factory=list, repr=False)
    _nic_tx: list[int] = field(default_factory=list, repr=False)
    _nic_rx: list[int] = field(default_factory=list, repr=False)
    _rack_up: list[int] = field(default_factory=list, repr=False)
    _rack_down: list[int] = field(default_factory=list, repr=False)
    tenants: Any = field(default=None, repr=False, compare=False)  # ddlsched.cluster.tenants.TenantSet

    # ------------------------------------------------------------------ construction
    @classmethod
    def build(
        cls,
        name: str,
        racks: Sequence[Sequence[ServerSpec]],
        gpu_types: dict[str, GPUType],
        *,
        intra_gbps: float = 1200.0,
        oversubscription: float = 1.0,
        hop_latency_s: float = 0.0,
    ) -> Cluster:
        if not racks or not any(racks):
            raise ValueError("a cluster needs at least one rack with at least one server")
        if oversubscription <= 0:
            raise ValueError("oversubscription must be > 0")
        if intra_gbps <= 0:
            raise ValueError("intra-server bandwidth must be > 0")
        gpu_server: list[int] = []
        gpu_type: list[str] = []
        server_rack: list[int] = []
        server_gpus: list[tuple[int, ...]] = []
        rack_servers: list[tuple[int, ...]] = []
        nic_caps: list[float] = []
        for r, servers in enumerate(racks):
            ids = []
            for spec in servers:
                if spec.num_gpus <= 0:
                    raise ValueError(f"rack {r}: a server needs at least one GPU")
                if spec.gpu_type not in gpu_types:
                    raise ValueError(f"rack {r}: unknown GPU type {spec.gpu_type!r}")
                if spec.nic_gbps <= 0:
                    raise ValueError(f"rack {r}: NIC bandwidth must be > 0")
                if spec.nic_gbps > intra_gbps and spec.num_gpus > 1:
                    raise ValueError(f"rack {r}: a NIC of {spec.nic_gbps:g} Gb/s is faster than the intra-server links "
                                     f"({intra_gbps:g} Gb/s); the physics assumes a server's own links are at least "
                                     "as fast as its NIC (consolidation is never slower than spreading)")
                s = len(server_rack)
                ids.append(s)
                server_rack.append(r)
                first = len(gpu_server)
                server_gpus.append(tuple(range(first, first + spec.num_gpus)))
                gpu_server.extend([s] * spec.num_gpus)
                gpu_type.extend([spec.gpu_type] * spec.num_gpus)
                nic_caps.append(spec.nic_gbps * GBIT)
            rack_servers.append(tuple(ids))

        links: list[Link] = []

        def add(kind: LinkKind, label: str, cap: float) -> int:
            links.append(Link(len(links), label, kind, cap))
            return len(links) - 1

        gpu_tx = [add(LinkKind.GPU_TX, f"gpu{g}.tx", intra_gbps * GBIT) for g in range(len(gpu_server))]
        nic_tx = [add(LinkKind.NIC_TX, f"server{s}.nic.tx", c) for s, c in enumerate(nic_caps)]
        nic_rx = [add(LinkKind.NIC_RX, f"server{s}.nic.rx", c) for s, c in enumerate(nic_caps)]
        rack_up: list[int] = []
        rack_down: list[int] = []
        if len(rack_servers) > 1:
            for r, ids in enumerate(rack_servers):
                cap = sum(nic_caps[s] for s in ids) / oversubscription
                rack_up.append(add(LinkKind.RACK_UP, f"rack{r}.up", cap))
                rack_down.append(add(LinkKind.RACK_DOWN, f"rack{r}.down", cap))
        return cls(
            name=name, gpu_types=dict(gpu_types), gpu_server=gpu_server, gpu_type=gpu_type,
            server_rack=server_rack, server_gpus=server_gpus, rack_servers=rack_servers, links=links,
            intra_gbps=intra_gbps, oversubscription=oversubscription, hop_latency_s=hop_latency_s,
            _gpu_tx=gpu_tx, _nic_tx=nic_tx, _nic_rx=nic_rx, _rack_up=rack_up, _rack_down=rack_down,
        )

    # ------------------------------------------------------------------ sizes
    @property
    def num_gpus(self) -> int:
        return len(self.gpu_server)

    @property
    def num_servers(self) -> int:
        return len(self.server_gpus)

    @property
    def num_racks(self) -> int:
        return len(self.rack_servers)

    @cached_property
    def max_gpus_per_server(self) -> int:
        return max(len(g) for g in self.server_gpus)

    def gpu_mem_mb(self, gpu: int) -> float:
        return self.gpu_types[self.gpu_type[gpu]].mem_mb

    def nic_Bps(self, server: int) -> float:
        return self.links[self._nic_tx[server]].capacity_Bps

    # ------------------------------------------------------------------ link ids
    def gpu_tx_link(self, gpu: int) -> int:
        return self._gpu_tx[gpu]

    def nic_tx_link(self, server: int) -> int:
        return self._nic_tx[server]

    def nic_rx_link(self, server: int) -> int:
        return self._nic_rx[server]

    def rack_up_link(self, rack: int) -> int:
        return self._rack_up[rack]

    def rack_down_link(self, rack: int) -> int:
        return self._rack_down[rack]

    # ------------------------------------------------------------------ paths and rings
    def path(self, src_gpu: int, dst_gpu: int) -> tuple[int, ...]:
        """Link ids crossed by data sent from ``src_gpu`` to ``dst_gpu`` (see the module docstring)."""
        s_a, s_b = self.gpu_server[src_gpu], self.gpu_server[dst_gpu]
        if s_a == s_b:
            return (self._gpu_tx[src_gpu],)
        r_a, r_b = self.server_rack[s_a], self.server_rack[s_b]
        if r_a == r_b:
            return (self._nic_tx[s_a], self._nic_rx[s_b])
        return (self._nic_tx[s_a], self._rack_up[r_a], self._rack_down[r_b], self._nic_rx[s_b])

    def ring_order(self, gpus: Sequence[int]) -> list[int]:
        """The ring a job's workers form: GPUs grouped by rack, then server, so each server is visited once."""
        return sorted(gpus, key=lambda g: (self.server_rack[self.gpu_server[g]], self.gpu_server[g], g))

    def ring_hops(self, gpus: Sequence[int]) -> list[tuple[int, ...]]:
        """The path of every hop of the job's ring (empty for a single worker)."""
        if len(gpus) <= 1:
            return []
        ring = self.ring_order(gpus)
        return [self.path(ring[i], ring[(i + 1) % len(ring)]) for i in range(len(ring))]

    def servers_of(self, gpus: Sequence[int]) -> set[int]:
        return {self.gpu_server[g] for g in gpus}

    def racks_of(self, gpus: Sequence[int]) -> set[int]:
        return {self.server_rack[self.gpu_server[g]] for g in gpus}

    # ------------------------------------------------------------------ reference placements
    def consolidated_gpus(self, n: int, gpu_type: str | None = None, types: Collection[str] | None = None,
                          min_nic_Bps: float = 0.0) -> list[int] | None:
        """GPUs an isolated job of ``n`` workers would get on an empty cluster: fewest servers,
        all inside one rack where possible (largest servers first). Only servers of ``gpu_type`` (or of one of
        ``types``) and with a NIC of at least ``min_nic_Bps`` when given. ``None`` if ``n`` exceeds those GPUs.
        Depends on the servers' order, never on the order in which GPU types are declared."""
        def ok(s: int) -> bool:
            t = self.gpu_type[self.server_gpus[s][0]]
            return ((gpu_type is None or t == gpu_type) and (types is None or t in types)
                    and self.nic_Bps(s) >= min_nic_Bps)

        best: list[int] | None = None
        for servers in self.rack_servers:
            chosen = self._take_largest([s for s in servers if ok(s)], n)
            if chosen is not None and (best is None or len(self.servers_of(chosen)) < len(self.servers_of(best))):
                best = chosen
        if best is None:
            best = self._take_largest([s for s in range(self.num_servers) if ok(s)], n)
        return best

    def spanning_candidates(self, n: int, types: Collection[str] | None = None,
                            min_nic_Bps: float = 0.0) -> list[list[int]]:
        """Further placements of ``n`` GPUs over several racks that the ideal run time considers besides
        :meth:`consolidated_gpus` (which takes the largest servers anywhere): racks by uplink capacity, racks
        by eligible GPUs, and servers in id order; inside a rack, fastest NIC then largest server first."""
        def ok(s: int) -> bool:
            t = self.gpu_type[self.server_gpus[s][0]]
            return (types is None or t in types) and self.nic_Bps(s) >= min_nic_Bps

        eligible = [[s for s in servers if ok(s)] for servers in self.rack_servers]
        size = [sum(len(self.server_gpus[s]) for s in ss) for ss in eligible]
        if len(self.rack_servers) < 2 or sum(size) < n:
            return []
        up = [self.links[self._rack_up[r]].capacity_Bps for r in range(len(eligible))]
        out: list[list[int]] = []
        for key in (lambda r: (-up[r], -size[r], r), lambda r: (-size[r], -up[r], r)):
            servers = [s for r in sorted(range(len(eligible)), key=key)
                       for s in sorted(eligible[r], key=lambda s: (-self.nic_Bps(s), -len(self.server_gpus[s]), s))]
            out.append(self._fill(servers, n))
        out.append(self._fill([s for ss in eligible for s in ss], n))
        return out

    def _fill(self, servers: Sequence[int], n: int) -> list[int]:
        chosen: list[int] = []
        for s in servers:
            chosen.extend(self.server_gpus[s][: n - len(chosen)])
            if len(chosen) == n:
                break
        return chosen

    def _take_largest(self, servers: list[int], n: int) -> list[int] | None:
        order = sorted(servers, key=lambda s: (-len(self.server_gpus[s]), s))
        if sum(len(self.server_gpus[s]) for s in order) < n:
            return None
        # one server suffices: the smallest server that holds the job (best fit)
        fitting = [s for s in order if len(self.server_gpus[s]) >= n]
        if fitting:
            s = min(fitting, key=lambda s: (len(self.server_gpus[s]), s))
            return list(self.server_gpus[s][:n])
        chosen: list[int] = []
        for s in order:
            chosen.extend(self.server_gpus[s][: n - len(chosen)])
            if len(chosen) == n:
                break
        return chosen

    def describe(self) -> str:
        types = {}
        for t in self.gpu_type:
            types[t] = types.get(t, 0) + 1
        mix = ", ".join(f"{c}×{t}" for t, c in sorted(types.items()))
        nic = sorted({round(self.nic_Bps(s) / GBIT, 3) for s in range(self.num_servers)})
        return (f"{self.name}: {self.num_gpus} GPUs ({mix}) in {self.num_servers} servers, "
                f"{self.num_racks} rack(s); NIC {'/'.join(f'{x:g}' for x in nic)} Gb/s; "
                f"uplink oversubscription {self.oversubscription:g}:1")
