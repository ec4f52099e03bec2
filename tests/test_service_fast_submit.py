"""The submission route's fast path (``ddlsched.service.app.FastSubmit``) answers exactly as the FastAPI route does:
the same status, body and headers for every kind of submission, and the common case never reaches FastAPI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from service_helpers import ADMIN, ALICE, BOB, auth, fake_service, job

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

CASES: list[tuple[str, dict[str, Any]]] = [
    ("valid", {"json": job("ok", id="same-1")}),
    ("valid, admin names the tenant", {"json": job("ok", id="same-2", tenant="bob"), "token": ADMIN}),
    ("duplicate id", {"json": job("ok", id="same-1")}),
    ("another tenant's id", {"json": job("ok", id="same-1"), "token": BOB}),
    ("no token", {"json": job("x"), "token": None}),
    ("unknown token", {"json": job("x"), "token": "not-a-known-token-000"}),
    ("admin without tenant", {"json": job("x"), "token": ADMIN}),
    ("another tenant", {"json": job("x", tenant="bob")}),
    ("bad field", {"json": {**job("x"), "gpus": "two"}}),
    ("unknown field", {"json": {**job("x"), "colour": "red"}}),
    ("unknown model", {"json": job("x", model="no-such-model")}),
    ("both run lengths", {"json": job("x", duration_s=60)}),
    ("never fits", {"json": job("x", gpus=65)}),
    ("entrypoint disabled", {"json": job("x", entrypoint="true")}),
    ("not JSON", {"content": b"{not json", "ctype": "application/json"}),
    ("JSON as text/plain", {"content": b'{"name": "x"}', "ctype": "text/plain"}),
    ("a list", {"json": [job("x")]}),
    ("over the body limit", {"json": job("y" * 100_000)}),
    ("two tokens: the first counts", {"json": job("ok", id="two-1"), "token": None,
                                      "headers": [("Authorization", f"Bearer {BOB}"),
                                                  ("Authorization", f"Bearer {ALICE}")]}),
]


def _send(client: Any, case: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
    token = case.get("token", ALICE)
    headers: Any = auth(token) if token else {}
    if "ctype" in case:
        headers["content-type"] = case["ctype"]
    if "headers" in case:
        headers = [*headers.items(), *case["headers"]]
    r = client.post("/api/v1/jobs", json=case.get("json"), content=case.get("content"), headers=headers)
    body = r.json()
    if r.status_code == 201:
        body = {k: v for k, v in body.items() if k not in ("submitted_at",)}
    kept = {k: v for k, v in r.headers.items() if k in ("www-authenticate", "content-type")}
    return r.status_code, body, kept


def test_fast_path_answers_as_the_route_does(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from ddlsched.service.app import BodyLimit, FastSubmit

    answers = {}
    for way in ("fast", "route"):
        (tmp_path / way).mkdir()
        with fake_service(tmp_path / way) as (c, store, _):
            full = c.app
            assert isinstance(full, BodyLimit) and isinstance(full.app, FastSubmit)
            client = c if way == "fast" else TestClient(BodyLimit(full.app.app, full.limit))
            answers[way] = [(name, *_send(client, case)) for name, case in CASES]
            assert [r["id"] for r in store.list()] == ["same-1", "same-2", "two-1"]
            assert store.get("two-1")["tenant"] == "bob"
    for fast, route in zip(answers["fast"], answers["route"], strict=True):
        assert fast == route
    codes = {name: code for name, code, _, _ in answers["fast"]}
    assert codes["valid"] == 201 and codes["duplicate id"] == 409 and codes["another tenant's id"] == 403
    assert codes["no token"] == 401 and codes["bad field"] == 422 and codes["over the body limit"] == 413


def test_common_case_bypasses_fastapi(tmp_path: Path) -> None:
    with fake_service(tmp_path) as (c, store, _):
        fast = c.app.app
        calls = []
        route = fast.app

        async def counting(scope: Any, receive: Any, send: Any) -> None:
            calls.append(scope["path"])
            await route(scope, receive, send)

        fast.app = counting
        try:
            r = c.post("/api/v1/jobs", json=job("x"), headers=auth(ALICE))
            assert r.status_code == 201 and "server-timing" in r.headers
            assert calls == []  # validated, authenticated and stored without FastAPI
            r = c.post("/api/v1/jobs", json={**job("x"), "gpus": 0}, headers=auth(ALICE))
            assert r.status_code == 422 and calls == ["/api/v1/jobs"]  # a refusal is the route's own
            assert c.get("/api/v1/jobs", headers=auth(ALICE)).status_code == 200
            assert calls[-1] == "/api/v1/jobs"
        finally:
            fast.app = route
        assert len(store.list()) == 1


def test_next_batch_lingers_for_company_and_stops_at_the_marker() -> None:
    import queue
    import threading
    import time

    from ddlsched.service.commit import next_batch

    stop = object()
    q: queue.SimpleQueue[object] = queue.SimpleQueue()
    q.put(1)
    late = threading.Timer(0.01, lambda: q.put(2))
    late.start()
    t0 = time.perf_counter()
    assert next_batch(q, stop, 2, linger_s=5.0) == ([1, 2], False)  # 2 joined within the wait, which ended then
    assert time.perf_counter() - t0 < 4
    late.join()
    q.put(3)
    assert next_batch(q, stop, 10) == ([3], False)  # no linger: what is queued now
    for x in (4, 5, 6):
        q.put(x)
    assert next_batch(q, stop, 2, linger_s=0.5) == ([4, 5], False)  # full: no waiting
    q.put(stop)
    assert next_batch(q, stop, 10) == ([6], True)
    q.put(stop)
    assert next_batch(q, stop, 10) is None


def test_full_collections_walk_only_what_is_new() -> None:
    """``keep_full_collections_short``: what exists is frozen (not walked by a full collection), what survives a
    later full collection is frozen too, and the undo stops that."""
    import gc

    from ddlsched.service.gcpause import keep_full_collections_short

    undo = keep_full_collections_short()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0 and gc.get_count()[2] == 0
        keep = [[i] for i in range(2000)]  # new, alive
        gc.collect()  # a full collection: its survivors (``keep``) are frozen after it
        assert gc.get_freeze_count() >= frozen + len(keep)
        undo()
        n = gc.get_freeze_count()
        more = [[i] for i in range(2000)]
        gc.collect()
        assert gc.get_freeze_count() == n  # no callback any more
        del keep, more
    finally:
        undo()
        gc.unfreeze()
