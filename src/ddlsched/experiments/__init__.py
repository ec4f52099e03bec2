"""Experiments: paper reproductions (``ddlsched reproduce NAME``), comparisons and sweeps."""
