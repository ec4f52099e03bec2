"""The Ray executor on a real two-node Ray cluster on localhost (two `ray start` processes, one per server, each
advertising its server name and GPU slots): launch, progress, finish, revoke → checkpoint → relaunch elsewhere
(the training job's losses equal an uninterrupted run's), a killed worker, a crashing job, a job that ignores its
lease, a cluster that does not match, Ray unreachable; nothing left running afterwards."""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray", reason="ray is an optional extra (pip install 'ddlsched[live]')")
pytest.importorskip("torch", reason="the bundled jobs need torch (pip install 'ddlsched[live]')")

from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.errors import ConfigError, InputError
from ddlsched.live.executor import EventKind, ExecEvent, Launch
from ddlsched.live.jobs import TRAIN_JOB
from ddlsched.live.localray import LocalRayCluster, free_port
from ddlsched.live.ray_executor import RayExecutor
from ddlsched.workload.jobspec import JobSpec
from ray_helpers import ray_cluster_of

TYPES = {"V100": GPUType("V100", 16000.0)}


def two_servers(gpus: tuple[int, ...] = (2, 2)) -> Cluster:
    return Cluster.build("local2", [[ServerSpec(g, "V100", 10.0) for g in gpus]], TYPES)


@pytest.fixture(scope="module")
def ray_nodes() -> Iterator[LocalRayCluster]:
    with ray_cluster_of(two_servers()) as lr:
        yield lr


