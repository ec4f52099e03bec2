"""hindsight with other parameters on the policy suite's saved cells, judged against the saved field
(docs/policies/hindsight.md, "The p99 trade-off, measured").

    python benchmarks/hindsight_variants.py                                  # the default, every saved cell
    python benchmarks/hindsight_variants.py starvation_factor=2 num_classes=8
    python benchmarks/hindsight_variants.py reserve=true --cells muri-1/gavel_hetero/0.7

Only hindsight runs (seed 0, the saved field's physics, each cell at the suite's own load scale); every other
policy's figures are read from ``benchmarks/policy_suite_results/runs.jsonl``. Per cell: hindsight's avg JCT, the
target (≥ 10 % below the best non-clairvoyant policy and within 10 % of the best clairvoyant one, at load ≥ 0.7),
p99 JCT ÷ Tiresias' (``tiresias+consolidated``) and max slowdown; then the counts the doc's table gives.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import policy_suite as suite

SAVED = Path(__file__).resolve().parent / "policy_suite_results" / "runs.jsonl"
OURS = "hindsight"
TIRESIAS = "tiresias+consolidated"


def parse_params(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"hindsight_variants: parameter {item!r} is not KEY=VALUE")
        low = text.lower()
        value: Any = {"true": True, "false": False}.get(low, text)
        if isinstance(value, str):
            for conv in (int, float):
                try:
                    value = conv(text)
                    break
                except ValueError:
                    pass
        out[key] = value
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("params", nargs="*", help="hindsight parameters, KEY=VALUE")
    ap.add_argument("--cells", default="", help="comma-separated SLICE/CLUSTER/LOAD (default: every saved cell)")
    ap.add_argument("--saved", default=str(SAVED), help="the saved full-field runs")
    args = ap.parse_args(argv)
    params = parse_params(args.params)
    name = OURS + ("[" + ",".join(f"{k}={v}" for k, v in params.items()) + "]" if params else "")
    suite.VARIANTS[name] = (OURS, params)
    cells: dict[tuple[str, str, float], list[dict[str, Any]]] = {}
    for line in Path(args.saved).read_text().splitlines():
        r = json.loads(line)
        cells.setdefault((r["slice"], r["cluster"], r["load"]), []).append(r)
    wanted = {tuple(c.split("/")) for c in args.cells.split(",") if c}
    if wanted:
        cells = {k: v for k, v in cells.items() if (k[0], k[1], str(k[2])) in wanted}
        if len(cells) != len(wanted):
            raise SystemExit(f"hindsight_variants: --cells {args.cells}: not all of them are saved cells")
    offered: dict[tuple[str, str], float] = {}
    met = p99_over = 0
    ratios: list[float] = []
    worst_p99, worst_slow = (0.0, ""), (0.0, "")
    for (sl, cl, load), runs in sorted(cells.items()):
        field = [r for r in runs if r["status"] == "ok" and r["policy"] not in (OURS, *suite.VARIANTS)]
        blind = min((r for r in field if r["clairvoyant"] is False), key=lambda r: r["avg_jct_s"])
        seer = min((r for r in field if r["clairvoyant"] is True), key=lambda r: r["avg_jct_s"])
        tiresias = next(r for r in field if r["policy"] == TIRESIAS)
        saved = next(r for r in runs if r["policy"] == OURS)
        if (sl, cl) not in offered:
            offered[(sl, cl)] = suite.offered_unscaled(suite.SLICES[sl], cl)
        me = suite.run_one(name, suite.SLICES[sl], cl, load / offered[(sl, cl)], 0, 600.0,
                           saved.get("perf_model", "maxmin"))
        if me["status"] != "ok":
            raise SystemExit(f"hindsight_variants: {sl}/{cl}/{load}: {me['status']}")
        vs_blind = me["avg_jct_s"] / blind["avg_jct_s"] - 1
        vs_seer = me["avg_jct_s"] / seer["avg_jct_s"] - 1
        ok = load >= 0.7 and vs_blind <= -0.10 and vs_seer <= 0.10
        p99 = me["p99_jct_s"] / tiresias["p99_jct_s"]
        met += ok
        p99_over += p99 > 1.10
        ratios.append(me["avg_jct_s"] / saved["avg_jct_s"])
        cell = f"{sl}/{cl}/{load}"
        worst_p99 = max(worst_p99, (p99, cell))
        worst_slow = max(worst_slow, (me["max_slowdown"], cell))
        print(f"{cell:32s} avg JCT {me['avg_jct_s'] / 3600:9.1f} h (saved default {saved['avg_jct_s'] / 3600:9.1f})"
              f"  {vs_blind:+7.1%} vs {blind['policy']}, {vs_seer:+7.1%} vs {seer['policy']}"
              f"{'  MET' if ok else ''}  p99 ÷ Tiresias {p99:.2f}  max slowdown {me['max_slowdown']:.0f}", flush=True)
    geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"{name}: targets met in {met} of {len(cells)} cells; p99 > 1.1x Tiresias' in {p99_over}; avg JCT "
          f"{geo:.3f}x the saved default (geometric mean); worst p99 ÷ Tiresias {worst_p99[0]:.2f} ({worst_p99[1]}); "
          f"largest max slowdown {worst_slow[0]:.0f} ({worst_slow[1]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
