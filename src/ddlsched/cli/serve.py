"""``ddlsched serve``: the scheduler as a long-running HTTP service (docs/service.md)."""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Any

import click

from ddlsched.cli.common import finite_float, parse_kv
from ddlsched.errors import ConfigError

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything starts (a port in use is an error naming ``--port``)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {e.strerror}", field="--port") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


@click.command()
@click.option("--cluster", required=True, help="Cluster preset or YAML/TOML file.")
@click.option("--policy", required=True, help="Policy name (see 'ddlsched policies').")
@click.option("--policy-param", multiple=True, metavar="KEY=VALUE", help="Policy parameter (JSON values).")
@click.option("--db", required=True, help="Job store: a file (SQLite, WAL mode) or a database URL "
                                          "(postgresql+psycopg://…).")
@click.option("--executor", type=click.Choice(["sim", "ray"]), default="sim", show_default=True,
              help="sim: the digital twin (the simulator's physics in scaled wall time); ray: real jobs on Ray.")
@click.option("--executor-opt", multiple=True, metavar="KEY=VALUE",
              help="Executor option (JSON values), e.g. address=auto for Ray, report_every_s=30 for sim.")
@click.option("--time-scale", type=finite_float(0, min_open=True), default=1.0, show_default=True,
              help="Run seconds per wall second (sim executor).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8421, show_default=True,
              help="Port (0: any free port; the one chosen is printed).")
@click.option("--tokens", type=click.Path(dir_okay=False), default=None,
              help="Tokens file (YAML: admin, tenants); else $DDLSCHED_TOKENS_FILE / $DDLSCHED_ADMIN_TOKEN.")
@click.option("--allow-entrypoints", is_flag=True, help="Accept jobs with an entrypoint (a command to run).")
@click.option("--max-body", type=click.IntRange(1024, 16 << 20), default=64 * 1024, show_default=True,
              help="Largest request body in bytes.")
@click.option("--seed", type=int, default=0, show_default=True, help="Cluster seed.")
@click.option("--wal-checkpoint-every", type=finite_float(0), default=0.5, show_default=True,
              help="SQLite: seconds between checkpoints of the WAL by a background thread; 0: SQLite's automatic "
                   "checkpoint inside the COMMIT that crosses 1,000 WAL pages (holds the store meanwhile).")
@click.option("--stall-probe-ms", type=finite_float(0), default=0.0, show_default=True,
              help="Diagnostics: wake a thread every so many ms and log the wake-ups that came ≥ 20 ms late "
                   "(GET /api/v1/slow); 0: off.")
def serve(cluster: str, policy: str, policy_param: tuple[str, ...], db: str, executor: str,
          executor_opt: tuple[str, ...], time_scale: float,
          host: str, port: int, tokens: str | None, allow_entrypoints: bool, max_body: int, seed: int,
          wal_checkpoint_every: float, stall_probe_ms: float) -> None:
    """Run the scheduler as a service: an HTTP API (OpenAPI at /docs), a job store that survives crashes, a
    dashboard at /."""
    import uvicorn

    from ddlsched.api import load_cluster
    from ddlsched.engine.run import default_catalog
    from ddlsched.metrics.interrupts import interrupts_raise
    from ddlsched.policies.registry import make_policy
    from ddlsched.service.app import Settings, create_app
    from ddlsched.service.auth import load_tokens
    from ddlsched.service.gcpause import keep_full_collections_short
    from ddlsched.service.scheduler import Scheduler, live_run_factory
    from ddlsched.service.store import open_store

    params = parse_kv(policy_param, "policy-param")
    toks, notes = load_tokens(tokens)
    for n in notes:
        click.echo(f"note: {n}", err=True)
    cl = load_cluster(cluster, seed=seed)
    pol = make_policy(policy, params)
    catalog = default_catalog()
    factory = live_run_factory(cl, executor, time_scale=time_scale, catalog=catalog,
                               options=parse_kv(executor_opt, "executor-opt"))
    sock = bind(host, port)
    store = open_store(db, wal_checkpoint_every_s=wal_checkpoint_every or None)
    sched: Any = None
    app: Any = None
    probe = store.slow.start_probe(stall_probe_ms / 1000) if stall_probe_ms > 0 else None
    try:
        sched = Scheduler(store, cl, pol, factory, catalog=catalog, policy_name=policy, policy_params=params,
                          executor=executor, time_scale=time_scale)
        rec = sched.start()
        if rec.requeued or rec.restarted or rec.cancelled:
            click.echo(f"recovered from {Path(db).name if '://' not in db else 'the store'}: "
                       f"{len(rec.requeued)} queued, {len(rec.restarted)} running (restarted from their "
                       f"checkpoints), {len(rec.cancelled)} cancelled", err=True)
        app = create_app(store, sched, Settings(toks, allow_entrypoints=allow_entrypoints, max_body=max_body))
        if host not in LOCAL_HOSTS:
            click.echo(f"note: listening on {host}, beyond this machine: put TLS in front (tokens travel in "
                       "headers)", err=True)
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                                timeout_graceful_shutdown=5)
        config.load()  # its imports (protocols, event loop) happen now, before the freeze below
        keep_full_collections_short()  # no 60–200 ms collector pauses in the requests (ddlsched.service.gcpause)
        bound = sock.getsockname()[1]
        click.echo(f"ddlsched serve: {cl.describe()}; policy {policy}; executor {executor} (time scale "
                   f"{time_scale:g}); listening on http://{host}:{bound} (dashboard /, API /docs)")
        sys.stdout.flush()
        server = uvicorn.Server(config)
        # uvicorn stops serving on SIGINT/SIGTERM, then raises the signal again: as KeyboardInterrupt, so that the
        # loop is stopped below (running jobs checkpoint and stay open for the next start) before the exit
        with interrupts_raise():
            server.run(sockets=[sock])
    finally:
        if probe is not None:
            probe.set()
        if app is not None:
            app.state.committer.close()  # what the API accepted is stored (it stays open for the next start)
        if sched is not None:
            sched.stop()
        store.close()
        sock.close()


__all__ = ["serve"]
