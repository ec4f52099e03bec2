"""slot_init: the faster __init__ of the per-event frozen dataclasses keeps their signature, defaults, immutability,
equality and repr."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from ddlsched.engine.decisions import Start
from ddlsched.perf.base import IterationTime, Placement
from ddlsched.slotinit import slot_init


def test_same_behaviour_as_the_generated_init() -> None:
    s = Start("j", (1, 2))
    assert (s.job_id, s.gpus, s.share, s.accum_steps) == ("j", (1, 2), False, 1)
    assert Start(job_id="j", gpus=(1, 2), accum_steps=1) == s and hash(Start("j", (1, 2))) == hash(s)
    assert repr(Start("j", (3,), True, 2)) == "Start(job_id='j', gpus=(3,), share=True, accum_steps=2)"
    assert dataclasses.replace(s, share=True).share is True
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.job_id = "k"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Start("j")  # type: ignore[call-arg]
    assert list(inspect.signature(Start).parameters) == ["job_id", "gpus", "share", "accum_steps"]
    t = IterationTime(1.0, 2.0)
    assert t.total_s == 3.0 and t == IterationTime(compute_s=1.0, comm_s=2.0)
    assert Placement("a", (0,), None).accum_steps == 1  # type: ignore[arg-type]


def test_refuses_classes_it_cannot_copy() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Factory:
        x: list[int] = dataclasses.field(default_factory=list)

    with pytest.raises(TypeError, match="plain positional"):
        slot_init(Factory)

    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        x: int

    with pytest.raises(TypeError, match="slotted"):
        slot_init(NoSlots)
