"""The service on the Ray executor (``serve --executor ray``'s wiring: ``live_run_factory(..., "ray")``) against a
real two-node Ray cluster on localhost: a job submitted through the API runs on Ray's workers and finishes, a second
one is cancelled while it runs, every change is in the store, and nothing is left running afterwards. Re-adopting
Ray jobs after a crash of the service is not built (docs/service.md "Crash recovery")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from service_helpers import ALICE, auth, tokens_file, wait_for

pytest.importorskip("ray", reason="ray is an optional extra (pip install 'ddlsched[live]')")
pytest.importorskip("torch", reason="the bundled jobs need torch (pip install 'ddlsched[live]')")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec  # noqa: E402
from ddlsched.live.localray import LocalRayCluster  # noqa: E402
from ray_helpers import ray_cluster_of  # noqa: E402


def _cluster() -> Cluster:
    return Cluster.build("local2", [[ServerSpec(2, "V100", 10.0), ServerSpec(2, "V100", 10.0)]],
                         {"V100": GPUType("V100", 16000.0)})


@pytest.fixture(scope="module")
def ray_nodes() -> Iterator[LocalRayCluster]:
    with ray_cluster_of(_cluster()) as lr:
        yield lr


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_submit_run_finish_and_cancel_through_the_api_on_ray(ray_nodes: LocalRayCluster, tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from ddlsched.policies.registry import make_policy
    from ddlsched.service.app import Settings, create_app
    from ddlsched.service.auth import load_tokens
    from ddlsched.service.scheduler import Scheduler, live_run_factory
    from ddlsched.service.store import JobStore
    from ddlsched.workload.profiles import ModelCatalog, ModelProfile

    cluster = _cluster()
    cat = ModelCatalog([ModelProfile("tiny", grad_mb=0.01, compute_ms=40.0, batch_size=8, mem_mb=100.0)])
    factory = live_run_factory(cluster, "ray", time_scale=1.0, catalog=cat,
                               options={"address": ray_nodes.address, "checkpoint_dir": str(tmp_path / "ckpt")})
    store = JobStore(str(tmp_path / "ray.db"))
    sched = Scheduler(store, cluster, make_policy("fifo"), factory, catalog=cat, policy_name="fifo",
                      executor="ray")
    try:
        sched.start()
        toks, _ = load_tokens(tokens_file(tmp_path), env={})
        with TestClient(create_app(store, sched, Settings(toks))) as c:
            r = c.post("/api/v1/jobs", headers=auth(ALICE), json={"id": "short", "name": "short", "gpus": 2,
                                                                   "model": "tiny", "iterations": 20})
            assert r.status_code == 201, r.text
            r = c.post("/api/v1/jobs", headers=auth(ALICE), json={"id": "long", "name": "long", "gpus": 2,
                                                                   "model": "tiny", "iterations": 100_000})
            assert r.status_code == 201, r.text

            def state(jid: str) -> str:
                return str(c.get(f"/api/v1/jobs/{jid}", headers=auth(ALICE)).json()["state"])

            assert wait_for(lambda: state("short") == "completed", timeout_s=180), store.events("short")
            assert wait_for(lambda: state("long") == "running", timeout_s=120), store.events("long")
            assert c.post("/api/v1/jobs/long/cancel", headers=auth(ALICE)).status_code == 202
            assert wait_for(lambda: state("long") == "cancelled", timeout_s=60), store.events("long")
            assert c.get("/api/v1/policy", headers=auth(ALICE)).json()["executor"] == "ray"
    finally:
        sched.stop()
    try:
        short = store.get("short")
        assert short is not None and short["done_iterations"] == 20.0 and short["attempts"] == 1
        kinds = [e["kind"] for e in store.events("short")]
        assert kinds[:3] == ["submitted", "arrived", "started"] and kinds[-1] == "finished", kinds
        started = store.events("short")[2]["detail"]
        assert len(started["gpus"]) == 2 and set(started["gpus"]) <= set(range(cluster.num_gpus))
        assert [e["kind"] for e in store.events("long")][-2:] == ["cancel_requested", "cancelled"]
        assert store.counts()["completed"] == 1 and store.counts()["cancelled"] == 1
    finally:
        store.close()
