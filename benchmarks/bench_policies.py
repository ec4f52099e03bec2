"""Every registered policy on ~10,000 Philly-derived jobs at a realised load near 0.7 on ``philly512`` (issue 13).

Each policy runs in a fresh subprocess with a wall-clock limit, so its peak memory (``ru_maxrss``) is its own and a
policy that does not finish is cut off and reported as ``timeout``. The stretch of the trace is a ``--window`` of
arrivals (days from the first arrival) with its inter-arrival times divided by ``--load-scale``; the defaults are a
stretch whose offered load is steady across its quarters (see BENCHMARKS.md for how it was chosen). Every policy
runs with its execution model's default physics (``maxmin`` for the fluid model).

    python benchmarks/bench_policies.py                                  # every policy, 120 s each
    python benchmarks/bench_policies.py --policies fifo,sjf-bco --timeout 60
    python benchmarks/bench_policies.py --policies sjf-ffs --profile 60  # cProfile the first 60 s: top functions
    python benchmarks/bench_policies.py --policies sjf-bco --jobs 1000   # the first 1,000 jobs of the window
    python benchmarks/bench_policies.py --out benchmarks/results/policies.md

Columns: ``sim_s`` the event loop only; ``total_s`` loading the trace, building the cluster, preparing the jobs,
the loop and the summary; ``load`` the offered load of the jobs (Σ GPUs × ideal run time ÷ GPUs × arrival span)
and ``realised`` the busy-GPU share over the arrival window (``gpu_utilization_window``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "data" / "traces" / "philly_pollux" / "philly.csv"
WINDOW = "66.75d:78.5d"  # 10,072 jobs; offered load 0.62 unscaled, quarters 0.59-0.66
LOAD_SCALE = 1.35  # realised load ≈ 0.7 under fifo+consolidated
COLS = ["policy", "model", "physics", "status", "jobs", "completed", "offered", "realised", "sim_s", "total_s",
        "preemptions", "avg_jct_h", "peak_mib", "done_60s"]


def _peak_mib() -> int:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


class Cut(Exception):
    """The run reached its wall-clock limit (raised from SIGALRM inside the simulation)."""


def one(policy: str, cluster: str, window: str, load_scale: float, jobs: int | None = None,
        limit: float | None = None) -> dict:
    """Run one policy in this process (on the first ``jobs`` jobs of the window, if given); the row of the
    table (``status`` ok, the error the API raised, or ``timeout`` after ``limit`` seconds of wall time).
    ``done_60s``: jobs completed in the first 60 s of wall time, when the run takes longer (how far a minute goes)."""
    import ddlsched
    from ddlsched.errors import DdlschedError

    seen = {"done": 0, "done_60s": 0, "t": 0.0, "t0": -1.0}

    def progress(now: float, done: int, total: int) -> None:
        if seen["t0"] < 0:
            seen["t0"] = now  # the first call comes at the first arrival
        seen["done"], seen["t"] = done, now - seen["t0"]
        if time.perf_counter() - t0 <= 60.0:
            seen["done_60s"] = done

    def stop(signum: int, frame: object) -> None:
        raise Cut

    t0 = time.perf_counter()
    if limit:
        signal.signal(signal.SIGALRM, stop)
        signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        r = ddlsched.simulate(TRACE, cluster, policy, window=window, load_scale=load_scale, max_jobs=jobs,
                              progress=progress)
    except DdlschedError as e:
        return {"policy": policy, "status": f"error: {e}", "total_s": round(time.perf_counter() - t0, 2),
                "peak_mib": _peak_mib()}
    except Cut:
        return {"policy": policy, "status": f"timeout (> {limit:g} s; {seen['t'] / 86400:.1f} d simulated)",
                "completed": seen["done"], "total_s": f"> {limit:g}", "done_60s": seen["done_60s"],
                "peak_mib": _peak_mib()}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    total = time.perf_counter() - t0
    s = r.summary
    return {"policy": policy, "model": s["execution_model"], "physics": s["perf_model"],
            "status": "ok" if not s["jobs_unfinished"] else f"{s['jobs_unfinished']} unfinished",
            "jobs": s["jobs"], "completed": s["jobs_completed"], "offered": round(s["offered_load"], 2),
            "realised": round(s["gpu_utilization_window"], 2), "sim_s": round(r.raw.wall_s, 2),
            "total_s": round(total, 2), "preemptions": s["preemptions"], "avg_jct_h": round(s["avg_jct_s"] / 3600, 2),
            "peak_mib": _peak_mib(), "done_60s": seen["done_60s"] if total > 60 else ""}


def profile(policy: str, cluster: str, window: str, load_scale: float, jobs: int | None, seconds: float,
            top: int) -> None:
    """cProfile the run for at most ``seconds`` of wall time, then print the top functions by own and by
    cumulative time (a run cut off by the limit is profiled up to that point)."""
    import cProfile
    import io
    import pstats

    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    try:
        row = one(policy, cluster, window, load_scale, jobs, seconds)
    finally:
        prof.disable()
    status = json.dumps({k: v for k, v in row.items() if v != ""})
    print(f"## {policy}: {status} (profiled wall {time.perf_counter() - t0:.1f} s)")
    for key in ("tottime", "cumulative"):
        buf = io.StringIO()
        st = pstats.Stats(prof, stream=buf)
        st.strip_dirs().sort_stats(key).print_stats(top)
        text = buf.getvalue()
        print(f"### by {key}\n" + text[text.find("   ncalls"):].rstrip() + "\n")


def run_cell(policy: str, a: argparse.Namespace) -> dict:
    cell = [policy, a.cluster, a.window, a.load_scale, a.jobs, a.timeout]
    cmd = [sys.executable, __file__, "--cell", json.dumps(cell)]
    t0 = time.perf_counter()
    # a new session, so a timeout kills the policy's whole process group (nothing it started outlives it)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=a.timeout + 60)  # the run stops itself at a.timeout; a backstop
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"policy": policy, "status": f"timeout (> {a.timeout:g} s)", "total_s": f"> {a.timeout:g}"}
    lines = out.strip().splitlines()
    if proc.returncode or not lines:
        tail = (err.strip().splitlines() or ["no output"])[-1]
        return {"policy": policy, "status": f"crashed: {tail}", "total_s": round(time.perf_counter() - t0, 2)}
    return json.loads(lines[-1])


def all_policies() -> list[str]:
    """Every policy ``ddlsched policies`` lists, in its order."""
    from ddlsched.policies.registry import policy_rows

    return [row[0] for row in policy_rows()]


def markdown(rows: list[dict]) -> str:
    lines = ["| " + " | ".join(COLS) + " |", "|" + "---|" * len(COLS)]
    for r in rows:
        lines.append("| " + " | ".join(str(r.get(c, "")).replace("|", "/") for c in COLS) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--policies", default="", help="comma-separated names (default: every registered policy)")
    ap.add_argument("--cluster", default="philly512")
    ap.add_argument("--window", default=WINDOW, help=f"arrival window START:END (default {WINDOW})")
    ap.add_argument("--load-scale", type=float, default=LOAD_SCALE, help=f"default {LOAD_SCALE}")
    ap.add_argument("--jobs", type=int, default=None, help="only the first N jobs of the window")
    ap.add_argument("--timeout", type=float, default=120.0, help="wall-clock limit per policy, seconds")
    ap.add_argument("--out", help="also write the Markdown table to this file")
    ap.add_argument("--profile", type=float, metavar="SECONDS",
                    help="instead of the table: cProfile each policy for at most SECONDS and print top functions")
    ap.add_argument("--top", type=int, default=25, help="functions shown per profile (default 25)")
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.cell:
        print(json.dumps(one(*json.loads(a.cell))))
        return
    policies = [p.strip() for p in a.policies.split(",") if p.strip()] or all_policies()
    if a.profile:
        for p in policies:
            profile(p, a.cluster, a.window, a.load_scale, a.jobs, a.profile, a.top)
        return
    first = "" if a.jobs is None else f"first {a.jobs:,} jobs, "
    head = (f"{a.cluster}, trace {TRACE.relative_to(ROOT)}, --window {a.window} --load-scale {a.load_scale:g}, "
            f"{first}limit {a.timeout:g} s per policy, {time.strftime('%Y-%m-%d', time.gmtime())}")
    print(head + "\n")
    print("| " + " | ".join(COLS) + " |\n|" + "---|" * len(COLS), flush=True)
    rows = []
    for p in policies:
        r = run_cell(p, a)
        rows.append(r)
        print("| " + " | ".join(str(r.get(c, "")).replace("|", "/") for c in COLS) + " |", flush=True)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(head + "\n\n" + markdown(rows) + "\n")


if __name__ == "__main__":
    main()
