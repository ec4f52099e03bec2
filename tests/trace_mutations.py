"""Mutated trace files for fuzzing the loaders and ``ddlsched simulate`` (used by ``tests/test_fuzz_traces.py`` and
``benchmarks/fuzz_traces.py``).

A *seed* is the header and first rows of one bundled trace per format. A *mutation* turns the seed's bytes into
damaged bytes; every choice comes from a ``pick(n) -> int in [0, n)`` function, so hypothesis (``data.draw``) and
a plain ``random.Random`` drive the same code. :func:`check_load` and :func:`check_simulate` state the contract:
a located :class:`~ddlsched.errors.InputError`, or every data row accounted for.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ddlsched.errors import DdlschedError, InputError
from ddlsched.workload.loaders import load_trace

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "data" / "traces"
Pick = Callable[[int], int]


@dataclass(frozen=True)
class Seed:
    name: str
    data: bytes
    delimiter: bytes
    header: bool


def _head(rel: str, rows: int) -> bytes:
    lines = (TRACES / rel).read_bytes().split(b"\n")
    return b"\n".join(lines[:rows]) + b"\n"


GENERIC = (b"JobID,Submit,Elapsed,AllocGPUs,GPUType,Model,User\n"
           b"1,2024-03-01T08:00:00,01:00:00,0.5,V100,resnet50,ann\n"
           b"2,2024-03-01T08:30:00,1-02:00:00,4,K80,bert,bob\n"
           b"3,2024-03-01T09:00:00,10:00,2,V100,vgg16,ann\n"
           b"4,2024-03-01T09:05:00,00:00:30,1,,,cat\n")


def seeds() -> list[Seed]:
    """Header + 4 data rows of each bundled format (and a Slurm-style generic CSV)."""
    return [
        Seed("philly_pollux", _head("philly_pollux/philly.csv", 5), b",", True),
        Seed("gavel", _head("gavel_philly_vc/seed0/23dbec.trace", 4), b"\t", False),
        Seed("muri", _head("muri/trace1.csv", 5), b",", True),
        Seed("sjf_bsbf_crlf", _head("sjf_bsbf_testbed/cluster_trace_12.csv", 5), b",", True),
        Seed("elasticflow", _head("elasticflow_philly/philly_103959.csv", 5), b",", True),
        Seed("pollux", _head("pollux_workloads/workload-1.csv", 5), b",", True),
        Seed("tiresias", _head("tiresias/60_job.csv", 5), b",", True),
        Seed("tiresias_durations", _head("tiresias/yarn-gput1000.csv", 5), b",", True),
        Seed("generic_csv", GENERIC, b",", True),
    ]


def export_seeds() -> list[Seed]:
    """The example scheduler exports of ``data/examples`` (Slurm, Kubernetes), whole: rows filtered by reason
    too. The Slurm one names V100s only, so that its rows load on the fuzz cluster (``hetero``)."""
    return [Seed("slurm", _example("sacct_gpu.txt", 26).replace(b"gres/gpu:a100", b"gres/gpu:v100"), b"|", True),
            Seed("kubernetes", _example("pods_gpu.csv", 13), b",", True)]


def _example(name: str, rows: int) -> bytes:
    lines = (ROOT / "data" / "examples" / name).read_bytes().split(b"\n")
    return b"\n".join(lines[:rows]) + b"\n"


VALUES: list[bytes] = [b"", b"nan", b"inf", b"-inf", b"-1", b"0", b"-0", b"1e400", b"1e308", b"1e-320", b"1.5",
                       b"NaN", b"Infinity", b" 12 ", b"9" * 5000, b"x" * 200_000, b"\xff\xfe", b"\xc3(", b'"abc',
                       b'ab"c', b'"', b"[red]x", "\u00e9\U0001f600".encode(), b",", b"\t", b"NULL", b"1_000",
                       b"2024-13-45T99:00:00", b"25:61:61", b"1-00:00:00", b"0x10", b"\x00", b"1e10", b"99999999999",
                       b"Unknown", b"None", b"N/A", b"<none>"]  # missing values (docs/traces.md)


def _split(data: bytes, delim: bytes) -> tuple[list[list[bytes]], bytes]:
    eol = b"\r\n" if b"\r\n" in data else b"\n"
    lines = data.split(eol)
    if lines and lines[-1] == b"":
        lines = lines[:-1]
    return [ln.split(delim) for ln in lines], eol


def _join(rows: list[list[bytes]], delim: bytes, eol: bytes) -> bytes:
    return b"".join(delim.join(r) + eol for r in rows)


def _columns(rows: list[list[bytes]]) -> int:
    return max((len(r) for r in rows), default=0)


def mutate(seed: Seed, pick: Pick, n_ops: int) -> tuple[bytes, list[str]]:
    """Apply ``n_ops`` mutations to ``seed``; returns the bytes and a description of each mutation."""
    data = seed.data
    done: list[str] = []
    for _ in range(n_ops):
        op = OPS[pick(len(OPS))]
        data, what = op(data, seed.delimiter, pick)
        done.append(what)
    return data, done


def _op_field(data: bytes, d: bytes, pick: Pick) -> tuple[bytes, str]:
    rows, eol = _split(data, d)
    if not rows:
        return data, "field: empty file"
    r = pick(len(rows))
    c = pick(max(1, len(rows[r])))
    v = VALUES[pick(len(VALUES))]
    if c < len(rows[r]):
        rows[r][c] = v
    return _join(rows, d, eol), f"field row {r} col {c} := {v[:20]!r}"


def _op_delete_column(data: bytes, d: bytes, pick: Pick) -> tuple[bytes, str]:
    rows, eol = _split(data, d)
    c = pick(max(1, _columns(rows)))
    return _join([r[:c] + r[c + 1:] for r in rows], d, eol), f"delete column {c}"


def _op_duplicate_column(data: bytes, d: bytes, pick: Pick) -> tuple[bytes, str]:
    rows, eol = _split(data, d)
    c = pick(max(1, _columns(rows)))
    return _join([r + r[c:c + 1] for r in rows], d, eol), f"duplicate column {c}"


def _op_swap_columns(data: bytes, d: bytes, pick: Pick) -> tuple[bytes, str]:
    rows, eol = _split(data, d)
    n = max(1, _columns(rows))
    i, j = pick(n), pick(n)
    body_only = bool(pick(2))
    out = []
    for k, r in enumerate(rows):
        r = list(r)
        if i < len(r) and j < len(r) and (k > 0 or not body_only):
            r[i], r[j] = r[j], r[i]
        out.append(r)
    return _join(out, d, eol), f"swap columns {i},{j}{' (data only)' if body_only else ''}"


def _op_rows(data: bytes, d: bytes, pick: Pick) -> tuple[bytes, str]:
    rows, eol = _split(data, d)
    if not rows:
        return data, "rows: empty"
    kind = pick(4)
    r = pick(len(rows))
    if kind == 0:
        del rows[r]
        return _join(rows, d, eol), f"delete row {r}"
    if kind == 1:
        rows.insert(r, list(rows[r]))
        return _join(rows, d, eol), f"duplicate row {r}"
    if kind == 2:
        rows.insert(1 + pick(len(rows)), list(rows[0]))
        return _join(rows, d, eol), "duplicate header as a data row"
    return _join(rows[:1], d, eol), "header only"


def _op_bytes(data: bytes, d: bytes, pick: Pick) -> tuple[bytes, str]:
    kind = pick(9)
    if kind == 0:
        return b"", "empty file"
    if kind == 1:
        cut = pick(max(1, len(data)))
        return data[:cut], f"truncate at byte {cut}"
    if kind == 2:
        return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"), "CRLF line ends"
    if kind == 3:
        return b"\xef\xbb\xbf" + data, "UTF-8 BOM"
    if kind == 4:
        return data + b"\n\n  \n", "trailing blank lines"
    if kind == 5:
        return data.rstrip(b"\r\n"), "no final newline"
    if kind == 6:
        return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r"), "bare CR line ends"
    if kind == 7:
        pos = pick(max(1, len(data)))
        return data[:pos] + b'"' + data[pos:], f"unbalanced quote at byte {pos}"
    pos = pick(max(1, len(data)))
    return data[:pos] + b"\n" + data[pos:], f"line break at byte {pos}"


def _op_open_quote(data: bytes, d: bytes, pick: Pick) -> tuple[bytes, str]:
    """A quote opened at the start of a field and never closed (in the last field it used to swallow rows)."""
    rows, eol = _split(data, d)
    if not rows:
        return data, "quote: empty file"
    r = pick(len(rows))
    c = len(rows[r]) - 1 if pick(2) else pick(max(1, len(rows[r])))
    rows[r][c] = b'"' + rows[r][c]
    if pick(3) == 0 and r + 2 < len(rows):  # ... or closed two rows later
        rows[r + 2][-1] = rows[r + 2][-1] + b'"'
    return _join(rows, d, eol), f"open quote row {r} col {c}"


OPS = [_op_field, _op_field, _op_field, _op_delete_column, _op_duplicate_column, _op_swap_columns, _op_rows,
       _op_bytes, _op_bytes, _op_open_quote]


def data_rows(data: bytes, fmt: str) -> int:
    """Ground truth: non-blank lines (split at LF, like the loaders) less the header line."""
    text = data.decode("utf-8-sig")
    nonblank = sum(1 for line in text.split("\n") if line.strip())
    return nonblank - (0 if fmt == "gavel" else 1)


class Hang(Exception):
    """Raised by the campaign's alarm when one case runs past its time limit."""


