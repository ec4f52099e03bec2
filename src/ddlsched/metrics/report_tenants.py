"""The report's per-tenant section, for scenarios whose runs have tenants (docs/policies/fairness.md): a table of
each policy's fairness figures and per-tenant JCT and share (lowest seed of each policy, from ``summary.json``),
and a share-over-time figure (``tenant_shares.csv``: GPUs received, solid, against the weighted max-min
entitlement, dashed, per tenant; one panel per policy). The plotted series are saved as
``report_plots/tenant_shares*.json``."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

HEAD = ("policy", "tenant", "jobs", "avg JCT h", "p95 JCT h", "GPU-h received", "GPU-h entitled", "received ÷ entitled")
FAIR_HEAD = ("policy", "Jain's index", "max rho", "jobs with rho > 1 %")
NOTE = ("Entitled = weighted max-min fair share of the GPUs given the tenants' demands per time bucket; rho = JCT ÷ "
        "(ideal run time × average jobs in the system over the job's life). Lowest seed of each policy.")


def _h(v: Any) -> str:
    return "-" if v is None else f"{v / 3600:.2f}"


def _f(v: Any, digits: int = 3) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def tenant_runs(runs: list[Any]) -> dict[str, Any]:
    """policy → its lowest-seed run, for runs whose summary has tenants."""
    out: dict[str, Any] = {}
    for r in sorted(runs, key=lambda r: (r.policy, r.seed)):
        if "tenants" in r.summary and r.policy not in out:
            out[r.policy] = r
    return out


def tables(runs: dict[str, Any]) -> tuple[list[list[str]], list[list[str]]]:
    fair, rows = [], []
    for p, r in runs.items():
        s = r.summary
        frac = s.get("rho_gt1_frac")
        fair.append([p, _f(s.get("jain_index")), _f(s.get("rho_max"), 2), "-" if frac is None else f"{100 * frac:.1f}"])
        for t, d in s["tenants"].items():
            rows.append([p, t, str(d["jobs"]), _h(d["avg_jct_s"]), _h(d["p95_jct_s"]), _h(d["gpu_s_received"]),
                         _h(d["gpu_s_entitled"]), _f(d["normalised_share"])])
    return fair, rows


def plot_shares(runs: dict[str, Any], png: Path) -> None:
    """The share-over-time figure and its data (``png`` with ``.json``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series: dict[str, dict[str, Any]] = {}
    for p, r in runs.items():
        path = r.path / "tenant_shares.csv"
        if not path.is_file():
            continue
        per: dict[str, dict[str, list[float]]] = {}
        with path.open(newline="") as f:
            for row in csv.DictReader(f):
                d = per.setdefault(row["tenant"], {"t_h": [], "received": [], "entitled": []})
                d["t_h"].append(float(row["bucket_start_s"]) / 3600)
                d["received"].append(float(row["received_gpus"]))
                d["entitled"].append(float(row["entitled_gpus"]))
        series[p] = per
    n = max(1, len(series))
    fig, axes = plt.subplots(n, 1, figsize=(9, 2.6 * n), squeeze=False, sharex=True)
    for ax, (p, per) in zip(axes[:, 0], series.items(), strict=False):
        for i, (t, d) in enumerate(per.items()):
            color = f"C{i % 10}"
            ax.plot(d["t_h"], d["received"], color=color, lw=1.2, label=t)
            ax.plot(d["t_h"], d["entitled"], color=color, lw=1.0, ls="--")
        ax.set_title(p, fontsize=9)
        ax.set_ylabel("GPUs")
        ax.legend(fontsize=7, ncol=4, loc="upper right")
    axes[-1, 0].set_xlabel("time (h); solid: received, dashed: entitled")
    fig.tight_layout()
    fig.savefig(png, dpi=90)
    plt.close(fig)
    png.with_suffix(".json").write_text(json.dumps(series, allow_nan=False) + "\n")
