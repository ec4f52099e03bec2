"""End states of scheduler exports (Slurm, Kubernetes): which states become jobs (``--states``), and the notes.

A row whose state is not chosen is counted in ``Trace.filtered["state"]``; a chosen state other than the plain
completion (``completed`` / ``succeeded``) is kept on the job as ``JobSpec.state`` and counted in a note, because
its run time is the time the job actually ran (e.g. until it was cancelled), not a completed job's.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from ddlsched.errors import InputError

SLURM_STATES = ("completed", "timeout", "failed", "out_of_memory", "node_fail", "cancelled", "preempted",
                "running", "requeued", "suspended", "boot_fail", "deadline", "pending", "resizing", "revoked",
                "special_exit")
SLURM_DEFAULT = ("completed", "timeout", "failed", "out_of_memory", "node_fail")
"""Jobs that ran to an end the user did not choose: completed, hit the time limit, or failed after running."""

K8S_STATES = ("succeeded", "failed", "running", "pending", "unknown")
K8S_DEFAULT = ("succeeded", "failed")


def parse_states(states: str | Iterable[str] | None, known: tuple[str, ...], default: tuple[str, ...],
                 fmt: str) -> frozenset[str]:
    """The chosen states (lower case) from ``--states`` (comma-separated names, or ``all``); the format's
    default when None; an InputError naming the flag for an unknown name."""
    if states is None:
        return frozenset(default)
    items = [s for s in (states.split(",") if isinstance(states, str) else states)]
    names = [str(s).strip().lower() for s in items if str(s).strip()]
    if not names:
        raise InputError("--states is empty; name states separated by commas, or 'all'", field="states")
    if names == ["all"]:
        return frozenset(known)
    bad = [n for n in names if n not in known]
    if bad:
        raise InputError(f"unknown {fmt} state(s) {', '.join(map(repr, bad))} in --states; known: "
                         f"{', '.join(known)} (or 'all')", field="states")
    return frozenset(names)


def state_notes(kept: dict[str, int], plain: str, chosen: Collection[str]) -> list[str]:
    """Notes: the states chosen, and how many jobs of each non-plain state were kept (marked)."""
    notes = [f"states simulated (--states): {', '.join(sorted(chosen))}"]
    marked = {k: v for k, v in sorted(kept.items()) if k != plain}
    if marked:
        notes.append("jobs kept that did not simply complete (run time = the time they ran; JobSpec.state): "
                     + ", ".join(f"{v:,} {k}" for k, v in marked.items()))
    return notes