@dataclass
class Outcome:
    kind: str
    """``"error"`` (a located InputError), ``"loaded"`` or ``"bad"`` (the contract was broken)."""
    detail: str = ""
    rows: int = 0
    jobs: int = 0
    skipped: int = 0


CLUSTER = "hetero"
"""The cluster the simulate checks run on (its GPU types also check a GPU-type column at load time)."""


def cluster_gpu_types(name: str = CLUSTER) -> list[str]:
    from ddlsched.cluster import load_cluster

    return list(load_cluster(name).gpu_types)


def check_load(path: Path, *, skip_invalid: bool, gpu_types: list[str] | None = None) -> Outcome:
    """Load ``path``; the contract: a located InputError, or ``jobs + skipped == data rows`` (and no skip when
    ``skip_invalid`` is off). Any other exception propagates (a traceback is a failure)."""
    try:
        t = load_trace(path, skip_invalid=skip_invalid, gpu_types=gpu_types)
    except InputError as e:
        msg = str(e)
        if str(path) not in msg or e.path != str(path):
            return Outcome("bad", f"error does not name the file: {msg[:300]}")
        if e.field is not None and e.line is None:
            return Outcome("bad", f"error names a field but no line: {msg[:300]}")
        return Outcome("error", msg[:300])
    rows = data_rows(path.read_bytes(), t.format)
    if not t.jobs:
        return Outcome("bad", f"silent loss: a trace with {rows} data rows loaded with no job", rows)
    filtered = sum(t.filtered.values())
    if len(t.jobs) + t.skipped + filtered != rows or t.rows != rows or (not skip_invalid and t.skipped):
        return Outcome("bad", f"silent loss: {len(t.jobs)} jobs + {t.skipped} skipped + {filtered} filtered != "
                              f"{rows} rows", rows, len(t.jobs), t.skipped)
    return Outcome("loaded", t.format, rows, len(t.jobs), t.skipped)


