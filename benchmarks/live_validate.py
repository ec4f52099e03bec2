"""Sim-vs-live fidelity on the emulated testbed with Ray (``make live-validate``; needs root, namespaces, tc).

A slice of a bundled trace (``--jobs`` consecutive jobs of at most ``--max-gpus`` GPUs from ``--offset``): its
arrivals keep their gaps, compressed into ``--wall-minutes``; its durations keep their ratios, scaled by one factor g
so that the offered load is ``--load``, then clipped to ``--min-s``..``--max-s``; the policies' time parameters
(Tiresias' thresholds, delay scheduling's timers) are scaled by the same g. It runs on an emulated cluster of
``--racks`` × ``--servers`` servers of 2 GPU slots (100 Mbit/s NICs, uplinks oversubscribed ``--oversub``:1) with
one Ray node per server namespace. Every job runs the profile job of one of two small models (200 ms of compute and
a 0.5 or 2 MB all-reduce, written to ``models.csv`` and used by both the live run and the simulation). Then
``ddlsched live run --executor ray --compare-sim`` runs every policy and writes its side-by-side; this script prints
the per-policy table (|1 − live/sim| for avg JCT and makespan, the per-job JCT error quantiles, the rankings, CPU
busy) and writes it to ``OUT/fidelity.json``. The testbed is always taken down. ``--scan STEP`` (no root) only
simulates the slices at every STEP-th offset and prints how far apart the policies are: how ``--offset`` was chosen.

    sudo make live-validate                                   # 60 jobs over 10 minutes, 5 policies, ≈ 75 min
    sudo python benchmarks/live_validate.py --tiny --out results/live-validate-tiny   # 6 jobs, 2 policies
    python benchmarks/live_validate.py --scan 250             # the slices, simulated
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))  # this checkout's ddlsched, also when another is installed
TRACE = REPO / "data/traces/philly_pollux/philly.csv"
POLICIES = "fifo+consolidated,fifo+pack,tiresias+consolidated,delay-sched,largest-first"
PLUGIN = REPO / "examples/plugins/largest_first.py"
MODELS = ("name,grad_mb,compute_ms,batch_size,mem_mb,source\n"
          "live-small,0.5,200,32,500,live-validate: 200 ms compute + 0.5 MB all-reduce\n"
          "live-large,2.0,200,32,500,live-validate: 200 ms compute + 2 MB all-reduce\n")


def cluster_yaml(racks: int, servers: int, oversub: float) -> str:
    return (f"name: tb{racks * servers}\n"
            f"network: {{intra_server_gbps: 1.0, nic_gbps: 0.1, oversubscription: {oversub:g}}}\n"
            "gpu_types:\n  V100: {mem_gb: 32, speed: 1.0}\n"
            f"racks:\n  - count: {racks}\n    servers:\n      - {{count: {servers}, gpus: 2, gpu_type: V100}}\n")


def trace_slice(n: int, offset: int, max_gpus: int, wall_s: float, load: float, slots: int, min_s: float,
                max_s: float) -> tuple[str, float]:
    """The slice as a jobs CSV, and the factor ``g`` its durations were scaled by.

    The trace's order, GPU counts, relative inter-arrival gaps and relative durations are kept: arrivals are
    compressed into ``wall_s`` and durations scaled by ``g`` so that the offered load (GPU-seconds asked ÷ slots ×
    ``wall_s``) is ``load``, then clipped to ``min_s``..``max_s`` (so one job never dominates)."""
    from ddlsched.workload.loaders import load_trace

    jobs = [j for j in load_trace(TRACE).jobs if j.num_gpus <= max_gpus and j.duration_s]
    jobs = jobs[offset:offset + n]
    if len(jobs) < n:
        raise SystemExit(f"only {len(jobs)} jobs of at most {max_gpus} GPUs from offset {offset}")
    t0 = jobs[0].arrival_s
    f = wall_s / max(jobs[-1].arrival_s - t0, 1.0)
    g = load * slots * wall_s / sum(j.num_gpus * (j.duration_s or 0.0) for j in jobs)
    rows = ["job_id,arrival,num_gpus,duration,model"]
    for i, j in enumerate(jobs):
        d = min(max((j.duration_s or 0.0) * g, min_s), max_s)
        rows.append(f"{j.job_id},{(j.arrival_s - t0) * f:.3f},{j.num_gpus},{d:.3f},"
                    f"{'live-large' if i % 2 else 'live-small'}")
    return "\n".join(rows) + "\n", g


def scaled_params(policies: list[str], g: float) -> dict[str, dict[str, object]]:
    """The policies' time parameters (Tiresias' queue thresholds in GPU-seconds, delay scheduling's timers in
    seconds) scaled by the slice's duration factor ``g``: a job of the slice needs ``g`` × its trace time, so the
    same job crosses the same threshold, and waits the same share of its run time, as it would in the trace."""
    from ddlsched.policies import make_policy
    from ddlsched.policies.registry import load_plugin

    if "largest-first" in policies:
        load_plugin(str(PLUGIN))
    out: dict[str, dict[str, object]] = {}
    for name in policies:
        p = make_policy(name, {})
        ordering = getattr(p, "ordering", None)
        if ordering is not None and hasattr(ordering, "thresholds"):
            out[name] = {"thresholds": [round(t * g, 3) for t in ordering.thresholds]}
        elif hasattr(p, "initial_timers"):
            out[name] = {f"timer_{k}": round(v * g, 3) for k, v in p.initial_timers.items()}
    return out


def param_flags(params: dict[str, dict[str, object]]) -> list[str]:
    return [x for name, kv in params.items() for k, v in kv.items()
            for x in ("--policy-param", f"{name}:{k}={json.dumps(v)}")]


def scan(a: argparse.Namespace, step: int, work: Path) -> None:
    """Simulate every policy on the slices at offsets 0, step, 2·step, … and print how far apart their avg JCTs
    are (the smallest gap between two of them, relative) and the longest makespan: how the default slice was
    chosen (no root, no Ray; simulation only)."""
    from ddlsched import api
    from ddlsched.workload.loaders import load_trace

    policies = a.policies.split(",")
    slots = a.racks * a.servers * 2
    total = sum(1 for j in load_trace(TRACE).jobs if j.num_gpus <= a.max_gpus and j.duration_s)
    work.mkdir(parents=True, exist_ok=True)
    (work / "cluster.yaml").write_text(cluster_yaml(a.racks, a.servers, a.oversub))
    (work / "models.csv").write_text(MODELS)
    for off in range(0, total - a.jobs, step):
        text, g = trace_slice(a.jobs, off, a.max_gpus, a.wall_minutes * 60, a.load, slots, a.min_s, a.max_s)
        (work / "jobs.csv").write_text(text)
        params = scaled_params(policies, g)
        res = {}
        for p in policies:
            r = api.simulate(work / "jobs.csv", work / "cluster.yaml", p, policy_params=params.get(p, {}),
                             models=work / "models.csv", plugins=[str(PLUGIN)] if p == "largest-first" else [],
                             restart_penalty_s=0.1, timeseries=False)
            res[p] = (r.summary["avg_jct_s"], r.summary["makespan_s"], r.summary.get("preemptions", 0))
        v = sorted(x[0] for x in res.values())
        gap = min((b - x) / x for x, b in pairwise(v))
        print(f"offset {off} g {g:.4f} smallest gap {gap:.4f} longest makespan {max(x[1] for x in res.values()):.0f}"
              f" | " + ", ".join(f"{p} {x[0]:.1f} s ({x[2]} preemptions)" for p, x in res.items()), flush=True)


def run(cmd: list[str], **kw: object) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)  # type: ignore[call-overload]


def summarise(out: Path) -> dict[str, object]:
    """The side-by-side ``live run --compare-sim`` wrote (per policy: avg JCT and makespan live/sim and their
    |1 − live/sim|, per-job JCT error median/p95/max, the two rankings) and the live figures (CPU busy, latency)."""
    f = out / "comparison.csv"
    rows = list(csv.DictReader(f.read_text().splitlines())) if f.exists() else []
    live = {str(p.parent.relative_to(out)): json.loads(p.read_text()) for p in out.rglob("live.json")}
    sim = sorted(float(r["sim_avg_jct_s"]) for r in rows)
    ties = sum(1 for a, b in pairwise(sim) if abs(b - a) <= 1e-9 * max(abs(b), 1.0))
    return {"comparison": rows, "live": live,
            "rankings_equal": bool(rows) and all(r["live_rank"] == r["sim_rank"] for r in rows),
            # simulated avg JCTs that tie: their order is arbitrary, so an equal ranking says nothing about them
            "sim_ties": ties}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="results/live-validate")
    ap.add_argument("--jobs", type=int, default=60)
    ap.add_argument("--offset", type=int, default=60000, help="first job of the slice (see --scan)")
    ap.add_argument("--max-gpus", type=int, default=4)
    ap.add_argument("--wall-minutes", type=float, default=10.0, help="the arrivals' span")
    ap.add_argument("--load", type=float, default=1.2, help="offered load: GPU-seconds asked / (slots × span)")
    ap.add_argument("--min-s", type=float, default=10.0)
    ap.add_argument("--max-s", type=float, default=240.0)
    ap.add_argument("--racks", type=int, default=2)
    ap.add_argument("--servers", type=int, default=4, help="servers per rack")
    ap.add_argument("--oversub", type=float, default=2.0)
    ap.add_argument("--policies", default=POLICIES)
    ap.add_argument("--grace", type=float, default=30.0)
    ap.add_argument("--tiny", action="store_true", help="6 jobs in 1 minute, 2 racks × 2 servers, 2 policies")
    ap.add_argument("--scan", type=int, metavar="STEP", help="simulate the slices at every STEP-th offset and print "
                    "how far apart the policies are (how --offset was chosen); no root needed")
    a = ap.parse_args(argv)
    if a.tiny:
        a.jobs, a.wall_minutes, a.servers, a.min_s, a.max_s = 6, 1.0, 2, 15.0, 45.0
        a.policies = "fifo+consolidated,tiresias+consolidated"
    out = Path(a.out).resolve()
    work = out.with_name(out.name + ".inputs")
    if a.scan:
        scan(a, a.scan, work)
        return 0
    if os.geteuid() != 0:
        raise SystemExit("live-validate needs root (the emulated testbed: network namespaces and tc)")
    work.mkdir(parents=True, exist_ok=True)
    (work / "cluster.yaml").write_text(cluster_yaml(a.racks, a.servers, a.oversub))
    (work / "models.csv").write_text(MODELS)
    text, g = trace_slice(a.jobs, a.offset, a.max_gpus, a.wall_minutes * 60, a.load, a.racks * a.servers * 2,
                          a.min_s, a.max_s)
    (work / "jobs.csv").write_text(text)
    params = scaled_params(a.policies.split(","), g)
    print(f"slice: {a.jobs} jobs from offset {a.offset}, durations × {g:.5f} (offered load {a.load:g}); "
          f"scaled policy parameters {json.dumps(params)}", flush=True)
    bindir = Path(sys.executable).parent
    ddl = str(bindir / "ddlsched")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "PATH": f"{bindir}:{os.environ.get('PATH', '')}"}
    run([ddl, "testbed", "down"], env=env)
    try:
        run([ddl, "testbed", "up", "--cluster", str(work / "cluster.yaml"), "--scale", "1", "--ray"], env=env)
        from ddlsched.testbed.rayup import ray_address

        address = ray_address()
        plugin = ["--plugin", str(PLUGIN)] if "largest-first" in a.policies else []
        run(["ip", "netns", "exec", "ddl-s0", ddl, "live", "run", *plugin, "--trace", str(work / "jobs.csv"),
             "--models", str(work / "models.csv"), "--cluster", str(work / "cluster.yaml"), "--policy", a.policies,
             *param_flags(params), "--executor", "ray", "--executor-opt", f"address={address}",
             "--executor-opt", f"models={work / 'models.csv'}", "--executor-opt", "checkpoint_every=10",
             "--grace", str(a.grace), "--compare-sim", "--quiet", "--out", str(out), "--overwrite"], env=env)
    finally:
        run([ddl, "testbed", "down"], env=env)
    summary = summarise(out)
    summary["slice"] = {"jobs": a.jobs, "offset": a.offset, "wall_minutes": a.wall_minutes, "load": a.load,
                        "duration_factor": g, "policy_params": params}
    (out / "fidelity.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary["comparison"], indent=1))
    print("rankings equal:", summary["rankings_equal"],
          f"({summary['sim_ties']} tie(s) among the simulated avg JCTs: those ranks are arbitrary)"
          if summary["sim_ties"] else "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
