"""``ddlsched native``: the optional compiled build of the event path (docs/engine.md "Compiled build")."""

from __future__ import annotations

import click

from ddlsched import native as nat


@click.group("native")
def native() -> None:
    """The optional compiled build (mypyc) of the event path: same source, same results, faster."""


@native.command("status")
def status() -> None:
    """Say whether this process runs the compiled modules or pure Python, and why."""
    mode, why = nat.decide()
    click.echo(f"{mode}: {why}")


@native.command("build")
def build() -> None:
    """Compile the event path in place (needs the 'native' extra: mypy, and a C compiler)."""
    nat.build()


@native.command("clean")
def clean() -> None:
    """Remove a compiled build; the package runs pure Python afterwards."""
    nat.clean()
    click.echo("pure: compiled build removed")
