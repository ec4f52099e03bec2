"""Locality levels and tightest placements for network-sensitive scheduling (docs/policies/delay-sched.md §2,
docs/policies/delay-sched.md §3 [I]).

Levels: **L0** every worker in one server, **L1** several servers of one rack, **L2** across racks.

``tightest(alloc, n, max_level)`` returns the tightest placement no looser than ``max_level``:

* L0 — best-fit server (fewest free GPUs that still hold the job);
* L1 — the rack needing the fewest servers (most-free servers first), ties → the rack with the fewest free
  GPUs (best fit, to limit fragmentation), then lowest id;
* L2 — racks by most free, servers by most free inside each (fewest racks, then fewest servers, greedily).
"""

from __future__ import annotations

from collections.abc import Sequence

from ddlsched.cluster.topology import Cluster
from ddlsched.engine.allocation import FreeIndex

L0, L1, L2 = 0, 1, 2


def placement_level(cluster: Cluster, gpus: Sequence[int]) -> int:
    if len(cluster.servers_of(gpus)) <= 1:
        return L0
    return L1 if len(cluster.racks_of(gpus)) <= 1 else L2


def best_level(cluster: Cluster, n: int) -> int:
    """The tightest level a job of ``n`` GPUs can ever get."""
    if n <= cluster.max_gpus_per_server:
        return L0
    per_rack = max(sum(len(cluster.server_gpus[s]) for s in servers) for servers in cluster.rack_servers)
    return L1 if n <= per_rack else L2


def worst_gpus(cluster: Cluster, n: int) -> list[int]:
    """The loosest placement of ``n`` GPUs: one GPU per server, servers dealt round-robin over the racks
    (wrapping to a second GPU per server only when ``n`` exceeds the number of servers)."""
    order: list[int] = []
    depth = max(len(s) for s in cluster.rack_servers)
    for k in range(depth):
        for servers in cluster.rack_servers:
            if k < len(servers):
                order.append(servers[k])
    out: list[int] = []
    slot = 0
    while len(out) < n:
        for s in order:
            gpus = cluster.server_gpus[s]
            if slot < len(gpus):
                out.append(gpus[slot])
                if len(out) == n:
                    break
        slot += 1
        if slot > cluster.max_gpus_per_server:
            raise ValueError(f"{n} GPUs exceed the cluster")
    return out


_MIN_SERVERS: dict[tuple[int, int], tuple[Cluster, int]] = {}


def min_servers(cluster: Cluster, n: int) -> int:
    """The fewest servers of one rack that can hold ``n`` GPUs on the empty cluster (largest servers first); the
    number of servers of the whole cluster if no rack can."""
    key = (id(cluster), n)
    hit = _MIN_SERVERS.get(key)
    if hit is not None and hit[0] is cluster:
        return hit[1]
    best = cluster.num_servers
    for servers in cluster.rack_servers:
        sizes = sorted((len(cluster.server_gpus[s]) for s in servers), reverse=True)
        acc = 0
        for k, size in enumerate(sizes, start=1):
            acc += size
            if acc >= n:
                best = min(best, k)
                break
    _MIN_SERVERS[key] = (cluster, best)
    return best


def _take(alloc: FreeIndex, servers: Sequence[int], n: int) -> list[int]:
    out: list[int] = []
    for s in servers:
        out.extend(alloc.free_gpus(s)[: n - len(out)])
        if len(out) == n:
            break
    return out


def tightest(alloc: FreeIndex, n: int, max_level: int, cluster: Cluster,
             packed: bool = False) -> tuple[list[int], int] | None:
    """The tightest free placement of ``n`` GPUs at level ≤ ``max_level`` (see module docstring).
    ``packed``: an L1 placement must use the fewest servers any rack of the empty cluster could hold the job on
    (:func:`min_servers`; ⌈n / GPUs per server⌉ on uniform servers, YARN-CS)."""
    if n > alloc.num_free:
        return None
    s = alloc.best_fit_server(n)
    if s is not None:
        return alloc.free_gpus(s)[:n], L0
    if max_level < L1:
        return None
    best: tuple[int, int, int, list[int]] | None = None
    count = alloc.free_counts()
    for r, servers in enumerate(cluster.rack_servers):
        total = 0
        for x in servers:  # a plain loop, not sum(map(...)): native when compiled
            total += count[x]
        if total < n:
            continue
        # servers with free GPUs, most free first, then by index: sorting (−free, server) pairs gives that order
        # without a key function (the pairs are distinct, so no tie is left to the sort)
        frees = sorted([(-count[x], x) for x in servers if count[x]])
        acc = k = 0
        while acc < n:
            acc -= frees[k][0]
            k += 1
        key = (k, total, r)
        if best is None or key < best[:3]:
            best = (k, total, r, [x for _, x in frees[:k]])
    if best is not None and (not packed or best[0] <= min_servers(cluster, n)):
        return _take(alloc, best[3], n), L1
    if max_level < L2:
        return None
    racks = sorted(range(cluster.num_racks),
                   key=lambda r: (-sum(map(count.__getitem__, cluster.rack_servers[r])), r))
    order: list[int] = []
    for r in racks:
        order.extend(sorted((x for x in cluster.rack_servers[r] if count[x]), key=lambda x: (-count[x], x)))
    gpus = _take(alloc, order, n)
    return (gpus, placement_level(cluster, gpus)) if len(gpus) == n else None
