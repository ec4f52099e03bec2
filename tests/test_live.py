"""Live runs (ddlsched.live): the live model driven by scripted and twin executors, accounts, refusals, threads."""

from __future__ import annotations

import heapq
import math
import random
import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddlsched.cluster.topology import GBIT, Cluster, GPUType, ServerSpec
from ddlsched.engine import Preempt, Requirements, Start, WakeAt, run_simulation
from ddlsched.errors import ConfigError
from ddlsched.live.clock import LiveClock
from ddlsched.live.executor import EventKind, ExecEvent, Executor, Launch
from ddlsched.live.run import JobChange, LiveRun
from ddlsched.live.sim_executor import Fault, SimExecutor
from ddlsched.policies import make_policy
from ddlsched.policies.base import Policy
from ddlsched.vocabulary import CAUSES
from ddlsched.workload import JobSpec
from ddlsched.workload.profiles import ModelCatalog, ModelProfile

PROF = ModelProfile("m", grad_mb=100.0, compute_ms=50.0, batch_size=32, mem_mb=1000)
CAT = ModelCatalog([PROF, ModelProfile("small", grad_mb=10.0, compute_ms=20.0, batch_size=32, mem_mb=500)])
B = 10 * GBIT
FAST = 1e6  # run seconds per wall second: a few thousand run seconds take milliseconds


def cluster4x4() -> Cluster:
    return Cluster.build("t", [[ServerSpec(4, "V100", 10.0) for _ in range(4)]], {"V100": GPUType("V100", 32768)})


class Scripted(Policy):
    """Start each pending job on its given GPUs; optional timed preemption (and restart at once)."""

    name = "scripted"
    requirements = Requirements(preemptive=True)

    def __init__(self, placements: dict[str, tuple[int, ...]], preempt_at: dict[str, float] | None = None) -> None:
        self.placements = placements
        self.preempt_at = dict(preempt_at or {})

    def schedule(self, view):
        out = []
        for job in view.running:
            t = self.preempt_at.get(job.job_id)
            if t is not None and view.now >= t:
                out += [Preempt(job.job_id), Start(job.job_id, self.placements[job.job_id])]
                del self.preempt_at[job.job_id]
        busy = {g for j in view.running for g in j.gpus}
        for job in view.pending:
            gpus = self.placements[job.job_id]
            if not busy & set(gpus) and all(view.allocation().is_free(g) for g in gpus):
                out.append(Start(job.job_id, gpus))
                busy |= set(gpus)
        future = [t for t in self.preempt_at.values() if t > view.now]
        if future:
            out.append(WakeAt(min(future)))
        return out


Respond = Callable[[str, Any, float], list[ExecEvent]]


class ScriptedExecutor:
    """An executor whose every event the test writes: ``respond(call, arg, t)`` answers each launch / revoke /
    cancel (at its run time ``t``) with the events that follow; they are reported when the run clock gets there."""

    name = "scripted"

    def __init__(self, respond: Respond) -> None:
        self.respond = respond
        self.clock: LiveClock | None = None
        self.calls: list[tuple[str, Any, float]] = []
        self._heap: list[tuple[float, int, ExecEvent]] = []
        self._seq = 0
        self.opened = self.closed = False

    def open(self, cluster: Cluster) -> None:
        self.opened = True

    def _do(self, call: str, arg: Any) -> None:
        assert self.clock is not None
        t = self.clock.instant()
        self.calls.append((call, arg, t))
        for ev in self.respond(call, arg, t):
            self._seq += 1
            heapq.heappush(self._heap, (ev.time_s, self._seq, ev))

    def launch(self, launch: Launch) -> None:
        self._do("launch", launch)

    def revoke(self, job_id: str, grace_s: float) -> None:
        self._do("revoke", job_id)

    def cancel(self, job_id: str) -> None:
        self._do("cancel", job_id)
        self._heap = [e for e in self._heap if e[2].job_id != job_id]
        heapq.heapify(self._heap)

    def poll(self, timeout_s: float) -> Sequence[ExecEvent]:
        assert self.clock is not None
        limit = min(self.clock.now(), self.clock.horizon_s)
        out = []
        while self._heap and self._heap[0][0] <= limit and (not out or self._heap[0][0] == out[-1].time_s):
            out.append(heapq.heappop(self._heap)[2])
        return out

    def close(self) -> None:
        self.closed = True


