"""ddlsched.job without Ray: one rank, a fake lease; resume, periodic and revoke checkpoints, reports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ddlsched.job import Job, attach_lease, read_checkpoint_iterations

torch = pytest.importorskip("torch")


class FakeLease:
    def __init__(self, revoke_at: int | None = None) -> None:
        self.revoke_at = revoke_at
        self.reports: list[tuple[int, int | None, int | None]] = []
        self.job: Job | None = None

    def revoked(self) -> bool:
        return self.revoke_at is not None and self.job is not None and self.job.iterations >= self.revoke_at

    def report(self, *, iterations: int, checkpoint: int | None, started_from: int | None) -> None:
        self.reports.append((iterations, checkpoint, started_from))


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "DDLSCHED_JOB_ARGS"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("DDLSCHED_CHECKPOINT_DIR", str(tmp_path / "ck"))
    monkeypatch.setenv("DDLSCHED_ITERATIONS", "30")
    yield tmp_path / "ck"
    attach_lease(None)


def _train(lease: Any, every: int | None = None) -> tuple[Job, list[int], torch.nn.Module]:
    attach_lease(lease)
    job = Job(checkpoint_every=every)
    lease.job = job
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    seen = []
    for step in job.steps(state={"model": model, "opt": opt}):
        seen.append(step)
        g = torch.Generator().manual_seed(step)
        x = torch.randn(4, 3, generator=g)
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
    return job, seen, model


def test_revoke_saves_at_once_and_the_restart_resumes_to_the_same_weights(env: Path) -> None:
    lease = FakeLease(revoke_at=12)
    job, seen, _ = _train(lease, every=5)
    assert job.preempted and not job.finished and seen == list(range(12))
    assert read_checkpoint_iterations(env) == 12  # the revoke's checkpoint, not the periodic one at 10
    assert lease.reports[0] == (0, None, 0) and lease.reports[-1][:2] == (12, 12)
    job2, seen2, model2 = _train(FakeLease())
    assert job2.finished and seen2 == list(range(12, 30)) and job2.iterations == 30
    assert FakeLease().reports == []
    (env / "checkpoint.json").unlink()
    _, seen3, model3 = _train(FakeLease())  # no checkpoint: from scratch, uninterrupted
    assert seen3 == list(range(30))
    assert torch.equal(model2.weight, model3.weight) and torch.equal(model2.bias, model3.bias)


def test_periodic_checkpoints_bound_the_lost_work(env: Path) -> None:
    class Crash(Exception):
        pass

    attach_lease(FakeLease())
    job = Job(checkpoint_every=4)
    model = torch.nn.Linear(2, 1)
    with pytest.raises(Crash):
        for step in job.steps(state={"model": model}):
            if step == 10:
                raise Crash  # a killed worker: iterations 8, 9 and this one are lost
    assert read_checkpoint_iterations(env) == 8
    assert 10 - read_checkpoint_iterations(env) < 4


def test_user_save_and_load_callbacks_and_bad_settings(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    saved: list[Path] = []
    loaded: list[Path] = []
    lease = FakeLease(revoke_at=3)
    attach_lease(lease)
    job = Job()
    lease.job = job
    assert list(job.steps(save=saved.append, load=loaded.append)) == [0, 1, 2]
    assert saved == [env] and loaded == []
    attach_lease(FakeLease())
    job = Job()
    assert list(job.steps(5, save=saved.append, load=loaded.append)) == [3, 4] and loaded == [env]
    with pytest.raises(ValueError, match="checkpoint_every"):
        Job(checkpoint_every=0)
    monkeypatch.setenv("RANK", "x")
    with pytest.raises(ValueError, match="RANK"):
        Job()
    monkeypatch.delenv("RANK")
    monkeypatch.delenv("DDLSCHED_ITERATIONS")
    with pytest.raises(ValueError, match="DDLSCHED_ITERATIONS"):
        next(Job().steps())
