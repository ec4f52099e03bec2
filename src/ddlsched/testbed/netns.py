"""Thin, checked wrappers around ``ip``/``tc`` and the testbed state file.

Every object the testbed creates is a network namespace named ``ddl-…``; all veths, bridges and qdiscs live
inside those namespaces, so deleting the namespaces removes everything. The state file lists what was created
(namespaces, worker pids) so ``ddlsched testbed down`` can clean up after a crash; ``down`` also sweeps any
leftover ``ddl-`` namespace and ``ddl*`` link in the root namespace.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ddlsched.errors import DdlschedError

NS_PREFIX = "ddl-"
LINK_PREFIX = "ddl"
STATE_PATH = Path(os.environ.get("DDLSCHED_TESTBED_STATE", "/run/ddlsched-testbed/state.json"))


class TestbedError(DdlschedError):
    """The testbed cannot be built or driven (not root, no namespaces/tc, a command failed)."""

    __test__ = False  # not a pytest class


def sh(args: Sequence[str], *, check: bool = True, ns: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run a command (inside namespace ``ns`` if given); raise :class:`TestbedError` on failure."""
    cmd = [*(["ip", "netns", "exec", ns] if ns else []), *args]
    p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if check and p.returncode != 0:
        raise TestbedError(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr.strip()}")
    return p


def check_prerequisites() -> None:
    """Fail with a clear message unless we are root and ``ip netns``, veth, bridges and ``tc`` work."""
    if os.geteuid() != 0:
        raise TestbedError("the testbed needs root (network namespaces, veth, tc): run it from a root shell")
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            raise TestbedError(f"'{tool}' not found: install iproute2")
    probe = f"{NS_PREFIX}probe{os.getpid()}"
    try:
        p = sh(["ip", "netns", "add", probe], check=False)
        if p.returncode != 0:
            raise TestbedError(f"network namespaces are unavailable: {p.stderr.strip()}")
        steps = [
            ["ip", "-n", probe, "link", "add", "ddlpa", "type", "veth", "peer", "name", "ddlpb"],
            ["ip", "-n", probe, "link", "add", "ddlpbr", "type", "bridge"],
            ["ip", "-n", probe, "link", "set", "ddlpa", "up"],
            ["tc", "-n", probe, "qdisc", "add", "dev", "ddlpa", "root", "tbf", "rate", "100mbit",
             "burst", "32kb", "latency", "50ms"],
        ]
        for cmd in steps:
            p = sh(cmd, check=False)
            if p.returncode != 0:
                raise TestbedError(f"testbed prerequisite failed: {' '.join(cmd)}: {p.stderr.strip()}")
    finally:
        sh(["ip", "netns", "del", probe], check=False)


def list_namespaces(prefix: str = NS_PREFIX) -> list[str]:
    p = sh(["ip", "netns", "list"], check=False)
    names = [line.split()[0] for line in p.stdout.splitlines() if line.strip()]
    return sorted(n for n in names if n.startswith(prefix))


def root_links(prefix: str = LINK_PREFIX) -> list[str]:
    p = sh(["ip", "-o", "link", "show"], check=False)
    out = []
    for line in p.stdout.splitlines():
        parts = line.split(":")
        if len(parts) > 1:
            name = parts[1].strip().split("@")[0]
            if name.startswith(prefix):
                out.append(name)
    return out


def ns_pids(ns: str) -> list[int]:
    p = sh(["ip", "netns", "pids", ns], check=False)
    return [int(x) for x in p.stdout.split() if x.isdigit()]


def read_state() -> dict[str, Any] | None:
    try:
        return json.loads(STATE_PATH.read_text())
    except (OSError, ValueError):
        return None


def write_state(state: dict[str, Any]) -> None:
    STATE_PATH.parent.mkdir(parents=True, exist_ok=True)
    tmp = STATE_PATH.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=1))
    tmp.replace(STATE_PATH)


def kill_pids(pids: Sequence[int]) -> None:
    """Terminate, then kill, exactly these processes (those we started / that run in our namespaces)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = []
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
                alive.append(pid)
        if not alive:
            return
        for pid in alive:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
        if sig == signal.SIGTERM:
            import time

            time.sleep(0.3)


def teardown(extra_namespaces: Sequence[str] = ()) -> list[str]:
    """Remove every testbed namespace (state file + sweep of ``ddl-*``), the processes inside them and any
    ``ddl*`` link left in the root namespace. Idempotent; returns what was removed."""
    removed: list[str] = []
    state = read_state() or {}
    names = set(state.get("namespaces", [])) | set(extra_namespaces) | set(list_namespaces())
    pids = [int(p) for p in state.get("pids", [])]
    for ns in names:
        pids.extend(ns_pids(ns))
    if pids:
        kill_pids(sorted(set(pids)))
    for ns in sorted(names):
        if sh(["ip", "netns", "del", ns], check=False).returncode == 0:
            removed.append(ns)
    for link in root_links():
        if sh(["ip", "link", "del", link], check=False).returncode == 0:
            removed.append(link)
    ray_dir = (state.get("ray") or {}).get("temp_dir")  # testbed up --ray: Ray's folder (its processes are gone)
    if ray_dir and Path(ray_dir).exists():
        shutil.rmtree(ray_dir, ignore_errors=True)
        removed.append(ray_dir)
    with contextlib.suppress(OSError):
        STATE_PATH.unlink()
    return removed


def leftovers() -> dict[str, list[str]]:
    """What of the testbed still exists (should be all empty after ``down``)."""
    nss = list_namespaces()
    pids = [str(p) for ns in nss for p in ns_pids(ns)]
    return {"namespaces": nss, "links": root_links(), "pids": pids,
            "state_file": [str(STATE_PATH)] if STATE_PATH.exists() else []}