def _check_accounts(result: Any) -> None:
    """Every job accounted for; every record's run = ideal + causes; only contention may be < 0."""
    n = len(result.records) + len(result.rejected) + len(result.failed) + len(result.cancelled) \
        + len(result.unfinished)
    assert n == result.submitted
    for r in result.records:
        causes = sum(r[c] for c in CAUSES)
        assert r["run_s"] == pytest.approx(r["ideal_run_s"] + causes, rel=1e-9, abs=1e-6)
        assert r["jct_s"] == pytest.approx(r["queue_s"] + r["run_s"], rel=1e-9, abs=1e-6)
        for c in CAUSES:
            if c != "contention_s":
                assert r[c] >= -1e-9, (r["job_id"], c, r[c])
        if r["contention_s"] < -1e-6:
            assert r["run_s"] < r["ideal_run_s"]


def test_executor_protocol_is_met():
    assert isinstance(SimExecutor(CAT), Executor)
    assert isinstance(ScriptedExecutor(lambda *a: []), Executor)


# ------------------------------------------------------------------ scripted executor: each mechanism
ITER = 0.1  # run seconds per iteration in the scripted jobs


def test_lost_worker_restarts_from_checkpoint_and_is_recorded():
    """Attempt 1 runs 40 s (400 iterations), its worker dies with a checkpoint at 300: the 100 iterations after it
    are lost (10 s of restart time); attempt 2 starts 5 s after its launch and runs the remaining 700."""
    def respond(call, arg, t):
        if call != "launch":
            return []
        j, a = arg.job_id, arg.attempt
        if a == 1:
            return [ExecEvent(EventKind.STARTED, j, t, a), ExecEvent(EventKind.PROGRESS, j, t + 20, a, 200, ITER),
                    ExecEvent(EventKind.LOST, j, t + 40, a, 300, reason="worker killed")]
        resume = arg.options["resume_iterations"]
        assert resume == 300
        return [ExecEvent(EventKind.STARTED, j, t + 5, a, resume),
                ExecEvent(EventKind.FINISHED, j, t + 5 + (1000 - resume) * ITER, a, 1000)]

    ex = ScriptedExecutor(respond)
    changes: list[JobChange] = []
    run = LiveRun(cluster4x4(), Scripted({"a": (0,)}), ex, time_scale=FAST, catalog=CAT,
                  jobs=[JobSpec("a", 0.0, 1, "m", iterations=1000)], on_change=changes.append)
    ex.clock = run.clock
    res = run.run()
    _check_accounts(res)
    (r,) = res.records
    assert r["finish_s"] == pytest.approx(40 + 5 + 70)
    assert r["preemptions"] == 1 and r["placements"] == 2
    assert r["restart_s"] == pytest.approx(5 + 100 * ITER)  # startup of attempt 2 + the lost work
    assert res.mechanisms["lost_workers"] == 1
    kinds = [c.kind for c in changes]
    assert kinds == ["arrived", "started", "progress", "lost", "started", "finished"]
    assert next(c for c in changes if c.kind == "lost").detail["lost_iterations"] == pytest.approx(100)
    assert ex.opened and ex.closed


