"""ddlsched.job over the socket ring (no torch, no Ray): two ranks in two threads agree on the step at which one
rank's lease ends, save one checkpoint, and a resumed pair continues from it; the profile job's peers come from
DDLSCHED_PEERS."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from ddlsched.job import Job, read_checkpoint_iterations
from ddlsched.live.localray import free_port


class StepLease:
    """Revoked once the job reached ``at`` iterations (None: never)."""

    def __init__(self, job: Job, at: int | None) -> None:
        self.job, self.at = job, at

    def revoked(self) -> bool:
        return self.at is not None and self.job.iterations >= self.at

    def report(self, **kw: Any) -> None:
        return None


def _pair(ckpt: Path, total: int, revoke_rank1_at: int | None) -> list[dict[str, Any]]:
    peers = [("127.0.0.1", free_port()), ("127.0.0.1", free_port())]
    out: list[dict[str, Any]] = [{}, {}]

    def rank(r: int) -> None:
        job = Job(total_iterations=total, checkpoint_dir=ckpt)
        job.rank, job.world_size, job.peers = r, 2, peers
        job.lease = StepLease(job, revoke_rank1_at if r == 1 else None)
        try:
            job.init_socket_ring(timeout_s=20)
            seen = list(job.steps())
            out[r] = {"seen": seen, "preempted": job.preempted, "finished": job.finished}
        except BaseException as e:  # reported to the test
            out[r] = {"error": e}

    threads = [threading.Thread(target=rank, args=(r,)) for r in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a rank hung"
    for o in out:
        assert "error" not in o, o
    return out


@pytest.mark.timeout(120)
def test_ranks_agree_on_the_stop_over_the_socket_ring_and_resume(tmp_path: Path) -> None:
    ck = tmp_path / "ck"
    first = _pair(ck, 40, revoke_rank1_at=7)
    assert [o["seen"] for o in first] == [list(range(7))] * 2  # rank 0's lease never ended: it stops with rank 1
    assert all(o["preempted"] and not o["finished"] for o in first)
    assert read_checkpoint_iterations(ck) == 7
    second = _pair(ck, 40, revoke_rank1_at=None)
    assert [o["seen"] for o in second] == [list(range(7, 40))] * 2
    assert all(o["finished"] for o in second)


def test_peers_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DDLSCHED_PEERS", "10.0.0.1:4000,10.0.0.2:4001")
    monkeypatch.setenv("WORLD_SIZE", "3")
    job = Job(total_iterations=1)
    assert job.peers == [("10.0.0.1", 4000), ("10.0.0.2", 4001)]
    with pytest.raises(RuntimeError, match="needs 3 peers"):
        job.init_socket_ring()