def check_simulate(path: Path | None, out: Path, extra: list[str], *, expect_jobs: int | None,
                   cluster: str = CLUSTER) -> Outcome:
    """``ddlsched simulate`` through click's CliRunner: exit 0 with ``jobs == expect_jobs`` in summary.json, or
    exit 2 with ``error:`` (an InputError/SimulationError raised past the command counts as exit 2, as
    ``ddlsched.cli.main`` maps it). Any other exception is a traceback."""
    from click.testing import CliRunner

    from ddlsched.cli import cli

    args = ["simulate", "--cluster", cluster, "--policy", "fifo", "--out", str(out), "--quiet", *extra]
    if path is not None:
        args += ["--trace", str(path)]
    r = CliRunner().invoke(cli, args)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        if isinstance(r.exception, Hang):
            raise r.exception
        if isinstance(r.exception, DdlschedError):
            return Outcome("engine" if "Simulation" in type(r.exception).__name__ else "error",
                           f"{type(r.exception).__name__}: {r.exception}"[:300])
        return Outcome("traceback", f"{type(r.exception).__name__}: {r.exception}"[:300])
    if r.exit_code == 0:
        s: dict[str, Any] = json.loads((out / "summary.json").read_text())
        if expect_jobs is not None and s["jobs"] != expect_jobs:
            return Outcome("bad", f"silent loss: summary jobs {s['jobs']} != {expect_jobs} rows")
        if "rows_read" in s and s["rows_read"] != s["jobs"] + sum(s["rows_filtered"].values()):
            return Outcome("bad", f"silent loss: rows_read {s['rows_read']} != jobs + filtered")
        return Outcome("loaded", "", s["jobs"], s["jobs"])
    if r.exit_code == 2 and ("error:" in r.output or "Error:" in r.output):
        if (out / "summary.json").exists():
            return Outcome("bad", "exit 2 but summary.json written")
        return Outcome("error", r.output.strip().splitlines()[-1][:300])
    return Outcome("bad", f"exit {r.exit_code}: {r.output[-300:]}")