def test_preempt_waits_for_checkpoint_before_the_gpus_are_reused():
    """Job a is preempted at 50 and restarted at once on the same GPU: the relaunch waits for its checkpoint (8 s
    later); the job saved 500 iterations; no work is lost; the wait and the startup are restart time."""
    def respond(call, arg, t):
        if call == "revoke":
            return [ExecEvent(EventKind.CHECKPOINTED, arg, t + 8, 1, 500)]
        if call == "launch":
            j, a = arg.job_id, arg.attempt
            start = arg.options["resume_iterations"]
            return [ExecEvent(EventKind.STARTED, j, t + 2, a, start),
                    ExecEvent(EventKind.FINISHED, j, t + 2 + (1000 - start) * ITER, a, 1000)]
        return []

    ex = ScriptedExecutor(respond)
    run = LiveRun(cluster4x4(), Scripted({"a": (0,)}, preempt_at={"a": 50.0}), ex, time_scale=FAST, catalog=CAT,
                  jobs=[JobSpec("a", 0.0, 1, "m", iterations=1000)])
    ex.clock = run.clock
    res = run.run()
    _check_accounts(res)
    launches = [c for c in ex.calls if c[0] == "launch"]
    assert [c[2] for c in launches] == [0.0, 58.0]  # relaunched when the checkpoint arrived
    (r,) = res.records
    assert r["finish_s"] == pytest.approx(58 + 2 + 500 * ITER)
    assert r["restart_s"] == pytest.approx(2 + 8 + 2)  # startup, the checkpoint wait, startup again
    assert r["preemptions"] == 1
    assert res.mechanisms["deferred_launches"] == 1


def test_a_job_faster_than_its_ideal_has_negative_contention_only():
    """1000 iterations of m on one GPU (ideal 50 ms each) measured in 25 s, half their ideal: every other cause is 0,
    contention_s is the (negative) excess, and the accounts close. The live model declares it on the instance, so the
    compiled core sees it too."""
    def respond(call, arg, t):
        if call != "launch":
            return []
        return [ExecEvent(EventKind.STARTED, arg.job_id, t, arg.attempt),
                ExecEvent(EventKind.FINISHED, arg.job_id, t + 25.0, arg.attempt, 1000)]

    ex = ScriptedExecutor(respond)
    run = LiveRun(cluster4x4(), Scripted({"a": (0,)}), ex, time_scale=FAST, catalog=CAT,
                  jobs=[JobSpec("a", 0.0, 1, "m", iterations=1000)])
    ex.clock = run.clock
    res = run.run()
    _check_accounts(res)
    (r,) = res.records
    assert r["run_s"] == pytest.approx(25.0) and r["ideal_run_s"] == pytest.approx(50.0)
    assert r["contention_s"] == pytest.approx(-25.0)
    assert all(r[c] == 0 for c in CAUSES if c != "contention_s")


def test_failed_job_is_accounted_with_its_reason_and_frees_its_gpus():
    def respond(call, arg, t):
        if call != "launch":
            return []
        j, a = arg.job_id, arg.attempt
        if j == "bad":
            return [ExecEvent(EventKind.STARTED, j, t, a), ExecEvent(EventKind.FAILED, j, t + 3, a, reason="boom")]
        return [ExecEvent(EventKind.STARTED, j, t, a), ExecEvent(EventKind.FINISHED, j, t + 10, a, 100)]

    ex = ScriptedExecutor(respond)
    changes: list[JobChange] = []
    jobs = [JobSpec("bad", 0.0, 4, "m", iterations=100), JobSpec("next", 1.0, 4, "m", iterations=100)]
    run = LiveRun(cluster4x4(), Scripted({"bad": (0, 1, 2, 3), "next": (0, 1, 2, 3)}), ex, time_scale=FAST,
                  catalog=CAT, jobs=jobs, on_change=changes.append)
    ex.clock = run.clock
    res = run.run()
    _check_accounts(res)
    assert [f["job_id"] for f in res.failed] == ["bad"] and res.failed[0]["reason"] == "boom"
    assert [r["job_id"] for r in res.records] == ["next"]
    assert res.records[0]["first_start_s"] == pytest.approx(3.0)  # on the GPUs the failed job released
    assert [c.detail["reason"] for c in changes if c.kind == "failed"] == ["boom"]


