"""Metrics, result files and tables."""

from ddlsched.metrics.summary import summarize

__all__ = ["summarize"]
