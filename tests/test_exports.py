"""Scheduler exports (issue 33): Slurm and Kubernetes formats, --states, rows filtered by reason, --gpus-from,
and the rows-read accounting in `traces info`, the run summary and the Python API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import ddlsched
from benchmark_module import load as load_benchmark
from ddlsched.cli import cli
from ddlsched.errors import InputError
from ddlsched.workload.loaders import detect_format, load_trace

ROOT = Path(__file__).resolve().parents[1]
SACCT = ROOT / "data/examples/sacct_gpu.txt"
PODS = ROOT / "data/examples/pods_gpu.csv"
MIXED = str(ROOT / "examples/clusters/mixed_a100_v100.yaml")


@pytest.fixture(autouse=True)
def _no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DDLSCHED_CACHE", "off")


def _adds_up(t) -> None:  # type: ignore[no-untyped-def]
    data_rows = sum(1 for line in Path(t.path).read_text().splitlines()[1:] if line.strip())
    assert t.rows == data_rows == len(t.jobs) + t.skipped + sum(t.filtered.values())


def test_slurm_sample_default_states_every_row_counted() -> None:
    t = load_trace(SACCT)
    assert t.format == "slurm" and detect_format(SACCT) == "slurm"
    assert t.filtered == {"state": 3, "never_ran": 2, "zero_gpus": 2, "step": 5}
    _adds_up(t)
    jobs = {j.job_id: j for j in t.jobs}
    assert jobs["4101"].state == "timeout" and jobs["4101"].duration_s == 12 * 3600
    assert jobs["4102"].num_gpus == 16 and jobs["4102"].gpu_type == "a100"
    assert jobs["4102"].duration_s == 86400 + 16 * 3600 + 45 * 60 + 19  # 1-16:45:19
    assert jobs["4108"].num_gpus == 4  # heterogeneous job: the CPU-only component is zero_gpus
    assert jobs["4114"].gpu_type == "v100" and jobs["4114"].num_gpus == 8  # typed TRES only
    assert "4105" not in jobs  # CANCELLED by 20231: not a default state
    assert jobs["4100"].arrival_s == 0 and jobs["4101"].arrival_s == 223
    assert {"4107_1", "4107_2", "4107_3"} <= set(jobs)  # array tasks are jobs; 4107_[4-6] never ran


def test_slurm_cancelled_after_running_is_kept_with_its_elapsed_time_and_marked() -> None:
    t = load_trace(SACCT, states="completed,timeout,failed,cancelled")
    j = next(j for j in t.jobs if j.job_id == "4105")
    assert j.state == "cancelled" and j.duration_s == 3 * 3600 + 25 * 60 + 9
    assert "4106" not in {x.job_id for x in t.jobs}  # cancelled before it started: never ran
    assert t.filtered["never_ran"] == 2
    assert any("1 cancelled" in n for n in t.notes)
    _adds_up(t)


def test_slurm_all_states_requeued_runs_get_distinct_ids() -> None:
    t = load_trace(SACCT, states="all")
    ids = [j.job_id for j in t.jobs]
    assert "4113" in ids and "4113#2" in ids and "state" not in t.filtered
    _adds_up(t)


def test_states_flag_rejects_unknown_names() -> None:
    with pytest.raises(InputError, match=r"unknown Slurm state.*'finished'"):
        load_trace(SACCT, states="completed,finished")
    with pytest.raises(InputError, match=r"--states .* is not accepted by format 'generic_csv'"):
        load_trace(SACCT, format="generic_csv", states="completed")


def test_slurm_bad_rows_are_located_and_counted_with_skip_invalid(tmp_path: Path) -> None:
    lines = SACCT.read_text().splitlines()
    lines[1] = lines[1].replace("gres/gpu=1", "gres/gpu=one")
    lines[4] = lines[4].replace("TIMEOUT", "EXPLODED")
    bad = tmp_path / "bad.txt"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"bad.txt:2, field 'AllocTRES'.*whole number"):
        load_trace(bad)
    t = load_trace(bad, skip_invalid=True)
    assert t.skipped == 2 and any("unknown Slurm state 'EXPLODED'" in r for r in t.skipped_reasons)
    _adds_up(t)


def test_slurm_comma_separated_and_gres_columns(tmp_path: Path) -> None:
    f = tmp_path / "sacct.csv"
    f.write_text("JobID,Submit,Start,Elapsed,State,AllocGRES\n"
                 "1,2024-01-01T00:00:00,2024-01-01T00:00:10,01:00:00,COMPLETED,gpu:v100:2\n"
                 "2,2024-01-01T00:01:00,None,00:00:00,PENDING,\n"
                 "3,2024-01-01T00:02:00,2024-01-01T00:02:00,10:00,COMPLETED,gpu:4\n")
    t = load_trace(f)
    assert t.format == "slurm" and [(j.num_gpus, j.gpu_type) for j in t.jobs] == [(2, "v100"), (4, None)]
    assert t.jobs[1].duration_s == 600 and t.filtered == {"never_ran": 1}


def test_slurm_columnar_path_equals_row_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gen = load_benchmark("gen_slurm_export")
    f = tmp_path / "sacct.txt"
    gen.write_export(f, 3000, seed=3)
    monkeypatch.setenv("DDLSCHED_FAST_CSV", "off")
    rows = load_trace(f)
    monkeypatch.setenv("DDLSCHED_FAST_CSV", "always")
    from ddlsched.workload.loaders import slurm
    from ddlsched.workload.loaders._common import Builder

    assert slurm._load_fast(f, Builder(f, "slurm", skip_invalid=False), frozenset(slurm.SLURM_DEFAULT), "|",
                            None) is not None  # the fast path is taken
    fast = load_trace(f)
    assert fast.jobs == rows.jobs and fast.notes == rows.notes and fast.filtered == rows.filtered
    assert fast.epoch == rows.epoch and fast.mapping == rows.mapping
    _adds_up(fast)


def test_kubernetes_pods_phases_fractions_and_deletion() -> None:
    t = load_trace(PODS)
    assert t.format == "kubernetes"
    assert t.filtered == {"state": 2, "never_ran": 2, "zero_gpus": 1}
    _adds_up(t)
    jobs = {j.job_id: j for j in t.jobs}
    assert jobs["infer-llm-55c1b"].num_gpus == 1 and jobs["infer-llm-55c1b"].gpu_request == 0.5  # 1 × 0.5
    assert jobs["dl-rec-0b7e3"].gpu_request == 0.5
    assert any(n.startswith("2 jobs asked for a fractional number of GPUs: rounded up") for n in t.notes)
    assert jobs["eval-vit-11aa2"].duration_s == 40 * 60  # no finishedAt: until deletion, noted
    assert any("1 pods have no finishedAt" in n for n in t.notes)
    assert jobs["train-gpt-3c4e1"].state == "failed" and jobs["train-gpt-3c4e1"].user == "nlp"
    with pytest.raises(InputError, match=r"fractional GPU request 0\.5"):
        load_trace(PODS, fractional_gpus="error")
    t2 = load_trace(PODS, states="succeeded,failed,running,unknown", skip_invalid=True)
    assert t2.skipped == 1 and "ran but has no end time" in t2.skipped_reasons[0]  # the running notebook
    _adds_up(t2)


def test_generic_csv_gpus_from_tres_and_regex(tmp_path: Path) -> None:
    f = tmp_path / "export.csv"
    f.write_text("JobID,Submit,Elapsed,AllocTRES,Gres\n"
                 "1,0,3600,\"billing=8,cpu=8,gres/gpu=2,mem=32G\",gpu:a100:2\n"
                 "2,60,600,\"cpu=4,gres/gpu=8\",gpu:a100:8\n")
    t = load_trace(f, gpus_from="AllocTRES:gres/gpu")
    assert t.format == "generic_csv" and [j.num_gpus for j in t.jobs] == [2, 8]
    assert t.mapping["num_gpus"] == "gres/gpu in AllocTRES"
    t2 = load_trace(f, gpus_from=r"Gres~gpu:\w+:(\d+)")
    assert [j.num_gpus for j in t2.jobs] == [2, 8]
    with pytest.raises(InputError, match="expected COLUMN:KEY"):
        load_trace(f, gpus_from="AllocTRES")
    with pytest.raises(InputError, match="does not match"):
        load_trace(f, gpus_from=r"Gres~tpu:(\d+)")


def test_cli_traces_info_and_simulate_count_rows_by_reason(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["traces", "info", str(SACCT), "--states", "completed,cancelled"])
    assert r.exit_code == 0, r.output
    assert "rows read" in r.output and "filtered: state" in r.output and "filtered: step" in r.output
    out = tmp_path / "run"
    r = CliRunner().invoke(cli, ["simulate", "--trace", str(SACCT), "--cluster", MIXED, "--policy", "fifo",
                                 "--out", str(out), "--quiet"])
    assert r.exit_code == 0, r.output
    s = json.loads((out / "summary.json").read_text())
    assert s["rows_read"] == 25 == s["jobs"] + sum(s["rows_filtered"].values())
    assert "rows read 25 = 13 jobs" in r.output
    r = CliRunner().invoke(cli, ["traces", "info", str(SACCT), "--states", "bogus"])
    assert r.exit_code == 2 and "unknown Slurm state" in r.output


def test_api_window_warmup_cooldown_on_loaded_trace_and_load_trace() -> None:
    muri = ROOT / "data/traces/muri/trace1.csv"
    t = ddlsched.load_trace(muri, window="0:30d")
    assert 0 < len(t.jobs) < 1494 and "--window 0:30d" in t.notes[-1]
    r = ddlsched.simulate(t, "rack256", "fifo", window="0:20d", warmup="1d", cooldown="5jobs")
    assert r.summary["window_start_s"] == 86400 and r.summary["jobs_measured"] < r.summary["jobs_completed"]
    full = ddlsched.simulate(muri, "rack256", "fifo", window="0:20d", warmup="1d", cooldown="5jobs")
    assert full.summary["avg_jct_s"] == r.summary["avg_jct_s"]  # a path and a loaded trace agree
    with pytest.raises(ddlsched.errors.ConfigError, match=r"pass warmup= to ddlsched\.simulate"):
        ddlsched.load_trace(muri, warmup="1d")
    s = ddlsched.simulate(load_trace(SACCT), MIXED, "fifo").summary
    assert s["rows_read"] == s["jobs"] + sum(s["rows_filtered"].values())


def test_sweep_cell_summary_counts_rows_by_reason() -> None:
    from ddlsched.experiments.runner import CellParams, run_cell

    out = run_cell(CellParams(policy="fifo", cluster=MIXED, trace=str(SACCT),
                              trace_options={"states": "completed,timeout,failed,cancelled", "skip_invalid": True}))
    assert out.error is None, out.error
    s = out.summary
    assert s is not None and s["rows_read"] == 25 == s["jobs"] + sum(s["rows_filtered"].values())
    assert s["rows_filtered"]["state"] == 4


def test_fractional_share_is_rounded_up_by_default_and_kept_with_keep(tmp_path: Path) -> None:
    """docs/traces.md "Fractional GPUs and GPU sharing": a share is rounded up (kept in JobSpec.gpu_request), refused
    with ``error``, or kept as a share of one GPU with ``keep`` (JobSpec.gpu_share); never truncated."""
    csv = tmp_path / "f.csv"
    csv.write_text("job_id,arrival,duration,num_gpus\na,0,60,0.25\nb,5,60,2\n")
    for path in (PODS, csv):
        kept = [j for j in load_trace(path, fractional_gpus="keep").jobs if j.gpu_request is not None]
        assert kept and all(j.num_gpus == 1 and j.gpu_share == j.gpu_request < 1 for j in kept)
    j = load_trace(csv).jobs[0]
    assert (j.num_gpus, j.gpu_request, j.gpu_share) == (1, 0.25, None)
    r = CliRunner().invoke(cli, ["traces", "info", str(csv), "--fractional-gpus", "keep"])
    assert r.exit_code == 0 and "1 kept as shares" in r.output, r.output


def test_slurm_gpu_shares_are_zero_gpus_with_a_note_on_both_paths(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "sacct.txt"
    f.write_text("JobID|Submit|Start|Elapsed|State|AllocTRES\n"
                 "1|2024-01-01T00:00:00|2024-01-01T00:00:10|01:00:00|COMPLETED|cpu=4,gres/gpu=2,mem=8G\n"
                 "2|2024-01-01T00:01:00|2024-01-01T00:01:00|00:30:00|COMPLETED|cpu=2,gres/shard=2,mem=4G\n"
                 "3|2024-01-01T00:02:00|2024-01-01T00:02:00|00:10:00|COMPLETED|cpu=2,mem=4G\n"
                 "4|2024-01-01T00:03:00|2024-01-01T00:03:00|00:10:00|COMPLETED|cpu=2,gres/mps=50,mem=4G\n"
                 "4.batch|2024-01-01T00:03:00|2024-01-01T00:03:00|00:10:00|COMPLETED|cpu=2,gres/mps=50,mem=4G\n")
    out = {}
    for mode in ("off", "always"):
        monkeypatch.setenv("DDLSCHED_FAST_CSV", mode)
        out[mode] = t = load_trace(f)
        assert [j.job_id for j in t.jobs] == ["1"] and t.filtered == {"zero_gpus": 3, "step": 1}
        assert any(n.startswith("2 of the zero_gpus rows ask only for GPU shares") for n in t.notes), t.notes
        _adds_up(t)
    assert out["off"].notes == out["always"].notes and out["off"].jobs == out["always"].jobs
