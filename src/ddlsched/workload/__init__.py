"""Workloads: job specifications, model profiles, trace loaders and synthetic generators."""

from ddlsched.workload.jobspec import JobSpec
from ddlsched.workload.profiles import ModelCatalog, ModelProfile, default_catalog

__all__ = ["JobSpec", "ModelCatalog", "ModelProfile", "default_catalog"]
