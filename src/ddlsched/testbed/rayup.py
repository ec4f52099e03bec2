"""Ray on the emulated testbed: one Ray node per server namespace (``ddlsched testbed up --ray``).

Server ``s`` runs ``ray start`` inside its namespace with its own address (``server_ip(s)``), the Ray resources the
Ray executor expects (``ddl_server:s<s>`` and one ``ddl_gpu`` per GPU, docs/live-ray.md) and one CPU; server 0 is
the head (GCS on port :data:`RAY_PORT`). Ray's traffic between servers therefore crosses the shaped NICs and
uplinks, so rings of different jobs that share a link slow each other for real. A driver reaches the head from
inside a server namespace: ``ip netns exec ddl-s0 ddlsched live run --executor ray --executor-opt
address=10.77.0.1:6379 …``. The Ray processes live in the namespaces, so ``testbed down`` kills them with
everything else; the Ray folder is recorded in the state file first and removed by ``down`` too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ddlsched.cluster.topology import Cluster
from ddlsched.testbed.fabric import Fabric, server_ip, server_ns
from ddlsched.testbed.netns import TestbedError, read_state, write_state

RAY_PORT = 6379


def ray_address(state: dict[str, Any] | None = None) -> str | None:
    """The head's ``host:port`` of the testbed's Ray (None when it was brought up without ``--ray``)."""
    st = state if state is not None else read_state()
    ray = (st or {}).get("ray") or {}
    return ray.get("address")


def start_ray(fab: Fabric, *, ray_cli: str | None = None, timeout_s: float = 180.0) -> str:
    """Start a Ray node in every server namespace of ``fab`` (head first); returns the head's address."""
    from ddlsched.live.ray_executor import node_resources

    c: Cluster = fab.cluster
    cli = ray_cli or str(Path(sys.executable).with_name("ray"))
    tmp = Path(tempfile.mkdtemp(prefix="ddlrtb", dir="/tmp"))  # Ray's socket paths must stay short
    address = f"{server_ip(0)}:{RAY_PORT}"
    state = fab.state()
    state["ray"] = {"address": address, "temp_dir": str(tmp)}
    fab.meta["ray"] = state["ray"]
    write_state(state)  # recorded before anything starts: 'down' removes it even after a crash
    # Ray lowers its workers to nice 15 by default; on the testbed the rank actors *are* the measured workload, so
    # they keep the driver's priority and other work on the host cannot stretch their iterations (override with
    # RAY_worker_niceness in the environment)
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled",
           "RAY_worker_niceness": os.environ.get("RAY_worker_niceness", "0")}  # noqa: SIM112 (Ray's spelling)
    env.pop("RAY_ADDRESS", None)
    for s in range(c.num_servers):
        args = [cli, "start", f"--node-ip-address={server_ip(s)}", "--num-cpus=1", "--num-gpus=0",
                f"--resources={json.dumps(node_resources(c, s))}"]
        if s == 0:
            args += ["--head", f"--port={RAY_PORT}", f"--temp-dir={tmp}", "--include-dashboard=false"]
        else:
            args += [f"--address={address}"]
        p = subprocess.run(["ip", "netns", "exec", server_ns(s), *args], env=env, capture_output=True, text=True,
                           timeout=timeout_s, check=False)
        if p.returncode != 0:
            raise TestbedError(f"ray start in {server_ns(s)} failed ({p.returncode}):\n{p.stdout[-1500:]}"
                               f"{p.stderr[-1500:]}")
    return address


__all__ = ["RAY_PORT", "ray_address", "start_ray"]
