"""The core drops stale events in bulk for a model whose stale events stay stale (docs/engine.md, "Cost per
event"); the run must be the same as with lazy skipping alone: same records, same event count."""

from __future__ import annotations

import pytest

from ddlsched.cluster import load_cluster
from ddlsched.engine import SimConfig
from ddlsched.engine import core as core_module
from ddlsched.engine.core import Core
from ddlsched.engine.run import build_model, default_catalog
from ddlsched.policies import make_policy
from ddlsched.workload.loaders import load_trace


def _run(policy: str, compact_at: int, monkeypatch: pytest.MonkeyPatch) -> tuple[list, int, int]:
    monkeypatch.setattr(core_module, "COMPACT_AT", compact_at)
    trace = load_trace("data/traces/philly_pollux/philly.csv")
    cluster = load_cluster("philly512")
    pol = make_policy(policy)
    config = SimConfig(perf_model="maxmin")
    model = build_model(cluster, pol, config, default_catalog())
    pol.reset()
    core = Core(trace.jobs[:1500], pol, model, record_timeseries=True)
    result = core.run()
    return [tuple(r) for r in result.records.rows()], result.events, core.compactions


@pytest.mark.parametrize("policy", ["tiresias+consolidated", "srtf+pack"])
def test_bulk_drop_changes_nothing(policy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    small = _run(policy, 8, monkeypatch)
    never = _run(policy, 10**9, monkeypatch)
    assert small[2] >= 3 and never[2] == 0  # the small threshold did drop in bulk, several times
    assert small[0] == never[0] and small[1] == never[1]
