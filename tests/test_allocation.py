"""The free-GPU index and its per-pass overlay (``ddlsched.engine.allocation``) against a plain set of free GPUs."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddlsched.engine.allocation import FreeGPUs, FreeIndex
from ddlsched.testbed.scenarios import tb32

CLUSTER = tb32()  # 8 servers × 4 GPUs in 2 racks
SERVER_GPUS = [list(g) for g in CLUSTER.server_gpus]


def _agrees(index: FreeIndex, free: set[int]) -> None:
    """Every query of ``index`` answers as the set ``free`` of free GPUs says."""
    counts = [sum(g in free for g in gpus) for gpus in SERVER_GPUS]
    assert index.num_free == len(free)
    assert [index.free_count(s) for s in range(len(SERVER_GPUS))] == counts
    assert list(index.free_counts()) == counts
    assert index.all_free_gpus() == sorted(free)
    for s, gpus in enumerate(SERVER_GPUS):
        assert index.free_gpus(s) == sorted(g for g in gpus if g in free)
    for n in range(1, 6):
        fits = [s for s, c in enumerate(counts) if c >= n]
        want = min(fits, key=lambda s: (counts[s], s)) if fits else None
        assert index.best_fit_server(n) == want
    assert list(index.servers_by_most_free()) == sorted((s for s, c in enumerate(counts) if c),
                                                        key=lambda s: (-counts[s], s))


moves = st.lists(st.tuples(st.booleans(), st.integers(0, CLUSTER.num_gpus - 1)), max_size=60)


@settings(max_examples=150, deadline=None)
@given(before=moves, during=moves)
def test_overlay_answers_like_a_set_and_leaves_the_base_alone(before: list[tuple[bool, int]],
                                                               during: list[tuple[bool, int]]) -> None:
    base = FreeGPUs(CLUSTER)
    free = set(range(CLUSTER.num_gpus))
    for take, g in before:  # the live index after some history
        if take == (g in free):
            (base.take if take else base.release)([g])
            (free.discard if take else free.add)(g)
    _agrees(base, free)
    base_counts = list(base.free_counts())
    overlay, planned, taken = base.overlay(), set(free), []
    for take, g in during:
        if take != (g in planned):  # taking a taken GPU or freeing a free one is refused, and changes nothing
            with pytest.raises(ValueError, match=f"GPU {g} is"):
                (overlay.take if take else overlay.release)([g])
            continue
        (overlay.take if take else overlay.release)([g])
        (planned.discard if take else planned.add)(g)
        taken += [g] if take else []
        _agrees(overlay, planned)
    _agrees(overlay, planned)
    _agrees(base, free)  # nothing planned on the overlay reached the engine's index
    assert base.free_counts() == base_counts
    assert overlay.taken == taken  # what the pass took, in order (a GPU taken, released, taken again: twice)


def test_overlay_counts_list_is_a_snapshot_that_follows_each_move() -> None:
    base = FreeGPUs(CLUSTER)
    overlay = base.overlay()
    assert overlay.free_counts() is base.free_counts()  # nothing touched yet: no copy
    overlay.take([0, 1])
    counts = overlay.free_counts()
    assert counts[0] == 2 and base.free_counts()[0] == 4
    overlay.release([1])
    assert overlay.free_counts()[0] == 3 and counts[0] == 2  # a new snapshot after the move
