"""``ddlsched report DIR``: an HTML page and a Markdown file with figures and the tables behind them.

Every number is recomputed from the runs' files (``ddlsched.metrics.report_data``): per-job metrics over each
run's measurement window, as ``summary.json`` states it. Per scenario the page gives the window, the analyst's
warnings (``ddlsched.metrics.warnings``), a sortable table per policy (mean over seeds, ± a t-based 95 % CI), a
table by job-size class and these figures (``ddlsched.metrics.report_plots``), one PNG each with the plotted
series saved as ``report_plots/NAME.json`` (keyed by scenario, then policy):

* ``offered_load``  – offered load per hour (day, week) from ``load.csv``, its rolling mean, and one policy's
  busy share (the policies share the arrivals);
* ``utilization``   – busy GPUs ÷ cluster GPUs, ``queue`` – pending jobs: rolling time-averages over 1/100 of the
  active period (first arrival to last finish), lowest seed of each policy;
* ``jct_cdf``       – empirical CDF of JCT per policy (the seeds' jobs pooled);
* ``avg_jct_s``, ``makespan_s``, ``comm_overhead_pct`` – mean over seeds, CI (≥ 2 seeds, clipped at the range);
* ``jct_by_size``, ``slowdown_by_size`` – mean JCT and mean run ÷ ideal run per job-size class (1, 2–4, 5–8,
  > 8 GPUs) per policy.

``report.html`` embeds the PNGs as base64 and sorts its tables with a few lines of inline script (no external
assets); ``report.md`` links the PNG files.
"""

from __future__ import annotations

import base64
import csv
import html
import json
import math
import re
from pathlib import Path
from typing import Any

from ddlsched.metrics.report_data import H, build_data, run_metrics
from ddlsched.metrics.results_dir import find_runs
from ddlsched.metrics.warnings import seeds_warning

PLOTS_DIR = "report_plots"

# name, title, axis label (order = order on the page)
PLOTS = (
    ("offered_load", "Offered load and busy share over time", "share of cluster GPUs"),
    ("utilization", "GPU utilisation over time", "busy GPUs ÷ cluster GPUs"),
    ("queue", "Queue length over time", "pending jobs"),
    ("jct_cdf", "JCT distribution", "fraction of jobs"),
    ("avg_jct_s", "Average JCT", "average JCT (h)"),
    ("jct_by_size", "Mean JCT by job size", "mean JCT (h)"),
    ("slowdown_by_size", "Mean slowdown by job size (1 = ideal)", "run time ÷ ideal run time"),
    ("makespan_s", "Makespan", "makespan (h)"),
    ("comm_overhead_pct", "Communication overhead", "communication overhead (% of run time)"),
)


# ------------------------------------------------------------------ figures
def _slug(text: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9.-]+", "_", text).strip("_")[:60] or "scenario"
    slug, i = base, 2
    while slug in taken:
        slug, i = f"{base}_{i}", i + 1
    taken.add(slug)
    return slug


