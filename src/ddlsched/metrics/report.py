"""``ddlsched report DIR``: an HTML page and a Markdown file with plots and the tables behind them.

Every number is recomputed from the runs' ``records.csv`` and ``timeseries.csv`` (``summary.json`` only gives
the cluster size and the offered load). Plots, one PNG each, with the plotted series saved next to it as
JSON (``report_plots/NAME.json``):

* ``jct_cdf``      – empirical CDF of JCT per policy (jobs of all seeds pooled), one panel per scenario;
* ``avg_jct``      – mean over seeds of each run's average JCT, with a t-based 95 % CI (``metrics.stats``);
* ``makespan``     – same for makespan = max finish − min arrival;
* ``comm_overhead``– same for communication overhead % = 100 · Σ(run − ideal run) / Σ run;
* ``utilization``  – busy GPUs / cluster GPUs over time, lowest seed of each policy;
* ``queue``        – pending jobs over time, lowest seed of each policy.

``report.html`` embeds the PNGs as base64 (no external assets); ``report.md`` links the PNG files.
"""

from __future__ import annotations

import base64
import html
import json
import math
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from ddlsched.metrics.results_dir import Run, find_runs
from ddlsched.metrics.stats import mean_ci95

PLOTS_DIR = "report_plots"
MAX_POINTS = 5000  # time series longer than this are thinned to evenly spaced samples for plotting
H = 3600.0


# ------------------------------------------------------------------ data
def run_metrics(run: Run) -> dict[str, float]:
    """Per-run metrics recomputed from records.csv."""
    recs = run.records()
    if not recs:
        return {"avg_jct_s": math.nan, "makespan_s": math.nan, "comm_overhead_pct": math.nan}
    jct = [float(r["jct_s"]) for r in recs]
    run_s = sum(float(r["run_s"]) for r in recs)
    ovh = sum(float(r["comm_overhead_s"]) for r in recs)
    return {
        "avg_jct_s": sum(jct) / len(jct),
        "makespan_s": max(float(r["finish_s"]) for r in recs) - min(float(r["arrival_s"]) for r in recs),
        "comm_overhead_pct": 100.0 * ovh / run_s if run_s > 0 else 0.0,
        "median_jct_s": statistics.median(jct),
        "avg_queueing_s": sum(float(r["queue_s"]) for r in recs) / len(recs),
        "jobs_completed": float(len(recs)),
    }


def _thin(xs: list[float], ys: list[float]) -> tuple[list[float], list[float]]:
    if len(xs) <= MAX_POINTS:
        return xs, ys
    idx = sorted({round(i * (len(xs) - 1) / (MAX_POINTS - 1)) for i in range(MAX_POINTS)})
    return [xs[i] for i in idx], [ys[i] for i in idx]


def build_data(runs: list[Run]) -> dict[str, Any]:
    """scenario → policy → everything the plots and tables show (JSON-able)."""
    by: dict[str, dict[str, list[Run]]] = defaultdict(lambda: defaultdict(list))
    for r in runs:
        by[r.scenario][r.policy].append(r)
    out: dict[str, Any] = {}
    for scen in by:
        out[scen] = {}
        for pol in by[scen]:
            rs = sorted(by[scen][pol], key=lambda r: r.seed)
            per_run = [run_metrics(r) for r in rs]
            jct = sorted(float(rec["jct_s"]) for r in rs for rec in r.records())
            first = rs[0]
            ts = first.timeseries()
            gpus = float(first.summary.get("cluster_gpus") or 1)
            t_h = [t / H for t in ts.get("time_s", [])]
            ux, uy = _thin(t_h, [b / gpus for b in ts.get("busy_gpus", [])])
            qx, qy = _thin(t_h, list(ts.get("pending", [])))
            entry: dict[str, Any] = {
                "seeds": [r.seed for r in rs],
                "runs": [str(r.path) for r in rs],
                "per_seed": per_run,
                "jct_cdf": {"x_h": [j / H for j in jct], "y": [(i + 1) / len(jct) for i in range(len(jct))]},
                "utilization": {"seed": first.seed, "t_h": ux, "value": uy},
                "queue": {"seed": first.seed, "t_h": qx, "value": qy},
                "offered_load": _mean([r.summary.get("offered_load") for r in rs]),
                "gpu_utilization": _mean([r.summary.get("gpu_utilization") for r in rs]),
                "p99_jct_s": _mean([r.summary.get("p99_jct_s") for r in rs]),
            }
            for key in ("avg_jct_s", "makespan_s", "comm_overhead_pct", "median_jct_s", "avg_queueing_s"):
                m, hw, n = mean_ci95([p[key] for p in per_run])
                entry[key] = {"mean": m, "ci95": hw, "n": n}
            out[scen][pol] = entry
    return out


