"""Bounds on every number read at the input boundary (trace values, after unit conversion, and CLI flags).

The bounds are generous for any real trace and keep the simulator's clock well inside the range where float
seconds still resolve microseconds (at 1e10 s, one ulp is about 2e-6 s). ``docs/traces.md`` lists them.
"""

from __future__ import annotations

MAX_ARRIVAL_S = 1e10
"""Latest arrival, in seconds after the trace's time origin (about 317 years)."""

MAX_DURATION_S = 1e9
"""Longest run time of one job, in seconds (about 31.7 years)."""

MAX_ITERATIONS = 1e12
"""Most iterations (steps) of one job (the bundled traces reach 8.7e8)."""

MAX_GPUS = 1_000_000
"""Most GPUs one job may ask for."""

MAX_BATCH_SIZE = 100_000_000
"""Largest batch size."""

MAX_LINE_BYTES = 1 << 20
"""Longest line of a trace file (1 MiB); a longer line is refused before it is read in full."""

CHECK_FIRST_BYTES = 256 << 20
"""A row-parsed trace file larger than this (generic CSV, Slurm, Kubernetes) has every row checked in a first pass
that keeps nothing, then is read again: a bad row fails with its located error in bounded memory even at the end of
the file (``benchmarks/malformed_memory.py``); a valid file this large (millions of jobs, all held in memory) is
parsed twice."""

MAX_FIELD_CHARS = 131_072
"""Longest field of a CSV row (Python's ``csv.field_size_limit`` default)."""

LOAD_SCALE_RANGE = (1e-6, 1e6)
"""Accepted ``--load-scale`` factors (inclusive)."""

MAX_RESTART_PENALTY_S = MAX_DURATION_S
"""Largest ``--restart-penalty`` in seconds."""
