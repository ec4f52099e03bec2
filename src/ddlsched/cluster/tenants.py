"""Tenants of a cluster: weights, guaranteed GPU quotas (optionally per GPU type), borrowing limits, cohorts.

Given as a ``tenants:`` section of a cluster file, or as a separate file (``--tenants FILE``) holding the same
mapping at its top level (or under ``tenants:``)::

    tenants:
      default: other                # tenant of a job whose trace user is no tenant (created if not listed)
      cohorts: {org: {}, research: {parent: org}}
      members: {alice: vision}      # trace user → tenant (a user named like a tenant needs no entry)
      queues:
        vision: {weight: 2, quota: 16, borrow_limit: 8, cohort: research}
        speech: {weight: 1, quota: {V100: 8, K80: 4}}

Every value is checked against the cluster before anything runs (``docs/policies/fairness.md``): a weight ≤ 0,
quotas adding up to more GPUs than the cluster (or than a GPU type) has, a GPU type the cluster lacks, an unknown
cohort, a cohort whose parents form a cycle, and a member mapped to an unknown tenant are errors naming the file
and the field.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ddlsched.errors import ConfigError

DEFAULT_TENANT = "default"
_UNION_TAGS = ("int", "dict[str,int]")  # pydantic's names for the members of ``quota``'s union, not fields


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class QueueConfig(_Strict):
    weight: float = Field(1.0, description="share weight (> 0)")
    quota: int | dict[str, int] = Field(0, description="guaranteed GPUs, in total or per GPU type")
    borrow_limit: int | None = Field(None, description="GPUs it may use beyond its quota (null: no limit)")
    cohort: str | None = None


class CohortConfig(_Strict):
    parent: str | None = None


class TenantsConfig(_Strict):
    default: str = Field(DEFAULT_TENANT, min_length=1)
    cohorts: dict[str, CohortConfig] = {}
    members: dict[str, str] = {}
    queues: dict[str, QueueConfig] = Field(min_length=1)


@dataclass(frozen=True)
class Tenant:
    name: str
    weight: float
    quota: int
    """Guaranteed GPUs in total (the sum of ``quota_by_type`` when the quota is given per type)."""
    quota_by_type: dict[str, int]
    """Per GPU type; empty when the quota is one total."""
    borrow_limit: int | None
    cohort: str | None
    root_cohort: str | None
    """The top of the cohort's parent chain (reclaim "within cohort" compares these)."""


@dataclass(frozen=True)
class TenantSet:
    """The validated tenants of one cluster. ``of(user)`` names the tenant a trace user's jobs count under."""

    tenants: dict[str, Tenant]
    default: str
    members: dict[str, str] = field(default_factory=dict)
    source: str = ""

    @property
    def names(self) -> list[str]:
        return list(self.tenants)

    def of(self, user: str | None) -> str:
        """The tenant of a trace user: its ``members`` entry, a tenant of that name, else the default tenant."""
        if user is None:
            return self.default
        mapped = self.members.get(user)
        if mapped is not None:
            return mapped
        return user if user in self.tenants else self.default

    def unknown_users(self, users: Iterable[str | None]) -> Counter[str]:
        """Jobs per trace user that is no tenant and no member (they count under the default tenant)."""
        return Counter("<none>" if u is None else u for u in users
                       if u is None or (u not in self.members and u not in self.tenants))

    def note(self, users: Sequence[str | None]) -> str:
        """One line saying how many jobs count under the default tenant because their user is no tenant."""
        unknown = self.unknown_users(users)
        if not unknown:
            return ""
        names = ", ".join(sorted(unknown)[:5]) + (", ..." if len(unknown) > 5 else "")
        return (f"{sum(unknown.values())} job(s) of {len(unknown)} trace user(s) that no tenant names ({names}) "
                f"count under the default tenant {self.default!r}")