def test_twin_faults_lost_and_failed():
    jobs = [JobSpec("a", 0.0, 2, "m", iterations=2000), JobSpec("b", 0.0, 2, "m", iterations=2000),
            JobSpec("c", 0.0, 1, "small", iterations=500)]
    ex = SimExecutor(CAT, checkpoint_every_s=20.0,
                     faults={"a": Fault("lose", 50.0), "b": Fault("fail", 10.0, reason="OOM")})
    res = LiveRun(cluster4x4(), make_policy("fifo"), ex, time_scale=FAST, catalog=CAT, jobs=jobs).run()
    _check_accounts(res)
    assert {r["job_id"] for r in res.records} == {"a", "c"}
    a = next(r for r in res.records if r["job_id"] == "a")
    assert a["preemptions"] == 1 and a["restart_s"] > 30.0  # the restart penalty + the work after the checkpoint
    assert res.failed[0]["reason"] == "OOM"


# ------------------------------------------------------------------ refusals and bad input
@pytest.mark.parametrize("name", ["allox", "ada-srsf"])
def test_policies_a_live_run_cannot_honour_are_refused_before_anything_starts(name):
    ex = ScriptedExecutor(lambda *a: [])
    with pytest.raises(ConfigError, match="execution model"):
        LiveRun(cluster4x4(), make_policy(name), ex, catalog=CAT)
    assert not ex.opened


def test_gpu_sharing_is_refused():
    class Sharing(Policy):
        name = "sharer"
        requirements = Requirements(jobs_per_gpu=2)

        def schedule(self, view):
            return []

    with pytest.raises(ConfigError, match="shares GPUs"):
        LiveRun(cluster4x4(), Sharing(), ScriptedExecutor(lambda *a: []), catalog=CAT)


@pytest.mark.parametrize("scale", [0.0, -1.0, math.inf, math.nan])
def test_bad_time_scale(scale):
    with pytest.raises(ConfigError, match="time_scale"):
        LiveRun(cluster4x4(), make_policy("fifo"), SimExecutor(CAT), time_scale=scale, catalog=CAT)


def test_job_that_never_fits_is_rejected_and_accounted():
    jobs = [JobSpec("huge", 0.0, 64, "m", iterations=10), JobSpec("ok", 0.0, 1, "m", iterations=10)]
    res = LiveRun(cluster4x4(), make_policy("fifo"), SimExecutor(CAT), time_scale=FAST, catalog=CAT,
                  jobs=jobs).run()
    _check_accounts(res)
    assert [r["job_id"] for r in res.rejected] == ["huge"]


# ------------------------------------------------------------------ the twin against the simulator
def _trace(seed: int, n: int, models: Sequence[str] = ("m", "small")) -> list[JobSpec]:
    rng = random.Random(seed)
    t, jobs = 0.0, []
    for i in range(n):
        t += rng.expovariate(1 / 200)
        jobs.append(JobSpec(f"j{i}", round(t, 3), rng.choice([1, 2, 4, 8]), rng.choice(models),
                            iterations=rng.randint(2000, 30000)))
    return jobs


@pytest.mark.parametrize(("policy", "report_s"), [("fifo", 60.0), ("fifo+pack", 60.0), ("tiresias", 60.0),
                                                ("delay-sched", 60.0), ("srtf", 60.0), ("hindsight", 60.0),
                                                ("tiresias", 7.0), ("hindsight", 7.0),
                                                ("delay-sched", 7.0)])
def test_twin_reproduces_the_simulation(policy, report_s):
    """Same starts in the same order, same JCTs (the twin's physics is the simulator's; actions take effect at the
    instant decided, events are reported in time order one instant at a time; progress reports change neither the
    twin's arithmetic nor the time accounts a policy reads)."""
    jobs = _trace(3, 25)
    cluster = cluster4x4()
    sim = run_simulation(cluster, jobs, make_policy(policy), catalog=CAT)
    twin = SimExecutor(CAT, report_every_s=report_s, report_every_wall_s=1e-9)
    res = LiveRun(cluster, make_policy(policy), twin, time_scale=FAST, catalog=CAT, jobs=jobs).run()
    assert report_s > 10 or res.events > 1000  # the reports did come
    _check_accounts(res)
    assert len(res.records) == len(sim.records) == len(jobs)
    live = {r["job_id"]: r for r in res.records}
    for s in sim.records:
        r = live[s["job_id"]]
        assert r["jct_s"] == pytest.approx(s["jct_s"], rel=1e-9, abs=1e-6), s["job_id"]
        assert r["first_start_s"] == pytest.approx(s["first_start_s"], rel=1e-9, abs=1e-6)
        assert r["preemptions"] == s["preemptions"]
        for c in ("ideal_run_s", *CAUSES):
            assert r[c] == pytest.approx(s[c], rel=1e-6, abs=1e-5), (s["job_id"], c)
    order = lambda rs: [r["job_id"] for r in sorted(rs, key=lambda r: (r["first_start_s"], r["job_id"]))]  # noqa: E731
    assert order(res.records) == order(sim.records)


