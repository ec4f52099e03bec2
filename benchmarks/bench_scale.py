"""Scale benchmark: synthetic Philly-mix traces at a target offered load on clusters of 512 to 16,384 GPUs.

Clusters: racks of 32 servers × 8 V100 (25 Gb/s NICs, 2:1 rack uplinks), 2 to 64 racks (512 to 16,384 GPUs).
Trace: ``philly_mix`` (the Philly size mix, models uniform over the Wang profiles, 1,000–6,000 iterations) with
Poisson arrivals. The rate for the target load is found once per cluster by a pilot of 5,000 jobs: rate =
pilot_rate × target ÷ the pilot's measured offered load (load is linear in the rate), and the run reports the
offered load it really got. Each cell runs in a fresh subprocess (its own peak memory), each policy of
``--policies`` (default ``fifo+consolidated``) with max-min contention, no time series (``record_timeseries=False``:
a million-job step series is not the point) unless ``--timeseries``, which also fills the realised-load column
(``gpu_utilization_window``, the busy-GPU share over the arrival window).
``cpu_s`` is the cell's CPU time (user + system), the better figure when other work shares the machine.

    python benchmarks/bench_scale.py --jobs 10000,100000 --gpus 512,2048     # the cost curve
    python benchmarks/bench_scale.py --jobs 1000000 --gpus 16384             # the million-job run
    python benchmarks/bench_scale.py --jobs 100000 --gpus 512,2048 --timeseries \
        --policies fifo+consolidated,tiresias+consolidated                 # policies side by side
    python benchmarks/bench_scale.py --plot docs/images/scale.png A.md B.md    # the cost curve from saved tables

``--out FILE.md`` also writes the table to a file; ``--plot PNG TABLE.md...`` draws CPU time and peak memory
against jobs, one line per cluster size and build (solid: pure Python, dashed: compiled; the ``build`` column), from
such tables (needs the ``plots`` extra); it draws the ``fifo+consolidated`` rows only.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

PILOT_JOBS = 5_000
PILOT_RATE = 0.05  # jobs/s; rescaled to the target load


def cluster(gpus: int):  # -> Cluster (imported lazily)
    from ddlsched.cluster.presets import GPU_TYPES
    from ddlsched.cluster.topology import Cluster, ServerSpec

    racks = gpus // (32 * 8)
    if racks < 1 or racks * 32 * 8 != gpus:
        raise SystemExit(f"--gpus must be a multiple of 256, got {gpus}")
    layout = [[ServerSpec(8, "V100", 25.0) for _ in range(32)] for _ in range(racks)]
    return Cluster.build(f"scale{gpus}", layout, {"V100": GPU_TYPES["V100"]}, oversubscription=2.0)


def run(jobs: int, gpus: int, rate: float, policy: str = "fifo+consolidated", series: bool = False) -> dict:
    from ddlsched import native
    from ddlsched.engine import SimConfig, run_simulation
    from ddlsched.metrics.summary import summarize
    from ddlsched.policies import make_policy
    from ddlsched.workload.synthetic import philly_mix

    t0, c0 = time.perf_counter(), time.process_time()
    trace = philly_mix(jobs, seed=0, rate_per_s=rate)
    c = cluster(gpus)
    t_gen = time.perf_counter() - t0
    r = run_simulation(c, trace.jobs, make_policy(policy), SimConfig(record_timeseries=series))
    s = summarize(r)
    return {"policy": policy, "jobs": jobs, "gpus": gpus, "rate_per_s": rate, "completed": s["jobs_completed"],
            "offered_load": round(s["offered_load"], 3),
            "realised_load": round(s["gpu_utilization_window"], 3) if series else "",
            "preemptions": s["preemptions"], "gen_s": round(t_gen, 2), "sim_s": round(r.wall_s, 2),
            "total_s": round(time.perf_counter() - t0, 2),
            "cpu_s": round(time.process_time() - c0, 2), "events": r.events,
            "events_per_s": round(r.events / r.wall_s) if r.wall_s > 0 else 0,
            "peak_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "avg_jct_h": round(s["avg_jct_s"] / 3600, 3), "avg_queue_h": round(s["avg_queueing_s"] / 3600, 3),
            "build": native.status()["mode"]}


def cell(*args: object) -> dict:
    out = subprocess.run([sys.executable, __file__, "--cell", json.dumps(args)], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", default="10000,100000")
    ap.add_argument("--gpus", default="512,2048,16384")
    ap.add_argument("--load", type=float, default=0.7)
    ap.add_argument("--policies", default="fifo+consolidated", help="comma-separated; each runs every cell")
    ap.add_argument("--timeseries", action="store_true", help="record the time series and report the realised load")
    ap.add_argument("--out", help="also write the Markdown table to this file")
    ap.add_argument("--plot", nargs="+", metavar=("PNG", "TABLE"), help="draw the cost curve from saved tables")
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.cell:
        print(json.dumps(run(*json.loads(a.cell))))
        return
    if a.plot:
        plot(a.plot[0], a.plot[1:])
        return
    def counts(flag: str, text: str) -> list[int]:
        try:
            got = [int(v) for v in text.split(",")]
        except ValueError:
            got = []
        if not got or min(got) < 1:
            ap.error(f"{flag}: expected comma-separated positive integers, got {text!r}")
        return got

    jobs_list, gpus_list = counts("--jobs", a.jobs), counts("--gpus", a.gpus)
    if not 0 < a.load < 10:  # also rejects nan
        ap.error(f"--load: expected an offered load in (0, 10), got {a.load}")
    for gpus in gpus_list:
        if gpus % 256:
            ap.error(f"--gpus: {gpus} is not a multiple of 256 (racks of 32 servers × 8 GPUs)")
    policies = [p.strip() for p in a.policies.split(",")]
    from ddlsched.errors import DdlschedError
    from ddlsched.policies import make_policy

    for policy in policies:  # a wrong name fails here, before any pilot runs
        try:
            make_policy(policy)
        except DdlschedError as e:
            ap.error(f"--policies: {e}")
    cols = ["policy", "jobs", "gpus", "offered_load", "realised_load", "completed", "preemptions", "gen_s", "sim_s",
            "total_s", "cpu_s", "events_per_s", "peak_mib", "avg_jct_h", "avg_queue_h", "build"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    print("\n".join(lines), flush=True)
    for gpus in gpus_list:
        pilot = cell(PILOT_JOBS, gpus, PILOT_RATE * gpus / 512)
        rate = pilot["rate_per_s"] * a.load / pilot["offered_load"]
        for jobs in jobs_list:
            for policy in policies:
                r = cell(jobs, gpus, rate, policy, a.timeseries)
                lines.append("| " + " | ".join(str(r[c]) for c in cols) + " |")
                print(lines[-1], flush=True)
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")


def plot(png: str, tables: list[str]) -> None:
    """CPU seconds and peak MiB against jobs (log-log), one line per cluster size, from saved Markdown tables."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows: dict[tuple[int, str], list[tuple[int, float, float]]] = {}
    for path in tables:
        with open(path) as f:
            lines = [ln.strip().strip("|").split("|") for ln in f if ln.startswith("| ") and "---" not in ln]
        head = [h.strip() for h in lines[0]]
        if "build" not in head:
            raise SystemExit(f"{path}: no 'build' column (a table from before it existed: run the cells again)")
        for ln in lines[1:]:
            r = dict(zip(head, (v.strip() for v in ln), strict=True))
            if r.get("policy", "fifo+consolidated") != "fifo+consolidated":
                continue
            rows.setdefault((int(r["gpus"]), r["build"]), []).append(
                (int(r["jobs"]), float(r["cpu_s"]), float(r["peak_mib"])))
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 4), dpi=120)
    colours: dict[int, str] = {}
    for (gpus, build), pts in sorted(rows.items()):
        pts.sort()
        style = {"marker": "o", "linestyle": "--" if build == "compiled" else "-",
                 "color": colours.setdefault(gpus, f"C{len(colours)}"), "label": f"{gpus:,} GPUs, {build}"}
        ax_t.plot([p[0] for p in pts], [p[1] for p in pts], **style)
        ax_m.plot([p[0] for p in pts], [p[2] for p in pts], **style)
    for ax, label in ((ax_t, "CPU time of the run (s)"), (ax_m, "peak memory (MiB)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("jobs")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.suptitle("fifo+consolidated, max-min contention, Poisson arrivals at offered load 0.7")
    fig.tight_layout()
    fig.savefig(png)


if __name__ == "__main__":
    main()
