"""How long does a start offset last on the emulated cluster? Two equal rings, real TCP traffic (docs/physics.md §15).

    python benchmarks/offset_persistence_testbed.py [--iterations 300] [--out results/offset-persistence]
    python benchmarks/offset_persistence_testbed.py --reuse results/offset-persistence   # re-summarise, no root

(as root: it brings the ``tb32`` testbed up at 100 Mbit/s and always tears it down; ≈ 13 min for 300 iterations.)

Phase locking (``phased_tcp`` given the clock) assumes two rings of equal period keep the offset they started with
for their whole life (assumption B2). ``benchmarks/offset_persistence.py`` replays that under the model of TCP's
uneven split; this measures it: the validation suite's phase pair (two 4-rings on the same 4 NICs, compute = the
line-rate all-reduce m0 = 0.48 s) started aligned (offset 0) and opposite (offset ½ period), ``--iterations``
iterations each, then one ring alone for the reference. Per window of iteration indices it prints ring a's mean
iteration (s, and ÷ the alone iteration) and the phase offset between the rings' communication starts, folded to
[0, ½] periods (0: they send together; ½: never together), beside the locked predictions from the measured alone
times (aligned c + 2·m, opposite c + m), then what the models predict for the whole run (calibrated with
``--calibration``, by default the published validation report's).
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

WINDOWS = ((1, 5), (6, 20), (21, 50), (51, 100), (101, 200), (201, 300), (301, 500))


def comm_starts(recs: Sequence[dict[str, Any]]) -> list[float]:
    """Epoch second at which each iteration's all-reduce began (sleep compute, nothing hidden)."""
    return [r["start"] + r["compute_s"] for r in recs]


def folded_offsets(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]]) -> list[float]:
    """For each of a's iterations k whose all-reduce starts while b runs: where b's nearest all-reduce start falls
    in a's period k, folded to [0, ½] (0: together, ½: opposite); nan where b has not started or has ended."""
    sa, sb = comm_starts(a), comm_starts(b)
    out = []
    j = 0
    for k, r in enumerate(a):
        period = r["end"] - r["start"]
        if period <= 0 or not b or sa[k] < b[0]["start"] or sa[k] > b[-1]["end"]:
            out.append(float("nan"))
            continue
        while j + 1 < len(sb) and sb[j + 1] <= sa[k]:
            j += 1
        nearest = min((sb[i] for i in (j, j + 1) if i < len(sb)), key=lambda t: abs(t - sa[k]))
        phi = ((nearest - sa[k]) / period) % 1.0
        out.append(min(phi, 1.0 - phi))
    return out


FOR_GOOD = 1e9  # lock_iterations that outlasts any run: the lock for the job's whole life (assumption B2)
HOLD_PERIODS = 0.1  # an offset "holds" while it stays this close (in periods) to its first measured value


def hold_iterations(offsets: Sequence[float]) -> int:
    """How many of ring a's first iterations (while b runs) keep the folded offset within :data:`HOLD_PERIODS`
    of its first measured value."""
    vals = [x for x in offsets if x == x]
    n = 0
    while n < len(vals) and abs(vals[n] - vals[0]) <= HOLD_PERIODS:
        n += 1
    return n


def window_means(xs: Sequence[float], windows: Sequence[tuple[int, int]]) -> list[float]:
    """Mean of the finite values of ``xs`` (1-based iteration indices) in each window; nan where none."""
    out = []
    for lo, hi in windows:
        vals = [x for x in xs[lo - 1:hi] if x == x]
        out.append(statistics.mean(vals) if vals else float("nan"))
    return out


def summarise(runs: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]], alone: list[dict[str, Any]],
              n: int) -> dict[str, Any]:
    steady = alone[2:] or alone
    m = statistics.median(r["comm_s"] for r in steady)
    c = statistics.median(r["compute_s"] for r in steady)
    t_alone = c + m
    wins = [w for w in WINDOWS if w[0] <= n]
    rows = []
    for name, (a, b) in runs.items():
        it = [r["end"] - r["start"] for r in a]
        offsets = folded_offsets(a, b)
        rows.append({"start": name, "hold_iterations": hold_iterations(offsets),
                     "windows": [f"{lo}–{min(hi, n)}" for lo, hi in wins],
                     "iteration_s": [round(x, 4) for x in window_means(it, wins)],
                     "iteration_over_alone": [round(x / t_alone, 3) for x in window_means(it, wins)],
                     "offset_periods": [round(x, 3) for x in window_means(offsets, wins)]})
    return {"alone": {"compute_s": round(c, 4), "comm_s": round(m, 4), "iteration_s": round(t_alone, 4)},
            "locked": {"aligned_s": round(c + 2 * m, 4), "opposite_s": round(c + m, 4)},
            "iterations": n, "rows": rows}


