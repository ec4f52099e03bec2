"""``traces`` command group: inspect trace files (the main CLI adds this group)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ddlsched.cli.common import InputErrorExit, load_options, mapping_options
from ddlsched.errors import DdlschedError
from ddlsched.workload.info import trace_info
from ddlsched.workload.loaders import FORMATS
from ddlsched.workload.loaders.generic_csv import FIELDS, SYNONYMS


@click.group(name="traces")
def traces() -> None:
    """Inspect job trace files."""


def _fmt_s(x: float | None) -> str:
    return "-" if x is None else f"{x:,.1f} s ({x / 3600:,.2f} h)"


def _header(path: str) -> list[str]:
    from ddlsched.workload.csvrows import read_rows

    p = Path(path)
    if not p.is_file():
        return []
    return next(read_rows(p), (0, []))[1]


@traces.command(name="info")
@click.argument("path", type=click.Path())
@mapping_options
@click.option("--cluster", "cluster_spec", default=None, help="Cluster preset or file: check a GPU-type column.")
@click.option("--seed", type=click.IntRange(0, 2**63 - 1), default=0, show_default=True,
              help="Seed for model assignment.")
def info(path: str, seed: int, cluster_spec: str | None, **kw: Any) -> None:
    """Print job count, GPU-size histogram, time span, GPU-seconds and the field mapping of the trace at PATH
    (a file, or a folder of trace files). Takes the same mapping flags as 'simulate'."""
    from ddlsched.workload.inputs import load_workload_and_models

    try:
        gpu_types = None
        if cluster_spec is not None:
            from ddlsched.experiments.runner import load_cluster_for

            gpu_types = list(load_cluster_for(cluster_spec, seed=seed).gpu_types)
        w = load_workload_and_models(path, seed=seed, fmt=kw["fmt"], options=load_options(kw),
                                     models=kw["models"], gpu_types=gpu_types)
    except DdlschedError as e:
        raise InputErrorExit(str(e)) from None
    assert w.trace is not None
    d = trace_info(w.trace)
    console = Console()
    t = Table(title=escape(f"{d['path']}"), show_header=False)
    t.add_column("figure")
    t.add_column("value")
    t.add_row("format", d["format"])
    t.add_row("jobs", f"{d['jobs']:,}")
    t.add_row("rows read", f"{d['rows']:,}")
    t.add_row("skipped rows (invalid)", f"{d['skipped']:,}")
    if d["filtered"]:
        from ddlsched.workload.trace import FILTER_REASONS

        for reason, n in d["filtered"].items():
            t.add_row(f"filtered: {reason}", f"{n:,} ({FILTER_REASONS[reason]})")
    t.add_row("first arrival", _fmt_s(d["first_arrival_s"]))
    t.add_row("last arrival", _fmt_s(d["last_arrival_s"]))
    if d["epoch"]:
        t.add_row("arrival 0 =", d["epoch"])
    t.add_row("GPUs requested (sum)", f"{d['total_gpus_requested']:,}")
    if d["fractional_gpu_jobs"]:
        kept = d["gpu_share_jobs"]
        rounded = d["fractional_gpu_jobs"] - kept
        t.add_row("fractional GPU requests", ", ".join(p for p in (f"{rounded:,} rounded up" if rounded else "",
                                                                    f"{kept:,} kept as shares" if kept else "") if p))
    gs = d["total_gpu_seconds"]
    t.add_row("total GPU-seconds", "- (iterations only)" if gs is None else f"{gs:,.0f} ({gs / 3600:,.1f} GPU-h)")
    if d["groups"]:
        t.add_row("groups (files)", f"{len(d['groups']):,}")
    console.print(t)
    generic = d["format"] == "generic_csv"
    mp = Table(title="field mapping (field <- column or rule)")
    mp.add_column("field")
    mp.add_column("from")
    if generic:
        mp.add_column("found automatically under (case-insensitive)")
    for k in [*FIELDS, *(k for k in d["mapping"] if k not in FIELDS)] if generic else d["mapping"]:
        row = [k, escape(d["mapping"].get(k, "-"))]
        mp.add_row(*row, escape(", ".join(SYNONYMS.get(k, ())))) if generic else mp.add_row(*row)
    console.print(mp)
    if generic:
        used = set(d["mapping"].values())
        header = _header(path)
        console.print(escape(f"columns not used: {', '.join(c for c in header if c not in used) or '-'} "
                             "(map a field with --column FIELD=NAME; an empty NAME unmaps it)"), highlight=False)
    for title, key in (("GPUs per job", "gpu_histogram"), ("models", "model_histogram"),
                       ("GPU types", "gpu_type_histogram")):
        if not d[key]:
            continue
        h = Table(title=title)
        h.add_column(title.split()[0] if key != "gpu_histogram" else "GPUs", justify="right")
        h.add_column("jobs", justify="right")
        for g, n in d[key].items():
            h.add_row(escape(str(g)), f"{n:,}")
        console.print(h)
    if w.models:
        mt = Table(title="extra model profiles (--models)")
        for c in ("model", "grad MB", "compute ms", "batch", "mem MB", "source"):
            mt.add_column(c)
        for m in w.models:
            mt.add_row(escape(m.name), f"{m.grad_mb:g}", f"{m.compute_ms:g}", str(m.batch_size), f"{m.mem_mb:g}",
                       escape(m.source))
        console.print(mt)
    for note in w.notes:
        console.print(escape(f"note: {note}"), highlight=False, soft_wrap=True)
    for r in d["skipped_reasons"]:
        console.print(escape(f"skipped: {r}"), highlight=False, soft_wrap=True)


@traces.command(name="formats")
def formats() -> None:
    """List the trace formats the loaders understand."""
    t = Table(title="trace formats (--format NAME; auto-detected when unambiguous)")
    t.add_column("name")
    t.add_column("description")
    for name, fmt in FORMATS.items():
        t.add_row(name, escape(fmt.description))
    Console().print(t)
