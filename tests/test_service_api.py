"""The service's API over an in-process store and a stand-in loop (tests/service_fake.py): submissions are stored
before 201, tenants see and cancel only their own jobs, bad input is a 4xx naming the field, /metrics parses."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from service_helpers import ADMIN, ALICE, BOB, auth, fake_service, job, wait_for

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_submit_runs_and_records_every_change(tmp_path: Path) -> None:
    with fake_service(tmp_path) as (c, store, _):
        r = c.post("/api/v1/jobs", json=job("train", gpus=4), headers=auth(ALICE))
        assert r.status_code == 201, r.text
        jid = r.json()["id"]
        assert r.json()["tenant"] == "alice"
        assert store.get(jid) is not None  # committed before the answer
        done = wait_for(lambda: c.get(f"/api/v1/jobs/{jid}", headers=auth(ALICE)).json()["state"] == "completed")
        assert done
        kinds = [e["kind"] for e in c.get(f"/api/v1/jobs/{jid}/events", headers=auth(ALICE)).json()]
        assert kinds == ["submitted", "arrived", "started", "finished"]
        started = c.get(f"/api/v1/jobs/{jid}/events", headers=auth(ALICE)).json()[2]
        assert len(started["detail"]["gpus"]) == 4


def test_tenants_see_and_cancel_only_their_own(tmp_path: Path) -> None:
    with fake_service(tmp_path, ms_per_iter=1000) as (c, _, _):
        a = c.post("/api/v1/jobs", json=job("a", gpus=64), headers=auth(ALICE)).json()["id"]
        b = c.post("/api/v1/jobs", json=job("b", gpus=64), headers=auth(BOB)).json()["id"]
        assert [j["id"] for j in c.get("/api/v1/jobs", headers=auth(ALICE)).json()] == [a]
        assert [j["id"] for j in c.get("/api/v1/jobs", headers=auth(BOB)).json()] == [b]
        assert {j["id"] for j in c.get("/api/v1/jobs", headers=auth(ADMIN)).json()} == {a, b}
        assert c.get("/api/v1/jobs", params={"tenant": "bob"}, headers=auth(ALICE)).status_code == 403
        assert c.get(f"/api/v1/jobs/{b}", headers=auth(ALICE)).status_code == 403
        assert c.get(f"/api/v1/jobs/{b}/events", headers=auth(ALICE)).status_code == 403
        assert c.post(f"/api/v1/jobs/{b}/cancel", headers=auth(ALICE)).status_code == 403
        assert c.post("/api/v1/jobs", json=job("x", tenant="bob"), headers=auth(ALICE)).status_code == 403
        assert c.get(f"/api/v1/jobs/{b}", headers=auth(BOB)).json()["state"] in ("queued", "running")
        # bob cancels his own (queued behind alice's whole-cluster job)
        assert c.post(f"/api/v1/jobs/{b}/cancel", headers=auth(BOB)).status_code == 202
        assert wait_for(lambda: c.get(f"/api/v1/jobs/{b}", headers=auth(BOB)).json()["state"] == "cancelled")
        assert c.post(f"/api/v1/jobs/{b}/cancel", headers=auth(BOB)).status_code == 409  # already ended
        assert c.post(f"/api/v1/jobs/{a}/cancel", headers=auth(ADMIN)).status_code == 202  # the admin may
        assert wait_for(lambda: c.get(f"/api/v1/jobs/{a}", headers=auth(ALICE)).json()["state"] == "cancelled")
        cluster = c.get("/api/v1/cluster", headers=auth(BOB)).json()
        assert cluster["num_gpus"] == 64 and len(cluster["servers"]) == 16


def test_auth_errors(tmp_path: Path) -> None:
    with fake_service(tmp_path) as (c, _, _):
        assert c.get("/api/v1/jobs").status_code == 401
        r = c.get("/api/v1/jobs", headers=auth("not-a-known-token-000"))
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        assert c.get("/api/v1/jobs", headers={"Authorization": ALICE}).status_code == 401  # no scheme
        assert c.get("/metrics", headers=auth(ALICE)).status_code == 403
        assert c.get("/healthz").json()["ok"] is True
        # the admin must say whose job it is
        r = c.post("/api/v1/jobs", json=job("x"), headers=auth(ADMIN))
        assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "tenant"]
        assert c.post("/api/v1/jobs", json=job("x", tenant="bob"), headers=auth(ADMIN)).status_code == 201


@pytest.mark.parametrize(("body", "field"), [
    ({"gpus": "two"}, "gpus"),
    ({"gpus": 0}, "gpus"),
    ({"iterations": -5}, "iterations"),
    ({"priority": "high"}, "priority"),
    ({"model": "no-such-model"}, "model"),
    ({"duration_s": 60}, "iterations"),  # both given
    ({"colour": "red"}, "colour"),  # unknown field
    ({"id": "bad id with spaces"}, "id"),
    ({"name": ""}, "name"),
])
def test_malformed_field_is_422_naming_it(tmp_path: Path, body: dict, field: str) -> None:
    with fake_service(tmp_path) as (c, store, _):
        r = c.post("/api/v1/jobs", json={**job("x"), **body}, headers=auth(ALICE))
        assert r.status_code == 422, r.text
        assert ["body", field] in [e["loc"] for e in r.json()["detail"]], r.json()
        assert store.list() == []  # nothing stored


def test_missing_field_and_bad_json(tmp_path: Path) -> None:
    with fake_service(tmp_path) as (c, _, _):
        r = c.post("/api/v1/jobs", json={"name": "x", "gpus": 1, "iterations": 5}, headers=auth(ALICE))
        assert r.status_code == 422 and "model" in r.json()["error"]
        r = c.post("/api/v1/jobs", content=b"{not json", headers={**auth(ALICE), "content-type": "application/json"})
        assert r.status_code == 422


def test_never_fits_is_refused_with_reason_and_nothing_stored(tmp_path: Path) -> None:
    with fake_service(tmp_path) as (c, store, _):
        r = c.post("/api/v1/jobs", json=job("huge", gpus=65), headers=auth(ALICE))
        assert r.status_code == 422
        d = r.json()["detail"][0]
        assert d["loc"] == ["body", "gpus"] and "asks for 65 GPUs; the cluster has 64" in d["msg"]
        assert store.list() == []


def test_loop_rejection_is_stored_with_reason(tmp_path: Path) -> None:
    """A rejection only the loop finds (here the fake loop's 8-GPU limit) is stored with its reason."""
    with fake_service(tmp_path, max_gpus=8) as (c, store, sched):
        r = c.post("/api/v1/jobs", json=job("big", gpus=16), headers=auth(ALICE))
        assert r.status_code == 201
        jid = r.json()["id"]
        wait_for(lambda: store.get(jid)["state"] == "rejected")
        assert "needs 16 GPUs" in store.get(jid)["reason"]
        assert sched.counters.ended["rejected"] == 1


def test_body_limit_entrypoints_and_duplicates(tmp_path: Path) -> None:
    with fake_service(tmp_path) as (c, store, _):
        r = c.post("/api/v1/jobs", json=job("y" * 100_000), headers=auth(ALICE))
        assert r.status_code == 413
        r = c.post("/api/v1/jobs", json=job("x", entrypoint="rm -rf /"), headers=auth(ALICE))
        assert r.status_code == 403 and r.json()["detail"][0]["loc"] == ["body", "entrypoint"]
        assert c.post("/api/v1/jobs", json=job("x", id="mine-1"), headers=auth(ALICE)).status_code == 201
        assert c.post("/api/v1/jobs", json=job("x", id="mine-1"), headers=auth(ALICE)).status_code == 409
        assert c.post("/api/v1/jobs", json=job("x", id="mine-1"), headers=auth(BOB)).status_code == 403
        assert len(store.list()) == 1


def test_full_store_is_507_and_nothing_partial(tmp_path: Path) -> None:
    with fake_service(tmp_path, sqlite_pragmas={"max_page_count": 30}) as (c, store, _):
        codes = []
        for i in range(300):
            r = c.post("/api/v1/jobs", json=job("n" * 190, id=f"id{i}"), headers=auth(ALICE))
            codes.append(r.status_code)
            if r.status_code == 507:
                break
        assert codes[-1] == 507 and set(codes[:-1]) <= {201}
        assert store.get(f"id{len(codes) - 1}") is None  # the refused one left no row


def test_metrics_and_stats(tmp_path: Path) -> None:
    with fake_service(tmp_path) as (c, _, _):
        for i in range(3):
            c.post("/api/v1/jobs", json=job(f"j{i}"), headers=auth(ALICE))
        wait_for(lambda: c.get("/api/v1/stats", headers=auth(ALICE)).json()["counts"]["completed"] == 3)
        text = c.get("/metrics", headers=auth(ADMIN)).text
        sample = re.compile(r'^[a-z_]+(\{[a-z]+="[^"]*"\})? -?[0-9.e+-]+$|^# (HELP|TYPE) ')
        assert all(sample.match(line) for line in text.splitlines()), text
        assert "ddlsched_submissions_total 3" in text
        assert 'ddlsched_completions_total{outcome="completed"} 3' in text
        assert "ddlsched_queue_length 0" in text and "ddlsched_busy_gpus 0" in text
        st = c.get("/api/v1/stats", headers=auth(BOB)).json()
        assert st["tenants"] == [] and st["counts"]["completed"] == 0  # bob sees only bob
        st = c.get("/api/v1/stats", headers=auth(ALICE)).json()
        assert st["tenants"][0]["avg_jct_s"] > 0 and 0 < st["utilisation"] <= 1


def test_openapi_schema_served(tmp_path: Path) -> None:
    with fake_service(tmp_path) as (c, _, _):
        spec = c.get("/openapi.json").json()
        assert {"/api/v1/jobs", "/api/v1/jobs/{job_id}/cancel", "/metrics"} <= set(spec["paths"])
        assert c.get("/docs").status_code == 200


def test_list_filters_and_order(tmp_path: Path) -> None:
    with fake_service(tmp_path, ms_per_iter=1000) as (c, _, _):
        ids = [c.post("/api/v1/jobs", json=job(f"j{i}", gpus=64), headers=auth(ALICE)).json()["id"] for i in range(3)]
        got = c.get("/api/v1/jobs", params={"newest_first": "true", "limit": 2}, headers=auth(ALICE)).json()
        assert [j["id"] for j in got] == ids[::-1][:2]
        wait_for(lambda: c.get(f"/api/v1/jobs/{ids[0]}", headers=auth(ALICE)).json()["state"] == "running")
        got = c.get("/api/v1/jobs", params={"state": "queued"}, headers=auth(ALICE)).json()
        assert [j["id"] for j in got] == ids[1:]  # the first runs (the whole cluster), the others wait
        assert c.get("/api/v1/jobs", params={"state": "waiting"}, headers=auth(ALICE)).status_code == 422
