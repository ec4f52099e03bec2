"""Scheduling policies: the contract (:class:`Policy`), baseline parts, the papers' families, and the registry."""

from ddlsched.policies.base import Policy
from ddlsched.policies.registry import canonical_name, list_policies, load_plugin, make_policy, register

__all__ = ["Policy", "canonical_name", "list_policies", "load_plugin", "make_policy", "register"]
