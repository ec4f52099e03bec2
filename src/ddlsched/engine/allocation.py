"""Free-GPU bookkeeping.

:class:`FreeGPUs` is the engine's live record of which GPUs hold no job. Servers are indexed by their free
count in bitmask *buckets* (bit s of ``bucket[k]`` is set iff server s has exactly k free GPUs), so the
placement questions asked on every scheduling pass — "lowest server with ≥ n free", "server with the most
free" — cost O(max GPUs per server) big-int operations instead of a scan over all servers.

:class:`Allocation` is a copy-on-write overlay a policy plans with during one scheduling pass: it can take
and release GPUs tentatively without touching the engine; the engine applies the decisions afterwards.

``for_mem(mb)`` narrows either index to the GPUs with at least ``mb`` MB of memory (a job's per-GPU need), so
every placement strategy answers the same questions on a mixed-memory cluster without knowing about memory; on
a cluster where every GPU is large enough it is the index itself (no cost).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ddlsched._mypyc import mypyc_attr
from ddlsched.cluster.topology import Cluster


def _bits(mask: int) -> Iterator[int]:
    """Indices of the set bits of ``mask``, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


@mypyc_attr(allow_interpreted_subclasses=True)
class FreeIndex:
    """Shared logic of the live index and the overlay: counts, buckets and per-server free sets."""

    cluster: Cluster
    _gpu_server: list[int]  # the cluster's GPU → server list, held here (the cluster is an interpreted class)
    _count: list[int]
    _bucket: list[int]
    _num_free: int
    changes: int = 0  # takes and releases so far (the live index's): equal counts, the same free GPUs

    def _sets(self, server: int) -> set[int]:  # pragma: no cover - overridden
        raise NotImplementedError

    def _own_set(self, server: int) -> set[int]:  # pragma: no cover - overridden
        raise NotImplementedError

    # -- queries ----------------------------------------------------------------------------
    @property
    def num_free(self) -> int:
        return self._num_free

    def free_count(self, server: int) -> int:
        return self._count[server]

    def free_counts(self) -> list[int]:
        """Free GPUs per server, indexed by server (the index's own list: read it, never change it; valid until
        the next take or release)."""
        return self._count

    def free_gpus(self, server: int) -> list[int]:
        return sorted(self._sets(server))

    def is_free(self, gpu: int) -> bool:
        return gpu in self._sets(self._gpu_server[gpu])

    def best_fit_server(self, n: int) -> int | None:
        """Lowest-id server among those with the fewest free GPUs that are still ≥ n."""
        for k in range(n, len(self._bucket)):
            mask = self._bucket[k]
            if mask:
                return (mask & -mask).bit_length() - 1
        return None

    def servers_with_free(self) -> Iterator[int]:
        """Servers with at least one free GPU, lowest id first."""
        mask = 0
        for k in range(1, len(self._bucket)):
            mask |= self._bucket[k]
        return _bits(mask)

    def servers_by_most_free(self) -> Iterator[int]:
        """Servers with free GPUs, most free first (ties: lowest id)."""
        for k in range(len(self._bucket) - 1, 0, -1):
            yield from _bits(self._bucket[k])

    def all_free_gpus(self) -> list[int]:
        out: list[int] = []
        for s in self.servers_with_free():
            out.extend(sorted(self._sets(s)))
        return out

    def for_mem(self, mem_mb: float) -> FreeIndex:
        """This index restricted to GPUs with ≥ ``mem_mb`` MB (itself when every GPU has that much)."""
        hidden = self.memory().hidden(mem_mb)
        return self if not hidden else MemoryFiltered(self, hidden)

    def memory(self) -> GPUMemory:  # pragma: no cover - overridden
        raise NotImplementedError

    # -- updates ----------------------------------------------------------------------------
    def _move(self, server: int, delta: int) -> None:
        old = self._count[server]
        new = old + delta
        bit = 1 << server
        self._bucket[old] ^= bit  # set there (server s has ``old`` free), clear in ``new``: XOR moves it
        self._bucket[new] ^= bit
        self._count[server] = new
        self._num_free += delta

    def take(self, gpus: Iterable[int]) -> None:
        gs, count, bucket = self._gpu_server, self._count, self._bucket
        for g in gpus:  # _move(s, -1), inlined: this runs for every GPU of every start
            s = gs[g]
            free = self._own_set(s)
            if g not in free:
                raise ValueError(f"GPU {g} is not free")
            free.remove(g)
            old = count[s]
            bit = 1 << s
            bucket[old] ^= bit  # the server's bit moves from bucket old to old − 1 (see _move)
            bucket[old - 1] ^= bit
            count[s] = old - 1
            self._num_free -= 1
        self.changes += 1

    def release(self, gpus: Iterable[int]) -> None:
        gs, count, bucket = self._gpu_server, self._count, self._bucket
        for g in gpus:  # _move(s, +1), inlined
            s = gs[g]
            free = self._own_set(s)
            if g in free:
                raise ValueError(f"GPU {g} is already free")
            free.add(g)
            old = count[s]
            bit = 1 << s
            bucket[old] ^= bit
            bucket[old + 1] ^= bit
            count[s] = old + 1
            self._num_free += 1
        self.changes += 1


