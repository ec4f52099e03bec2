"""The service under load: N submissions through the HTTP API to ``ddlsched serve --executor sim`` (the digital twin)
on a 2,048-GPU cluster; prints throughput, API latency percentiles, the scheduling-pass latency while ≥ 5,000 jobs
are pending, the service's peak RSS, the accounts (every job ended once), and where the requests slower than 50 ms
spent their time (the service's ``Server-Timing`` header and its slow-operation log, ``GET /api/v1/slow``).

    PYTHONPATH=src python benchmarks/bench_service.py --jobs 10000 --clients 16 --time-scale 1000
    PYTHONPATH=src python benchmarks/bench_service.py --jobs 10000 --clients 16 --rate 500   # open loop, 500/s

Targets (issue 29): ≥ 500 submissions/s, API p99 ≤ 50 ms, all completed and accounted for, a scheduling pass
≤ 20 ms at 5,000 pending on 2,048 GPUs, RSS ≤ 1 GiB. BENCHMARKS.md "The service" has the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ADMIN = "bench-admin-token-0123456789"
TENANTS = {f"t{i}": f"bench-tenant-{i}-token-0123456789" for i in range(4)}
CLUSTER = """name: bench2048
network: {intra_server_gbps: 1200, nic_gbps: 100, oversubscription: 2}
gpu_types:
  V100: {mem_gb: 32, speed: 1.0}
racks:
  - count: 8
    servers:
      - {count: 32, gpus: 8, gpu_type: V100}
