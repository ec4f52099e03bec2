"""``ddlsched sweep CONFIG``: run a matrix of simulations locally or on Ray (docs/sweeps.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from ddlsched.cli.common import plugin_option

err_console = Console(stderr=True, soft_wrap=True)


@click.command("sweep")
@click.argument("config", type=click.Path(dir_okay=False))
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Results directory (default results/sweeps/NAME, NAME from the config).")
@click.option("--workers", type=int, default=2, show_default=True, help="Parallel cells (processes or Ray CPUs).")
@click.option("--backend", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="local: a process pool; ray: Ray tasks (local Ray unless --address).")
@click.option("--address", default=None, help="Ray cluster address (e.g. ray://head:10001 or auto).")
@click.option("--ray-runtime-env", "runtime_env", default=None, metavar="JSON|FILE",
              help="Ray runtime_env for the workers (JSON text or a .json/.yaml file), e.g. "
                   "'{\"pip\": [\"ddlsched==0.2.0\"]}' or '{\"working_dir\": \".\"}'; needs --backend ray.")
@click.option("--dry-run", is_flag=True, help="Only list the cells and which are already finished.")
@click.option("--report", "make_report", is_flag=True, help="Write report.html/report.md when done.")
@click.option("--quiet", is_flag=True, help="No progress bar or per-cell lines.")
@plugin_option
def sweep(config: str, out: str | None, workers: int, backend: str, address: str | None, runtime_env: str | None,
          dry_run: bool, make_report: bool, quiet: bool, plugins: tuple[str, ...]) -> None:
    """Run every cell of the CONFIG matrix (YAML/TOML); resumes, skipping finished cells."""
    from ddlsched.experiments.sweep import CELLS, check_backend, is_finished, parse_runtime_env, run_sweep
    from ddlsched.experiments.sweep_config import load_cells

    cfg, cells = load_cells(config, plugins)
    env = parse_runtime_env(runtime_env, backend)
    if not dry_run:
        check_backend(workers, backend, address)
    out_dir = Path(out or f"results/sweeps/{cfg.name}")
    if dry_run:
        for c in cells:
            state = "done" if is_finished(out_dir / CELLS / c.cell_id) else "todo"
            click.echo(f"{state}  {c.cell_id}")
        click.echo(f"{len(cells)} cells")
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    show_bar = not quiet and err_console.is_terminal
    state = {"done": 0, "failed": 0}

    def line(cell: Any, output: Any) -> None:
        state["done"] += 1
        if output is not None and output.error is not None:
            state["failed"] += 1
            err_console.print(f"[red]failed[/] {escape(cell.cell_id)}: {escape(output.error.splitlines()[0])}")
        elif not quiet and not show_bar:
            what = "skipped (finished)" if output is None else f"ok {output.wall_s:.1f}s"
            err_console.print(escape(f"[{state['done']}/{len(cells)}] {cell.cell_id} {what}"))

    err_console.print(escape(f"sweep {cfg.name!r}: {len(cells)} cells → {out_dir}/ ({backend}, {workers} workers)"))
    if show_bar:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        with Progress(TextColumn("[bold]cells"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("failed {task.fields[failed]}"), TimeElapsedColumn(), TextColumn("ETA"),
                      TimeRemainingColumn(), console=err_console) as bar:
            task = bar.add_task("cells", total=len(cells), failed=0)

            def tick(cell: Any, output: Any) -> None:
                line(cell, output)
                bar.update(task, completed=state["done"], failed=state["failed"])

            outcome = run_sweep(cells, out_dir, workers=workers, backend=backend, address=address, on_done=tick,
                                    runtime_env=env)
    else:
        outcome = run_sweep(cells, out_dir, workers=workers, backend=backend, address=address, on_done=line,
                                runtime_env=env)
    click.echo(f"{outcome.total} cells: {outcome.ran} run, {outcome.skipped} already finished, "
               f"{len(outcome.failed)} failed; {outcome.wall_s:.1f} s; table in {outcome.results_csv}")
    for cid, msg in outcome.failed:
        click.echo(f"FAILED {cid}: {msg} (see {out_dir / CELLS / cid / 'error.txt'})")
    if make_report:
        from ddlsched.metrics.report import write_report

        page = write_report(out_dir)
        click.echo(f"report: {page}")
    if outcome.failed:
        sys.exit(1)
