"""``ddlsched policies`` and ``ddlsched reproduce``: what can be run, and the papers' experiments."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from ddlsched.cli.common import console, err_console
from ddlsched.errors import InputError


@click.command("policies")
def policies_cmd() -> None:
    """List every policy with a one-line description, and the physics models."""
    from ddlsched.perf import PERF_MODELS
    from ddlsched.policies import list_policies

    t = Table(title="policies (ORDER+PLACEMENT composes a baseline; a bare ORDER uses consolidated)")
    t.add_column("name")
    t.add_column("description")
    for name, desc in list_policies():
        t.add_row(name, desc)
    console.print(t)
    m = Table(title="physics models (--perf-model)")
    m.add_column("name")
    m.add_column("description")
    for name, cls in PERF_MODELS.items():
        m.add_row(name, cls.description)
    console.print(m)


@click.command()
@click.argument("name", required=False)
@click.option("--list", "list_", is_flag=True, help="List the available reproductions.")
@click.option("--seeds", default="0,1,2,3,4", show_default=True, help="Comma-separated seeds.")
@click.option("--quick", is_flag=True, help="A smaller, faster version (for tests).")
@click.option("--out", type=click.Path(file_okay=False), default=None, help="Output directory (default results/NAME).")
def reproduce(name: str | None, list_: bool, seeds: str, quick: bool, out: str | None) -> None:
    """Re-run a paper's headline experiments and write tables and plots."""
    from ddlsched.experiments.registry import reproductions, run_reproduction

    if list_ or not name:
        t = Table(title="reproductions")
        t.add_column("name")
        t.add_column("description")
        for r in reproductions().values():
            t.add_row(r.name, r.description)
        console.print(t)
        return
    try:
        seed_list = [int(s) for s in seeds.split(",") if s.strip()]
    except ValueError:
        raise InputError(f"seeds must be integers, got {seeds!r}", field="--seeds") from None
    out_dir = Path(out or f"results/{name}")
    text = run_reproduction(name, out_dir, seed_list, quick, progress=lambda m: err_console.print(m))
    console.print(text)
