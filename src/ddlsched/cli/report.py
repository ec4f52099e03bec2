"""``ddlsched report DIR``: HTML + Markdown report with plots for a sweep, compare or simulate directory."""

from __future__ import annotations

import click


@click.command("report")
@click.argument("results_dir", type=click.Path(file_okay=False, exists=True))
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Where to write report.html/report.md/report_plots (default: RESULTS_DIR).")
@click.option("--title", default=None, help="Page title.")
def report(results_dir: str, out: str | None, title: str | None) -> None:
    """Write report.html (self-contained) and report.md (+ PNGs) for RESULTS_DIR.

    Only complete runs are read: a run folder without its manifest.json (the completion marker) or whose files
    do not match it is refused, naming the folder and what is missing (docs/outputs.md).
    """
    from ddlsched.metrics.report import write_report

    page = write_report(results_dir, out, title)
    click.echo(f"report: {page} (and {page.with_suffix('.md')})")
