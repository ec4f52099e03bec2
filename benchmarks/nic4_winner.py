"""Which ring of ``nic4`` finishes its communication first, and why (docs/CHANGELOG-validation.md, "Why ring a
wins in nic4").

    ddlsched testbed up --cluster tb32 --nic-mbit 100        # root
    PYTHONPATH=src python benchmarks/nic4_winner.py --repeats 4 --out results/nic4-winner
    ddlsched testbed down
    PYTHONPATH=src python benchmarks/nic4_winner.py --reuse results/nic4-winner [MORE_DIRS]   # re-analyse, no root

``nic4`` runs four equal 2-rings (a, b, c, d: 3 MB, 4 iterations) on the same two NICs (servers 0, 1; ring k on
GPU k of each server). The executor spawns the workers job by job in the order the schedule lists them, and job
number i of that list listens on ports ``BASE_PORT + PORT_STRIDE·i + rank``; so in the suite ring a is at once
the first listed, the first spawned, the one on the lowest ports, the name sorting first and the one on GPU 0.
The variants below pull these apart (each a list of (id, GPU slot, start_s), in list order):

* ``base``       — the suite's ``nic4``: a/0, b/1, c/2, d/3, all at 0;
* ``reversed``   — the same jobs listed d, c, b, a (d is now spawned first and on the lowest ports);
* ``renamed``    — list order and GPU slots of ``base``, names reversed (the first listed is called d);
* ``gpus``       — list order and names of ``base``, GPU slots reversed (a on GPU 3, d on GPU 0);
* ``d_early``    — ``base`` but d starts 0.1 s before the other three (a first mover that is listed last);
* ``a_late``     — ``base`` but a starts 0.1 s after the other three;
* ``after_nic3`` — ``base`` run right after the suite's ``nic3`` scenario (3 rings on servers 0–2), as in
  ``testbed validate``, where ``nic3`` always precedes ``nic4`` (only ``nic4``'s rings are scored);
* ``after_suite`` — ``base`` run right after the suite's scenarios that precede it (``nic1``, ``nic2``, ``nic3``);
* ``busy``       — ``base`` with one CPU-bound process (a Python busy loop, nice 0) running beside the workers
  (the validation runs 10, 11 ran on a host busy with other work; a 2-core host).

Each variant is run ``--repeats`` times, interleaved (all variants once, then again, …) so that a drift of the
host's load spreads over all of them. Per run: each ring's mean communication time per iteration (the quantity the
validation scores), the winner (smallest), its lead = 1 − winner / mean of the other three, and the winner's list
position, GPU slot and name; per variant, the wins counted by name, list position and GPU slot, and ring a's mean
communication time against the mean of all four rings. Writes ``OUT/<variant>.r<k>/`` (the workers' logs) and
``OUT/winners.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from ddlsched.cluster.topology import Cluster
from ddlsched.testbed.executor import run_schedule
from ddlsched.testbed.fabric import scaled_cluster
from ddlsched.testbed.predict import JobRun
from ddlsched.testbed.scenarios import VALIDATION, ring, tb32

GRAD_MB, ITERS, COMPUTE_MS = 3.0, 4, 20.0  # the suite's nic4 jobs (scenarios.VALIDATION)

VARIANTS: dict[str, list[tuple[str, int, float]]] = {
    "base": [("a", 0, 0.0), ("b", 1, 0.0), ("c", 2, 0.0), ("d", 3, 0.0)],
    "reversed": [("d", 3, 0.0), ("c", 2, 0.0), ("b", 1, 0.0), ("a", 0, 0.0)],
    "renamed": [("d", 0, 0.0), ("c", 1, 0.0), ("b", 2, 0.0), ("a", 3, 0.0)],
    "gpus": [("a", 3, 0.0), ("b", 2, 0.0), ("c", 1, 0.0), ("d", 0, 0.0)],
    "d_early": [("a", 0, 0.1), ("b", 1, 0.1), ("c", 2, 0.1), ("d", 3, 0.0)],
    "a_late": [("a", 0, 0.1), ("b", 1, 0.0), ("c", 2, 0.0), ("d", 3, 0.0)],
    "after_nic3": [("a", 0, 0.0), ("b", 1, 0.0), ("c", 2, 0.0), ("d", 3, 0.0)],
    "after_suite": [("a", 0, 0.0), ("b", 1, 0.0), ("c", 2, 0.0), ("d", 3, 0.0)],
    "busy": [("a", 0, 0.0), ("b", 1, 0.0), ("c", 2, 0.0), ("d", 3, 0.0)],
}
DEFAULT = "base,reversed,renamed,gpus,d_early,a_late"


def run_variant(sc: Cluster, variant: str, d: Path) -> None:
    """Run one variant into ``d`` (with its prelude run or CPU hog, see the module docstring)."""
    prelude = {"after_nic3": ("nic3",), "after_suite": ("nic1", "nic2", "nic3")}.get(variant, ())
    for name in prelude:
        scen = next(s for s in VALIDATION if s.name == name)
        run_schedule(sc, scen.jobs, d / f"prelude-{name}")
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if variant == "busy" else None
    try:
        run_schedule(sc, jobs_of(variant), d)
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()


def jobs_of(variant: str) -> list[JobRun]:
    return [JobRun(jid, ring([0, 1], k), GRAD_MB, ITERS, COMPUTE_MS, start)
            for jid, k, start in VARIANTS[variant]]


def summarise(variant: str, comm: dict[str, float], start_lag: dict[str, float]) -> dict[str, Any]:
    spec = {jid: (pos, k, start) for pos, (jid, k, start) in enumerate(VARIANTS[variant])}
    win = min(comm, key=lambda j: comm[j])
    others = statistics.mean(v for j, v in comm.items() if j != win)
    return {"variant": variant, "comm_s": comm, "start_lag_s": start_lag, "winner": win,
            "lead": 1 - comm[win] / others, "winner_pos": spec[win][0], "winner_gpu": spec[win][1]}


def load_run(d: Path) -> tuple[dict[str, float], dict[str, float]]:
    comm, first = {}, {}
    for f in sorted(d.glob("*.jsonl")):
        recs = [json.loads(x) for x in f.read_text().splitlines() if x.strip()]
        comm[f.stem] = statistics.mean(r["comm_s"] for r in recs)
        first[f.stem] = recs[0]["start"]
    t = min(first.values())
    return comm, {j: v - t for j, v in first.items()}


def table(rows: list[dict[str, Any]]) -> str:
    out = ["| variant | list order (id/GPU) | winner per repeat (lead) | a's rank (1 = fastest) per repeat |",
           "|---|---|---|---|"]
    for v in VARIANTS:
        rs = [r for r in rows if r["variant"] == v]
        if not rs:
            continue
        order = ", ".join(f"{j}/{k}{f' +{s:g}s' if s else ''}" for j, k, s in VARIANTS[v])
        wins = ", ".join(f"{r['winner']} (pos {r['winner_pos']}, {100 * r['lead']:.0f} %)" for r in rs)
        ranks = ", ".join(str(1 + sorted(r["comm_s"], key=lambda j: r["comm_s"][j]).index("a")) for r in rs)
        out.append(f"| {v} | {order} | {wins} | {ranks} |")
    out += ["", "| variant | runs | wins a / b / c / d (by name) | by list position 0 / 1 / 2 / 3 | "
            "by GPU slot 0 / 1 / 2 / 3 | winner's lead, median (min … max) | ring a vs mean of the 4 |",
            "|---|---|---|---|---|---|---|"]
    for v in VARIANTS:
        rs = [r for r in rows if r["variant"] == v]
        if not rs:
            continue
        by_name = " / ".join(str(sum(r["winner"] == j for r in rs)) for j in "abcd")
        by_pos = " / ".join(str(sum(r["winner_pos"] == i for r in rs)) for i in range(4))
        by_gpu = " / ".join(str(sum(r["winner_gpu"] == i for r in rs)) for i in range(4))
        leads = [100 * r["lead"] for r in rs]
        a_rel = statistics.mean(r["comm_s"]["a"] for r in rs) / statistics.mean(
            c for r in rs for c in r["comm_s"].values()) - 1
        out.append(f"| {v} | {len(rs)} | {by_name} | {by_pos} | {by_gpu} | {statistics.median(leads):.1f} % "
                   f"({min(leads):.1f} … {max(leads):.1f} %) | {100 * a_rel:+.1f} % |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--variants", default=DEFAULT, help=f"comma-separated, of: {', '.join(VARIANTS)}")
    ap.add_argument("--out", default="results/nic4-winner")
    ap.add_argument("--reuse", nargs="+", default=None, help="re-analyse saved OUT directories, pooled (no root)")
    a = ap.parse_args()
    rows: list[dict[str, Any]] = []
    if a.reuse:
        for out in map(Path, a.reuse):
            for d in sorted((p for p in out.iterdir() if p.is_dir()), key=lambda p: int(p.name.rsplit(".r", 1)[1])):
                rows.append(summarise(d.name.rsplit(".r", 1)[0], *load_run(d)))
    else:
        out = Path(a.out)
        sc = scaled_cluster(tb32(), nic_mbit=100.0)
        names = [v for v in a.variants.split(",") if v]
        for k in range(1, a.repeats + 1):
            for v in names:
                d = out / f"{v}.r{k}"
                load = os.getloadavg()[0]
                run_variant(sc, v, d)
                r = summarise(v, *load_run(d))
                r["repeat"], r["load1"] = k, load
                rows.append(r)
                comm = " ".join(f"{j} {c:.3f}" for j, c in sorted(r["comm_s"].items()))
                print(f"{v:>9} r{k}: {comm} | winner {r['winner']} (pos {r['winner_pos']}, GPU {r['winner_gpu']}) "
                      f"lead {100 * r['lead']:.1f} % | load {load:.2f}", flush=True)
        (out / "winners.json").write_text(json.dumps(rows, indent=1))  # this invocation's runs only
    print(table(rows))


if __name__ == "__main__":
    main()