def _draw(data: dict[str, Any], plots_dir: Path) -> dict[str, list[tuple[str, str, Path]]]:
    """Draw every figure of every scenario; write the plotted series; return scenario → [(name, title, png)]."""
    from ddlsched.metrics import report_plots as rp

    policies = list(dict.fromkeys(p for s in data.values() for p in s["policies"]))
    cols = rp.colors(policies)
    series: dict[str, dict[str, Any]] = {name: {} for name, *_ in PLOTS}
    pngs: dict[str, list[tuple[str, str, Path]]] = {}
    taken: set[str] = set()
    for scen, sd in data.items():
        pols, meta = sd["policies"], sd["meta"]
        suffix = "" if len(data) == 1 else "-" + _slug(scen, taken)
        pngs[scen] = []
        for name, title, ylabel in PLOTS:
            png = plots_dir / f"{name}{suffix}.png"
            cap = scen if len(scen) <= 80 else scen[:79] + "…"  # the caption is one line
            if name == "offered_load":
                if not meta["load"]:
                    continue  # runs written before load.csv existed
                window_load = pols[meta["load_policy"]]["per_seed"][0]["offered_load"]
                s = rp.plot_load(png, title, cap, meta, window_load, cols[meta["load_policy"]])
            elif name in ("utilization", "queue"):
                s = rp.plot_timeline(png, title, ylabel, cap, {p: d[name] for p, d in pols.items()}, meta, cols,
                                     ymax=1.02 if name == "utilization" else None)
            elif name == "jct_cdf":
                s = rp.plot_cdf(png, title, cap, {p: d["jct_cdf"] for p, d in pols.items()}, cols)
            elif name.endswith("_by_size"):
                key, scale = ("avg_jct_s", H) if name == "jct_by_size" else ("avg_slowdown", 1.0)
                groups = _classes(pols)
                vals = {p: {c: [v / scale for v in d["by_size"][c][key]["values"]] for c in d["by_size"]}
                        for p, d in pols.items()}
                lower = 0.0 if name == "jct_by_size" else 1.0  # run time ≥ ideal run time
                s = rp.plot_grouped(png, title, ylabel, cap, groups, vals, cols, lower=lower, base=lower)
            else:
                scale = H if name.endswith("_s") else 1.0
                vals = {p: [v / scale for v in d[name]["values"]] for p, d in pols.items()}
                s = rp.plot_bars(png, title, ylabel, cap, vals, cols, lower=0.0,
                                 upper=100.0 if name == "comm_overhead_pct" else None)
            series[name][scen] = s
            pngs[scen].append((name, title, png))
    for name, title, _ in PLOTS:
        (plots_dir / f"{name}.json").write_text(json.dumps(_clean({"plot": name, "title": title,
                                                                    "series": series[name]}),
                                                           indent=1, allow_nan=False) + "\n")
    return pngs


def _classes(pols: dict[str, Any]) -> list[str]:
    from ddlsched.metrics.report_data import SIZE_CLASSES

    return [c for c, *_ in SIZE_CLASSES if any(c in d["by_size"] for d in pols.values())]


def _clean(v: Any) -> Any:
    """NaN/inf → None, recursively (strict JSON)."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    return v


# ------------------------------------------------------------------ tables
def _fmt(v: Any, scale: float = 1.0, digits: int = 2) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v / scale:.{digits}f}"


def _count(v: Any) -> str:
    """A count's mean over seeds: an integer when it is one (one seed, or equal seeds), else one decimal."""
    return _fmt(v, digits=0 if isinstance(v, int | float) and float(v).is_integer() else 1)


def _ci(d: dict[str, Any], scale: float = 1.0, digits: int = 2) -> str:
    s = _fmt(d["mean"], scale, digits)
    return s if math.isnan(d["ci95"]) else f"{s} ± {_fmt(d['ci95'], scale, digits)}"


TABLE_COLS = ("policy", "seeds", "jobs measured", "avg JCT h (±95% CI)", "median JCT h", "p95 JCT h", "p99 JCT h",
              "avg queue h", "makespan h (±95% CI)", "comm overhead % (±95% CI)", "preemptions", "busy share (window)",
              "GPU util (run)", "offered load")
TABLE_NOTE = ("Per-job columns are over the jobs arriving in the measurement window; makespan and GPU util over "
              "the whole run. Busy share (window) = realised load: busy GPUs ÷ cluster GPUs over the window. "
              "Preemptions: total per run. Every column is the mean over seeds.")


