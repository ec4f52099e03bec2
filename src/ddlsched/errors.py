"""Errors that name where bad input came from (file, line, field)."""

from __future__ import annotations


class DdlschedError(Exception):
    """Base class for every error ddlsched raises on purpose."""


class InputError(DdlschedError):
    """Bad user input: a trace row, a config key, a CLI value.

    The message names the source file, the line (1-based, counting the header) and the field,
    whenever they are known.
    """

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        self.path = path
        self.line = line
        self.field = field
        self.reason = message
        where = []
        if path is not None:
            where.append(str(path) + (f":{line}" if line is not None else ""))
        elif line is not None:
            where.append(f"line {line}")
        if field is not None:
            where.append(f"field '{field}'")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class ConfigError(InputError):
    """A cluster/experiment configuration is malformed or names an unknown key."""


class SimulationError(DdlschedError):
    """An invariant of the simulation was broken (a bug or an invalid policy decision)."""


class ClairvoyanceError(SimulationError):
    """A policy that did not declare ``Requirements(clairvoyant=True)`` read a job's duration (iterations, ideal run
    time, remaining work) from its view (``ddlsched.engine.jobview``)."""
