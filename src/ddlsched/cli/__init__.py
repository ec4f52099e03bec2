"""The ``ddlsched`` command line. One module per command group; ``main`` turns errors into clear exits."""

from __future__ import annotations

import sys

import click
from rich.markup import escape

from ddlsched.cli.catalog import policies_cmd, reproduce
from ddlsched.cli.common import err_console
from ddlsched.cli.report import report
from ddlsched.cli.run import compare, simulate
from ddlsched.cli.sweep import sweep
from ddlsched.cli.testbed import testbed
from ddlsched.cli.traces import traces
from ddlsched.errors import DdlschedError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ddlsched")
def cli() -> None:
    """Compare scheduling policies for distributed deep-learning training on a shared GPU cluster."""


for _cmd in (simulate, compare, policies_cmd, reproduce, traces, sweep, report, testbed):
    cli.add_command(_cmd)


def main() -> None:
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        err_console.print("aborted")
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except DdlschedError as e:
        err_console.print(f"[red]error:[/] {escape(str(e))}")  # escape: a message may quote '[...]' from a file
        sys.exit(2)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)


__all__ = ["cli", "main"]