def test_checkpoint_delay_makes_the_twin_slower_than_the_simulation():
    """With a 60 s checkpoint the preempted jobs' GPUs drain for 60 s: a preemptive policy's live JCTs exceed the
    simulation's (the difference is what a real checkpoint costs, not a fault of the twin)."""
    jobs = _trace(3, 25)
    cluster = cluster4x4()
    sim = run_simulation(cluster, jobs, make_policy("tiresias"), catalog=CAT)
    res = LiveRun(cluster, make_policy("tiresias"), SimExecutor(CAT, checkpoint_s=60.0), time_scale=FAST,
                  catalog=CAT, jobs=jobs).run()
    _check_accounts(res)
    assert sim.mechanisms["preemptions"] > 0
    avg = lambda rs: sum(r["jct_s"] for r in rs) / len(rs)  # noqa: E731
    assert avg(res.records) > avg(sim.records)


# ------------------------------------------------------------------ serve mode and threads
def test_submit_cancel_and_stop_from_another_thread():
    ex = SimExecutor(CAT)
    changes: list[JobChange] = []
    run = LiveRun(cluster4x4(), make_policy("fifo"), ex, time_scale=1e3, catalog=CAT, serve=True,
                  on_change=changes.append)
    out: dict[str, Any] = {}
    loop = threading.Thread(target=lambda: out.setdefault("result", run.run()))
    loop.start()
    try:
        reasons = [run.submit(JobSpec(f"s{i}", 0.0, 4, "m", iterations=50 if i < 3 else 10**7)) for i in range(6)]
        assert reasons == [None] * 6
        assert run.submit(JobSpec("s0", 0.0, 1, "m", iterations=5)) is not None  # duplicate id
        assert "GPUs" in (run.submit(JobSpec("big", 0.0, 64, "m", iterations=5)) or "")
        deadline = threading.Event()
        for _ in range(400):
            snap = run.snapshot()
            if snap["counts"]["completed"] >= 3:
                break
            deadline.wait(0.01)
        assert run.snapshot()["counts"]["completed"] >= 3
        assert run.cancel("s3") is True
        assert run.cancel("s3") is False
        assert run.cancel("nope") is False
    finally:
        run.stop()
        loop.join(timeout=30)
    assert not loop.is_alive()
    res = out["result"]
    _check_accounts(res)
    assert res.submitted == 7  # 6 accepted + "big" (rejected); the duplicate id is not a job
    assert [c["job_id"] for c in res.cancelled] == ["s3"]
    assert sorted(res.unfinished) == ["s4", "s5"]
    assert run.submit(JobSpec("late", 0.0, 1, "m", iterations=5)) == "the run is over"
    kinds = {c.kind for c in changes}
    assert {"arrived", "started", "finished", "cancelled", "rejected", "preempted"} <= kinds


# ------------------------------------------------------------------ property: every job accounted for
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), n=st.integers(1, 14),
       policy=st.sampled_from(["fifo", "tiresias", "delay-sched", "srtf"]),
       ckpt=st.sampled_from([0.0, 20.0, 50.0]), grace=st.sampled_from([0.0, 30.0]))
