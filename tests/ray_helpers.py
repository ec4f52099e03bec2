"""A two-node Ray cluster on localhost for the tests that run the Ray executor (one per module)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ddlsched.cluster.topology import Cluster
from ddlsched.live.localray import LocalRayCluster
from ddlsched.live.ray_executor import node_resources

REPO = Path(__file__).resolve().parents[1]


@contextmanager
def ray_cluster_of(cluster: Cluster) -> Iterator[LocalRayCluster]:
    """One `ray start` node per server of ``cluster`` (this checkout's ``src`` on the workers' path); on exit every
    process of the nodes is stopped, and any left running fails the test."""
    lr = LocalRayCluster([node_resources(cluster, s) for s in range(cluster.num_servers)],
                         env={"PYTHONPATH": str(REPO / "src")})
    lr.start()
    try:
        yield lr
    finally:
        left = lr.stop()
        assert left == [], f"Ray processes left running: {left}"
