"""The HTTP API (FastAPI; the OpenAPI schema at ``/docs``): submit, list, get, cancel, events, cluster state, policy,
stats, Prometheus ``/metrics``, and the dashboard's static page. docs/service.md is its reference."""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ddlsched.service.auth import TENANT_RE, Principal, Tokens
from ddlsched.service.commit import GroupCommit
from ddlsched.service.metrics import exposition
from ddlsched.service.scheduler import Scheduler
from ddlsched.service.store import STATES, DuplicateJob, JobStore, StoreFull

DASHBOARD = Path(__file__).resolve().parent / "dashboard"
MAX_BODY = 64 * 1024
SUBMIT_PATH = "/api/v1/jobs"
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"


class JobIn(BaseModel):
    """A submission. Exactly one of ``iterations`` and ``duration_s``; ``model`` names a profile of the catalog
    (the physics the scheduler plans with); ``entrypoint`` only where the operator enabled entrypoints."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(None, pattern=ID_PATTERN, description="Client-chosen id (idempotent retries); "
                                                                   "generated when absent.")
    name: str = Field(min_length=1, max_length=200)
    tenant: str | None = Field(None, pattern=TENANT_RE.pattern, description="Defaults to the token's tenant.")
    gpus: int = Field(ge=1, le=1_000_000, description="GPUs the job needs at once.")
    model: str = Field(min_length=1, max_length=200, description="A model profile (ddlsched catalog).")
    entrypoint: str | None = Field(None, max_length=4096, description="Command to run (Ray executor; only "
                                                                       "with serve --allow-entrypoints).")
    iterations: float | None = Field(None, gt=0, allow_inf_nan=False)
    duration_s: float | None = Field(None, gt=0, allow_inf_nan=False, description="Run-time estimate alone "
                                                                                  "and consolidated (seconds).")
    priority: float = Field(1.0, gt=0, le=1e6, allow_inf_nan=False, description="The job's weight (JobSpec."
                                                                               "weight) for weight-aware policies.")


class JobOut(BaseModel):
    """A job as the store holds it (times are wall-clock UNIX seconds; ``gpus`` = where it runs now)."""

    id: str
    name: str
    tenant: str
    num_gpus: int
    model: str
    entrypoint: str | None
    iterations: float | None
    duration_s: float | None
    priority: float
    state: str
    reason: str
    submitted_at: float
    started_at: float | None
    ended_at: float | None
    done_iterations: float
    checkpoint_iterations: float
    attempts: int
    restarts: int
    gpus: list[int]
    cancel_requested: bool


@dataclass
class Settings:
    tokens: Tokens
    allow_entrypoints: bool = False
    max_body: int = MAX_BODY


def job_out(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    out.pop("seq", None)
    out["gpus"] = [int(g) for g in row["gpus"].split(",")] if row["gpus"] else []
    out["cancel_requested"] = bool(row["cancel_requested"])
    return out


TIMING_PARTS = ("validate", "queue", "prepare", "lock_wait", "statements", "commit", "hand_on", "wake", "resume")
"""The parts of a submission's time in the service, in order: the handler's checks; waiting for the submission
writer (it was writing the previous batch); preparing the transaction; waiting for the store's lock (held by a
transaction of the loop's changes, or the checkpointer's writers-held pass); the batch's statements; its COMMIT (with
``serve --wal-checkpoint-every 0``, SQLite's automatic WAL checkpoint runs inside it now and then); handing the
batch's jobs to the loop; the event loop running the answer; the request's coroutine resuming."""


def server_timing(t_in: float, stamps: list[float]) -> str:
    """The ``Server-Timing`` header of a submission: milliseconds from the handler's start (``at``: its
    perf_counter seconds, the machine's monotonic clock) to queued, and between the writer's stamps
    (:data:`ddlsched.service.commit.STAMPS`), named by :data:`TIMING_PARTS`."""
    parts = [f"at;desc={t_in:.6f}"]
    prev = t_in
    for name, t in zip(TIMING_PARTS, stamps, strict=False):
        parts.append(f"{name};dur={1000 * (t - prev):.3f}")
        prev = t
    return ", ".join(parts)


def field_error(field: str, msg: str, status: int = 422) -> HTTPException:
    return HTTPException(status, detail=[{"loc": ["body", field], "msg": msg, "type": "value_error"}])


class BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes → 413 (declared length or counted as it streams)."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app = app
        self.limit = limit
        self.state = getattr(app, "state", None)  # the wrapped app's (``state.committer``: the submission writer)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for k, v in scope.get("headers", ()):
            if k == b"content-length" and (not v.isdigit() or int(v) > self.limit):
                await _plain(send, 413, f"request body over {self.limit} bytes")
                return
        seen = 0

        async def counted() -> Any:
            nonlocal seen
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.limit:
                    raise HTTPException(413, f"request body over {self.limit} bytes")
            return msg

        await self.app(scope, counted, send)


class FastSubmit:
    """ASGI: the submission route's common case without FastAPI's per-request machinery (routing, dependency
    solving, its middlewares: most of a submission's CPU in the service, BENCHMARKS.md). A ``POST /api/v1/jobs``
    with a JSON body, a known bearer token and a body that validates as :class:`JobIn` goes straight to the route's
    own handler (``accept``: the same checks and answers); any other request, and any such request that fails one of
    those three steps, goes to the FastAPI app with its body, so every refusal is the route's own (401, 422 naming the
    field, …)."""

    def __init__(self, app: Any, accept: Any, tokens: Tokens) -> None:
        self.app = app
        self.accept = accept
        self.tokens = tokens
        self.state = getattr(app, "state", None)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != SUBMIT_PATH:
            await self.app(scope, receive, send)
            return
        auth = ctype = None
        for k, v in scope["headers"]:  # the first of each, as Starlette's ``headers.get``
            if k == b"authorization" and auth is None:
                auth = v
            elif k == b"content-type" and ctype is None:
                ctype = v
        auth, ctype = auth or b"", ctype or b""
        chunks = []
        while True:
            try:
                msg = await receive()
            except HTTPException as e:  # over the body limit (BodyLimit)
                await _plain(send, e.status_code, str(e.detail))
                return
            if msg["type"] != "http.request":  # the client went away
                return
            chunks.append(msg.get("body", b""))
            if not msg.get("more_body", False):
                break
        body = b"".join(chunks)
        scheme, _, tok = auth.decode("latin-1").partition(" ")
        who = self.tokens.lookup(tok.strip()) if scheme.lower() == "bearer" and tok.strip() else None
        job = None
        if who is not None and ctype.split(b";")[0].strip().lower() == b"application/json":
            try:
                job = JobIn.model_validate_json(body)
            except ValidationError:
                job = None
        if job is None:
            await self.app(scope, _replay(body, receive), send)
            return
        try:
            response = await self.accept(job, who)
        except HTTPException as e:
            response = JSONResponse({"detail": e.detail}, status_code=e.status_code, headers=e.headers)
        except StoreFull as e:
            response = JSONResponse({"detail": str(e)}, status_code=507)
        await response(scope, receive, send)


def _replay(body: bytes, receive: Any) -> Any:
    """An ASGI ``receive`` that gives ``body`` (already read) first, then whatever ``receive`` gives."""
    given = False

    async def again() -> Any:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


async def _plain(send: Any, status: int, text: str) -> None:
    body = ('{"detail": "' + text + '"}').encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def create_app(store: JobStore, sched: Scheduler, settings: Settings) -> Any:
    """The service's ASGI app (FastAPI behind the body-size limit) over an open store and a started scheduler."""
    def stored(row: dict[str, Any]) -> None:  # the submission writer's thread, after the commit
        sched.counters.submitted()
        sched.submit(row)

    committer = GroupCommit(store, stored)

    @asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        yield
        committer.close()  # (``ddlsched serve`` runs without lifespan events and closes it itself)

    app = FastAPI(title="ddlsched", summary="The scheduler as a service: submit and watch training jobs.",
                  version="1", lifespan=lifespan)
    app.state.committer = committer
    tokens = settings.tokens
    known_models = set(sched.catalog.names())

    async def principal(request: Request) -> Principal:  # async: no thread hop on every request
        auth = request.headers.get("authorization", "")
        scheme, _, tok = auth.partition(" ")
        who = tokens.lookup(tok.strip()) if scheme.lower() == "bearer" and tok.strip() else None
        if who is None:
            raise HTTPException(401, "missing or unknown bearer token", headers={"WWW-Authenticate": "Bearer"})
        return who

    auth = Depends(principal)

    def visible(who: Principal, job_id: str) -> dict[str, Any]:
        row = store.get(job_id)
        if row is None:
            raise HTTPException(404, f"no job {job_id!r}")
        if not who.may_see(row["tenant"]):
            raise HTTPException(403, f"job {job_id!r} belongs to another tenant")
        return row

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errs = jsonable_encoder(exc.errors(), exclude={"input", "url", "ctx"})
        names = ", ".join(".".join(str(p) for p in e["loc"][1:]) or e["loc"][0] for e in errs)
        return JSONResponse({"detail": errs, "error": f"invalid field(s): {names}"}, status_code=422)

    @app.exception_handler(StoreFull)
    async def _full(request: Request, exc: StoreFull) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=507)

    @app.get("/healthz", tags=["service"])
    def healthz() -> dict[str, Any]:
        """Liveness (no token needed): whether the scheduling loop runs."""
        return {"ok": sched.alive, "error": None if sched.error is None else str(sched.error)}

    async def accept(job: JobIn, who: Principal) -> JSONResponse:
        """A validated submission from an authenticated caller: checked, committed, answered (201); a refusal
        raises ``HTTPException`` (or ``StoreFull``)."""
        t_in = time.perf_counter()
        tenant = job.tenant or who.tenant
        if tenant is None:
            raise field_error("tenant", "the admin token must name the job's tenant")
        if not who.may_see(tenant):
            raise field_error("tenant", f"this token is tenant {who.tenant!r}'s, not {tenant!r}'s", 403)
        if job.entrypoint is not None and not settings.allow_entrypoints:
            raise field_error("entrypoint", "entrypoints are disabled on this service (the operator enables them "
                                            "with 'ddlsched serve --allow-entrypoints')", 403)
        if (job.iterations is None) == (job.duration_s is None):
            raise field_error("iterations", "give exactly one of 'iterations' and 'duration_s'")
        if job.model not in known_models:
            raise field_error("model", f"unknown model {job.model!r}; known: {', '.join(sorted(known_models))}")
        if not sched.alive:
            raise HTTPException(503, f"the scheduling loop is not running ({sched.error})")
        never = sched.never_fits(job.gpus, job.model)
        if never:
            raise field_error("gpus", f"can never run here: {never}")
        data = {"id": job.id or secrets.token_hex(6), "name": job.name, "tenant": tenant, "num_gpus": job.gpus,
                "model": job.model, "entrypoint": job.entrypoint, "iterations": job.iterations,
                "duration_s": job.duration_s, "priority": job.priority}
        stamps: list[float] = []
        try:
            row = await committer.submit(data, stamps)
        except DuplicateJob:
            old = store.get(data["id"])
            if old is not None and not who.may_see(old["tenant"]):
                raise HTTPException(403, f"job {data['id']!r} belongs to another tenant") from None
            raise HTTPException(409, f"job {data['id']!r} already exists") from None
        # the row is JobOut's shape: no second validation
        return JSONResponse(job_out(row), status_code=201, headers={"Server-Timing": server_timing(t_in, stamps)})

    @app.post(SUBMIT_PATH, status_code=201, response_model=JobOut, tags=["jobs"],
              responses={401: {}, 403: {}, 409: {}, 422: {}, 507: {"description": "the job store is full"}})
    async def submit(job: JobIn, who: Principal = auth) -> Any:
        """Submit a job. It is committed to the store before this returns (201), then handed to the scheduling
        loop. A job that can never run on the cluster is refused (422, the reason; nothing stored). Concurrent
        submissions are committed together (group commit); each answer waits for its own job's commit. The answer's
        ``Server-Timing`` header says where the time went (docs/service.md)."""
        return await accept(job, who)

    @app.get("/api/v1/jobs", response_model=list[JobOut], tags=["jobs"])
    def list_jobs(who: Principal = auth, tenant: str | None = None,
                  state: Annotated[str | None, Query(pattern=r"^[a-z]+(,[a-z]+)*$")] = None,
                  limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
                  offset: Annotated[int, Query(ge=0)] = 0, newest_first: bool = False) -> list[dict[str, Any]]:
        """Jobs in submission order (``newest_first``: the reverse); a tenant's token lists only its own jobs."""
        if state is not None and set(state.split(",")) - set(STATES):
            raise HTTPException(422, detail=[{"loc": ["query", "state"], "type": "value_error",
                                              "msg": f"states are {', '.join(STATES)}"}])
        if who.tenant is not None:
            if tenant is not None and tenant != who.tenant:
                raise HTTPException(403, f"this token is tenant {who.tenant!r}'s, not {tenant!r}'s")
            tenant = who.tenant
        rows = store.list(tenant=tenant, state=state, limit=limit, offset=offset, newest_first=newest_first)
        return [job_out(r) for r in rows]

    @app.get("/api/v1/jobs/{job_id}", response_model=JobOut, tags=["jobs"])
    def get_job(job_id: str, who: Principal = auth) -> dict[str, Any]:
        return job_out(visible(who, job_id))

    @app.get("/api/v1/jobs/{job_id}/events", tags=["jobs"])
    def job_events(job_id: str, who: Principal = auth) -> list[dict[str, Any]]:
        """Every state change of the job (its log): submitted, started (GPUs, attempt), progress, preempted, lost,
        recovered, finished, failed (reason), cancelled; ``at`` wall seconds, ``run_s`` the run clock."""
        visible(who, job_id)
        return store.events(job_id)

    @app.post("/api/v1/jobs/{job_id}/cancel", status_code=202, response_model=JobOut, tags=["jobs"])
    def cancel(job_id: str, who: Principal = auth) -> dict[str, Any]:
        """Cancel a job (queued or running). The request is stored first; the job's state becomes ``cancelled``
        once the loop has stopped it (poll the job)."""
        row = visible(who, job_id)
        if not store.record(job_id, "cancel_requested", {"by": who.tenant or "admin"}):
            raise HTTPException(409, f"job {job_id!r} already ended ({row['state']})")
        sched.cancel(job_id)
        return job_out(store.get(job_id) or row)

    @app.get("/api/v1/cluster", tags=["service"])
    def cluster(who: Principal = auth) -> dict[str, Any]:
        """Servers and their GPUs, which job runs on each GPU (other tenants' jobs show as ``other``), the loop's
        snapshot."""
        c = sched.cluster
        gpu_job: dict[int, str] = {}
        for r in store.list(state="running", limit=-1):
            for g in (int(x) for x in r["gpus"].split(",") if x):
                gpu_job[g] = r["id"] if who.may_see(r["tenant"]) else "other"
        servers = [{"server": s, "rack": c.server_rack[s], "gpus": [{"gpu": g, "type": c.gpu_type[g],
                                                                    "job": gpu_job.get(g)} for g in gs]}
                   for s, gs in enumerate(c.server_gpus)]
        snap = sched.snapshot() if who.admin else {}
        return {"name": c.name, "num_gpus": c.num_gpus, "busy_gpus": len(gpu_job), "servers": servers,
                "snapshot": jsonable_encoder(snap)}

    @app.get("/api/v1/policy", tags=["service"])
    def policy(who: Principal = auth) -> dict[str, Any]:
        req = sched.policy.requirements
        return {"policy": sched.policy_name, "params": sched.policy_params, "executor": sched.executor,
                "time_scale": sched.time_scale, "execution_model": req.model, "preemptive": req.preemptive}

    @app.get("/api/v1/stats", tags=["service"])
    def stats(who: Principal = auth) -> dict[str, Any]:
        """Jobs per state, per tenant (a tenant sees its own row), utilisation since this process started, mean
        JCT of completed jobs (wall seconds), scheduling-pass latency."""
        tenants = [t for t in store.stats() if who.may_see(t["tenant"])]
        util = sched.utilisation()
        return {"tenants": tenants, "counts": store.counts(who.tenant), "utilisation": util,
                "pass_p50_s": sched.pass_hist.quantile(0.5), "pass_p99_s": sched.pass_hist.quantile(0.99),
                "uptime_s": time.time() - sched.started_at}

    @app.get("/metrics", response_class=PlainTextResponse, tags=["service"])
    def metrics(who: Principal = auth) -> str:
        """Prometheus text exposition (admin token)."""
        if not who.admin:
            raise HTTPException(403, "metrics need the admin token")
        counts = store.counts()
        gauges = {"ddlsched_queue_length": ("Jobs waiting to run.", counts["queued"]),
                  "ddlsched_running_jobs": ("Jobs running.", counts["running"]),
                  "ddlsched_busy_gpus": ("GPUs held by running jobs.", sched.busy_gpus()),
                  "ddlsched_cluster_gpus": ("GPUs in the cluster.", sched.cluster.num_gpus),
                  "ddlsched_scheduler_up": ("1 while the scheduling loop runs.", 1 if sched.alive else 0)}
        return exposition(gauges, sched.counters, sched.pass_hist)

    @app.get("/api/v1/slow", tags=["service"])
    def slow(who: Principal = auth) -> dict[str, Any]:
        """The service's slow operations (admin token): store transactions, submission batches, scheduling passes
        and interpreter stalls that took ≥ ``threshold_ms``, the newest few thousand, with where their time went
        (``start``: perf_counter seconds, the machine's monotonic clock)."""
        if not who.admin:
            raise HTTPException(403, "the slow-operation log needs the admin token")
        return store.slow.report()

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/dashboard/index.html")

    app.mount("/dashboard", StaticFiles(directory=DASHBOARD), name="dashboard")
    return BodyLimit(FastSubmit(app, accept, tokens), settings.max_body)  # type: ignore[return-value]


__all__ = ["FastSubmit", "JobIn", "JobOut", "Settings", "create_app"]
