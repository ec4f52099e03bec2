"""What one simulation produces (every execution model, one schema)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ddlsched.cluster.topology import Cluster


@dataclass
class SimResult:
    """Per-job records (``ddlsched.vocabulary.RECORD_FIELDS``), rejected jobs, unfinished ids, a time series
    (``TIMESERIES_FIELDS``), and run facts. ``busy_gpu_s`` integrates ``busy_gpus`` over the run."""

    records: list[dict[str, Any]]
    rejected: list[dict[str, Any]]
    unfinished: list[str]
    timeseries: dict[str, list[float]]
    cluster: Cluster
    policy: str
    execution_model: str
    perf_model: str
    perf_params: dict[str, Any]
    seed: int
    events: int
    wall_s: float
    busy_gpu_s: float
    skipped: int = 0
    notes: list[str] = field(default_factory=list)
    mechanisms: dict[str, float] = field(default_factory=dict)
    audit: list[tuple[float, str, str, float]] = field(default_factory=list)

    @property
    def jobs(self) -> int:
        """Jobs read: completed + rejected + unfinished + skipped."""
        return len(self.records) + len(self.rejected) + len(self.unfinished) + self.skipped