def test_every_job_accounted_and_records_close(seed, n, policy, ckpt, grace):
    """Random jobs, checkpoint delays (longer than the grace: killed, work lost), lost workers and failures in any
    attempt (srtf: a checkpoint changes a queued job's remaining work, which its sorted index must follow)."""
    jobs = _trace(seed, n)
    rng = random.Random(seed)
    faults = {j.job_id: Fault(rng.choice(["lose", "fail"]), rng.uniform(1, 300), attempt=rng.choice([1, 2]))
              for j in jobs if rng.random() < 0.3}
    ex = SimExecutor(CAT, checkpoint_s=ckpt, checkpoint_every_s=50.0, faults=faults, start_s=rng.choice([0.0, 3.0]))
    res = LiveRun(cluster4x4(), make_policy(policy), ex, time_scale=FAST, catalog=CAT, jobs=jobs,
                  checkpoint_grace_s=grace).run()
    _check_accounts(res)
    assert len(res.records) + len(res.failed) == len(jobs)  # nothing is left behind in a batch run
    assert {f["job_id"] for f in res.failed} <= {j for j, f in faults.items() if f.kind == "fail"}


def test_a_policy_that_never_starts_a_job_leaves_it_unfinished_not_hung():
    class Never(Policy):
        name = "never"
        requirements = Requirements()

        def schedule(self, view):
            return []

    res = LiveRun(cluster4x4(), Never(), SimExecutor(CAT), time_scale=FAST, catalog=CAT,
                  jobs=[JobSpec("a", 0.0, 1, "m", iterations=10)]).run()
    _check_accounts(res)
    assert res.unfinished == ["a"]


def test_policies_see_the_fluid_models_view_types():
    from ddlsched.engine.jobview import JobView
    from ddlsched.engine.view import SchedulerView

    seen: list[tuple[type, type]] = []

    class Probe(Policy):
        name = "probe"
        requirements = Requirements()

        def schedule(self, view):
            seen.extend((type(view), type(j)) for j in view.pending)
            return [Start(j.job_id, (0,)) for j in list(view.pending)[:1] if view.num_free == 16]

    LiveRun(cluster4x4(), Probe(), SimExecutor(CAT), time_scale=FAST, catalog=CAT,
            jobs=[JobSpec("a", 0.0, 1, "m", iterations=10)]).run()
    assert seen and all(issubclass(v, SchedulerView) and j is JobView for v, j in seen)


def test_stop_revokes_running_jobs_and_waits_for_their_checkpoints():
    ex = SimExecutor(CAT, checkpoint_s=5.0)
    changes: list[JobChange] = []
    run = LiveRun(cluster4x4(), make_policy("fifo"), ex, time_scale=1e3, catalog=CAT, serve=True,
                  on_change=changes.append, checkpoint_grace_s=30.0)
    out: dict[str, Any] = {}
    loop = threading.Thread(target=lambda: out.setdefault("result", run.run()))
    loop.start()
    try:
        assert run.submit(JobSpec("long", 0.0, 2, "m", iterations=10**8)) is None
        for _ in range(200):
            if run.snapshot()["running"] and run.snapshot()["running"][0]["launched"]:
                break
            threading.Event().wait(0.01)
    finally:
        run.stop()
        loop.join(timeout=30)
    assert not loop.is_alive()
    res = out["result"]
    _check_accounts(res)
    assert res.unfinished == ["long"]
    saved = [c for c in changes if c.kind == "preempted"]
    assert len(saved) == 1 and saved[0].detail["killed"] is False and saved[0].detail["iterations"] > 0
    assert ex.closed and not ex.jobs


def test_cancel_a_job_before_it_arrives_and_a_running_one():
    jobs = [JobSpec("a", 0.0, 4, "m", iterations=10**6), JobSpec("b", 5000.0, 1, "m", iterations=10)]
    changes: list[JobChange] = []
    run = LiveRun(cluster4x4(), make_policy("fifo"), SimExecutor(CAT), time_scale=1e4, catalog=CAT, jobs=jobs,
                  on_change=changes.append)
    out: dict[str, Any] = {}
    loop = threading.Thread(target=lambda: out.setdefault("result", run.run()))
    loop.start()
    try:
        assert run.cancel("b") is True  # not arrived yet (its arrival is 0.5 s of wall time away)
        for _ in range(200):
            if run.snapshot()["running"]:
                break
            threading.Event().wait(0.01)
        assert run.cancel("a") is True
    finally:
        loop.join(timeout=30)
    assert not loop.is_alive()
    res = out["result"]
    _check_accounts(res)
    assert sorted(c["job_id"] for c in res.cancelled) == ["a", "b"] and not res.records and not res.unfinished


