"""Emulated-cluster testbed: real ring all-reduce traffic over network namespaces, bridges and ``tc`` shaping,
used to validate the simulator's contention physics (``ddlsched testbed validate``).

Modules: :mod:`netns` (privileged helpers, state file, cleanup), :mod:`fabric` (cluster → namespaces/links),
:mod:`worker` (one ring all-reduce rank), :mod:`executor` (runs a schedule), :mod:`predict` (model replay),
:mod:`scenarios`, :mod:`calibrate`, :mod:`validate`.
"""

PREFIX = "ddl"