class Run:
    """An open executor plus the events it gave, and every worker pid it ran (checked dead after close)."""

    def __init__(self, ex: RayExecutor) -> None:
        self.ex, self.events, self.pids = ex, [], set()  # type: list[ExecEvent], set[int]
        self.taken: set[int] = set()

    def launch(self, job_id: str, gpus: tuple[int, ...], iterations: int, attempt: int = 1,
               **options: object) -> None:
        spec = JobSpec(job_id, 0.0, len(gpus), "resnet50", iterations=float(iterations))
        servers = tuple(f"s{g // 2}" for g in gpus)
        self.ex.launch(Launch(job_id, attempt, spec, gpus, servers, iterations, 0.05, 0.05, dict(options)))

    def wait(self, job_id: str, kinds: set[EventKind], timeout_s: float = 90.0,
             until: float | None = None) -> ExecEvent:
        """The first event of ``job_id`` with a kind in ``kinds`` (and iterations >= ``until`` if given) that no
        earlier call returned (it may have arrived while another was awaited)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.events += self.ex.poll(0.2)
            for j in self.ex.running():
                self.pids.update(self.ex.pids(j))
            for i, e in enumerate(self.events):
                if i not in self.taken and e.job_id == job_id and e.kind in kinds and (
                        until is None or e.iterations >= until):
                    self.taken.add(i)
                    return e
        raise AssertionError(f"no {kinds} for {job_id} within {timeout_s} s; events: {self.events}")

    def of(self, job_id: str) -> list[ExecEvent]:
        return [e for e in self.events if e.job_id == job_id]


@pytest.fixture
def run(ray_nodes: LocalRayCluster, tmp_path: Path) -> Iterator[Run]:
    ex = RayExecutor(ray_nodes.address, checkpoint_dir=tmp_path / "ckpt",
                     defaults={"grad_scale": 0.001, "compute_scale": 0.0}, report_every_s=0.3)
    ex.open(two_servers())
    r = Run(ex)
    try:
        yield r
    finally:
        ex.close()
        assert ex.leftovers == []
        time.sleep(0.5)
        alive = [p for p in r.pids if Path(f"/proc/{p}").exists() and
                 Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"]
        assert alive == [], f"worker processes alive after close: {alive}"


def _kinds(events: list[ExecEvent]) -> list[str]:
    return [e.kind.value for e in events]


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_launch_progress_finish_across_servers(run: Run) -> None:
    run.launch("p", (0, 2), 40, job_args={"compute_s": 0.05, "grad_bytes": 4096})
    done = run.wait("p", {EventKind.FINISHED, EventKind.FAILED, EventKind.LOST})
    assert done.kind == EventKind.FINISHED, done
    ev = run.of("p")
    assert _kinds(ev)[0] == "started" and ev[0].iterations == 0
    prog = [e for e in ev if e.kind == EventKind.PROGRESS]
    assert prog, ev  # 40 × 50 ms of compute: several reports at 0.3 s
    its = [e.iterations for e in prog]
    assert its == sorted(its) and 0 < its[-1] <= 40
    assert all(e.iter_s is not None and e.iter_s >= 0.05 for e in prog)  # at least the compute per iteration
    assert [e.time_s for e in ev] == sorted(e.time_s for e in ev) and done.iterations == 40
    assert run.ex.running() == []
    row = next(r for r in run.ex.startups if r["job_id"] == "p")  # where its start went, every phase measured
    assert row["ranks"] == 2 and all(row[k] is not None and row[k] >= 0 for k in
                                     ("place", "spawn", "call", "imports", "init", "total"))
    assert ("p", 1) in run.ex.dispatch_s


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_warm_slots_are_exclusive(run: Run) -> None:
    """A launch onto a GPU whose warm actor runs another job fails; a second warm executor cannot open beside the
    first (every slot is held) and says so at once."""
    run.launch("w", (1,), 10_000, job_args={"compute_s": 0.01})
    run.wait("w", {EventKind.STARTED})
    run.launch("x", (1, 3), 10, job_args={"compute_s": 0.01})
    bad = run.wait("x", {EventKind.FAILED, EventKind.STARTED})
    assert bad.kind == EventKind.FAILED and "GPU(s) busy: 1 with job w" in bad.reason, bad
    other = RayExecutor(run.ex.address)
    t0 = time.monotonic()
    try:
        with pytest.raises(ConfigError, match=r"only 0 of the 4 ddl_gpu slots .* are free"):
            other.open(two_servers())
    finally:
        other.close()
    assert time.monotonic() - t0 < 20
    run.ex.cancel("w")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_revoke_checkpoints_and_resumes_on_another_server_with_the_same_losses(run: Run, tmp_path: Path) -> None:
    steps = 150
    args = {"seed": 7, "step_sleep_s": 0.02}
    ref_log, log = tmp_path / "ref.txt", tmp_path / "job.txt"
    run.launch("ref", (2, 3), steps, entrypoint=TRAIN_JOB, job_args={**args, "loss_log": str(ref_log)})
    run.launch("t", (0, 1), steps, entrypoint=TRAIN_JOB, job_args={**args, "loss_log": str(log)})
    run.wait("t", {EventKind.PROGRESS}, until=10)
    run.ex.revoke("t", grace_s=30.0)
    ck = run.wait("t", {EventKind.CHECKPOINTED, EventKind.FINISHED, EventKind.FAILED})
    assert ck.kind == EventKind.CHECKPOINTED and not ck.killed, ck
    assert 10 <= ck.iterations < steps
    assert run.wait("ref", {EventKind.FINISHED, EventKind.FAILED}).kind == EventKind.FINISHED
    run.launch("t", (2, 3), steps, attempt=2, entrypoint=TRAIN_JOB, job_args={**args, "loss_log": str(log)})
    st = run.wait("t", {EventKind.STARTED}, until=1)
    assert st.attempt == 2 and st.iterations == ck.iterations  # resumed from its checkpoint, nothing lost
    assert run.wait("t", {EventKind.FINISHED, EventKind.FAILED}).kind == EventKind.FINISHED

    def losses(p: Path) -> dict[int, float]:
        out: dict[int, float] = {}
        for line in p.read_text().split("\n"):
            if line:
                k, v = line.split()
                out[int(k)] = float(v)  # a re-run step keeps its last value
        return out

    ref, got = losses(ref_log), losses(log)
    assert sorted(ref) == sorted(got) == list(range(steps))
    assert got == ref  # bitwise: same batches, same weights, same optimizer state after the restart
    assert ref[steps - 1] < ref[0]  # it does learn


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_killed_worker_is_lost_with_its_last_checkpoint(run: Run) -> None:
    run.launch("k", (1, 3), 2000, checkpoint_every=5, job_args={"compute_s": 0.02, "grad_bytes": 4096})
    p = run.wait("k", {EventKind.PROGRESS}, until=12)
    pids = run.ex.pids("k")
    assert len(pids) == 2
    os.kill(pids[1], signal.SIGKILL)
    lost = run.wait("k", {EventKind.LOST, EventKind.FAILED})
    assert lost.kind == EventKind.LOST, lost
    assert lost.iterations % 5 == 0 and lost.iterations >= 10, lost  # a checkpoint, at least the one before p
    assert lost.iterations >= p.iterations - 5
    assert run.ex.running() == []


CRASH = """
from ddlsched.job import Job
job = Job()
job.init_process_group()
for step in job.steps():
    if step == 3 and job.rank == 0:
        raise ValueError("boom at step 3")
    job._agree_stop(False)  # a collective: the other rank is left waiting on rank 0
"""

IGNORES_LEASE = """
import time
for _ in range(10_000):
    time.sleep(0.01)
