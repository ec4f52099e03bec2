"""``ddlsched policies`` and ``ddlsched reproduce``: what can be run, and the papers' experiments."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from ddlsched.cli.common import console, err_console, plugin_option
from ddlsched.errors import InputError


@click.command("policies")
@plugin_option
def policies_cmd(plugins: tuple[str, ...]) -> None:
    """List every policy with a one-line description, and the physics models."""
    from ddlsched.engine.run import MODELS
    from ddlsched.perf import PERF_MODELS
    from ddlsched.policies.registry import policy_rows

    t = Table(title="policies (ORDER+PLACEMENT composes a baseline; a bare ORDER uses consolidated)")
    for col in ("name", "execution model", "family", "description", "clairvoyant"):
        t.add_column(col)
    for row in policy_rows():
        t.add_row(*row)
    console.print(t)
    e = Table(title="execution models (chosen by the policy; docs/engine.md)")
    e.add_column("name")
    e.add_column("description")
    for name, cls in MODELS.items():
        e.add_row(name, cls.description)
    console.print(e)
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
