"""Run-to-run spread of the TCP-rule calibration (γ, κ) on the emulated testbed (docs/validation.md, "Calibration").

    ddlsched testbed up --cluster tb32 --nic-mbit 100        # root
    PYTHONPATH=src python benchmarks/tcp_cal_spread.py --runs 4 --out results/calspread
    ddlsched testbed down
    PYTHONPATH=src python benchmarks/tcp_cal_spread.py --reuse results/calspread   # re-analyse, no root

Each run is the whole calibration suite (``CALIBRATION``) once, saved under ``OUT/run<k>/<scenario>/run.json``;
per run it prints the host load average before and after, every shared job's measured communication time per
iteration (mean and the per-iteration values), and e, γ, κ fitted from that run alone with the calibration rule
(``ddlsched.testbed.calibrate.fit``). Then the fit of γ, κ pooled over all runs (e of each run kept), and the
spread between runs against the spread of the iterations within a run. Writes ``OUT/spread.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from ddlsched.testbed.calibrate import fit, fit_tcp
from ddlsched.testbed.fabric import scaled_cluster
from ddlsched.testbed.scenarios import CALIBRATION, tb32
from ddlsched.testbed.validate import load_suite, run_suite

SHARED = [s for s in CALIBRATION if len(s.jobs) > 1]


def _loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--out", default="results/calspread")
    ap.add_argument("--reuse", default=None, help="analyse the runs saved in this directory (no testbed)")
    args = ap.parse_args()
    sc = scaled_cluster(tb32(), nic_mbit=100)
    root = Path(args.reuse or args.out)
    meta: dict[str, Any] = json.loads((root / "spread.json").read_text())["load"] if args.reuse else {}
    runs = []
    k = 1
    while (args.reuse and (root / f"run{k}").exists()) or (not args.reuse and k <= args.runs):
        d = root / f"run{k}"
        if args.reuse:
            res = load_suite(CALIBRATION, d)
        else:
            before = _loadavg()
            res = run_suite(sc, CALIBRATION, d, log=print)
            meta[f"run{k}"] = {"before": before, "after": _loadavg()}
        runs.append([(r.scenario, r.run) for r in res])
        k += 1
    out: dict[str, Any] = {"load": meta, "runs": []}
    executed_all = []
    for k, suite in enumerate(runs, 1):
        prof = fit(sc, suite, nic_mbit=100, scale=0.01)
        t = prof["tcp"]
        jobs = {}
        for s, res in suite:
            if len(s.jobs) < 2:
                continue
            for jid, m in res.jobs.items():
                jobs[f"{s.name}/{jid}"] = {"comm_s": m.comm_s, "iters": [round(i["comm_s"], 3) for i in m.iterations]}
        out["runs"].append({"run": k, "efficiency": prof["common"]["efficiency"], "gamma": t["tcp_exponent"],
                            "kappa": t["tcp_own_queue"], "rms": t["fit_rmse_rel"], "jobs": jobs})
        lo = meta.get(f"run{k}", {})
        print(f"run {k} (load {lo.get('before', '?')} → {lo.get('after', '?')}): e = "
              f"{prof['common']['efficiency']:.4f}, γ = {t['tcp_exponent']:.3f}, κ = {t['tcp_own_queue']:.3f}, "
              f"rms {100 * t['fit_rmse_rel']:.1f} %")
        for name, j in jobs.items():
            print(f"  {name:<14} comm {j['comm_s']:.3f} s/iter; iterations {j['iters']}")
        cal_cluster = sc  # α = 0 in every run so far; fit() reports it
        executed_all.append((cal_cluster, prof["common"]["efficiency"], [
            (res.as_executed(s.jobs), {j: m.comm_s for j, m in res.jobs.items()}) for s, res in suite
            if len(s.jobs) > 1]))
    # pooled: one γ, κ over every run's shared rows (each run with its own e: the loss is per row)
    eff = statistics.median(e for _, e, _ in executed_all)
    pooled = fit_tcp(sc, [x for _, _, ex in executed_all for x in ex], eff)
    out["pooled"] = {"efficiency": eff, "gamma": pooled["tcp_exponent"], "kappa": pooled["tcp_own_queue"],
                     "rms": pooled["fit_rmse_rel"]}
    print(f"pooled over {len(runs)} runs (e = {eff:.4f}): γ = {pooled['tcp_exponent']:.3f}, "
          f"κ = {pooled['tcp_own_queue']:.3f}, rms {100 * pooled['fit_rmse_rel']:.1f} %")
    # between runs (sd of the run means) against within a run (sd of the iterations, mean over runs)
    for name in out["runs"][0]["jobs"]:
        means = [r["jobs"][name]["comm_s"] for r in out["runs"]]
        within = [statistics.stdev(r["jobs"][name]["iters"]) for r in out["runs"]]
        within_rest = [statistics.stdev(r["jobs"][name]["iters"][1:]) for r in out["runs"]
                       if len(r["jobs"][name]["iters"]) > 2]
        first = [r["jobs"][name]["iters"][0] / statistics.mean(r["jobs"][name]["iters"][1:]) - 1
                 for r in out["runs"]]
        sd = statistics.stdev(means) if len(means) > 1 else 0.0
        n_it = len(out["runs"][0]["jobs"][name]["iters"])
        print(f"  {name:<14} run means {min(means):.3f} … {max(means):.3f} s (sd {sd:.3f} s = "
              f"{100 * sd / statistics.mean(means):.1f} %); within a run sd {statistics.mean(within):.3f} s "
              f"(without the 1st iteration {statistics.mean(within_rest):.3f} s; sd of a {n_it}-iteration mean "
              f"if iterations were independent {statistics.mean(within) / n_it**0.5:.3f} s); 1st iteration vs "
              f"rest {', '.join(f'{100 * f:+.0f} %' for f in first)}")
    (root / "spread.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
