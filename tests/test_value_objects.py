"""The value objects made on every event (decisions, Placement, IterationTime): dataclass behaviour with a
written-out constructor, and native classes in the compiled build (docs/engine.md "Compiled build")."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from ddlsched import native
from ddlsched.engine.decisions import Preempt, RunTask, Start, Transfer, WakeAt
from ddlsched.perf.base import IterationTime, Placement
from ddlsched.workload.profiles import default_catalog

VALUES = (Start, Preempt, WakeAt, RunTask, Transfer, Placement, IterationTime)


def test_constructors_match_the_declared_fields() -> None:
    for cls in VALUES:
        declared = [(f.name, f.default) for f in dataclasses.fields(cls)]
        params = [(p.name, dataclasses.MISSING if p.default is p.empty else p.default)
                  for p in inspect.signature(cls).parameters.values()]
        assert params == declared, cls.__name__


def test_equality_hash_repr_and_replace() -> None:
    s = Start("j", (1, 2))
    assert (s.job_id, s.gpus, s.share, s.accum_steps) == ("j", (1, 2), False, 1)
    assert Start(job_id="j", gpus=(1, 2), accum_steps=1) == s and hash(Start("j", (1, 2))) == hash(s)
    assert Start("j", (1, 2), accum_steps=2) != s and len({s, Start("j", (1, 2)), Preempt("j")}) == 2
    assert repr(Start("j", (3,), True, 2)) == "Start(job_id='j', gpus=(3,), share=True, accum_steps=2)"
    assert dataclasses.replace(s, share=True) == Start("j", (1, 2), True)
    with pytest.raises(TypeError):
        Start("j")  # type: ignore[call-arg]
    t = IterationTime(1.0, 2.0)
    assert t.total_s == 3.0 and t == IterationTime(compute_s=1.0, comm_s=2.0) and WakeAt(5.0) == WakeAt(5.0)
    prof = default_catalog()["resnet50"]
    p = Placement("a", (0, 1), prof)
    assert p.accum_steps == 1 and p.num_gpus == 2 and p == Placement("a", (0, 1), prof, 1)
    assert RunTask("a", 3) == RunTask("a", 3) != RunTask("a", 4) and Transfer("a") == Transfer("a")


@pytest.mark.skipif(native.status()["mode"] != "compiled", reason="compiled build only")
def test_compiled_build_makes_them_native_classes() -> None:
    for cls in VALUES:
        assert hasattr(cls, "__mypyc_attrs__"), f"{cls.__name__} is compiled as a plain Python class"
        assert not inspect.isfunction(cls.__init__), f"{cls.__name__}.__init__ is interpreted"
