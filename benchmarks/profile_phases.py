"""Where a run's seconds go, phase by phase (issue 13): the full Philly-derived trace, one policy, one cluster.

Two passes in one process, the same steps as ``bench_philly.py``'s cell plus writing the result files:

1. **timed** (``time.perf_counter`` only, no profiler): parse and validate the trace, build the cluster, build the
   policy and execution model, prepare the jobs (ideal times, admission checks), the event loop, summarize, write
   the outputs (records.csv, timeseries.csv, load.csv, summary.json) into a temporary folder;
2. **profiled** (one ``cProfile`` per phase): splits the loading phase (CSV reading and row parsing, model
   assignment, JobSpec construction and checks) and the event loop (physics = the perf model's add/remove/alone,
   re-timing the jobs a physics change touched, the policy's passes including building its view, per-job records
   and the time series, and the rest of the engine: events, heap, queue bookkeeping, placement bookkeeping) by
   the cumulative time of those functions; the shares are applied to the timed pass's seconds.

    python benchmarks/profile_phases.py                                   # fifo+consolidated, philly2048, maxmin
    python benchmarks/profile_phases.py --policy tiresias+consolidated --cluster philly2048
    python benchmarks/profile_phases.py --top 20                          # also the top functions of the loop
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "data" / "traces" / "philly_pollux" / "philly.csv"


def run_phases(policy: str, cluster: str, perf: str, jobs: int | None,
               wrap: Callable[[str, Callable[[], Any]], Any]) -> dict[str, Any]:
    """The phases of one run, each called through ``wrap(name, thunk)``; returns the run's counts."""
    from ddlsched.cluster import load_cluster
    from ddlsched.engine.core import Core
    from ddlsched.engine.run import SimConfig, build_model, default_catalog
    from ddlsched.metrics.loadtime import load_over_time
    from ddlsched.metrics.output import write_json, write_records, write_timeseries
    from ddlsched.metrics.summary import summarize
    from ddlsched.policies import make_policy
    from ddlsched.workload.loaders import load_trace

    trace = wrap("parse + validate trace", lambda: load_trace(TRACE))
    specs = trace.jobs if jobs is None else trace.jobs[:jobs]
    c = wrap("build cluster", lambda: load_cluster(cluster))
    config = SimConfig(perf_model=perf)

    def build() -> tuple[Any, Any]:
        p = make_policy(policy)
        m = build_model(c, p, config, default_catalog())
        p.reset()
        return p, m

    p, model = wrap("build policy + execution model", build)
    core = wrap("prepare jobs (ideal times, checks)", lambda: Core(specs, p, model))
    result = wrap("event loop", core.run)
    summary = wrap("summarize", lambda: summarize(result))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)

        def write() -> None:
            write_json(out / "summary.json", summary)
            write_records(out / "records.csv", result.records)
            write_timeseries(out / "timeseries.csv", result.timeseries)
            write_records(out / "load.csv", load_over_time(result.records, result.timeseries, c.num_gpus))

        wrap("write outputs", write)
    return {"jobs": len(specs), "events": result.events, "completed": summary["jobs_completed"],
            "preemptions": summary["preemptions"], "offered_load": summary["offered_load"]}


# (label, predicate on a pstats key (file, line, function)) — cumulative time of the matching functions
LOOP_GROUPS: list[tuple[str, Callable[[tuple[str, int, str]], bool]]] = [
    ("physics: perf model add/remove/alone", lambda k: "/perf/" in k[0] and k[2] in ("add", "remove", "alone")),
    ("re-time jobs after a physics change", lambda k: k[0].endswith("engine/fluid.py") and k[2] == "_retime"),
    ("policy passes (schedule + view)", lambda k: (("/policies/" in k[0] and k[2] == "schedule")
                                                   or (k[0].endswith("engine/fluid.py") and k[2] == "view"))),
    ("records + time series", lambda k: ((k[0].endswith("engine/records.py") and k[2] == "job_record")
                                         or (k[0].endswith("engine/core.py") and k[2] == "_sample"))),
]
LOAD_GROUPS: list[tuple[str, Callable[[tuple[str, int, str]], bool]]] = [
    ("read CSV rows", lambda k: k[2] == "read_rows"),
    ("parse fields (timestamp, duration, GPUs)", lambda k: k[2] == "parse_timestamp"
     or (k[0].endswith("csvrows.py") and k[2] in ("__init__", "duration", "gpus"))),
    ("assign models (seeded hash)", lambda k: k[0].endswith("loaders/_common.py") and k[2] == "model"),
    ("build + check JobSpecs", lambda k: k[0].endswith("loaders/_common.py") and k[2] == "add"),
]


