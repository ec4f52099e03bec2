"""Build the emulated cluster: one namespace per server, a two-level bridge fabric, ``tc tbf`` shaped links.

Mapping of the simulator's links (``ddlsched.cluster.topology``) to the emulation:

* server *s* = namespace ``ddl-s<s>`` with ``eth0`` (address 10.77.x.y/16, only inside our namespaces);
* ``nic_tx[s]`` = tbf on ``eth0`` egress (server → its rack switch);
* ``nic_rx[s]`` = tbf on the switch-side port ``ddls<s>`` egress (rack switch → server);
* rack switch *r* = bridge ``ddlbr<r>`` in namespace ``ddl-fab``; the spine = bridge ``ddlbsp`` there;
* ``rack_up[r]`` / ``rack_down[r]`` = tbf on the veth ends ``ddlu<r>`` (rack → spine) / ``ddld<r>`` (spine → rack);
* ``gpu_tx`` (intra-server) = the server namespace's loopback, unshaped.

All rates are the cluster's capacities × ``scale`` (see :func:`scaled_cluster`): the simulator's predictions are
made on the scaled cluster, so emulated and simulated links have identical capacities.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from types import FrameType
from typing import Any

from ddlsched.cluster.topology import GBIT, Cluster, ServerSpec
from ddlsched.testbed.netns import NS_PREFIX, TestbedError, check_prerequisites, read_state, sh, teardown, write_state

FAB_NS = f"{NS_PREFIX}fab"
MAX_SERVERS = 64
QUEUE_BYTES = 2_000_000
QUEUE_MS = float(os.environ.get("DDL_QUEUE_MS", "0"))  # > 0: queue = this many ms at the link rate
SHAPER = os.environ.get("DDL_SHAPER", "htb")


def server_ns(s: int) -> str:
    return f"{NS_PREFIX}s{s}"


def server_ip(s: int) -> str:
    return f"10.77.{s // 200}.{s % 200 + 1}"


def scaled_cluster(cluster: Cluster, *, scale: float | None = None, nic_mbit: float | None = None,
                   hop_latency_s: float | None = None) -> Cluster:
    """The cluster with every capacity × ``scale`` (or scaled so its fastest NIC runs at ``nic_mbit`` Mbit/s)."""
    if scale is None:
        fastest = max(cluster.nic_Bps(s) for s in range(cluster.num_servers)) / GBIT
        scale = (nic_mbit or 100.0) / 1000.0 / fastest
    racks = [[ServerSpec(len(cluster.server_gpus[s]), cluster.gpu_type[cluster.server_gpus[s][0]],
                         cluster.nic_Bps(s) / GBIT * scale) for s in ids] for ids in cluster.rack_servers]
    out = Cluster.build(f"{cluster.name}×{scale:g}", racks, cluster.gpu_types, intra_gbps=cluster.intra_gbps * scale,
                        oversubscription=cluster.oversubscription,
                        hop_latency_s=cluster.hop_latency_s if hop_latency_s is None else hop_latency_s)
    return out


def with_hop_latency(cluster: Cluster, hop_latency_s: float) -> Cluster:
    return replace(cluster, hop_latency_s=hop_latency_s)


def _shape(ns: str, dev: str, capacity_Bps: float, fair_jobs: int = 0) -> None:
    """Shape egress of ``dev`` to ``capacity_Bps``.

    ``htb`` (default): one rate-limited class, inside it a priority class for small packets (TCP ACKs; IP
    length < 128) and a deep byte FIFO for data. Without it the ACKs of one ring hop queue behind the data
    of the opposite hop (a ring sends both ways through every NIC), inflating RTT and starving the window.
    ``tbf``: a plain token bucket with a deep queue (set ``DDL_SHAPER=tbf``; for comparison).
    ``fair_jobs`` > 0 (control experiment, ``--fair``): the data of job i (TCP destination ports
    ``BASE_PORT + 64·i …``) gets its own htb class with equal share and borrowing up to the link rate, i.e. the
    link is shared fairly between jobs instead of FIFO — what the max-min model assumes.
    """
    rate = f"{int(capacity_Bps * 8)}bit"
    # a small bucket (0.5 ms at the rate, ≥ 4 kB): a large one lets each ring step's first bytes through at
    # line rate, which makes short transfers look faster than the link (seen with 25 kB buckets)
    burst = str(max(4_000, int(capacity_Bps * 0.0005)))
    tc = ["tc", "-n", ns]
    if SHAPER == "tbf":
        sh([*tc, "qdisc", "replace", "dev", dev, "root", "tbf", "rate", rate, "burst", burst,
            "limit", str(QUEUE_BYTES)])
        return
    quantum = "1514"
    sh([*tc, "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "20"])
    sh([*tc, "class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate", rate, "ceil", rate,
        "burst", burst, "cburst", burst, "quantum", quantum])
    for cls, prio, share in (("1:10", "0", 0.05), ("1:20", "1", 0.95)):
        sh([*tc, "class", "add", "dev", dev, "parent", "1:1", "classid", cls, "htb",
            "rate", f"{int(capacity_Bps * 8 * share)}bit", "ceil", rate, "burst", burst, "cburst", burst,
            "prio", prio, "quantum", quantum])
    limit = max(64_000, int(capacity_Bps * QUEUE_MS / 1e3)) if QUEUE_MS > 0 else QUEUE_BYTES
    sh([*tc, "qdisc", "add", "dev", dev, "parent", "1:20", "handle", "20:", "bfifo", "limit", str(limit)])
    sh([*tc, "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1", "u32",
        "match", "u16", "0x0000", "0xff80", "at", "2", "flowid", "1:10"])
    from ddlsched.testbed.executor import BASE_PORT, PORT_STRIDE

    for k in range(fair_jobs):
        cls = f"1:{0x100 + k:x}"
        sh([*tc, "class", "add", "dev", dev, "parent", "1:1", "classid", cls, "htb",
            "rate", f"{int(capacity_Bps * 8 * 0.95 / fair_jobs)}bit", "ceil", rate, "burst", burst, "cburst", burst,
            "prio", "1", "quantum", quantum])
        sh([*tc, "qdisc", "add", "dev", dev, "parent", cls, "bfifo", "limit", str(limit)])
        sh([*tc, "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "2", "u32", "match", "ip",
            "dport", str(BASE_PORT + PORT_STRIDE * k), hex(0x10000 - PORT_STRIDE), "flowid", cls])


@dataclass
class Fabric:
    """A running emulation of ``cluster`` (already scaled)."""

    cluster: Cluster
    meta: dict[str, Any] = field(default_factory=dict)  # how to rebuild the scaled cluster (spec, nic_mbit)
    fair_jobs: int = 0  # > 0: per-job fair classes on every link (see _shape)
    namespaces: list[str] = field(default_factory=list)

    def state(self) -> dict[str, Any]:
        c = self.cluster
        return {
            "cluster": c.name, **self.meta, "namespaces": self.namespaces, "pids": [],
            "servers": [{"ns": server_ns(s), "ip": server_ip(s), "rack": c.server_rack[s],
                         "gpus": list(c.server_gpus[s]), "nic_mbit": c.nic_Bps(s) * 8 / 1e6}
                        for s in range(c.num_servers)],
            "uplink_mbit": [c.links[c.rack_up_link(r)].capacity_Bps * 8 / 1e6 for r in range(c.num_racks)]
            if c.num_racks > 1 else [],
        }

    def _add_ns(self, ns: str) -> None:
        self.namespaces.append(ns)
        write_state(self.state())  # record before creating so a crash mid-way is still cleaned up
        sh(["ip", "netns", "add", ns])
        sh(["ip", "-n", ns, "link", "set", "lo", "up"])

    def up(self) -> None:
        c = self.cluster
        if c.num_servers > MAX_SERVERS:
            raise TestbedError(f"{c.num_servers} servers: the testbed emulates at most {MAX_SERVERS}")
        if read_state() is not None:
            raise TestbedError("a testbed is already up (run 'ddlsched testbed down' first)")
        self._add_ns(FAB_NS)
        for r in range(c.num_racks):
            sh(["ip", "-n", FAB_NS, "link", "add", f"ddlbr{r}", "type", "bridge"])
            sh(["ip", "-n", FAB_NS, "link", "set", f"ddlbr{r}", "up"])
        if c.num_racks > 1:
            sh(["ip", "-n", FAB_NS, "link", "add", "ddlbsp", "type", "bridge"])
            sh(["ip", "-n", FAB_NS, "link", "set", "ddlbsp", "up"])
            for r in range(c.num_racks):
                up, down = f"ddlu{r}", f"ddld{r}"
                sh(["ip", "-n", FAB_NS, "link", "add", up, "type", "veth", "peer", "name", down])
                sh(["ip", "-n", FAB_NS, "link", "set", up, "master", f"ddlbr{r}", "up"])
                sh(["ip", "-n", FAB_NS, "link", "set", down, "master", "ddlbsp", "up"])
                _shape(FAB_NS, up, c.links[c.rack_up_link(r)].capacity_Bps, self.fair_jobs)
                _shape(FAB_NS, down, c.links[c.rack_down_link(r)].capacity_Bps, self.fair_jobs)
        for s in range(c.num_servers):
            ns, port = server_ns(s), f"ddls{s}"
            self._add_ns(ns)
            sh(["ip", "-n", FAB_NS, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns])
            sh(["ip", "-n", FAB_NS, "link", "set", port, "master", f"ddlbr{c.server_rack[s]}", "up"])
            sh(["ip", "-n", ns, "addr", "add", f"{server_ip(s)}/16", "dev", "eth0"])
            sh(["ip", "-n", ns, "link", "set", "eth0", "up"])
            sh(["sysctl", "-q", "-w", "net.ipv4.tcp_slow_start_after_idle=0"], ns=ns)
            _shape(ns, "eth0", c.links[c.nic_tx_link(s)].capacity_Bps, self.fair_jobs)
            _shape(FAB_NS, port, c.links[c.nic_rx_link(s)].capacity_Bps, self.fair_jobs)
        write_state(self.state())


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@contextlib.contextmanager
def cleanup_on_signals() -> Iterator[None]:
    """Turn SIGINT/SIGTERM/SIGHUP (even if inherited as ignored) into KeyboardInterrupt so teardown runs."""
    old = {sig: signal.signal(sig, _raise_interrupt) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)


def bring_up(cluster: Cluster, meta: dict[str, Any] | None = None, fair_jobs: int = 0) -> Fabric:
    """Check prerequisites and build the fabric; on any error or interrupt remove what was built."""
    check_prerequisites()
    fab = Fabric(cluster, {**(meta or {}), "fair_jobs": fair_jobs}, fair_jobs=fair_jobs)
    try:
        with cleanup_on_signals():
            fab.up()
    except BaseException:
        teardown(fab.namespaces)
        raise
    return fab


@contextlib.contextmanager
def testbed(cluster: Cluster, *, keep: bool = False, meta: dict[str, Any] | None = None,
            fair_jobs: int = 0) -> Iterator[Fabric]:
    """``with testbed(scaled) as fab:`` — up, yield, and always down (unless ``keep``)."""
    fab = bring_up(cluster, meta, fair_jobs)
    try:
        with cleanup_on_signals():
            yield fab
    finally:
        if not keep:
            teardown(fab.namespaces)
