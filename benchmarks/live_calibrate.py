"""Where a live start on Ray goes: start-up phases of profile jobs, and the cost of a preemption (revoke →
checkpointed) and of the resume, on a local two-node Ray cluster (``LocalRayCluster``, no root).

    PYTHONPATH=src python benchmarks/live_calibrate.py [--repeats 3] [--ranks 1,2] [--json OUT]

For each rank count it launches ``--repeats`` short profile jobs one after the other (so each start is alone on
the machine), then one longer job that is revoked mid-run and relaunched. Prints one line per attempt (the
executor's ``startups`` rows: place, spawn, call, imports, init, total, wall seconds) and the medians that
``ddlsched live run --compare-sim`` gives the simulation (``--startup`` / ``--restart-penalty``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.live.executor import EventKind, Launch
from ddlsched.live.localray import LocalRayCluster
from ddlsched.live.ray_executor import RayExecutor, node_resources
from ddlsched.workload.jobspec import JobSpec

REPO = Path(__file__).resolve().parents[1]


def _wait(ex: RayExecutor, job: str, kinds: set[EventKind], timeout_s: float = 120.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for e in ex.poll(0.05):
            if e.job_id == job and e.kind in kinds:
                return e
    raise RuntimeError(f"no {kinds} for {job} within {timeout_s} s")


def _launch(ex: RayExecutor, job: str, gpus: tuple[int, ...], iterations: int, attempt: int = 1) -> None:
    spec = JobSpec(job, 0.0, len(gpus), "resnet50", iterations=float(iterations))
    ex.launch(Launch(job, attempt, spec, gpus, tuple(f"s{g // 2}" for g in gpus), iterations, 0.05, 0.05, {}))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--executor-opt", action="append", default=[], metavar="KEY=JSON",
                    help="extra RayExecutor keyword (e.g. warm=0)")
    a = ap.parse_args()
    extra = {k: json.loads(v) for k, v in (o.split("=", 1) for o in a.executor_opt)}
    print(f"load average before: {os.getloadavg()}", flush=True)
    cluster = Cluster.build("local2", [[ServerSpec(2, "V100", 10.0), ServerSpec(2, "V100", 10.0)]],
                            {"V100": GPUType("V100", 16000.0)})
    t0 = time.monotonic()
    rows: list[dict[str, Any]] = []
    revokes: list[float] = []
    with LocalRayCluster([node_resources(cluster, 0), node_resources(cluster, 1)],
                         env={"PYTHONPATH": str(REPO / "src")}) as lr:
        print(f"two Ray nodes up in {time.monotonic() - t0:.1f} s", flush=True)
        ex = RayExecutor(lr.address, defaults={"job_args": {"compute_s": 0.02, "grad_bytes": 65536}},
                         checkpoint_every=10, **extra)
        ex.open(cluster)
        try:
            for n in (int(x) for x in a.ranks.split(",")):
                gpus = (0,) if n == 1 else (0, 2) if n == 2 else tuple(range(n))
                for i in range(a.repeats):
                    _launch(ex, f"s{n}-{i}", gpus, 10)
                    _wait(ex, f"s{n}-{i}", {EventKind.FINISHED, EventKind.FAILED, EventKind.LOST})
                job = f"r{n}"
                _launch(ex, job, gpus, 100_000)
                _wait(ex, job, {EventKind.STARTED})
                time.sleep(1.0)
                t = time.monotonic()
                ex.revoke(job, 30.0)
                ck = _wait(ex, job, {EventKind.CHECKPOINTED})
                revokes.append(time.monotonic() - t)
                _launch(ex, job, gpus, int(ck.iterations) + 10, attempt=2)
                _wait(ex, job, {EventKind.FINISHED, EventKind.FAILED, EventKind.LOST})
            rows = list(ex.startups)
        finally:
            ex.close()
    for r in rows:
        print(json.dumps(r), flush=True)
    first = [r["total"] for r in rows if r["attempt"] == 1 and r["total"] is not None]
    resumed = [r["total"] for r in rows if r["attempt"] > 1 and r["total"] is not None]
    out = {"startup_s": statistics.median(first), "startup_max_s": max(first),
           "resume_startup_s": statistics.median(resumed) if resumed else None,
           "revoke_to_checkpointed_s": statistics.median(revokes) if revokes else None,
           "phases_median_s": {k: statistics.median(r[k] for r in rows if r[k] is not None)
                               for k in ("place", "spawn", "call", "imports", "init")},
           "load_average_after": os.getloadavg(), "attempts": rows}
    print(json.dumps({k: v for k, v in out.items() if k != "attempts"}), flush=True)
    print(f"wall {time.monotonic() - t0:.1f} s", flush=True)
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
