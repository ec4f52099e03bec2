"""Reference and ideal iteration times: how trace durations become work, and the lower bound on run time.

Defined once for every execution model (``docs/metrics.md``):

* **reference iteration** of a job of n workers = its compute time on a reference-speed GPU (the profiles'
  ``compute_ms``, speed 1.0) + its communication alone on the type-agnostic consolidated placement
  (``Cluster.consolidated_gpus(n)``). A trace *duration* is read as that many seconds of reference iterations,
  so ``work = duration / reference iteration``. This depends on the cluster's servers, never on the order in
  which GPU types are declared.
* **ideal iteration** = the fastest, over speed thresholds s of the job's model on the cluster's GPU types and
  NIC-speed thresholds b, of compute at speed s + communication alone on the consolidated placement among the
  servers whose type runs the model at ≥ s and whose NIC is ≥ b. It is a lower bound on every placement's
  iteration time: a placement computes at the speed of its slowest type, and communicates no faster than the
  consolidated placement on servers at least as fast in both respects (it is one of the candidates' sets).
  This assumes a server's internal links are at least as fast as its NIC (``Cluster.build`` checks it).
  A job larger than every rack also has its communication taken over the other spanning placements of
  ``Cluster.spanning_candidates`` (racks by uplink capacity or size, servers in id order): on racks of unequal
  size with oversubscribed uplinks the largest servers anywhere are not always the fastest set. For such jobs the
  bound is the best of these candidates, checked against random placements by the tests, not proven.

The caller supplies the model's physics: ``speed(gpu_type)`` and ``comm(gpus)`` (communication of one iteration
alone on those GPUs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ddlsched.cluster.topology import Cluster


@dataclass(frozen=True, slots=True)
class IdealTimes:
    reference_iter_s: float  # compute at speed 1.0 + communication on the consolidated placement
    compute_s: float  # ideal iteration's compute part
    comm_s: float  # ideal iteration's communication part

    @property
    def iter_s(self) -> float:
        return self.compute_s + self.comm_s


def ideal_times(cluster: Cluster, n: int, compute_ref_s: float, speed: Callable[[str], float],
                comm: Callable[[Sequence[int]], float]) -> IdealTimes | None:
    """Reference and ideal iteration of an ``n``-worker job (see the module docstring); ``None`` if n > GPUs."""
    ref = cluster.consolidated_gpus(n)
    if ref is None:
        return None
    reference = compute_ref_s + comm(ref)
    best: tuple[float, float, float] | None = None
    speeds = {t: speed(t) for t in cluster.gpu_types}
    nics = sorted({cluster.nic_Bps(s) for s in range(cluster.num_servers)}, reverse=True) if n > 1 else [0.0]
    for s in sorted(set(speeds.values()), reverse=True):
        allowed = {t for t, v in speeds.items() if v >= s}
        for b in nics:
            gpus = cluster.consolidated_gpus(n, types=allowed, min_nic_Bps=b)
            if gpus is None:
                continue
            candidates = [gpus]
            if len(cluster.racks_of(gpus)) > 1:
                candidates += cluster.spanning_candidates(n, types=allowed, min_nic_Bps=b)
            for cand in candidates:
                slowest = min(speeds[cluster.gpu_type[g]] for g in cand)
                c, m = compute_ref_s / slowest, comm(cand)
                if best is None or c + m < best[0]:
                    best = (c + m, c, m)
    assert best is not None  # the threshold that admits every type always fits (ref exists)
    return IdealTimes(reference, best[1], best[2])
