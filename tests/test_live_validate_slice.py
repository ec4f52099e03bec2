"""The fidelity experiment's slice (benchmarks/live_validate.py): offered load as asked, policy time parameters
scaled with the durations, scoped flags. No root, no Ray: only the pure parts."""

from __future__ import annotations

import csv
import importlib.util
import io
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def lv():
    spec = importlib.util.spec_from_file_location("live_validate", ROOT / "benchmarks/live_validate.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["live_validate"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_the_slice_has_the_offered_load_asked_and_keeps_the_trace_shape(lv):
    text, g = lv.trace_slice(60, 60000, 4, 600.0, 1.2, 16, 0.0, math.inf)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 60
    asked = sum(int(r["num_gpus"]) * float(r["duration"]) for r in rows)
    assert asked / (16 * 600.0) == pytest.approx(1.2, rel=1e-4)
    arrivals = [float(r["arrival"]) for r in rows]
    assert arrivals[0] == 0 and arrivals == sorted(arrivals) and arrivals[-1] == pytest.approx(600.0, abs=1e-3)
    assert 0 < g < 1
    clipped, _ = lv.trace_slice(60, 60000, 4, 600.0, 1.2, 16, 10.0, 240.0)
    durations = [float(r["duration"]) for r in csv.DictReader(io.StringIO(clipped))]
    assert min(durations) >= 10.0 and max(durations) <= 240.0


def test_time_parameters_scale_with_the_duration_factor(lv):
    from ddlsched.policies import make_policy

    g = 0.01
    params = lv.scaled_params(["fifo+consolidated", "tiresias+consolidated", "delay-sched"], g)
    assert "fifo+consolidated" not in params  # nothing of FIFO's is a time
    base = make_policy("tiresias+consolidated", {}).ordering.thresholds
    assert params["tiresias+consolidated"]["thresholds"] == [round(t * g, 3) for t in base]
    timers = make_policy("delay-sched", {}).initial_timers
    assert params["delay-sched"] == {f"timer_{k}": round(v * g, 3) for k, v in timers.items()}
    flags = lv.param_flags(params)
    assert flags[:2] == ["--policy-param", f"tiresias+consolidated:thresholds=[{round(base[0] * g, 3)}]"]
    for name, kv in params.items():  # every scaled parameter is accepted by its policy
        make_policy(name, kv)