def table_rows(pols: dict[str, Any]) -> list[list[str]]:
    rows = []
    for p, d in pols.items():
        rows.append([p, str(len(d["seeds"])), _fmt(d["jobs_measured"]["mean"], digits=0), _ci(d["avg_jct_s"], H),
                     _fmt(d["median_jct_s"]["mean"], H), _fmt(d["p95_jct_s"]["mean"], H),
                     _fmt(d["p99_jct_s"]["mean"], H), _fmt(d["avg_queueing_s"]["mean"], H), _ci(d["makespan_s"], H),
                     _ci(d["comm_overhead_pct"], digits=1), _count(d["preemptions"]["mean"]),
                     _fmt(d["gpu_utilization_window"]["mean"]), _fmt(d["gpu_utilization"]["mean"]),
                     _fmt(d["offered_load"]["mean"])])
    return rows


def size_table(pols: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Mean JCT (h) and mean slowdown per job-size class and policy; the header gives the jobs per run."""
    classes = _classes(pols)
    first = next(iter(pols.values()))
    jobs = {c: first["by_size"][c]["jobs"]["mean"] if c in first["by_size"] else math.nan for c in classes}
    head = ["policy"] + [f"JCT h, {c} ({_fmt(jobs[c], digits=0)} jobs)" for c in classes] \
        + [f"slowdown, {c}" for c in classes]
    rows = []
    for p, d in pols.items():
        bs = d["by_size"]
        rows.append([p] + [_fmt(bs[c]["avg_jct_s"]["mean"], H) if c in bs else "-" for c in classes]
                    + [_fmt(bs[c]["avg_slowdown"]["mean"]) if c in bs else "-" for c in classes])
    return head, rows


def _md_table(head: list[str] | tuple[str, ...], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _html_table(head: list[str] | tuple[str, ...], rows: list[list[str]]) -> str:
    th = "".join(f"<th title='click to sort'>{html.escape(c)}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table class='sortable'><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


# ------------------------------------------------------------------ words
def window_text(meta: dict[str, Any]) -> str:
    """'Measurement window: …' of the scenario's first policy, lowest seed."""
    lo, hi = meta["window_start_s"], meta["window_end_s"]
    n, total = meta["jobs_measured"], meta["jobs_completed"]
    t0 = meta["active_start_s"]
    active = f"active period {(meta['active_end_s'] - t0) / H:.1f} h (first arrival to last finish)"
    if not isinstance(lo, float) or math.isnan(lo):
        return f"Measurement window: all completed jobs; {active}."
    span = f"arrivals {(lo - t0) / H:.1f}–{(hi - t0) / H:.1f} h after the first (trace time {lo:.0f}–{hi:.0f} s)"
    jobs = f"all {n} completed jobs" if n == total else f"{n} of {total} completed jobs (warm-up/cool-down excluded)"
    seed = f"; seed {meta['seed_shown']}" if meta["min_seeds"] > 1 else ""
    return f"Measurement window: {span}, {jobs}{seed}; {active}."


def warnings_of(meta: dict[str, Any]) -> list[str]:
    out = list(meta["warnings"])
    w = seeds_warning(meta["min_seeds"]) if meta["min_seeds"] >= 2 else None
    if w:
        out.append(f"confidence intervals: {w}")
    return out


CI_NOTE = ("Error bars and ± values: Student-t 95 % confidence interval of the mean over seeds "
           "(t₀.₉₇₅,ₙ₋₁ · s/√n); none when a policy has one seed. Figures clip it at the metric's range (≥ 0, "
           "≤ 100 %, slowdown ≥ 1).")

_CSS = ("body{font-family:system-ui,sans-serif;max-width:1720px;margin:1.5em auto;padding:0 1em;color:#222}"
        "h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:2em}"
        "table{border-collapse:collapse;margin:.6em 0;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;"
        "text-align:right}td{white-space:nowrap}td:first-child,th:first-child{text-align:left}th{background:#f4f4f4;cursor:pointer;"
        "user-select:none}th[data-dir=asc]::after{content:' \\25B2'}th[data-dir=desc]::after{content:' \\25BC'}"
        "tbody tr:nth-child(even){background:#fafafa}.note{color:#555;font-size:13px}"
        ".warn{background:#fff6e0;border-left:4px solid #e0a000;padding:.3em 1em;font-size:14px;max-width:1200px}"
        ".warn ul{margin:.3em 0;padding-left:1.2em}.figs{display:flex;flex-wrap:wrap;gap:12px}"
        ".figs img{max-width:100%;height:auto;border:1px solid #eee}")

# click a header to sort by it (numbers numerically, "-" last); click again to reverse
_SORT_JS = ("<script>document.querySelectorAll('table.sortable th').forEach(function(th){"
            "th.addEventListener('click',function(){var tb=th.closest('table').tBodies[0],i=th.cellIndex,"
            "asc=th.dataset.dir!=='asc';th.parentNode.querySelectorAll('th').forEach(function(h){"
            "delete h.dataset.dir;});th.dataset.dir=asc?'asc':'desc';function key(r){"
            "var t=r.cells[i].textContent,v=parseFloat(t);return isNaN(v)?t:v;}"
            "Array.from(tb.rows).sort(function(a,b){var x=key(a),y=key(b);if(typeof x!==typeof y)"
            "return typeof x==='number'?-1:1;return (x<y?-1:x>y?1:0)*(asc?1:-1);})"
            ".forEach(function(r){tb.appendChild(r);});});});</script>")


# ------------------------------------------------------------------ the page
def write_report(results_dir: str | Path, out_dir: str | Path | None = None, title: str | None = None) -> Path:
    """Write report.html, report.md, report_plots/*.png|json and report_table.csv; return report.html."""
    root = Path(results_dir)
    out = Path(out_dir) if out_dir is not None else root
    kind, runs = find_runs(root, hashes=True)  # complete runs only; refuses others naming what is missing
    data = build_data(runs)
    plots_dir = out / PLOTS_DIR
    plots_dir.mkdir(parents=True, exist_ok=True)
    pngs = _draw(data, plots_dir)
    (plots_dir / "data.json").write_text(json.dumps(_clean(data), indent=1, allow_nan=False) + "\n")
    _write_table_csv(out / "report_table.csv", data)
    title = title or f"ddlsched report: {root.name} ({kind}, {len(runs)} runs)"
    md = [f"# {title}", "", f"Source: `{root}` ({kind}). {CI_NOTE}", ""]
    hp = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
          f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>",
          f"<p class='note'>Source: <code>{html.escape(str(root))}</code> ({kind}). {html.escape(CI_NOTE)} "
          "Click a column header to sort.</p>"]
    if len(data) > 1:
        links = "".join(f"<li><a href='#s{i}'>{html.escape(s)}</a></li>" for i, s in enumerate(data))
        hp.append(f"<ul>{links}</ul>")
    taken: set[str] = set()
    for i, (scen, sd) in enumerate(data.items()):
        pols, meta = sd["policies"], sd["meta"]
        tenant_md, tenant_html = _tenant_section(scen, [r for r in runs if r.scenario == scen], out, plots_dir,
                                                 "" if len(data) == 1 else "-" + _slug(scen, taken))
        load = next(iter(pols.values()))["offered_load"]["mean"]
        head = f"{scen} — offered load {_fmt(load)}"
        win = window_text(meta)
        warns = warnings_of(meta)
        shead, srows = size_table(pols)
        md += [f"## {head}", "", win, ""]
        hp += [f"<h2 id='s{i}'>{html.escape(head)}</h2>", f"<p>{html.escape(win)}</p>"]
        if warns:
            md += ["**Warnings**", ""] + [f"* {w}" for w in warns] + [""]
            hp.append("<div class='warn'><b>Warnings</b><ul>" + "".join(f"<li>{html.escape(w)}</li>" for w in warns)
                      + "</ul></div>")
        md += ["### Policies", "", _md_table(TABLE_COLS, table_rows(pols)), "", TABLE_NOTE, "",
               "### By job size", "", _md_table(shead, srows), "",
               "Slowdown = run time ÷ ideal run time (alone, consolidated); means over the class's jobs, then seeds.",
               "", "### Figures", ""]
        hp += ["<h3>Policies</h3>", _html_table(TABLE_COLS, table_rows(pols)), f"<p class='note'>{TABLE_NOTE}</p>",
               "<h3>By job size</h3>", _html_table(shead, srows),
               "<p class='note'>Slowdown = run time ÷ ideal run time (alone, consolidated); means over the class's "
               "jobs, then seeds.</p>", "<h3>Figures</h3><div class='figs'>"]
        for name, ptitle, png in pngs[scen]:
            rel = png.relative_to(out).as_posix()
            md += [f"![{ptitle}]({rel})", "", f"Data: `{PLOTS_DIR}/{name}.json`", ""]
            b64 = base64.b64encode(png.read_bytes()).decode()
            hp.append(f"<img alt='{html.escape(ptitle)}' title='{html.escape(ptitle)}' "
                      f"src='data:image/png;base64,{b64}'>")
        hp.append("</div>")
        md += tenant_md
        hp += tenant_html
    hp.append(_SORT_JS + "</body></html>")
    (out / "report.md").write_text("\n".join(md) + "\n")
    page = out / "report.html"
    page.write_text("\n".join(hp) + "\n")
    return page