def markdown(s: dict[str, Any]) -> str:
    a, lk = s["alone"], s["locked"]
    lines = [f"alone: compute {a['compute_s']:.3f} s, all-reduce {a['comm_s']:.3f} s; locked predictions: aligned "
             f"{lk['aligned_s']:.3f} s, opposite {lk['opposite_s']:.3f} s", ""]
    wins = s["rows"][0]["windows"]
    lines.append("| start | figure | " + " | ".join(f"iterations {w}" for w in wins) + " |")
    lines.append("|---|---|" + "---:|" * len(wins))
    for r in s["rows"]:
        lines.append(f"| {r['start']} | iteration s | " + " | ".join(f"{x:.3f}" for x in r["iteration_s"]) + " |")
        lines.append(f"| {r['start']} | ÷ alone | " + " | ".join(f"{x:.2f}" for x in r["iteration_over_alone"])
                     + " |")
        lines.append(f"| {r['start']} | offset (periods) | " + " | ".join(f"{x:.2f}" for x in r["offset_periods"])
                     + " |")
    holds = ", ".join(f"{r['start']} {r['hold_iterations']}" for r in s["rows"] if "hold_iterations" in r)
    if holds:
        lines += ["", f"start offset held (within {HOLD_PERIODS} of a period of its first value) for: {holds} "
                  "iterations"]
    return "\n".join(lines)


def predictions(n: int, calibration: dict[str, Any] | None) -> str:
    """What the models predict for the pair over its whole run (mean iteration, s): the random-phase fixed point
    (``phased_tcp`` without the clock, as ``simulate`` runs it), phase locking (the testbed replay's clock), and
    ``maxmin``."""
    from ddlsched.testbed.fabric import scaled_cluster
    from ddlsched.testbed.predict import predict
    from ddlsched.testbed.scenarios import phase_pair, tb32

    scaled = scaled_cluster(tb32(), nic_mbit=100.0)
    lines = ["| start | phased_tcp, random phases | phased_tcp (locked 6 iterations, then random) | "
             "phased_tcp, locked for good | maxmin |", "|---|---:|---:|---:|---:|"]
    for name, offset in (("aligned", 0.0), ("opposite", 0.5)):
        jobs = phase_pair(name, name, 1.0, offset, n).jobs
        cells = []
        for model, extra in (("phased_tcp", {"phase_lock": False}), ("phased_tcp", None),
                             ("phased_tcp", {"lock_iterations": FOR_GOOD}), ("maxmin", None)):
            a = predict(scaled, jobs, model, calibration, extra=extra)["a"]
            cells.append(f"{a.jct_s / a.iters:.3f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    from ddlsched.metrics.manifest import atomic_write_text
    from ddlsched.testbed.executor import read_iterations, run_schedule
    from ddlsched.testbed.fabric import scaled_cluster, testbed
    from ddlsched.testbed.scenarios import PHASE_GRAD_MB, PHASE_M0_MS, J, phase_pair, ring, tb32

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--out", default="results/offset-persistence")
    ap.add_argument("--reuse", metavar="DIR", help="Summarise the rank-0 records a previous run left in DIR.")
    ap.add_argument("--calibration", default="docs/validation.json",
                    help="A validation report (or calibration file) whose calibration the predictions use.")
    a = ap.parse_args()
    if a.iterations < 6:
        ap.error(f"--iterations {a.iterations}: at least 6 (the first windows are iterations 1–5 and 6–20)")
    cal_path = Path(a.calibration)
    if not cal_path.is_file() and a.calibration != ap.get_default("calibration"):
        ap.error(f"--calibration {a.calibration}: no such file")
    cal = json.loads(cal_path.read_text()) if cal_path.is_file() else None
    cal = cal.get("calibration", cal) if isinstance(cal, dict) else None
    if a.reuse:
        d = Path(a.reuse)
        files = [d / name / f"{job}.jsonl" for name in ("aligned", "opposite") for job in "ab"]
        missing = [str(f) for f in [*files, d / "alone" / "a.jsonl"] if not f.is_file()]
        if missing:
            ap.error(f"--reuse {a.reuse}: no records at {', '.join(missing)} (the folder a run's --out wrote)")
        runs = {name: (read_iterations(d / name / "a.jsonl"), read_iterations(d / name / "b.jsonl"))
                for name in ("aligned", "opposite")}
        n = len(runs["aligned"][0])
        print(markdown(summarise(runs, read_iterations(d / "alone" / "a.jsonl"), n)))
        used = a.calibration if cal else "none"
        print(f"\npredicted mean iteration over the {n} iterations, s (calibration: {used}):")
        print(predictions(n, cal))
        return
    out = Path(a.out)
    scaled = scaled_cluster(tb32(), nic_mbit=100.0)
    raw: dict[str, Any] = {}
    with testbed(scaled, meta={"what": "offset persistence"}):
        for name, offset in (("aligned", 0.0), ("opposite", 0.5)):
            sc = phase_pair(f"persist-{name}", name, 1.0, offset, a.iterations)
            res = run_schedule(scaled, sc.jobs, out / name, timeout_s=10.0 * a.iterations + 120)
            raw[name] = (res.jobs["a"].iterations, res.jobs["b"].iterations)
            print(f"{name}: {len(raw[name][0])} iterations in {res.jobs['a'].jct_s:.0f} s", flush=True)
        alone = run_schedule(scaled, [J("a", ring([0, 1, 2, 3]), PHASE_GRAD_MB, 20, compute_ms=PHASE_M0_MS)],
                             out / "alone").jobs["a"].iterations
    s = summarise(raw, alone, a.iterations)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "summary.json", json.dumps(s, indent=1) + "\n")  # complete or absent
    print(markdown(s))
    print(f"\npredicted mean iteration over the {a.iterations} iterations, s:")
    print(predictions(a.iterations, cal))


if __name__ == "__main__":
    main()