"""


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_crash_is_failed_with_its_reason_and_a_deaf_job_is_killed_after_grace(run: Run, tmp_path: Path) -> None:
    crash, deaf = tmp_path / "crash.py", tmp_path / "deaf.py"
    crash.write_text(CRASH)
    deaf.write_text(IGNORES_LEASE)
    run.launch("c", (0, 2), 100, entrypoint=str(crash))
    run.launch("d", (1,), 100, entrypoint=str(deaf))
    failed = run.wait("c", {EventKind.FAILED, EventKind.FINISHED, EventKind.LOST})
    assert failed.kind == EventKind.FAILED and "rank 0: ValueError: boom at step 3" in failed.reason, failed
    deadline = time.monotonic() + 45
    while not run.ex.pids("d") and time.monotonic() < deadline:  # it never reports: wait for its worker
        run.events += run.ex.poll(0.2)
    time.sleep(0.5)
    t0 = time.monotonic()
    run.ex.revoke("d", grace_s=1.0)
    ck = run.wait("d", {EventKind.CHECKPOINTED, EventKind.FINISHED})
    assert ck.kind == EventKind.CHECKPOINTED and ck.killed and ck.iterations == 0, ck
    assert 1.0 <= time.monotonic() - t0 < 20
    run.launch("x", (3,), 10_000, job_args={"compute_s": 0.01})
    run.wait("x", {EventKind.STARTED})
    run.ex.cancel("x")
    deadline = time.monotonic() + 10
    while run.ex.running() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert run.ex.running() == [] and not [e for e in run.events if e.job_id == "x" and e.kind != "started"]


@pytest.mark.timeout(240)
def test_a_cluster_file_that_does_not_match_names_every_mismatch(ray_nodes: LocalRayCluster) -> None:
    ex = RayExecutor(ray_nodes.address)
    try:
        with pytest.raises(ConfigError) as e:
            ex.open(two_servers((4, 2, 2)))
    finally:
        ex.close()
    msg = str(e.value)
    assert re.search(r"server s0: its Ray node \S+ has 2 ddl_gpu, the cluster file says 4 GPUs", msg), msg
    assert "server s2 (2 GPUs): no live Ray node carries the resource ddl_server:s2" in msg
    assert "server s1" not in msg.split("\n", 1)[1]  # the matching server is not named as a problem


def test_ray_unreachable_or_unnamed_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    addr = f"127.0.0.1:{free_port()}"
    t0 = time.monotonic()
    with pytest.raises(InputError, match=f"Ray is not reachable at {addr}"):
        RayExecutor(addr).open(two_servers())
    assert time.monotonic() - t0 < 10
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with pytest.raises(ConfigError, match="RAY_ADDRESS"):
        RayExecutor().open(two_servers())
    with pytest.raises(InputError, match="not host:port"):
        RayExecutor("nowhere").open(two_servers())


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_live_run_with_a_preemptive_policy_on_the_ray_cluster(ray_nodes: LocalRayCluster, tmp_path: Path) -> None:
    """LiveRun + RayExecutor + Tiresias (2 GPU-seconds to leave queue 0): the late short job preempts a long
    one, which checkpoint and resume; a worker killed mid-run makes its job restart from its checkpoint; every job
    accounted for, the restarts in the records."""
    from ddlsched.live.run import LiveRun
    from ddlsched.policies import make_policy
    from ddlsched.workload.profiles import ModelCatalog, ModelProfile

    cat = ModelCatalog([ModelProfile("tiny", grad_mb=0.01, compute_ms=40.0, batch_size=8, mem_mb=100.0)])
    # the long jobs last ≥ 6 s (150 × 40 ms): at 3 s both hold more than 2 GPU-seconds even after a slow start
    # (≤ 2 s), so the short job preempts one of them whatever the machine's load
    jobs = [JobSpec("long1", 0.0, 2, "tiny", iterations=150.0), JobSpec("long2", 0.0, 2, "tiny", iterations=150.0),
            JobSpec("short", 3.0, 2, "tiny", iterations=30.0)]
    ex = RayExecutor(ray_nodes.address, checkpoint_dir=tmp_path / "ckpt", catalog=cat, checkpoint_every=10)
    policy = make_policy("tiresias", {"thresholds": [2.0]})
    changes: list[Any] = []
    killed: list[str] = []

    def on_change(c: Any) -> None:  # the first job to report progress loses a worker (SIGKILL), once
        changes.append(c)
        if c.kind == "progress" and not killed and ex.pids(c.job_id):
            os.kill(ex.pids(c.job_id)[-1], signal.SIGKILL)
            killed.append(c.job_id)

    res = LiveRun(two_servers(), policy, ex, time_scale=1.0, catalog=cat, jobs=jobs, checkpoint_grace_s=20.0,
                  on_change=on_change).run()
    assert ex.leftovers == []
    assert (len(res.records), len(res.failed), len(res.cancelled), len(res.unfinished), len(res.rejected)) == \
        (3, 0, 0, 0, 0), (res.failed, res.unfinished)
    assert res.submitted == 3
    by = {r["job_id"]: r for r in res.records}
    assert sum(r["preemptions"] for r in res.records) >= 1, res.records
    assert any(by[j]["preemptions"] >= 1 and by[j]["placements"] >= 2 for j in ("long1", "long2"))
    kinds = [c.kind for c in changes]
    assert "preempted" in kinds and kinds.count("finished") == 3
    assert killed and any(c.kind == "lost" and c.job_id == killed[0] for c in changes), (killed, kinds)
    assert by[killed[0]]["placements"] >= 2  # restarted from its checkpoint after the lost worker
    for r in res.records:
        assert r["finish_s"] > r["first_start_s"] >= r["arrival_s"]
