"""Loopback helpers for the tests that run real sockets."""

from __future__ import annotations

import socket


def free_ports(n: int) -> list[int]:
    """``n`` TCP ports on 127.0.0.1 that were free a moment ago (bound, read, released)."""
    ports = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        ports.append(s.getsockname()[1])
        s.close()
    return ports
