"""Scheduling policies: the interface, baseline parts, and the registry of named policies."""

from ddlsched.policies.base import Policy
from ddlsched.policies.registry import list_policies, make_policy, register_policy

__all__ = ["Policy", "list_policies", "make_policy", "register_policy"]