"""
GPU_CHOICES = (1, 1, 2, 2, 4, 4, 8, 8, 16, 32)
SLOW_S = 0.05
"""A request slower than this (the p99 target) is listed by when it was sent (``slow_requests``)."""


def metric(text: str, name: str) -> float:
    m = re.search(rf"^{re.escape(name)} ([0-9.e+-]+)$", text, re.M)
    return float(m.group(1)) if m else float("nan")


def buckets(text: str) -> list[tuple[float, float]]:
    out = []
    for le, n in re.findall(r'^ddlsched_scheduling_pass_seconds_bucket\{le="([^"]+)"\} (\d+)$', text, re.M):
        out.append((float("inf") if le == "+Inf" else float(le), float(n)))
    return out


async def submit_all(url: str, bodies: list[dict[str, Any]], n_clients: int, lat: list[float],
                     codes: dict[int, int], slow: list[tuple[float, float, bytes]] | None = None) -> None:
    """``n_clients`` keep-alive HTTP/1.1 connections, each sending its share of the submissions one after another
    (a request waits for the previous answer), on raw asyncio streams: the client spends tens of microseconds of CPU
    per request, so the service, not the client, is what is measured (``client_cpu_ms_per_submission``)."""
    host, port = url.removeprefix("http://").split(":")

    def request(b: dict[str, Any]) -> bytes:
        body = json.dumps(b).encode()
        return (f"POST /api/v1/jobs HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                f"Authorization: Bearer {TENANTS[b['tenant']]}\r\nContent-Length: {len(body)}\r\n\r\n").encode() \
            + body

    async def one(k: int) -> None:
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            for b in bodies[k::n_clients]:
                req = request(b)
                t0 = time.perf_counter()
                writer.write(req)
                head = await reader.readuntil(b"\r\n\r\n")
                n = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
                await reader.readexactly(n)
                dt = time.perf_counter() - t0
                lat.append(dt)
                if slow is not None and dt > SLOW_S:
                    slow.append((t0, dt, head))
                code = int(head.split(b" ", 2)[1])
                codes[code] = codes.get(code, 0) + 1
        finally:
            writer.close()

    await asyncio.gather(*(one(k) for k in range(n_clients)))


async def submit_paced(url: str, bodies: list[dict[str, Any]], n_clients: int, rate: float, seed: int,
                       lat: list[float], codes: dict[int, int], slow: list[tuple[float, float, bytes]],
                       lag: list[float], loop_lag: list[float]) -> None:
    """Open loop: the submissions are due at Poisson instants of ``rate`` per second (seeded), whatever the answers;
    each goes out on a free one of ``n_clients`` keep-alive connections (waiting for one if all are busy). A request's
    latency runs from when it was due, so time spent waiting for a connection counts (no coordinated omission);
    ``lag`` gets, per request, how late it went out (the client's own delay: its event loop, a free connection),
    ``loop_lag`` how late the client's event loop began it (its own delay alone)."""
    host, port = url.removeprefix("http://").split(":")
    free: asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = asyncio.Queue()
    conns = [await asyncio.open_connection(host, int(port)) for _ in range(n_clients)]
    for c in conns:
        free.put_nowait(c)

    async def one(b: dict[str, Any], due: float) -> None:
        loop_lag.append(time.perf_counter() - due)
        body = json.dumps(b).encode()
        req = (f"POST /api/v1/jobs HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
               f"Authorization: Bearer {TENANTS[b['tenant']]}\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
        reader, writer = await free.get()
        lag.append(time.perf_counter() - due)
        try:
            writer.write(req)
            head = await reader.readuntil(b"\r\n\r\n")
            n = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
            await reader.readexactly(n)
        finally:
            free.put_nowait((reader, writer))
        dt = time.perf_counter() - due
        lat.append(dt)
        if dt > SLOW_S:
            slow.append((due, dt, head))
        code = int(head.split(b" ", 2)[1])
        codes[code] = codes.get(code, 0) + 1

    rng = random.Random(seed + 1)
    due = time.perf_counter() + 0.01
    tasks = []
    for b in bodies:
        due += rng.expovariate(rate)
        wait = due - time.perf_counter()
        if wait > 0:
            await asyncio.sleep(wait)
        tasks.append(asyncio.create_task(one(b, due)))
    try:
        await asyncio.gather(*tasks)
    finally:
        for _, w in conns:
            w.close()


PARTS = ("validate", "queue", "prepare", "lock_wait", "statements", "commit", "hand_on", "wake", "resume")
"""The service's ``Server-Timing`` parts of a submission (``ddlsched.service.app.TIMING_PARTS``)."""


def breakdown(slow: list[tuple[float, float, bytes]], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """Where the slow requests' time went: ``before_handler`` (sent → the handler began: reading and parsing the
    request, routing, authentication, validation of the body, waiting for the event loop or the interpreter lock),
    the service's own parts (its ``Server-Timing`` header), ``after`` (resumed → the client had the answer:
    serialising and sending it); per part the mean over the slow requests and how many it dominated; and the
    service's slow operations (``GET /api/v1/slow``) that overlapped a slow request, counted by kind."""
    sums: dict[str, float] = {}
    dominant: dict[str, int] = {}
    overlapping: dict[str, int] = {}
    n = 0
    for t0, dt, head in slow:
        m = re.search(rb"(?i)server-timing: *([^\r\n]*)", head)
        if not m:
            continue
        fields = dict(re.findall(r"(\w+);(?:dur|desc)=([0-9.]+)", m.group(1).decode()))
        at = float(fields.pop("at"))
        parts = {"before_handler": 1000 * (at - t0), **{k: float(fields[k]) for k in PARTS if k in fields}}
        parts["after"] = 1000 * dt - sum(parts.values())
        n += 1
        for k, v in parts.items():
            sums[k] = sums.get(k, 0.0) + v
        top = max(parts, key=lambda k: parts[k])
        dominant[top] = dominant.get(top, 0) + 1
        seen = {op["what"] + (" (db file written)" if op.get("db_file_written") else "") for op in ops
                if op["start"] < t0 + dt and op["start"] + op["ms"] / 1000 > t0}
        for w in seen:
            overlapping[w] = overlapping.get(w, 0) + 1
    return {"requests": n, "mean_ms": {k: round(v / n, 2) for k, v in sums.items()} if n else {},
            "dominant_part": dict(sorted(dominant.items(), key=lambda kv: -kv[1])),
            "overlapping_service_ops": dict(sorted(overlapping.items(), key=lambda kv: -kv[1]))}


def service_ops_summary(ops: list[dict[str, Any]]) -> dict[str, Any]:
    """The service's slow operations by kind: count, max and total ms (and, for store writes, lock wait and commit
    totals and how many wrote the database file: WAL checkpoints)."""
    out: dict[str, dict[str, Any]] = {}
    for op in ops:
        d = out.setdefault(op["what"], {"count": 0, "max_ms": 0.0, "total_ms": 0.0})
        d["count"] += 1
        d["max_ms"] = max(d["max_ms"], op["ms"])
        d["total_ms"] = round(d["total_ms"] + op["ms"], 1)
        for k in ("lock_wait_ms", "commit_ms", "statements_ms"):
            if k in op:
                d[k] = round(d.get(k, 0.0) + op[k], 1)
        if op.get("db_file_written"):
            d["db_file_written"] = d.get("db_file_written", 0) + 1
    return out


def _per_second(ts: list[float]) -> dict[int, int]:
    out: dict[int, int] = {}
    for t in ts:
        out[int(t)] = out.get(int(t), 0) + 1
    return dict(sorted(out.items()))


def start(tmp: Path, args: argparse.Namespace) -> tuple[subprocess.Popen[bytes], str, Any]:
    (tmp / "cluster.yaml").write_text(CLUSTER)
    tokens = tmp / "tokens.yaml"
    tokens.write_text(json.dumps({"admin": ADMIN, "tenants": TENANTS}))
    tokens.chmod(0o600)
    log = (tmp / "serve.log").open("w+")
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.Popen([sys.executable, "-m", "ddlsched.cli", "serve", "--cluster", str(tmp / "cluster.yaml"),
                             "--policy", args.policy, "--db", str(tmp / "bench.db"), "--executor", "sim",
                             "--time-scale", str(args.time_scale), "--port", "0", "--tokens", str(tokens),
                             "--stall-probe-ms", str(args.stall_probe_ms), *args.serve_arg,
                             *[a for o in args.executor_opt for a in ("--executor-opt", o)]],
                            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    end = time.monotonic() + 60
    while time.monotonic() < end:
        log.seek(0)
        m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", log.read())
        if m:
            return proc, m.group(1), log
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    log.seek(0)
    raise SystemExit(f"serve did not start:\n{log.read()[-3000:]}")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (all its threads)."""
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def pass_latency(policy: str, pending: int, seed: int) -> dict[str, Any]:
    """The scheduling pass with ``pending`` jobs waiting on the 2,048-GPU cluster, measured in the simulator's
    loop (the live loop is the same core and the same fluid view; the service's pass histogram cannot isolate the
    passes at a given queue length): ``pending + 300`` jobs arrive at once, the policy is timed at every call and the
    calls made while ≥ ``pending`` jobs wait are kept."""
    from ddlsched.api import load_cluster
    from ddlsched.engine import run_simulation
    from ddlsched.policies.registry import make_policy
    from ddlsched.service.metrics import Histogram, TimedPolicy
    from ddlsched.workload.jobspec import JobSpec

    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "c.yaml").write_text(CLUSTER)
        cluster = load_cluster(str(Path(d) / "c.yaml"))
    jobs = [JobSpec(f"p{i}", 0.0, rng.choice(GPU_CHOICES), "resnet50", duration_s=rng.uniform(600, 3600))
            for i in range(pending + 300)]
    seen: list[tuple[int, float]] = []

    class Probe(TimedPolicy):
        def schedule(self, view: Any) -> Any:
            n = len(view.pending)
            t0 = time.perf_counter()
            out = super().schedule(view)
            seen.append((n, time.perf_counter() - t0))
            return out

    run_simulation(cluster, jobs, Probe(make_policy(policy), Histogram()))
    xs = sorted(dt for n, dt in seen if n >= pending)
    if not xs:
        return {"policy": policy, "passes": 0}
    return {"policy": policy, "passes": len(xs), "median_ms": round(1000 * xs[len(xs) // 2], 3),
            "p99_ms": round(1000 * xs[min(len(xs) - 1, int(0.99 * len(xs)))], 3), "max_ms": round(1000 * xs[-1], 3)}


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--clients", type=int, default=16, help="Concurrent keep-alive HTTP connections.")
    ap.add_argument("--rate", type=float, default=0.0,
                    help="Open loop: submissions due at Poisson instants of this many per second, latency counted "
                         "from when each was due (0: closed loop, each connection sends as soon as it has its "
                         "answer: the service's throughput).")
    ap.add_argument("--time-scale", type=float, default=1000.0)
    ap.add_argument("--policy", default="fifo")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--drain-timeout", type=float, default=600.0)
    ap.add_argument("--executor-opt", action="append", default=[], metavar="KEY=VALUE",
                    help="Passed to serve --executor-opt (e.g. report_every_s=600: fewer twin progress reports).")
    ap.add_argument("--pass-pending", type=int, default=5000, help="Queue length of the pass-latency measurement.")
    ap.add_argument("--stall-probe-ms", type=float, default=0.0,
                    help="Passed to serve --stall-probe-ms (diagnostics: interpreter stalls in the slow log).")
    ap.add_argument("--serve-arg", action="append", default=[], metavar="ARG",
                    help="Passed to serve as is (e.g. --serve-arg=--wal-checkpoint-every=0).")
    ap.add_argument("--dump-slow", metavar="FILE", help="Write the slow requests and the service's slow operations "
                                                        "(raw, JSON) to FILE.")
    ap.add_argument("--pass-policies", default="fifo", help="Comma-separated (tiresias takes minutes here).")
    args = ap.parse_args()
    passes = [pass_latency(p, args.pass_pending, args.seed) for p in args.pass_policies.split(",") if p]
    rng = random.Random(args.seed)
    bodies = [{"id": f"b{i:06d}", "name": f"bench {i}", "tenant": f"t{i % 4}", "gpus": rng.choice(GPU_CHOICES),
               "model": "resnet50", "duration_s": rng.uniform(600, 3600)} for i in range(args.jobs)]
    with tempfile.TemporaryDirectory(prefix="bench-service-") as d:
        tmp = Path(d)
        proc, url, log = start(tmp, args)
        try:
            run(proc, url, bodies, args, passes)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            log.close()


def run(proc: subprocess.Popen[bytes], url: str, bodies: list[dict[str, Any]], args: argparse.Namespace,
        passes: list[dict[str, Any]]) -> None:
    lat: list[float] = []
    slow: list[tuple[float, float, bytes]] = []
    codes: dict[int, int] = {}
    lag: list[float] = []
    loop_lag: list[float] = []
    samples: list[tuple[float, float, float, float, list[tuple[float, float]]]] = []
    stop = threading.Event()

    def sampler() -> None:
        with httpx.Client(timeout=30, headers={"Authorization": f"Bearer {ADMIN}"}) as c:
            while not stop.is_set():
                try:
                    t = c.get(f"{url}/metrics").text
                except httpx.HTTPError:
                    break
                samples.append((time.monotonic(), metric(t, "ddlsched_queue_length"),
                                metric(t, "ddlsched_scheduling_pass_seconds_sum"),
                                metric(t, "ddlsched_scheduling_pass_seconds_count"), buckets(t)))
                stop.wait(0.5)

    def clients() -> None:
        if args.rate > 0:
            asyncio.run(submit_paced(url, bodies, args.clients, args.rate, args.seed, lat, codes, slow, lag,
                                     loop_lag))
        else:
            asyncio.run(submit_all(url, bodies, args.clients, lat, codes, slow))

    st = threading.Thread(target=sampler, daemon=True)
    st.start()
    t0 = time.monotonic()
    p0 = time.perf_counter()
    cpu0 = cpu_s(proc.pid)
    me0 = time.process_time()
    clients()
    submit_s = time.monotonic() - t0
    submit_cpu = cpu_s(proc.pid) - cpu0
    client_cpu = time.process_time() - me0
    with httpx.Client(timeout=30, headers={"Authorization": f"Bearer {ADMIN}"}) as c:
        end = time.monotonic() + args.drain_timeout
        while time.monotonic() < end:
            counts = c.get(f"{url}/api/v1/stats").json()["counts"]
            if counts["queued"] + counts["running"] == 0:
                break
            time.sleep(0.5)
        drain_s = time.monotonic() - t0
        stop.set()
        st.join(5)
        counts = c.get(f"{url}/api/v1/stats").json()["counts"]
        ops = c.get(f"{url}/api/v1/slow").json()["ops"]
    rss = peak_rss_mb(proc.pid)
    lat.sort()

    def pct(q: float) -> float:
        return 1000 * lat[min(len(lat) - 1, int(q * len(lat)))]

    # scheduling-pass latency over the sampling intervals that began with >= 5,000 jobs pending
    busy = [(a, b) for a, b in itertools.pairwise(samples) if a[1] >= 5000]
    n_pass = sum(b[3] - a[3] for a, b in busy)
    s_pass = sum(b[2] - a[2] for a, b in busy)
    p99_le = None
    if busy and n_pass > 0:
        cum = [sum(b[4][i][1] - a[4][i][1] for a, b in busy) for i in range(len(busy[0][0][4]))]
        les = [le for le, _ in busy[0][0][4]]
        p99_le = next(le for le, n in zip(les, cum, strict=True) if n >= 0.99 * n_pass)
    ended = counts["completed"] + counts["failed"] + counts["cancelled"] + counts["rejected"]
    out = {
        "jobs": len(bodies), "clients": args.clients, "offered_per_s": args.rate or None,
        "time_scale": args.time_scale, "policy": args.policy,
        "http_codes": codes, "submit_wall_s": round(submit_s, 2),
        "submissions_per_s": round(len(bodies) / submit_s, 1),
        "service_cpu_ms_per_submission": round(1000 * submit_cpu / len(bodies), 2),
        "service_cpu_share_while_submitting": round(submit_cpu / submit_s, 2),
        "client_cpu_ms_per_submission": round(1000 * client_cpu / len(bodies), 3),
        "load_average_1_5_15": os.getloadavg(),
        "executor_opts": args.executor_opt,
        "slow_requests": {"over_ms": 1000 * SLOW_S, "count": len(slow),
                          "per_second_sent": _per_second([t - p0 for t, _, _ in slow]),
                          "slowest_at_s": [round(t - p0, 3) for t, _, _ in sorted(slow, key=lambda x: -x[1])[:10]],
                          "where": breakdown(slow, ops)},
        "service_slow_ops_while_submitting": service_ops_summary([op for op in ops
                                                                   if p0 <= op["start"] <= p0 + submit_s]),
        **{name: None if not xs else {q: round(1000 * sorted(xs)[min(len(xs) - 1, int(f * len(xs)))], 2)
                                      for q, f in (("p50", 0.5), ("p99", 0.99), ("max", 1.0))}
           for name, xs in (("client_send_lag_ms", lag), ("client_loop_lag_ms", loop_lag))},
        "api_ms": {"p50": round(pct(0.5), 2), "p90": round(pct(0.9), 2), "p99": round(pct(0.99), 2),
                   "max": round(1000 * lat[-1], 2)},
        "all_ended_wall_s": round(drain_s, 2), "counts": counts,
        "accounts_close": ended == len(bodies) and counts["completed"] == len(bodies),
        "max_pending_seen": max((s[1] for s in samples), default=0),
        "service_pass_while_5000_pending": {"passes": n_pass,
                                            "mean_ms": round(1000 * s_pass / n_pass, 3) if n_pass else None,
                                            "p99_at_most_ms": None if p99_le is None else 1000 * p99_le},
        f"simulator_pass_at_{args.pass_pending}_pending": passes,
        "service_peak_rss_mb": round(rss, 1),
    }
    print(json.dumps(out, indent=2))
    if args.dump_slow:
        Path(args.dump_slow).write_text(json.dumps({
            "t0": p0, "slow_requests": [{"sent": t, "ms": 1000 * dt, "head": h.decode(errors="replace")}
                                        for t, dt, h in slow], "service_ops": ops}))


if __name__ == "__main__":
    main()