def split(prof: cProfile.Profile, groups: list[tuple[str, Callable[[tuple[str, int, str]], bool]]]
          ) -> tuple[float, dict[str, float]]:
    """(total profiled seconds, cumulative seconds per group); recursive calls are counted once by pstats."""
    st = pstats.Stats(prof)
    total = sum(v[2] for v in st.stats.values())  # type: ignore[attr-defined]
    out = {label: 0.0 for label, _ in groups}
    for key, (_cc, _nc, _tt, ct, _callers) in st.stats.items():  # type: ignore[attr-defined]
        for label, pred in groups:
            if pred(key):
                out[label] += ct
    return total, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--policy", default="fifo+consolidated")
    ap.add_argument("--cluster", default="philly2048")
    ap.add_argument("--perf-model", default="maxmin")
    ap.add_argument("--jobs", type=int, default=None, help="first N jobs (default: all 82,247)")
    ap.add_argument("--top", type=int, default=0, help="also print the loop's top N functions by own time")
    a = ap.parse_args()

    from ddlsched.policies import make_policy

    make_policy(a.policy)  # import the policy modules once, so no phase below is charged for imports
    timed: dict[str, float] = {}

    def clock(name: str, thunk: Callable[[], Any]) -> Any:
        t0 = time.perf_counter()
        try:
            return thunk()
        finally:
            timed[name] = time.perf_counter() - t0

    info = run_phases(a.policy, a.cluster, a.perf_model, a.jobs, clock)

    profs: dict[str, cProfile.Profile] = {}

    def profiled(name: str, thunk: Callable[[], Any]) -> Any:
        prof = profs[name] = cProfile.Profile()
        return prof.runcall(thunk)

    run_phases(a.policy, a.cluster, a.perf_model, a.jobs, profiled)

    total = sum(timed.values())
    print(f"{a.policy} on {a.cluster} ({a.perf_model}), {info['jobs']:,} jobs, {info['events']:,} events, "
          f"{info['preemptions']:,} preemptions, offered load {info['offered_load']:.2f}; "
          f"{time.strftime('%Y-%m-%d', time.gmtime())}\n")
    print("| phase | seconds | share |\n|---|---|---|")
    for name, sec in timed.items():
        print(f"| {name} | {sec:.2f} | {100 * sec / total:.0f} % |")
        subgroups = {"parse + validate trace": LOAD_GROUPS, "event loop": LOOP_GROUPS}.get(name)
        if subgroups:
            ptotal, parts = split(profs[name], subgroups)
            rest = sec
            for label, ct in parts.items():
                s = sec * ct / ptotal if ptotal else 0.0
                rest -= s
                print(f"| &nbsp;&nbsp;↳ {label} | {s:.2f} | {100 * s / total:.0f} % |")
            print(f"| &nbsp;&nbsp;↳ rest of the {'engine' if name == 'event loop' else 'loader'} | {rest:.2f} | "
                  f"{100 * rest / total:.0f} % |")
    print(f"| **total** | **{total:.2f}** | 100 % |")
    if a.top:
        print(f"\nevent loop, top {a.top} functions by own time (profiled pass):\n")
        pstats.Stats(profs["event loop"]).strip_dirs().sort_stats("tottime").print_stats(a.top)


if __name__ == "__main__":
    main()
