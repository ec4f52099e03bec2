"""One rank of a data-parallel job: an explicit ring all-reduce of a gradient buffer every iteration.

The ring is exactly the one the simulator models (docs/physics.md §2): ranks follow ``Cluster.ring_order``;
an all-reduce is a reduce-scatter then an all-gather, 2(n−1) steps, each step sending one M/n chunk to the
next rank while receiving one from the previous rank, so every hop carries 2(n−1)/n · M bytes.

Two transports: plain TCP sockets (default, no dependency) and ``torch.distributed`` send/recv over gloo
(``--backend torch``, needs the ``testbed`` extra). Optional compute phase per iteration: ``sleep`` (default)
or a real small CPU training step (``--compute train``, torch only).

Overlapped communication (``--hide-ms h``, sleep compute only): the all-reduce of the gradient bucket starts
``h`` ms before the compute phase ends and runs under its tail, as the phased model's overlap ω does
(docs/physics.md §11: a compute-only phase of c − h, then the all-reduce while the last h of compute runs; the
iteration ends when both are done). ``comm_s`` is then the *exposed* communication: iteration end − compute end.

Run as ``python -m ddlsched.testbed.worker …`` inside a server namespace; rank 0 writes one JSON line per
iteration to ``--out`` (compute_s, comm_s, start, end — wall-clock epoch seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np


def _recv_into(sock: socket.socket, buf: memoryview) -> None:
    got = 0
    n = len(buf)
    while got < n:
        k = sock.recv_into(buf[got:], n - got)
        if k == 0:
            raise ConnectionError("ring peer closed the connection")
        got += k


class SocketRing:
    """TCP ring: rank r sends to r+1 and receives from r−1 over persistent connections."""

    def __init__(self, rank: int, peers: list[tuple[str, int]], timeout_s: float = 60.0) -> None:
        self.rank, self.n = rank, len(peers)
        host, port = peers[rank]
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((host, port))
        srv.listen(1)
        nxt = peers[(rank + 1) % self.n]
        deadline = time.monotonic() + timeout_s
        self.tx = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        while True:
            try:
                self.tx.connect(nxt)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
                self.tx.close()
                self.tx = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.settimeout(timeout_s)
        self.rx, _ = srv.accept()
        srv.close()
        for s in (self.tx, self.rx):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._q: queue.Queue[memoryview | None] = queue.Queue()
        self._done: queue.Queue[BaseException | None] = queue.Queue()
        self._thread = threading.Thread(target=self._sender, daemon=True)
        self._thread.start()

    def _sender(self) -> None:
        while True:
            item = self._q.get()
            if item is None:
                return
            try:
                self.tx.sendall(item)
                self._done.put(None)
            except BaseException as e:  # reported to the caller
                self._done.put(e)

    def sendrecv(self, send: np.ndarray, recv: np.ndarray) -> None:
        self._q.put(memoryview(send).cast("B"))
        _recv_into(self.rx, memoryview(recv).cast("B"))
        err = self._done.get()
        if err is not None:
            raise err

    def barrier(self) -> None:
        a = np.zeros(1, np.float32)
        for _ in range(2):  # token twice around the ring
            self.sendrecv(a, np.empty(1, np.float32))

    def close(self) -> None:
        self._q.put(None)
        self.tx.close()
        self.rx.close()


class GroupRing:
    """The ring over an already initialised ``torch.distributed`` process group (gloo, CPU): ``sendrecv`` sends to
    rank+1 while receiving from rank−1 (isend/irecv)."""

    def __init__(self, rank: int, n: int) -> None:
        import torch
        import torch.distributed as dist

        self.torch, self.dist, self.rank, self.n = torch, dist, rank, n

    def sendrecv(self, send: np.ndarray, recv: np.ndarray) -> None:
        t = self.torch
        r = self.dist.irecv(t.from_numpy(recv), src=(self.rank - 1) % self.n)
        s = self.dist.isend(t.from_numpy(np.ascontiguousarray(send)), dst=(self.rank + 1) % self.n)
        s.wait()
        r.wait()

    def barrier(self) -> None:
        self.dist.barrier()


class TorchRing(GroupRing):
    """Same ring over ``torch.distributed`` isend/irecv (gloo, CPU), its process group set up from the peers."""

    def __init__(self, rank: int, peers: list[tuple[str, int]], timeout_s: float = 60.0) -> None:
        import datetime

        import torch.distributed as dist

        host, port = peers[0]
        dist.init_process_group("gloo", init_method=f"tcp://{host}:{port + 2000}", rank=rank, world_size=len(peers),
                                timeout=datetime.timedelta(seconds=timeout_s))
        super().__init__(rank, len(peers))

    def close(self) -> None:
        self.dist.destroy_process_group()


def ring_allreduce(ring: SocketRing | GroupRing, buf: np.ndarray) -> None:
    """In-place sum all-reduce: reduce-scatter + all-gather, 2(n−1) steps of M/n (docs/physics.md §2)."""
    n, r = ring.n, ring.rank
    if n == 1:
        return
    chunks = np.array_split(buf, n)
    tmp = np.empty(max(len(c) for c in chunks), buf.dtype)
    for s in range(n - 1):  # reduce-scatter
        send, recv = chunks[(r - s) % n], chunks[(r - s - 1) % n]
        t = tmp[: len(recv)]
        ring.sendrecv(send, t)
        recv += t
    for s in range(n - 1):  # all-gather
        send, recv = chunks[(r - s + 1) % n], chunks[(r - s) % n]
        ring.sendrecv(send, recv)


def _train_step_factory() -> Callable[[], None]:
    import torch

    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))

    def step() -> None:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    return step


def _write_records(path: str, records: list[dict[str, Any]]) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in records))
    os.replace(tmp, path)


def _wait_gate(path: str, timeout_s: float, poll_s: float = 0.005) -> float:
    """Wait until the controller writes the job's start time (epoch seconds) to ``path``; return it."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with open(path) as f:
                text = f.read().strip()
            if text:
                return float(text)
        except FileNotFoundError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"no start gate {path} within {timeout_s:.0f} s")
        time.sleep(poll_s)


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    peers = [(h, int(p)) for h, p in (x.rsplit(":", 1) for x in args.peers.split(","))]
    ring: SocketRing | TorchRing = (TorchRing if args.backend == "torch" else SocketRing)(args.rank, peers)
    elems = max(len(peers), int(args.grad_bytes // 4))
    buf = np.empty(elems, np.float32)
    expected = float(sum(range(1, len(peers) + 1)))
    step = _train_step_factory() if args.compute == "train" else None
    hide_s = min(max(args.hide_ms, 0.0), max(args.compute_ms, 0.0)) / 1000.0
    if hide_s > 0 and step is not None:
        raise ValueError("--hide-ms needs --compute sleep (the hidden compute tail is emulated)")
    ring.barrier()
    start_at = _wait_gate(args.start_file, args.gate_timeout) if args.start_file else args.start_at
    delay = start_at - time.time()
    if delay > 0:
        time.sleep(delay)
    records = []
    for it in range(args.iters):
        t0 = time.time()
        if step is not None:
            step()
        elif args.compute_ms > 0:
            time.sleep(args.compute_ms / 1000.0 - hide_s)
        t1 = time.time()
        compute_end = t1 + hide_s  # the hidden compute tail runs while the all-reduce does
        buf.fill(args.rank + 1)
        ring_allreduce(ring, buf)
        t_ar = time.time()
        if t_ar < compute_end:
            time.sleep(compute_end - t_ar)
        t2 = time.time()
        if it == 0 and not (buf[0] == expected and buf[-1] == expected):
            raise RuntimeError(f"all-reduce result wrong: {buf[0]} != {expected}")
        comm_s = t2 - t1 if hide_s == 0 else max(0.0, t2 - compute_end)
        rec = {"iter": it, "start": t0, "end": t2, "compute_s": t1 - t0 + hide_s, "comm_s": comm_s}
        if hide_s > 0:
            rec["allreduce_s"] = t_ar - t1
        records.append(rec)
    if args.rank == 0 and args.out != "-":  # before the final barrier: a gated replay watches for this file
        _write_records(args.out, records)
    ring.barrier()
    ring.close()
    return records


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--peers", required=True, help="host:port of every rank, in ring order")
    ap.add_argument("--grad-bytes", type=float, required=True)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--compute-ms", type=float, default=0.0)
    ap.add_argument("--compute", choices=["sleep", "train"], default="sleep")
    ap.add_argument("--hide-ms", type=float, default=0.0,
                    help="start the all-reduce this many ms before compute ends (overlap; at most --compute-ms)")
    ap.add_argument("--backend", choices=["socket", "torch"], default="socket")
    ap.add_argument("--start-at", type=float, default=0.0, help="epoch seconds of the first iteration")
    ap.add_argument("--start-file", default="",
                    help="wait for this file (written atomically by the controller) and start at the epoch "
                         "seconds it holds; overrides --start-at (dependency-gated replays)")
    ap.add_argument("--gate-timeout", type=float, default=600.0)
    ap.add_argument("--out", default="-")
    args = ap.parse_args(argv)
    records = run(args)
    if args.rank == 0 and args.out == "-":
        sys.stdout.write("".join(json.dumps(r) + "\n" for r in records))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