def _mean(vals: list[Any]) -> float:
    xs = [float(v) for v in vals if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return sum(xs) / len(xs) if xs else math.nan


# ------------------------------------------------------------------ plots
def _grid(n: int) -> tuple[int, int]:
    cols = min(n, 3)
    return math.ceil(n / cols), cols


def _colors(policies: list[str]) -> dict[str, Any]:
    import matplotlib

    cmap = matplotlib.colormaps["tab10" if len(policies) <= 10 else "tab20"]
    return {p: cmap(i % cmap.N) for i, p in enumerate(policies)}


def _plot(name: str, data: dict[str, Any], out: Path, kind: str, title: str, ylabel: str, xlabel: str = ""
          ) -> tuple[Path, dict[str, Any]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scens = list(data)
    policies = list(dict.fromkeys(p for s in scens for p in data[s]))
    colors = _colors(policies)
    rows, cols = _grid(len(scens))
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.8 * rows), squeeze=False)
    series: dict[str, Any] = {}
    for i, scen in enumerate(scens):
        ax = axes[i // cols][i % cols]
        series[scen] = {}
        if kind == "bar":
            pols = list(data[scen])
            means = [data[scen][p][name]["mean"] for p in pols]
            cis = [data[scen][p][name]["ci95"] for p in pols]
            scale = H if name.endswith("_s") else 1.0
            ys = [m / scale for m in means]
            err = [0.0 if math.isnan(c) else c / scale for c in cis]
            ax.bar(range(len(pols)), ys, yerr=err, capsize=4, color=[colors[p] for p in pols])
            ax.set_xticks(range(len(pols)), pols, rotation=30, ha="right", fontsize=8)
            for p, y, e, n in zip(pols, ys, cis, (data[scen][p][name]["n"] for p in pols), strict=True):
                series[scen][p] = {"mean": y, "ci95": None if math.isnan(e) else e / scale, "n": n}
        else:
            for p in data[scen]:
                d = data[scen][p][name]
                x, y = (d["x_h"], d["y"]) if kind == "cdf" else (d["t_h"], d["value"])
                if kind == "cdf":
                    ax.step(x, y, where="post", label=p, color=colors[p])
                else:
                    ax.step(x, y, where="post", label=f"{p} (seed {d['seed']})", color=colors[p], lw=1)
                series[scen][p] = {"x": x, "y": y}
            ax.legend(fontsize=7)
            if kind == "cdf" and any(v > 0 for d in series[scen].values() for v in d["x"]):
                ax.set_xscale("log")  # JCTs span orders of magnitude (heavy tail)
        ax.set_title(scen, fontsize=9)
        ax.set_ylabel(ylabel)
        if xlabel:
            ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
    for j in range(len(scens), rows * cols):
        axes[j // cols][j % cols].axis("off")
    fig.suptitle(title)
    fig.tight_layout()
    png = out / f"{name}.png"
    fig.savefig(png, dpi=90)
    plt.close(fig)
    (out / f"{name}.json").write_text(json.dumps(_clean({"plot": name, "title": title, "series": series}),
                                                 indent=1, allow_nan=False) + "\n")
    return png, series


def _clean(v: Any) -> Any:
    """NaN/inf → None, recursively (strict JSON)."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    return v


PLOTS = (
    ("jct_cdf", "cdf", "JCT CDF per policy (all seeds pooled)", "fraction of jobs", "JCT (h, log scale)"),
    ("avg_jct_s", "bar", "Average JCT, mean over seeds ± t-based 95 % CI", "avg JCT (h)", ""),
    ("makespan_s", "bar", "Makespan, mean over seeds ± t-based 95 % CI", "makespan (h)", ""),
    ("comm_overhead_pct", "bar", "Communication overhead, mean over seeds ± t-based 95 % CI", "overhead (%)", ""),
    ("utilization", "line", "GPU utilisation over time (lowest seed)", "busy GPUs / GPUs", "time (h)"),
    ("queue", "line", "Queue length over time (lowest seed)", "pending jobs", "time (h)"),
)


# ------------------------------------------------------------------ tables and pages
def _fmt(v: Any, scale: float = 1.0, digits: int = 2) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v / scale:.{digits}f}"


def _ci(d: dict[str, Any], scale: float = 1.0) -> str:
    s = _fmt(d["mean"], scale)
    return s if math.isnan(d["ci95"]) else f"{s} ± {_fmt(d['ci95'], scale)}"


TABLE_COLS = ("policy", "seeds", "avg JCT h (±95% CI)", "median JCT h", "p99 JCT h", "makespan h (±95% CI)",
              "avg queue h", "comm overhead % (±95% CI)", "GPU util", "offered load")


def table_rows(scen_data: dict[str, Any]) -> list[list[str]]:
    rows = []
    for p, d in scen_data.items():
        rows.append([p, str(len(d["seeds"])), _ci(d["avg_jct_s"], H), _fmt(d["median_jct_s"]["mean"], H),
                     _fmt(d["p99_jct_s"], H), _ci(d["makespan_s"], H), _fmt(d["avg_queueing_s"]["mean"], H),
                     _ci(d["comm_overhead_pct"]), _fmt(d["gpu_utilization"]), _fmt(d["offered_load"])])
    return rows


def _md_table(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(TABLE_COLS) + " |", "|" + "---|" * len(TABLE_COLS)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _html_table(rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in TABLE_COLS)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_CSS = ("body{font-family:sans-serif;max-width:1200px;margin:2em auto;color:#222}"
        "table{border-collapse:collapse;margin:1em 0;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;"
        "text-align:right}td:first-child,th:first-child{text-align:left}img{max-width:100%}"
        ".note{color:#555;font-size:13px}")

CI_NOTE = ("Error bars and ± values: Student-t 95 % confidence interval of the mean over seeds "
           "(t₀.₉₇₅,ₙ₋₁ · s/√n); none when a policy has one seed.")


def write_report(results_dir: str | Path, out_dir: str | Path | None = None, title: str | None = None) -> Path:
    """Write report.html, report.md, report_plots/*.png|json and report_table.csv; return report.html."""
    root = Path(results_dir)
    out = Path(out_dir) if out_dir is not None else root
    kind, runs = find_runs(root, hashes=True)  # complete runs only; refuses others naming what is missing
    data = build_data(runs)
    plots_dir = out / PLOTS_DIR
    plots_dir.mkdir(parents=True, exist_ok=True)
    pngs: list[tuple[str, Path]] = []
    for name, kind_, ptitle, ylabel, xlabel in PLOTS:
        png, _ = _plot(name, data, plots_dir, kind_, ptitle, ylabel, xlabel)
        pngs.append((ptitle, png))
    (plots_dir / "data.json").write_text(json.dumps(_clean(data), indent=1, allow_nan=False) + "\n")
    title = title or f"ddlsched report: {root.name} ({kind}, {len(runs)} runs)"
    loads = {s: _mean([d["offered_load"] for d in data[s].values()]) for s in data}
    _write_table_csv(out / "report_table.csv", data)
    md = [f"# {title}", "", f"Source: `{root}` ({kind}). {CI_NOTE}", ""]
    hp = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
          f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>",
          f"<p class='note'>Source: <code>{html.escape(str(root))}</code> ({kind}). {html.escape(CI_NOTE)}</p>"]
    md.append("## Tables")
    hp.append("<h2>Tables</h2>")
    for scen in data:
        load_txt = f"offered load {_fmt(loads[scen])}"
        md += [f"### {scen} — {load_txt}", "", _md_table(table_rows(data[scen])), ""]
        hp.append(f"<h3>{html.escape(scen)} — {load_txt}</h3>{_html_table(table_rows(data[scen]))}")
    md.append("## Plots")
    hp.append("<h2>Plots</h2>")
    for ptitle, png in pngs:
        rel = png.relative_to(out)
        md += [f"### {ptitle}", "", f"![{ptitle}]({rel.as_posix()})", f"Data: `{rel.with_suffix('.json').as_posix()}`",
               ""]
        b64 = base64.b64encode(png.read_bytes()).decode()
        hp.append(f"<h3>{html.escape(ptitle)}</h3><img alt='{html.escape(png.stem)}' "
                  f"src='data:image/png;base64,{b64}'>")
    hp.append("</body></html>")
    (out / "report.md").write_text("\n".join(md) + "\n")
    page = out / "report.html"
    page.write_text("\n".join(hp) + "\n")
    return page


def _write_table_csv(path: Path, data: dict[str, Any]) -> None:
    import csv

    with path.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["scenario", "policy", "seeds", "avg_jct_s", "avg_jct_ci95", "makespan_s", "makespan_ci95",
                    "comm_overhead_pct", "comm_overhead_ci95", "median_jct_s", "avg_queueing_s", "p99_jct_s",
                    "gpu_utilization", "offered_load"])
        for scen, pols in data.items():
            for p, d in pols.items():
                w.writerow([scen, p, len(d["seeds"]), d["avg_jct_s"]["mean"], d["avg_jct_s"]["ci95"],
                            d["makespan_s"]["mean"], d["makespan_s"]["ci95"], d["comm_overhead_pct"]["mean"],
                            d["comm_overhead_pct"]["ci95"], d["median_jct_s"]["mean"], d["avg_queueing_s"]["mean"],
                            d["p99_jct_s"], d["gpu_utilization"], d["offered_load"]])