@mypyc_attr(allow_interpreted_subclasses=True)
class FreeGPUs(FreeIndex):
    """The engine's live free-GPU index (all GPUs free at the start)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._gpu_server = cluster.gpu_server
        self._free = [set(gpus) for gpus in cluster.server_gpus]
        self._count = [len(g) for g in cluster.server_gpus]
        self._bucket = [0] * (cluster.max_gpus_per_server + 1)
        for s, c in enumerate(self._count):
            self._bucket[c] |= 1 << s
        self._num_free = cluster.num_gpus
        self._mem = GPUMemory(cluster)

    def _sets(self, server: int) -> set[int]:
        return self._free[server]

    def _own_set(self, server: int) -> set[int]:
        return self._free[server]

    def memory(self) -> GPUMemory:
        return self._mem

    def overlay(self) -> Allocation:
        return Allocation(self)


@mypyc_attr(allow_interpreted_subclasses=True)
class Allocation(FreeIndex):
    """A tentative, copy-on-write view of :class:`FreeGPUs` for planning one scheduling pass.

    Made on every pass, so it copies nothing in proportion to the cluster: a server's free set is copied when the
    pass first takes or releases one of its GPUs (``_touched``), and its free count is then that set's size; the
    other servers' counts are read from the base's list, which this overlay never writes. Only the buckets (one
    int per possible free count) are copied."""

    def __init__(self, base: FreeGPUs) -> None:
        self.cluster = base.cluster
        self._gpu_server = base._gpu_server
        self._base = base
        self._count = base._count  # the base's list, read-only here (see the class docstring)
        self._bucket = list(base._bucket)
        self._num_free = base._num_free
        self._touched: dict[int, set[int]] = {}
        self._counts: list[int] | None = None  # free_counts() with the touched servers, until the next move
        self.taken: list[int] = []

    def free_count(self, server: int) -> int:
        own = self._touched.get(server)
        return self._count[server] if own is None else len(own)

    def free_counts(self) -> list[int]:
        if not self._touched:
            return self._count
        counts = self._counts
        if counts is None:
            counts = list(self._count)
            for s, own in self._touched.items():
                counts[s] = len(own)
            self._counts = counts
        return counts

    def _move(self, server: int, delta: int) -> None:  # pragma: no cover - the overlay books through _book
        raise NotImplementedError("an Allocation's counts follow its touched sets; use take/release")

    def _book(self, gpus: list[int], delta: int) -> None:
        gs, bucket = self._gpu_server, self._bucket
        for g in gpus:
            s = gs[g]
            free = self._own_set(s)
            if delta < 0:
                if g not in free:
                    raise ValueError(f"GPU {g} is not free")
                free.remove(g)
            else:
                if g in free:
                    raise ValueError(f"GPU {g} is already free")
                free.add(g)
            new = len(free)
            bit = 1 << s
            bucket[new - delta] ^= bit  # from the bucket of its old count to its new one (see FreeIndex._move)
            bucket[new] ^= bit
            self._num_free += delta
        self._counts = None

    def _sets(self, server: int) -> set[int]:
        own = self._touched.get(server)
        return own if own is not None else self._base._free[server]

    def _own_set(self, server: int) -> set[int]:
        own = self._touched.get(server)
        if own is None:
            own = set(self._base._free[server])
            self._touched[server] = own
        return own

    def memory(self) -> GPUMemory:
        return self._base._mem

    def take(self, gpus: Iterable[int]) -> None:
        gpus = list(gpus)
        self._book(gpus, -1)
        self.taken.extend(gpus)

    def release(self, gpus: Iterable[int]) -> None:
        self._book(list(gpus), 1)


@mypyc_attr(allow_interpreted_subclasses=True)
class GPUMemory:
    """Which GPUs are too small for a per-GPU memory need (cached per need; most clusters have one size)."""

    def __init__(self, cluster: Cluster) -> None:
        self._mem = [cluster.gpu_mem_mb(g) for g in range(cluster.num_gpus)]
        self._server = cluster.gpu_server
        self._min = min(self._mem, default=0.0)
        self._cache: dict[float, dict[int, frozenset[int]]] = {}

    def count_at_least(self, mem_mb: float) -> int:
        """How many GPUs have at least ``mem_mb`` MB."""
        return len(self._mem) if mem_mb <= self._min else sum(m >= mem_mb for m in self._mem)

    def hides_any(self, mem_mb: float) -> bool:
        """Whether some GPU has less than ``mem_mb`` MB (``for_mem(mem_mb)`` is then not the index itself)."""
        return mem_mb > self._min

    def hidden(self, mem_mb: float) -> dict[int, frozenset[int]]:
        """Per server, its GPUs with less than ``mem_mb`` MB (empty when every GPU is large enough)."""
        if mem_mb <= self._min:
            return {}
        out = self._cache.get(mem_mb)
        if out is None:
            by_server: dict[int, set[int]] = {}
            for g, m in enumerate(self._mem):
                if m < mem_mb:
                    by_server.setdefault(self._server[g], set()).add(g)
            out = self._cache[mem_mb] = {s: frozenset(gs) for s, gs in by_server.items()}
        return out


@mypyc_attr(allow_interpreted_subclasses=True)
class MemoryFiltered(FreeIndex):
    """A view of another index without the GPUs that are too small for one job; taking and releasing go
    through to the underlying index (so a placement planned here is booked there)."""

    def __init__(self, parent: FreeIndex, hidden: dict[int, frozenset[int]]) -> None:
        self.cluster = parent.cluster
        self._gpu_server = parent._gpu_server
        self._parent, self._hidden = parent, hidden
        self._count = list(parent.free_counts())
        self._bucket = list(parent._bucket)
        self._num_free = parent._num_free
        for s in hidden:
            self._refresh(s)

    def _refresh(self, server: int) -> None:
        self._move(server, len(self._sets(server)) - self._count[server])

    def _sets(self, server: int) -> set[int]:
        hidden = self._hidden.get(server)
        base = self._parent._sets(server)
        return base - hidden if hidden else base

    def memory(self) -> GPUMemory:
        return self._parent.memory()

    def take(self, gpus: Iterable[int]) -> None:
        gpus = list(gpus)
        self._parent.take(gpus)
        for s in {self._gpu_server[g] for g in gpus}:
            self._refresh(s)

    def release(self, gpus: Iterable[int]) -> None:
        gpus = list(gpus)
        self._parent.release(gpus)
        for s in {self._gpu_server[g] for g in gpus}:
            self._refresh(s)
