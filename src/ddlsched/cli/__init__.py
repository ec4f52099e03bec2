"""The ``ddlsched`` command line. One module per command group; ``main`` turns errors into clear exits."""

from __future__ import annotations

import signal
import sys
from typing import NoReturn

import click
from rich.markup import escape

from ddlsched.cli.catalog import policies_cmd, reproduce
from ddlsched.cli.common import err_console
from ddlsched.cli.job import job
from ddlsched.cli.live import live
from ddlsched.cli.native import native
from ddlsched.cli.report import report
from ddlsched.cli.run import compare, simulate
from ddlsched.cli.serve import serve
from ddlsched.cli.sweep import sweep
from ddlsched.cli.testbed import testbed
from ddlsched.cli.traces import traces
from ddlsched.errors import DdlschedError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ddlsched")
def cli() -> None:
    """Compare scheduling policies for distributed deep-learning training on a shared GPU cluster."""


EXTRAS = {"matplotlib": "plots", "pyarrow": "parquet", "ray": "ray", "torch": "testbed", "fastapi": "service",
          "uvicorn": "service", "sqlalchemy": "service", "httpx": "service"}
"""Optional dependency → the ``ddlsched[...]`` extra that installs it."""

for _cmd in (simulate, compare, policies_cmd, reproduce, traces, sweep, report, testbed, native):
    cli.add_command(_cmd)
cli.add_command(live)
for _cmd in (serve, job):  # the service and its client (docs/service.md)
    cli.add_command(_cmd)


def main() -> None:
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort as e:
        if isinstance(e.__cause__, KeyboardInterrupt):  # click turns an interrupt into Abort
            _interrupted(e.__cause__)
        err_console.print("aborted")
        sys.exit(130)
    except click.UsageError as e:  # one line: the flag and the problem (click would add the usage and a hint)
        cmd = e.ctx.command_path if e.ctx is not None else "ddlsched"
        click.echo(f"error: {e.format_message()} (see '{cmd} --help')", err=True)
        sys.exit(e.exit_code)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except DdlschedError as e:
        err_console.print(f"[red]error:[/] {escape(str(e))}")  # escape: a message may quote '[...]' from a file
        sys.exit(2)
    except KeyboardInterrupt as e:
        _interrupted(e)
    except OSError as e:  # a writer or reader the OS stopped (full disk, read-only, name too long, symlink loop)
        from ddlsched.metrics.atomic import os_error_text

        err_console.print(f"[red]error:[/] {escape(os_error_text(e))}")
        sys.exit(1)
    except MemoryError:
        err_console.print("[red]error:[/] out of memory (a trace's jobs are all held in memory: try --window or "
                          "--max-jobs, or a machine with more memory); no result was written")
        sys.exit(1)
    except ModuleNotFoundError as e:
        root = (e.name or "").split(".")[0]
        if root not in EXTRAS:
            raise
        hint = f"pip install 'ddlsched[{EXTRAS[root]}]'"
        err_console.print(f"[red]error:[/] this command needs {root}, an optional dependency: {escape(hint)}")
        sys.exit(2)


def _interrupted(e: KeyboardInterrupt) -> NoReturn:
    """``interrupted``, exit 128 + signal: 130 for SIGINT (Ctrl-C), 143 for SIGTERM, 129 for SIGHUP."""
    name = str(e.args[0]) if e.args and str(e.args[0]).startswith("SIG") else "SIGINT"
    sig = getattr(signal, name, signal.SIGINT)
    err_console.print("interrupted" if sig == signal.SIGINT else f"interrupted ({name})")
    # CPython: under 'python -m', an interrupt that escaped an exec() of source text (e.g. a dataclass being
    # created in a module being imported) makes the interpreter kill itself with SIGINT at exit, even though it
    # was handled here; a completed exec() of source text clears that flag, so the exit status stays 128 + signal.
    exec("")
    sys.exit(128 + int(sig))


__all__ = ["cli", "main"]
