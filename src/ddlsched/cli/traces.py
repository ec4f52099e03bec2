"""``traces`` command group: inspect trace files (the main CLI adds this group)."""

from __future__ import annotations

import click
from rich.console import Console
from rich.table import Table

from ddlsched.errors import InputError
from ddlsched.workload.info import trace_info
from ddlsched.workload.loaders import FORMATS, load_trace


@click.group(name="traces")
def traces() -> None:
    """Inspect job trace files."""


def _fmt_s(x: float | None) -> str:
    return "-" if x is None else f"{x:,.1f} s ({x / 3600:,.2f} h)"


@traces.command(name="info")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(sorted(FORMATS)), default=None,
              help="Trace format (detected from the header when omitted).")
@click.option("--skip-invalid", is_flag=True, help="Skip and count invalid rows instead of stopping.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for model assignment.")
def info(path: str, fmt: str | None, skip_invalid: bool, seed: int) -> None:
    """Print job count, GPU-size histogram, time span and GPU-seconds of the trace at PATH."""
    try:
        trace = load_trace(path, format=fmt, skip_invalid=skip_invalid, seed=seed)
    except InputError as e:
        raise click.ClickException(str(e)) from None
    d = trace_info(trace)
    console = Console()
    t = Table(title=f"{d['path']}", show_header=False)
    t.add_column("figure")
    t.add_column("value")
    t.add_row("format", d["format"])
    t.add_row("jobs", f"{d['jobs']:,}")
    t.add_row("skipped rows", f"{d['skipped']:,}")
    t.add_row("first arrival", _fmt_s(d["first_arrival_s"]))
    t.add_row("last arrival", _fmt_s(d["last_arrival_s"]))
    t.add_row("GPUs requested (sum)", f"{d['total_gpus_requested']:,}")
    gs = d["total_gpu_seconds"]
    t.add_row("total GPU-seconds", "- (iterations only)" if gs is None else f"{gs:,.0f} ({gs / 3600:,.1f} GPU-h)")
    console.print(t)
    h = Table(title="GPUs per job")
    h.add_column("GPUs", justify="right")
    h.add_column("jobs", justify="right")
    for g, n in d["gpu_histogram"].items():
        h.add_row(str(g), f"{n:,}")
    console.print(h)
    m = Table(title="models")
    m.add_column("model")
    m.add_column("jobs", justify="right")
    for name, n in d["model_histogram"].items():
        m.add_row(name, f"{n:,}")
    console.print(m)
    for note in d["notes"]:
        console.print(f"note: {note}", highlight=False)
    for r in d["skipped_reasons"]:
        console.print(f"skipped: {r}", highlight=False)


@traces.command(name="formats")
def formats() -> None:
    """List the trace formats the loaders understand."""
    from rich.console import Console
    from rich.table import Table

    t = Table(title="trace formats (--format NAME; auto-detected when unambiguous)")
    t.add_column("name")
    t.add_column("description")
    for name, fmt in FORMATS.items():
        t.add_row(name, fmt.description)
    Console().print(t)
