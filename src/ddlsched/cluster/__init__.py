"""Cluster topology: GPU types, GPUs, servers, racks and the links between them."""

from ddlsched.cluster.presets import PRESETS, load_cluster
from ddlsched.cluster.topology import Cluster, GPUType, Link, LinkKind

__all__ = ["PRESETS", "Cluster", "GPUType", "Link", "LinkKind", "load_cluster"]