def _tenant_section(scen: str, runs: list[Any], out: Path, plots_dir: Path,
                    suffix: str) -> tuple[list[str], list[str]]:
    """The per-tenant section (``ddlsched.metrics.report_tenants``) of a scenario whose runs have tenants."""
    from ddlsched.metrics import report_tenants as rt

    chosen = rt.tenant_runs(runs)
    if not chosen:
        return [], []
    fair, rows = rt.tables(chosen)
    png = plots_dir / f"tenant_shares{suffix}.png"
    rt.plot_shares(chosen, png)
    rel = png.relative_to(out).as_posix()
    md = ["### Tenants", "", _md_table(rt.FAIR_HEAD, fair), "", _md_table(rt.HEAD, rows), "", rt.NOTE, "",
          f"![GPU share over time per tenant]({rel})", "", f"Data: `{PLOTS_DIR}/{png.stem}.json`", ""]
    b64 = base64.b64encode(png.read_bytes()).decode()
    hp = ["<h3>Tenants</h3>", _html_table(rt.FAIR_HEAD, fair), _html_table(rt.HEAD, rows),
          f"<p class='note'>{html.escape(rt.NOTE)}</p>",
          f"<div class='figs'><img alt='GPU share over time per tenant' src='data:image/png;base64,{b64}'></div>"]
    return md, hp