def test_a_resubmitted_job_resumes_from_its_checkpoint():
    """Crash recovery: a job submitted with done_iterations resumes there (the twin pays its restart penalty)."""
    run = LiveRun(cluster4x4(), make_policy("fifo"), SimExecutor(CAT, restart_s=30.0), time_scale=FAST, catalog=CAT)
    assert run.submit(JobSpec("r", 0.0, 1, "m", iterations=1000), done_iterations=600, attempt=1) is None
    res = run.run()
    _check_accounts(res)
    (r,) = res.records
    assert r["restart_s"] == pytest.approx(30.0)
    assert r["run_s"] == pytest.approx(30.0 + 400 * 0.05)  # the 400 iterations left, alone on one GPU


def test_submit_many_takes_a_batch_in_one_turn_in_order():
    """``submit_many`` (the service's hand-off): the jobs arrive in the order given, each gets its own answer (a
    duplicate id or a job that can never fit is refused, the others are queued), and after the run every job of a
    batch is answered "the run is over"."""
    changes: list[JobChange] = []
    run = LiveRun(cluster4x4(), make_policy("fifo"), SimExecutor(CAT), time_scale=1e3, catalog=CAT, serve=True,
                  on_change=changes.append)
    loop = threading.Thread(target=run.run)
    loop.start()
    try:
        specs = [JobSpec("a", 0.0, 4, "m", iterations=50), JobSpec("b", 0.0, 4, "m", iterations=50),
                 JobSpec("a", 0.0, 1, "m", iterations=5), JobSpec("big", 0.0, 64, "m", iterations=5),
                 JobSpec("c", 0.0, 4, "m", iterations=50)]
        reasons = run.submit_many(specs)
        assert reasons[:2] == [None, None] and reasons[4] is None
        assert "a" in (reasons[2] or "") and "GPUs" in (reasons[3] or "")
        assert run.submit_many([]) == []
    finally:
        run.stop()
        loop.join(timeout=30)
    assert not loop.is_alive()
    assert [c.job_id for c in changes if c.kind == "arrived"] == ["a", "b", "c"]
    arrived = {c.job_id: c.time_s for c in changes if c.kind == "arrived"}
    assert arrived["a"] <= arrived["b"] <= arrived["c"]
    assert run.submit_many([JobSpec("late", 0.0, 1, "m", iterations=5)] * 2) == ["the run is over"] * 2


def test_twin_finishes_equal_jobs_in_launch_order():
    """Jobs that complete at the same instant are reported in the order they were launched (the twin's completion
    heap breaks ties as a scan of its jobs in launch order would), and the run still matches the simulation."""
    jobs = [JobSpec(f"e{i}", 0.0, 1, "small", iterations=1000) for i in range(12)]
    cluster = cluster4x4()
    changes: list[JobChange] = []
    res = LiveRun(cluster, make_policy("fifo"), SimExecutor(CAT), time_scale=FAST, catalog=CAT, jobs=jobs,
                  on_change=changes.append).run()
    _check_accounts(res)
    started = [c.job_id for c in changes if c.kind == "started"]
    finished = [c.job_id for c in changes if c.kind == "finished"]
    assert len(set(r["jct_s"] for r in res.records)) == 1  # all equal: a tie for every pair
    assert finished == started and len(finished) == 12
    sim = run_simulation(cluster, jobs, make_policy("fifo"), catalog=CAT)
    assert sorted(r["jct_s"] for r in res.records) == pytest.approx(sorted(r["jct_s"] for r in sim.records))
