"""Predicted iteration-time slowdown of a job spread over servers or racks, alone on the cluster (docs/physics.md §13).

    PYTHONPATH=src python benchmarks/placement_slowdown.py [--presets philly512,rack256] [--gpus 2,4,8,16]
                                                           [--models vgg16,resnet50] [--csv FILE]

For every bundled model profile, every GPU count G and every preset, three placements of G GPUs:

* ``1 server``  — all G GPUs on one server (only when G fits in one);
* ``2 servers`` — G/2 GPUs on each of two servers of one rack;
* ``2 racks``   — G/2 GPUs on one server in each of two racks.

The reference is ``1 server`` when G fits in one, else ``2 servers`` (the tightest placement). Each placement is
timed with the perf models' ``isolated`` API (the job alone on an empty cluster, no contention) under ``none``,
``maxmin`` (alone it must equal ``none``; the script checks it), and ``phased`` with overlap 0 and 0.5. Slowdown =
iteration time ÷ the reference placement's iteration time under the same model. Prints Markdown tables.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ddlsched.cluster import load_cluster
from ddlsched.cluster.topology import Cluster
from ddlsched.perf import make_perf_model
from ddlsched.perf.base import PerfModel, Placement
from ddlsched.workload.profiles import ModelProfile, default_catalog

PLACEMENTS = ("1 server", "2 servers", "2 racks")
MODELS: tuple[tuple[str, str, dict[str, float]], ...] = (
    ("none", "none", {}),
    ("maxmin", "maxmin", {}),
    ("phased ω=0", "phased", {"overlap": 0.0}),
    ("phased ω=0.5", "phased", {"overlap": 0.5}),
)
_REL_TOL = 1e-12


def placements(cluster: Cluster, n: int) -> dict[str, tuple[int, ...] | None]:
    """GPU ids of the three placements of ``n`` GPUs (module docstring); ``None`` where one does not fit.

    Uses the first servers of rack 0 (and the first server of rack 1 for ``2 racks``)."""
    out: dict[str, tuple[int, ...] | None] = dict.fromkeys(PLACEMENTS)
    rack0 = cluster.rack_servers[0]
    first = cluster.server_gpus[rack0[0]]
    if n <= len(first):
        out["1 server"] = first[:n]
    if n >= 2 and n % 2 == 0:
        half = n // 2
        if len(rack0) >= 2 and all(len(cluster.server_gpus[s]) >= half for s in rack0[:2]):
            out["2 servers"] = tuple(g for s in rack0[:2] for g in cluster.server_gpus[s][:half])
        if cluster.num_racks >= 2:
            a, b = rack0[0], cluster.rack_servers[1][0]
            if len(cluster.server_gpus[a]) >= half and len(cluster.server_gpus[b]) >= half:
                out["2 racks"] = cluster.server_gpus[a][:half] + cluster.server_gpus[b][:half]
    return out


@dataclass(frozen=True, slots=True)
class Row:
    """One (model profile, GPU count, perf model) row: iteration times and slowdowns per placement."""

    profile: str
    gpus: int
    model: str
    reference: str  # the placement the slowdowns are relative to
    iteration_s: dict[str, float | None]
    slowdown: dict[str, float | None]


def slowdowns(perf: PerfModel, profile: ModelProfile, n: int, label: str = "") -> Row | None:
    """Iteration time of ``profile`` on ``n`` GPUs alone on ``perf``'s cluster for each placement, and its ratio to
    the reference placement (1 server, else 2 servers). ``None`` when no placement fits."""
    where = placements(perf.cluster, n)
    times: dict[str, float | None] = {}
    for name, gpus in where.items():
        times[name] = None if gpus is None else perf.isolated(Placement(f"{profile.name}-{name}", gpus,
                                                                        profile)).total_s
    ref = next((p for p in PLACEMENTS if times[p] is not None), None)
    if ref is None:
        return None
    base = times[ref]
    assert base is not None
    slow = {p: (None if t is None else t / base) for p, t in times.items()}
    return Row(profile.name, n, label or perf.name, ref, times, slow)


def table(cluster: Cluster, profiles: Sequence[ModelProfile], gpu_counts: Sequence[int]) -> list[Row]:
    """Rows for every profile × GPU count × perf model of :data:`MODELS` on ``cluster``; checks maxmin = none."""
    models = [(label, make_perf_model(name, cluster, **params)) for label, name, params in MODELS]
    rows: list[Row] = []
    for prof in profiles:
        for n in gpu_counts:
            got = [r for label, m in models if (r := slowdowns(m, prof, n, label)) is not None]
            by = {r.model: r for r in got}
            if "none" in by and "maxmin" in by:
                for p in PLACEMENTS:
                    a, b = by["none"].iteration_s[p], by["maxmin"].iteration_s[p]
                    if (a is None) != (b is None) or (a is not None and b is not None
                                                      and abs(a - b) > _REL_TOL * max(a, b)):
                        raise AssertionError(f"{prof.name} ×{n} {p}: maxmin alone {b} ≠ none {a}")
            rows.extend(got)
    return rows


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def markdown(cluster: Cluster, rows: Sequence[Row]) -> str:
    """One Markdown table per preset: a row per (profile, G), a column per placement × model (maxmin = none)."""
    shown = [m for m, _, _ in MODELS if m != "maxmin"]
    head = ["model", "G", "ref. iter ms"] + [f"{p} {m}" for p in PLACEMENTS[1:] for m in shown]
    lines = [f"**{cluster.name}** (NIC {cluster.nic_Bps(0) * 8 / 1e9:g} Gb/s, uplinks "
             f"{cluster.oversubscription:g}:1, intra-server {cluster.intra_gbps:g} Gb/s; slowdown vs the reference "
             "placement, `none` = `maxmin` alone)", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    by: dict[tuple[str, int], dict[str, Row]] = {}
    for r in rows:
        by.setdefault((r.profile, r.gpus), {})[r.model] = r
    for (prof, n), ms in by.items():
        ref = ms["none"]
        ref_ms = (ref.iteration_s[ref.reference] or 0.0) * 1e3
        cells = [prof, f"{n}" + ("" if ref.reference == "1 server" else "*"), f"{ref_ms:.0f}"]
        cells += [_fmt(ms[m].slowdown[p]) for p in PLACEMENTS[1:] for m in shown]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("\\* reference = 2 servers (G does not fit in one server).")
    return "\n".join(lines)


def compact_markdown(cluster: Cluster, rows: Sequence[Row], gpu_counts: Sequence[int]) -> str:
    """One row per profile, one column per G: the spread placement's slowdown under ``none`` (= ``maxmin`` =
    ``phased`` ω=0 alone) / ``phased`` ω=0.5. The spread placement is ``2 servers`` (``2 racks`` vs ``2 servers``
    when G does not fit in one server); a ``2 racks`` value that differs is shown after a ``‖``."""
    by: dict[tuple[str, int], dict[str, Row]] = {}
    for r in rows:
        by.setdefault((r.profile, r.gpus), {})[r.model] = r
    head = ["model"] + [f"G={n}" + ("" if n <= cluster.max_gpus_per_server else " (2 racks)") for n in gpu_counts]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for prof in dict.fromkeys(p for p, _ in by):
        cells = [prof]
        for n in gpu_counts:
            ms = by.get((prof, n))
            if ms is None:
                cells.append("—")
                continue
            spread = "2 servers" if ms["none"].reference == "1 server" else "2 racks"
            cell = f"{_fmt(ms['none'].slowdown[spread])} / {_fmt(ms['phased ω=0.5'].slowdown[spread])}"
            if spread == "2 servers" and any(ms[m].slowdown["2 racks"] != ms[m].slowdown["2 servers"]
                                             for m in ("none", "phased ω=0.5")):
                cell += f" ‖ {_fmt(ms['none'].slowdown['2 racks'])} / {_fmt(ms['phased ω=0.5'].slowdown['2 racks'])}"
            cells.append(cell)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--presets", default="philly512,rack256")
    ap.add_argument("--gpus", default="2,4,8,16")
    ap.add_argument("--models", default="", help="comma-separated profile names (default: every bundled one)")
    ap.add_argument("--csv", type=Path, default=None, help="also write every row as CSV")
    ap.add_argument("--compact", action="store_true", help="one row per profile: none / phased ω=0.5 per G")
    a = ap.parse_args(argv)
    cat = default_catalog()
    names = [m for m in a.models.split(",") if m] or cat.names()
    profiles = [cat[m] for m in names]
    counts = [int(x) for x in a.gpus.split(",") if x]
    flat: list[dict[str, object]] = []
    for preset in a.presets.split(","):
        cluster = load_cluster(preset)
        rows = table(cluster, profiles, counts)
        if a.compact:
            print(f"**{preset}**: slowdown of the spread placement, `none` (= `maxmin` = `phased` ω=0) / "
                  "`phased` ω=0.5\n")
            print(compact_markdown(cluster, rows, counts))
        else:
            print(markdown(cluster, rows))
        print()
        for r in rows:
            for p in PLACEMENTS:
                flat.append({"preset": preset, "profile": r.profile, "gpus": r.gpus, "perf_model": r.model,
                             "placement": p, "reference": r.reference, "iteration_s": r.iteration_s[p],
                             "slowdown": r.slowdown[p]})
    if a.csv is not None:
        with a.csv.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(flat[0]))
            w.writeheader()
            w.writerows(flat)
        print(f"rows written to {a.csv}", file=sys.stderr)


if __name__ == "__main__":
    main()