def _write_table_csv(path: Path, data: dict[str, Any]) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["scenario", "policy", "seeds", "avg_jct_s", "avg_jct_ci95", "makespan_s", "makespan_ci95",
                    "comm_overhead_pct", "comm_overhead_ci95", "median_jct_s", "avg_queueing_s", "p99_jct_s",
                    "gpu_utilization", "offered_load", "p95_jct_s", "preemptions", "jobs_measured",
                    "gpu_utilization_window"])
        for scen, sd in data.items():
            for p, d in sd["policies"].items():
                w.writerow([scen, p, len(d["seeds"]), d["avg_jct_s"]["mean"], d["avg_jct_s"]["ci95"],
                            d["makespan_s"]["mean"], d["makespan_s"]["ci95"], d["comm_overhead_pct"]["mean"],
                            d["comm_overhead_pct"]["ci95"], d["median_jct_s"]["mean"], d["avg_queueing_s"]["mean"],
                            d["p99_jct_s"]["mean"], d["gpu_utilization"]["mean"], d["offered_load"]["mean"],
                            d["p95_jct_s"]["mean"], d["preemptions"]["mean"], d["jobs_measured"]["mean"],
                            d["gpu_utilization_window"]["mean"]])


__all__ = ["PLOTS", "PLOTS_DIR", "build_data", "run_metrics", "size_table", "table_rows", "write_report"]