def parse_tenants(data: Any, cluster: Any, path: str, prefix: str = "tenants") -> TenantSet:
    """Validate the ``tenants`` mapping ``data`` against ``cluster``; errors name ``path`` and the field."""
    try:
        cfg = TenantsConfig.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in (prefix, *first["loc"]) if p != "" and p not in _UNION_TAGS)
        msg = "unknown key" if first["type"] == "extra_forbidden" else first["msg"]
        if "input" in first and not isinstance(first["input"], dict | list):
            msg += f", got {str(first['input'])[:40]!r}"
        raise ConfigError(f"{msg} ({len(e.errors())} problem(s) in total)", path=path, field=loc) from None

    def err(msg: str, where: str) -> ConfigError:
        return ConfigError(msg, path=path, field=f"{prefix}.{where}" if prefix else where)

    roots: dict[str, str] = {}
    for name in cfg.cohorts:
        chain = [name]
        parent = cfg.cohorts[name].parent
        while parent is not None:
            if parent not in cfg.cohorts:
                raise err(f"unknown parent cohort {parent!r}; declared: {sorted(cfg.cohorts)}",
                          f"cohorts.{chain[-1]}.parent")
            if parent in chain:
                raise err(f"cohort cycle: {' → '.join([*chain[chain.index(parent):], parent])}",
                          f"cohorts.{name}.parent")
            chain.append(parent)
            parent = cfg.cohorts[parent].parent
        roots[name] = chain[-1]
    gpus_by_type = Counter(cluster.gpu_type)
    total_gpus = len(cluster.gpu_type)
    tenants: dict[str, Tenant] = {}
    for name, q in cfg.queues.items():
        where = f"queues.{name}"
        if not q.weight > 0:
            raise err(f"weight must be > 0, got {q.weight:g}", f"{where}.weight")
        if isinstance(q.quota, dict):
            by_type = dict(q.quota)
            for t, n in by_type.items():
                if t not in gpus_by_type:
                    raise err(f"the cluster has no GPU type {t!r}; it has {sorted(gpus_by_type)}",
                              f"{where}.quota.{t}")
                if n < 0:
                    raise err(f"quota must be >= 0 GPUs, got {n}", f"{where}.quota.{t}")
                if n > gpus_by_type[t]:
                    raise err(f"quota of {n} {t} GPUs is larger than the cluster's {gpus_by_type[t]}",
                              f"{where}.quota.{t}")
            quota = sum(by_type.values())
        else:
            by_type, quota = {}, q.quota
            if quota < 0:
                raise err(f"quota must be >= 0 GPUs, got {quota}", f"{where}.quota")
        if quota > total_gpus:
            raise err(f"quota of {quota} GPUs is larger than the cluster ({total_gpus} GPUs)", f"{where}.quota")
        if q.borrow_limit is not None and q.borrow_limit < 0:
            raise err(f"borrow_limit must be >= 0 GPUs (or null: no limit), got {q.borrow_limit}",
                      f"{where}.borrow_limit")
        if q.cohort is not None and q.cohort not in cfg.cohorts:
            raise err(f"unknown cohort {q.cohort!r}; declared: {sorted(cfg.cohorts)}", f"{where}.cohort")
        tenants[name] = Tenant(name, float(q.weight), quota, by_type, q.borrow_limit, q.cohort,
                               roots.get(q.cohort) if q.cohort is not None else None)
    total = sum(t.quota for t in tenants.values())
    if total > total_gpus:
        raise err(f"quotas add up to {total} GPUs, more than the cluster's {total_gpus}", "queues")
    for gpu_type, have in gpus_by_type.items():
        want = sum(t.quota_by_type.get(gpu_type, 0) for t in tenants.values())
        if want > have:
            raise err(f"quotas on {gpu_type} add up to {want} GPUs, more than the cluster's {have}", "queues")
    for user, tenant in cfg.members.items():
        if tenant not in tenants:
            raise err(f"member {user!r} is mapped to unknown tenant {tenant!r}; tenants: {sorted(tenants)}",
                      f"members.{user}")
    if cfg.default not in tenants:
        tenants[cfg.default] = Tenant(cfg.default, 1.0, 0, {}, None, None, None)
    return TenantSet(tenants, cfg.default, dict(cfg.members), path)


def load_tenants_file(path: str | Path, cluster: Any) -> TenantSet:
    """A separate tenants file (YAML or TOML): the mapping at its top level, or under ``tenants:``."""
    from ddlsched.safe_read import read_structured

    p = Path(path)
    data = read_structured(p)
    if set(data) == {"tenants"}:
        return parse_tenants(data["tenants"], cluster, str(p))
    return parse_tenants(data, cluster, str(p), prefix="")


def attach(cluster: Any, tenants: TenantSet | None) -> Any:
    """A copy of ``cluster`` with these tenants (policies read ``view.cluster.tenants``; the summary reports
    fairness when a run's cluster has tenants). The given cluster is left as it is."""
    out = copy.copy(cluster)
    out.tenants = tenants
    return out


def tenants_of(cluster: Any) -> TenantSet | None:
    return getattr(cluster, "tenants", None)
