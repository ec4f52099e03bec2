"""``ddlsched job submit|ls|show|cancel|logs``: the service's command-line client (talks only to its HTTP API).

The server comes from ``--server`` or ``$DDLSCHED_SERVER``; the token from ``$DDLSCHED_TOKEN`` or ``--token-file``
(never a command-line argument). Exit status: 0 done; 1 the job ended failed/cancelled (``--wait``); 2 bad input
(the server's 422 names the field); 3 not authorised (401/403); 4 no such job (404); 5 conflict (409: the id
exists, the job already ended); 6 the server is unreachable or failed (5xx, 507 full store).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

import click

from ddlsched.cli.common import finite_float

DEFAULT_SERVER = "http://127.0.0.1:8421"
EXIT = {401: 3, 403: 3, 404: 4, 409: 5, 413: 2, 422: 2}


def _fail(code: int, msg: str) -> NoReturn:
    click.echo(f"error: {msg}", err=True)
    sys.exit(code)


class Client:
    def __init__(self, server: str, token_file: str | None, as_json: bool) -> None:
        import httpx

        token = os.environ.get("DDLSCHED_TOKEN")
        if token_file:
            try:
                token = Path(token_file).read_text().strip()
            except OSError as e:
                _fail(2, f"--token-file {token_file}: {e.strerror}")
        if not token:
            _fail(2, "no token: set $DDLSCHED_TOKEN or give --token-file FILE")
        self.http = httpx.Client(base_url=server.rstrip("/"), headers={"Authorization": f"Bearer {token}"},
                                 timeout=30)
        self.server = server
        self.json = as_json

    def call(self, method: str, path: str, **kw: Any) -> Any:
        import httpx

        try:
            r = self.http.request(method, path, **kw)
        except httpx.HTTPError as e:
            _fail(6, f"cannot reach {self.server}: {e}")
        if r.status_code >= 400:
            try:
                body = r.json()
            except ValueError:
                body = {"detail": r.text}
            _fail(EXIT.get(r.status_code, 6), f"{r.status_code}: {_detail(body)}")
        return r.json()

    def out(self, data: Any, table: Any) -> None:
        if self.json:
            click.echo(json.dumps(data, indent=2, sort_keys=True))
        else:
            from ddlsched.cli.common import console

            console.print(table)


def _detail(body: Any) -> str:
    d = body.get("detail", body) if isinstance(body, dict) else body
    if isinstance(d, list):
        return "; ".join(f"{'.'.join(str(p) for p in e.get('loc', [])[1:]) or 'request'}: {e.get('msg')}"
                         for e in d)
    return str(d)


def _when(t: float | None) -> str:
    return "" if t is None else dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def _jobs_table(rows: list[dict[str, Any]]) -> Any:
    from rich.table import Table

    t = Table("id", "name", "tenant", "GPUs", "model", "state", "progress", "submitted (UTC)", "on GPUs",
              "restarts", "reason")
    for r in rows:
        total = r["iterations"]
        prog = f"{r['done_iterations']:.0f}/{total:.0f}" if total else f"{r['done_iterations']:.0f}"
        t.add_row(r["id"], r["name"], r["tenant"], str(r["num_gpus"]), r["model"], r["state"], prog,
                  _when(r["submitted_at"]), ",".join(map(str, r["gpus"])), str(r["restarts"]), r["reason"])
    return t


server_opt = click.option("--server", envvar="DDLSCHED_SERVER", default=DEFAULT_SERVER, show_default=True,
                          help="Service URL ($DDLSCHED_SERVER).")
token_opt = click.option("--token-file", type=click.Path(dir_okay=False), default=None,
                         help="File holding the bearer token (else $DDLSCHED_TOKEN).")
json_opt = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")


@click.group()
def job() -> None:
    """Submit and watch jobs on a running 'ddlsched serve' (docs/service.md)."""


@job.command()
@server_opt
@token_opt
@json_opt
@click.option("--name", required=True)
@click.option("--gpus", type=click.IntRange(1), required=True)
@click.option("--model", required=True, help="Model profile (the catalog's names).")
@click.option("--iterations", type=finite_float(0, min_open=True), default=None)
@click.option("--duration", "duration_s", type=finite_float(0, min_open=True), default=None,
              help="Run-time estimate alone and consolidated (seconds), instead of --iterations.")
@click.option("--priority", type=finite_float(0, min_open=True), default=1.0, show_default=True)
@click.option("--tenant", default=None, help="Default: the token's tenant (the admin must give it).")
@click.option("--id", "job_id", default=None, help="Your id for the job (a retry with it is not duplicated).")
@click.option("--entrypoint", default=None, help="Command to run (only where the service allows entrypoints).")
@click.option("--wait", is_flag=True, help="Wait until the job ends; exit 1 unless it completed.")
def submit(server: str, token_file: str | None, as_json: bool, wait: bool, **kw: Any) -> None:
    """Submit a job."""
    c = Client(server, token_file, as_json)
    body = {k: v for k, v in kw.items() if v is not None}
    body["id"] = body.pop("job_id", None)
    body = {k: v for k, v in body.items() if v is not None}
    row = c.call("POST", "/api/v1/jobs", json=body)
    if wait:
        row = _wait(c, row["id"])
    c.out(row, _jobs_table([row]))
    if wait and row["state"] != "completed":
        sys.exit(1)


def _wait(c: Client, job_id: str, every_s: float = 0.5) -> dict[str, Any]:
    while True:
        row = c.call("GET", f"/api/v1/jobs/{job_id}")
        if row["state"] not in ("queued", "running"):
            return dict(row)
        time.sleep(every_s)


@job.command("ls")
@server_opt
@token_opt
@json_opt
@click.option("--state", default=None, help="Comma-separated states (queued,running,completed,failed,...).")
@click.option("--tenant", default=None)
@click.option("--limit", type=click.IntRange(1, 10_000), default=100, show_default=True)
@click.option("--offset", type=click.IntRange(0), default=0)
def ls(server: str, token_file: str | None, as_json: bool, state: str | None, tenant: str | None, limit: int,
       offset: int) -> None:
    """List jobs (a tenant's token: its own)."""
    c = Client(server, token_file, as_json)
    params = {k: v for k, v in {"state": state, "tenant": tenant, "limit": limit, "offset": offset}.items()
              if v is not None}
    rows = c.call("GET", "/api/v1/jobs", params=params)
    c.out(rows, _jobs_table(rows))


@job.command()
@server_opt
@token_opt
@json_opt
@click.argument("job_id")
def show(server: str, token_file: str | None, as_json: bool, job_id: str) -> None:
    """Show one job."""
    c = Client(server, token_file, as_json)
    row = c.call("GET", f"/api/v1/jobs/{job_id}")
    c.out(row, _jobs_table([row]))


@job.command()
@server_opt
@token_opt
@json_opt
@click.argument("job_id")
@click.option("--wait", is_flag=True, help="Wait until the job has ended.")
def cancel(server: str, token_file: str | None, as_json: bool, job_id: str, wait: bool) -> None:
    """Cancel a queued or running job."""
    c = Client(server, token_file, as_json)
    row = c.call("POST", f"/api/v1/jobs/{job_id}/cancel")
    if wait:
        row = _wait(c, job_id, 0.2)
    c.out(row, _jobs_table([row]))


@job.command()
@server_opt
@token_opt
@json_opt
@click.argument("job_id")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new events until the job ends.")
def logs(server: str, token_file: str | None, as_json: bool, job_id: str, follow: bool) -> None:
    """A job's events: submitted, started (GPUs), progress, preempted, recovered, finished, failed, cancelled."""
    c = Client(server, token_file, as_json)
    seen = 0
    while True:
        evs = c.call("GET", f"/api/v1/jobs/{job_id}/events")
        new, seen = evs[seen:], len(evs)
        for e in new:
            if as_json:
                click.echo(json.dumps(e, sort_keys=True))
            else:
                run = "" if e["run_s"] is None else f" run {e['run_s']:.1f}s"
                detail = " ".join(f"{k}={v}" for k, v in e["detail"].items()) if e["kind"] != "submitted" else ""
                click.echo(f"{_when(e['at'])}{run}  {e['kind']:<16} {detail}".rstrip())
        if not follow or (evs and evs[-1]["kind"] in ("finished", "failed", "cancelled", "rejected")):
            return
        time.sleep(0.5)


__all__ = ["job"]
