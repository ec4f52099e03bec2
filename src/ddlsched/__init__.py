"""ddlsched: simulate and compare scheduling policies for distributed deep-learning training
on shared GPU clusters where ring all-reduce jobs contend for the network and for GPUs."""

__version__ = "0.1.0"
