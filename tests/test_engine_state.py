"""Job states whose ``__init__`` is written out (for the compiled build) must start exactly as their declared
dataclass defaults say, so the field list and the constructor cannot drift apart."""

from __future__ import annotations

import dataclasses
import math

import pytest

from ddlsched.engine.fluid import FluidJob
from ddlsched.engine.state import JobStatus
from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import ModelProfile


def _spec() -> JobSpec:
    return JobSpec(job_id="j7", arrival_s=3.0, num_gpus=2, model="resnet50", duration_s=100.0)


@pytest.mark.parametrize("cls", [FluidJob])
def test_written_out_init_sets_every_field_to_its_declared_default(cls: type) -> None:
    spec, profile = _spec(), ModelProfile(name="m", grad_mb=10.0, compute_ms=100.0, batch_size=32, mem_mb=1000.0)
    st = cls(spec, profile, 5)
    given = {"spec": spec, "profile": profile, "seq": 5, "job_id": "j7", "num_gpus": 2, "arrival_s": 3.0,
             "mem_mb": 1000.0}
    fields = dataclasses.fields(cls)
    assert {f.name for f in fields} >= set(given)
    for f in fields:
        value = getattr(st, f.name)  # an unset slot would raise AttributeError here
        if f.name in given:
            assert value is given[f.name] or value == given[f.name], f.name
        elif f.default is not dataclasses.MISSING:
            want = f.default
            if isinstance(want, float) and math.isnan(want):
                assert math.isnan(value), f.name
            else:
                assert value == want and type(value) is type(want), f.name
        else:
            assert f.default_factory is not dataclasses.MISSING, f"{f.name} has no default"
            assert value == f.default_factory(), f.name
    assert st.status is JobStatus.PENDING
    # a field added to the dataclass without a line in __init__ fails above; a misspelt attribute fails here
    assert not hasattr(st, "__dict__")


def test_memory_per_gpu_is_the_traces_figure_else_the_profiles() -> None:
    profile = ModelProfile(name="m", grad_mb=10.0, compute_ms=100.0, batch_size=32, mem_mb=1000.0)
    assert FluidJob(_spec(), profile, 0).mem_mb == 1000.0
    spec = JobSpec(job_id="j8", arrival_s=3.0, num_gpus=2, model="resnet50", duration_s=100.0, gpu_mem_mb=500.0)
    st = FluidJob(spec, profile, 0)
    assert (st.mem_mb, st.num_gpus, st.arrival_s) == (500.0, 2, 3.0)
