"""The job store's write latency without HTTP: one thread submits jobs in small batches at a fixed rate (as the
service's group commit does), another stores their state changes (started, finished) in chunks (as the loop's
change writer does); prints the submission transactions' latency (the call to ``submit_many`` until it returned:
waiting for the store's lock, the statements, the commit) and what the slow ones waited for.

    PYTHONPATH=src python benchmarks/bench_store_commit.py --checkpoint background --chunk 64
    PYTHONPATH=src python benchmarks/bench_store_commit.py --checkpoint auto --chunk 2000   # the store before

``--checkpoint auto``: SQLite's automatic WAL checkpoint inside the COMMIT that crosses 1,000 pages (the store before
issue 29's fix); ``background``: the store's checkpointer thread. Works with an older ``ddlsched`` on PYTHONPATH too
(then only ``auto`` and the latencies measured here). BENCHMARKS.md "The service" has the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import tempfile
import threading
import time
from pathlib import Path
from typing import Any


def pct(xs: list[float], q: float) -> float:
    return round(1000 * xs[min(len(xs) - 1, int(q * len(xs)))], 2) if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rate", type=float, default=500.0, help="Submissions per second.")
    ap.add_argument("--batch", type=int, default=8, help="Submissions per transaction.")
    ap.add_argument("--chunk", type=int, default=64, help="Most state changes per transaction.")
    ap.add_argument("--checkpoint", choices=("auto", "background"), default="background")
    ap.add_argument("--dir", default=None, help="Where the database goes (default: a temporary folder).")
    args = ap.parse_args()

    from ddlsched.service.store import JobStore

    with tempfile.TemporaryDirectory(prefix="bench-store-", dir=args.dir) as d:
        kw: dict[str, Any] = {}
        if args.checkpoint == "auto":
            import inspect

            if "wal_checkpoint_every_s" in inspect.signature(JobStore).parameters:
                kw["wal_checkpoint_every_s"] = None
        elif "wal_checkpoint_every_s" not in __import__("inspect").signature(JobStore).parameters:
            raise SystemExit("this ddlsched has no background checkpoint")
        store = JobStore(str(Path(d) / "bench.db"), **kw)
        changes: queue.SimpleQueue[Any] = queue.SimpleQueue()
        lat: list[float] = []
        slow_changes: list[float] = []
        stop = threading.Event()
        t_end = time.perf_counter() + args.seconds

        def submitter() -> None:
            period = args.batch / args.rate
            due = time.perf_counter()
            n = 0
            while due < t_end:
                time.sleep(max(0.0, due - time.perf_counter()))
                batch = [{"id": f"j{n + i}", "name": "b", "tenant": "t0", "num_gpus": 1, "model": "resnet50",
                          "entrypoint": None, "iterations": None, "duration_s": 60.0, "priority": 1.0}
                         for i in range(args.batch)]
                n += args.batch
                t0 = time.perf_counter()
                store.submit_many(batch)
                lat.append(time.perf_counter() - t0)
                now = time.time()
                for j in batch:
                    changes.put((j["id"], "arrived", {}, 0.0, now))
                    changes.put((j["id"], "started", {"gpus": [0], "attempt": 1}, 0.0, now))
                    changes.put((j["id"], "finished", {}, 1.0, now))
                due += period
            stop.set()

        def change_writer() -> None:
            while not (stop.is_set() and changes.empty()):
                got = []
                try:
                    got.append(changes.get(timeout=0.05))
                except queue.Empty:
                    continue
                while len(got) < 2000:
                    try:
                        got.append(changes.get_nowait())
                    except queue.Empty:
                        break
                for k in range(0, len(got), args.chunk):
                    t0 = time.perf_counter()
                    store.record_many(got[k:k + args.chunk])
                    slow_changes.append(time.perf_counter() - t0)

        threads = [threading.Thread(target=submitter), threading.Thread(target=change_writer)]
        cpu0 = time.process_time()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        cpu = time.process_time() - cpu0
        wal = Path(d) / "bench.db-wal"
        wal_mb = round(wal.stat().st_size / 2**20, 1) if wal.exists() else 0.0
        ops = store.slow.entries() if hasattr(store, "slow") else []
        store.close()
    lat.sort()
    slow_changes.sort()
    subs = [op for op in ops if op["what"] == "submit"]
    out = {
        "checkpoint": args.checkpoint, "chunk": args.chunk, "rate": args.rate, "batch": args.batch,
        "transactions": len(lat), "submit_txn_ms": {"p50": pct(lat, 0.5), "p90": pct(lat, 0.9), "p99": pct(lat, 0.99),
                                                    "max": pct(lat, 1.0)},
        "over_20ms": sum(1 for x in lat if x >= 0.02),
        "change_txn_ms": {"count": len(slow_changes), "p50": pct(slow_changes, 0.5), "p99": pct(slow_changes, 0.99),
                          "max": pct(slow_changes, 1.0)},
        "slow_submits_by_cause": {
            "lock_wait": sum(1 for op in subs if op["lock_wait_ms"] >= max(op["commit_ms"], op["statements_ms"])),
            "commit": sum(1 for op in subs if op["commit_ms"] > max(op["lock_wait_ms"], op["statements_ms"])),
            "statements": sum(1 for op in subs if op["statements_ms"] > max(op["lock_wait_ms"], op["commit_ms"]))},
        "slow_commits_writing_db_file": sum(1 for op in ops if op["what"] in ("submit", "record")
                                            and op.get("db_file_written")),
        "checkpoints_over_20ms": sorted(op["ms"] for op in ops if op["what"] == "checkpoint")[-5:],
        "wal_mb_at_end": wal_mb, "cpu_s": round(cpu, 2), "load_average_1": os.getloadavg()[0],
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
