"""benchmarks/policy_suite.py --quick: runs, writes complete outputs, ranks every policy of the cell and judges
hindsight's targets (whatever the verdict)."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from benchmark_module import load as load_benchmark


@pytest.mark.slow
def test_quick_suite_writes_ranked_cells(tmp_path: Path) -> None:
    suite = load_benchmark("policy_suite")
    assert suite.main(["--quick", "--out", str(tmp_path)]) == 0
    rows = list(csv.DictReader((tmp_path / "cells.csv").open()))
    assert {r["policy"] for r in rows} == set(suite.QUICK_POLICIES)
    assert sorted(int(r["rank"]) for r in rows) == list(range(1, len(rows) + 1))  # every policy ran and is ranked
    assert all(r["seeds"] == "2" and math.isfinite(float(r["avg_jct_s"])) for r in rows)
    flags = {r["policy"]: r["clairvoyant"] for r in rows}
    assert flags["hindsight"] == "False" and flags["srtf+consolidated"] == "True"
    ours = next(r for r in rows if r["policy"] == "hindsight")
    assert ours["target"].startswith(("MET", "missed")) and "vs best clairvoyant" in ours["target"]
    md = (tmp_path / "suite.md").read_text()
    assert "## Targets cell by cell" in md and "hindsight-oracle" in md
    assert (tmp_path / "suite.png").stat().st_size > 0
    # resumed: a second call reruns nothing and writes the same table
    before = (tmp_path / "runs.jsonl").read_text()
    assert suite.main(["--quick", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "runs.jsonl").read_text() == before


def test_bad_flags_exit_2(tmp_path: Path) -> None:
    suite = load_benchmark("policy_suite")
    for argv in (["--loads", "x"], ["--loads", "3"], ["--policies", "nope"], ["--slices", "nope"]):
        with pytest.raises(SystemExit) as e:
            suite.main([*argv, "--out", str(tmp_path)])
        assert e.value.code == 2


def test_default_cells_pair_each_slice_with_its_clusters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --clusters a slice runs only on the clusters it is sized for; its trace options reach the loader."""
    import json

    suite = load_benchmark("policy_suite")
    tiny = suite.Slice("tiny", "tiresias/yarn-gput1000.csv", 40,
                       options=(("arrival_rate_per_s", 0.01), ("shuffle", True)), clusters=("n8g8",))
    monkeypatch.setitem(suite.SLICES, "tiny", tiny)
    monkeypatch.setattr(suite, "FULL", {"slices": ["tiny"], "clusters": ["n8g8", "rack256"], "loads": [0.9],
                                        "seeds": [0]})
    assert suite.main(["--policies", "fifo+consolidated", "--out", str(tmp_path)]) == 0
    runs = [json.loads(x) for x in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert [(r["cluster"], r["jobs"], r["status"]) for r in runs] == [("n8g8", 40, "ok")]
    # the options are used: without them every job of the list arrives at 0 (no span, no offered load to scale)
    assert runs[0]["load_scale"] > 0 and math.isfinite(runs[0]["load_scale"])
    assert suite.main(["--policies", "fifo+consolidated", "--clusters", "rack256", "--out", str(tmp_path)]) == 0
    runs = [json.loads(x) for x in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert [r["cluster"] for r in runs] == ["n8g8", "rack256"]  # an explicit --clusters runs what it names
    # each run names its physics; resuming under another one is refused rather than mixed into one table
    from ddlsched.perf import DEFAULT_PERF_MODEL

    assert {r["perf_model"] for r in runs} == {DEFAULT_PERF_MODEL}
    # a GPU-sharing policy runs the network physics inside its sharing physics: saved as that network, so the
    # folder resumes (it was refused once, its summary saying "sharing")
    for _ in range(2):
        assert suite.main(["--policies", "fifo+consolidated,sjf-bsbf", "--clusters", "rack256",
                           "--out", str(tmp_path)]) == 0
    runs = [json.loads(x) for x in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert [r["policy"] for r in runs] == ["fifo+consolidated", "fifo+consolidated", "sjf-bsbf"]
    assert {r["perf_model"] for r in runs} == {DEFAULT_PERF_MODEL}
    with pytest.raises(SystemExit) as e:
        suite.main(["--policies", "fifo+consolidated", "--perf-model", "maxmin", "--out", str(tmp_path)])
    assert e.value.code == 2


def test_verdict_among_the_same_execution_model() -> None:
    """A rounds-model policy best in the cell: the verdict against every policy, and one against the fluid-model
    field (hindsight's own), both computed from the runs."""
    suite = load_benchmark("policy_suite")
    cell = {"slice": "s", "cluster": "c", "load": 0.9, "seed": 0, "status": "ok", "p99_jct_s": 1.0,
            "makespan_s": 1.0, "max_slowdown": 1.0}
    runs = [{**cell, "policy": p, "avg_jct_s": jct, "clairvoyant": seer, "model": model}
            for p, jct, seer, model in [("hindsight", 80.0, False, "fluid"), ("hlas", 50.0, False, "rounds"),
                                        ("hare-offline", 48.0, True, "rounds"),
                                        ("tiresias+consolidated", 100.0, False, "fluid"),
                                        ("srtf+consolidated", 75.0, True, "fluid")]]
    rows = suite.aggregate(runs)
    ours = next(r for r in rows if r["policy"] == "hindsight")
    assert ours["target"] == "missed: +60.0% vs best non-clairvoyant hlas, +66.7% vs best clairvoyant hare-offline"
    assert ours["target_same_model"] == ("MET: -20.0% vs best non-clairvoyant tiresias+consolidated, +6.7% vs best "
                                         "clairvoyant srtf+consolidated")
    md = suite.markdown(rows, "cmd")
    assert "among fluid-model policies: MET" in md and "hlas (rounds model)" in md
    # one model in the field: no second verdict
    rows = suite.aggregate([r for r in runs if r["model"] == "fluid"])
    assert next(r for r in rows if r["policy"] == "hindsight")["target_same_model"] == ""


def test_tabulate_runs_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--tabulate writes the tables of every saved cell and runs nothing; with no saved run it exits 2."""
    import json

    suite = load_benchmark("policy_suite")
    with pytest.raises(SystemExit) as e:
        suite.main(["--tabulate", "--out", str(tmp_path)])
    assert e.value.code == 2
    cell = {"slice": "s", "cluster": "c", "load": 0.9, "seed": 0, "status": "ok", "p99_jct_s": 1.0,
            "makespan_s": 1.0, "max_slowdown": 1.0, "model": "fluid"}
    runs = [{**cell, "policy": p, "avg_jct_s": jct, "clairvoyant": seer}
            for p, jct, seer in [("hindsight", 80.0, False), ("tiresias+consolidated", 100.0, False),
                                 ("srtf+consolidated", 75.0, True)]]
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    monkeypatch.setattr(suite, "run_one", lambda *a: pytest.fail("--tabulate ran a policy"))
    assert suite.main(["--tabulate", "--out", str(tmp_path)]) == 0
    rows = list(csv.DictReader((tmp_path / "cells.csv").open()))
    assert [r["policy"] for r in rows] == ["srtf+consolidated", "hindsight", "tiresias+consolidated"]
    assert "MET: -20.0% vs best non-clairvoyant tiresias+consolidated" in (tmp_path / "suite.md").read_text()


@pytest.mark.parametrize(("jcts", "reason"), [
    ({"hindsight": 80.0, "tiresias+consolidated": 100.0, "srtf+consolidated": 75.0}, "met"),
    ({"hindsight": 97.0, "tiresias+consolidated": 100.0, "srtf+consolidated": 95.0},
     "out of reach of every policy measured: the best of all, srtf+consolidated, is only -5.0% vs the best "
     "non-clairvoyant one, tiresias+consolidated"),
    ({"hindsight": 85.0, "tiresias+consolidated": 100.0, "srtf+consolidated": 50.0, "hindsight-oracle": 52.0},
     "trails the clairvoyant srtf+consolidated by +70.0% (prediction; the perfect-predictor variant is +4.0% vs "
     "srtf+consolidated)"),
    ({"hindsight": 85.0, "tiresias+consolidated": 100.0, "srtf+consolidated": 50.0, "hindsight-oracle": 70.0},
     "trails the clairvoyant srtf+consolidated by +70.0% (mechanisms; the perfect-predictor variant is +40.0% vs "
     "srtf+consolidated)"),
    ({"hindsight": 101.0, "tiresias+consolidated": 100.0, "srtf+consolidated": 60.0},
     "srtf+consolidated is -40.0% vs the best non-clairvoyant one, hindsight +1.0%"),
])
def test_the_reason_of_each_verdict_comes_from_the_cell(jcts: dict[str, float], reason: str) -> None:
    suite = load_benchmark("policy_suite")
    cell = {"slice": "s", "cluster": "c", "load": 0.9, "seed": 0, "status": "ok", "p99_jct_s": 1.0,
            "makespan_s": 1.0, "max_slowdown": 1.0, "model": "fluid"}
    seers = {"srtf+consolidated": True, "hindsight-oracle": True}
    rows = suite.aggregate([{**cell, "policy": p, "avg_jct_s": j, "clairvoyant": seers.get(p, False)}
                            for p, j in jcts.items()])
    assert next(r for r in rows if r["policy"] == "hindsight")["why"] == reason


def test_a_cut_run_names_its_physics_and_a_folder_holding_one_resumes(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from ddlsched.perf import DEFAULT_PERF_MODEL

    suite = load_benchmark("policy_suite")
    cut = suite.run_one("fifo+consolidated", suite.SLICES["quick"], "n8g8", 1.0, 0, 1e-4)
    assert cut == {"status": "timeout > 0.0001 s", "perf_model": DEFAULT_PERF_MODEL}
    ok = {"slice": "quick", "cluster": "n8g8", "load": 0.9, "seed": 0, "status": "ok", "avg_jct_s": 1.0,
          "p99_jct_s": 1.0, "makespan_s": 1.0, "max_slowdown": 1.0, "model": "fluid", "clairvoyant": False,
          "policy": "fifo+consolidated", "perf_model": DEFAULT_PERF_MODEL}
    legacy_cut = {k: ok[k] for k in ("slice", "cluster", "load", "seed", "model")} | {
        "policy": "sjf+consolidated", "clairvoyant": True, "status": "timeout > 120 s"}  # saved without the field
    (tmp_path / "runs.jsonl").write_text(json.dumps(ok) + "\n" + json.dumps(legacy_cut) + "\n")
    monkeypatch.setattr(suite, "offered_unscaled", lambda *a: 0.5)
    monkeypatch.setattr(suite, "run_one", lambda *a: pytest.fail("a saved run was run again"))
    assert suite.main(["--slices", "quick", "--clusters", "n8g8", "--loads", "0.9", "--seeds", "0", "--policies",
                       "fifo+consolidated,sjf+consolidated", "--out", str(tmp_path)]) == 0


def test_the_docs_targets_table_is_the_saved_suites() -> None:
    """docs/policies/hindsight.md shows the saved field's targets table as `--tabulate` wrote it (one meaning per
    number: the page cannot drift from the runs)."""
    root = Path(__file__).resolve().parents[1]

    def table(text: str, heading: str) -> list[str]:
        lines = text.split(heading, 1)[1].strip().splitlines()
        return lines[: next((i for i, line in enumerate(lines) if not line.startswith("|")), len(lines))]

    saved = table((root / "benchmarks/policy_suite_results/suite.md").read_text(), "## Targets cell by cell")
    shown = table((root / "docs/policies/hindsight.md").read_text(), "### Targets cell by cell")
    assert len(saved) == 2 + 29 and shown == saved
