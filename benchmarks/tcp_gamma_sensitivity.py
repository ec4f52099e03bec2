"""How the best model's fidelity on one saved validation run depends on the TCP rule's exponent γ.

A diagnostic, not a fit: it re-scores the runs saved by ``ddlsched testbed validate --out DIR`` (no testbed, no
root) with the run's own calibration except ``tcp_exponent``, set to each γ given, and prints the summary row of
``phased[exact,fairness=tcp]`` (calibrated) for each. The calibrated γ still comes from the calibration suite
only (docs/validation.md, "Calibration"); choosing it from this table would fit the validation to itself.

    python benchmarks/tcp_gamma_sensitivity.py results/validation --gammas 0.8,0.97,1.05,1.2,1.6,1.8,2.0
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import tempfile
from pathlib import Path

from ddlsched.cli import cli

MODEL = "phased[exact,fairness=tcp]"


def score(saved: Path, gamma: float, work: Path, only: tuple[str, ...] = ()) -> dict:
    """The calibrated summary row of :data:`MODEL` on the runs saved in ``saved`` with ``tcp_exponent = gamma``
    (``only``: score just these scenarios, as ``validate --only``)."""
    out = work / f"g{gamma:g}"
    shutil.copytree(saved, out)
    cal = json.loads((saved / "calibration.json").read_text())
    cal["tcp"]["tcp_exponent"] = gamma
    cal_path = work / f"cal{gamma:g}.json"  # outside ``out``: --reuse writes its own calibration.json there
    cal_path.write_text(json.dumps(cal))
    # in this process (its imports paid once for every γ); an error raises, as ``ddlsched`` would exit non-zero
    with contextlib.redirect_stdout(io.StringIO()):
        cli.main(["testbed", "validate", "--reuse", str(out), "--calibration", str(cal_path), "--out", str(out),
                  "--doc", str(out / "doc.md"), *(arg for name in only for arg in ("--only", name))],
                 standalone_mode=False)
    report = json.loads((out / "fidelity.json").read_text())
    (row,) = [r for r in report["summary"] if r["model"] == MODEL and r["variant"] == "calibrated"]
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("saved", type=Path, help="a `testbed validate --out` directory (runs/, calibration-runs/, "
                                             "calibration.json)")
    ap.add_argument("--gammas", default="0.8,0.97,1.05,1.1,1.2,1.4,1.6,1.8,1.9,2.0,2.5")
    a = ap.parse_args()
    fitted = json.loads((a.saved / "calibration.json").read_text())["tcp"]["tcp_exponent"]
    print(f"{MODEL}, calibrated, on {a.saved} (its calibrated γ = {fitted:.3g}); errors of comm. time per iteration")
    print("| γ | median | p90 | worst (where) | meets median ≤ 3 % and worst ≤ 15 % |")
    print("|---|---:|---:|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for gamma in (float(g) for g in a.gammas.split(",")):
            r = score(a.saved, gamma, Path(tmp))
            ok = r["comm_median"] <= 0.03 and r["comm_worst"] <= 0.15
            print(f"| {gamma:g} | {100 * r['comm_median']:.1f} % | {100 * r['comm_p90']:.1f} % | "
                  f"{100 * r['comm_signed_worst']:+.1f} % ({r['comm_worst_at']}) | {'yes' if ok else 'no'} |",
                  flush=True)


if __name__ == "__main__":
    main()
