"""The user's own trace loads with flags alone: Slurm/Kubernetes-style exports (ISO times, clock durations,
end columns, fractional GPUs, GPU types, unknown models, extra model profiles, folders of files)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ddlsched.cli import cli
from ddlsched.errors import InputError
from ddlsched.workload.inputs import load_workload_and_models
from ddlsched.workload.loaders import detect_format, load_trace
from ddlsched.workload.loaders.timevalues import parse_time
from ddlsched.workload.model_mapping import assign_model
from ddlsched.workload.profiles import load_models

ROOT = Path(__file__).resolve().parents[1]

SLURM = """\
JobID,User,Submit,Start,End,Elapsed,AllocGPUs,GPUType,Model
101,ann,2024-03-01T08:00:00,2024-03-01T08:05:00,2024-03-01T09:05:00,01:00:00,0.5,V100,resnet50
102,bob,2024-03-01T08:30:00,2024-03-01T08:31:00,2024-03-02T10:31:00,1-02:00:00,4,v100,llama-7b
103,ann,2024-03-01T09:00:00,2024-03-01T09:00:10,2024-03-01T09:10:10,10:00,2,K80,bert
"""
SLURM_FLAGS = ["--column", "arrival=Submit", "--column", "duration=Elapsed", "--column", "num_gpus=AllocGPUs",
               "--column", "gpu_type=GPUType", "--column", "user=User", "--unknown-models", "map"]


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def simulate(tmp_path: Path, *args: str, cluster: str = "n8g8"):
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["simulate", "--cluster", cluster, "--policy", "fifo", "--out", str(out), "--quiet",
                                 *args])
    return r, out


def test_slurm_style_export_loads_and_runs_with_flags_only(tmp_path: Path) -> None:
    f = write(tmp_path, "slurm.csv", SLURM)
    r, out = simulate(tmp_path, "--trace", str(f), *SLURM_FLAGS, cluster="hetero")
    assert r.exit_code == 0, r.output
    s = json.loads((out / "summary.json").read_text())
    assert s["jobs"] == 3 and s["jobs_completed"] == 3
    assert "rounded up" in r.output and "llama-7b" in r.output and "implied" in r.output
    w = load_workload_and_models(str(f), seed=0, gpu_types=["V100", "K80"], options={
        "columns": {"arrival": "Submit", "duration": "Elapsed", "num_gpus": "AllocGPUs", "gpu_type": "GPUType",
                    "user": "User"}, "unknown_models": "map"})
    by_id = {j.job_id: j for j in w.jobs}
    assert [by_id[i].arrival_s for i in ("101", "102", "103")] == [0.0, 1800.0, 3600.0]
    assert [by_id[i].duration_s for i in ("101", "102", "103")] == [3600.0, 26 * 3600.0, 600.0]
    assert (by_id["101"].num_gpus, by_id["101"].gpu_request) == (1, 0.5)
    assert [by_id[i].gpu_type for i in ("101", "102", "103")] == ["V100", "V100", "K80"]  # cluster's spelling
    assert by_id["102"].model == assign_model("102", seed=0) and by_id["101"].model == "resnet50"
    assert by_id["101"].user == "ann" and w.trace is not None and w.trace.epoch is not None


def test_column_implies_generic_format_readme_example(tmp_path: Path) -> None:
    f = write(tmp_path, "my_trace.csv", "job_id,submission_time,run,num_gpu\nj1,0,100,1\nj2,5,200,2\n")
    with pytest.raises(InputError, match="--format"):
        detect_format(f)  # 'run' is no known duration spelling: detection alone cannot load it
    r, out = simulate(tmp_path, "--trace", str(f), "--column", "duration=run", "--column", "num_gpus=num_gpu",
                      "--time-unit", "s")
    assert r.exit_code == 0, r.output
    assert json.loads((out / "summary.json").read_text())["jobs"] == 2


def test_duration_unit_flag(tmp_path: Path) -> None:
    f = write(tmp_path, "t.csv", "job_id,submit_time,duration,num_gpus\na,0,2,1\nb,30,0.5,1\n")
    t = load_trace(f, time_unit="s", duration_unit="h")
    assert [(j.arrival_s, j.duration_s) for j in t.jobs] == [(0.0, 7200.0), (30.0, 1800.0)]
    r, out = simulate(tmp_path, "--trace", str(f), "--duration-unit", "min", "--format", "generic_csv")
    assert r.exit_code == 0, r.output
    assert json.loads((out / "summary.json").read_text())["jobs"] == 2
    with pytest.raises(InputError, match="--duration-unit"):
        load_trace(f, duration_unit="fortnight")


@pytest.mark.parametrize(("text", "kind", "seconds"), [
    ("90", "number", 90.0), ("1.5e3", "number", 1500.0), ("05:30", "clock", 330.0), ("01:00:00", "clock", 3600.0),
    ("100:00:00", "clock", 360000.0), ("1-02:03:04", "clock", 93784.0), ("2-03", "clock", 2 * 86400 + 3 * 3600.0),
    ("0-00:00:01.5", "clock", 1.5), ("2024-03-01T08:00:00", "timestamp", 0.0),
    ("2024-03-01 08:00:00+02:00", "timestamp", 0.0), ("2024-03-01", "timestamp", 0.0),
])
def test_time_value_forms(text: str, kind: str, seconds: float) -> None:
    tv = parse_time(text)
    assert (tv.kind, tv.seconds) == (kind, seconds)


@pytest.mark.parametrize("bad", ["01:60", "1-24:00:00", "2024-13-01T00:00:00", "soon", "1:2:3:4", "-05:00"])
def test_bad_time_values(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_time(bad)


def test_iso_with_zones_converted_and_mixing_refused(tmp_path: Path) -> None:
    f = write(tmp_path, "z.csv", "id,submit,duration,gpus\na,2024-03-01T08:00:00Z,60,1\n"
                                 "b,2024-03-01T10:00:00+02:00,60,1\n")
    t = load_trace(f)
    assert [j.arrival_s for j in t.jobs] == [0.0, 0.0]
    mixed = write(tmp_path, "mixed.csv", "id,submit,duration,gpus\na,2024-03-01T08:00:00Z,60,1\n"
                                         "b,2024-03-01T10:00:00,60,1\n")
    with pytest.raises(InputError, match="time zone") as e:
        load_trace(mixed)
    assert e.value.line == 3 and e.value.field == "submit"
    kinds = write(tmp_path, "kinds.csv", "id,submit,duration,gpus\na,2024-03-01T08:00:00,60,1\nb,100,60,1\n")
    with pytest.raises(InputError, match="absolute timestamp") as e:
        load_trace(kinds)
    assert e.value.line == 3
    stamp_dur = write(tmp_path, "sd.csv", "id,submit,duration,gpus\na,0,2024-03-01T08:00:00,1\n")
    with pytest.raises(InputError, match="--column end=duration") as e:
        load_trace(stamp_dur)
    assert (e.value.line, e.value.field) == (2, "duration")


def test_end_column_with_and_without_start(tmp_path: Path) -> None:
    f = write(tmp_path, "k8s.csv", "name,creation_time,start_time,end_time,gpus\n"
                                   "p1,2024-03-01T08:00:00Z,2024-03-01T08:10:00Z,2024-03-01T09:10:00Z,1\n"
                                   "p2,2024-03-01T08:20:00Z,2024-03-01T08:20:30Z,2024-03-01T08:30:30Z,2\n")
    t = load_trace(f)  # start/end/creation found by their spellings
    assert [(j.job_id, j.arrival_s, j.duration_s) for j in t.jobs] == [("p1", 0.0, 3600.0), ("p2", 1200.0, 600.0)]
    assert any("start column" in n for n in t.notes) and t.mapping["duration"] == "end_time - start_time"
    t2 = load_trace(f, columns={"start": ""})  # unmapped: measured from the submission
    assert [j.duration_s for j in t2.jobs] == [4200.0, 630.0]
    assert any("includes the job's queueing" in n for n in t2.notes)
    rel = write(tmp_path, "rel.csv", "id,submit,finish,gpus\na,0,60,1\nb,10,10,1\nc,20,5,1\n")
    with pytest.raises(InputError, match="is not after") as e:
        load_trace(rel, columns={"end": "finish"}, time_unit="min")
    assert (e.value.line, e.value.field) == (3, "finish")
    t3 = load_trace(rel, columns={"end": "finish"}, time_unit="min", skip_invalid=True)
    assert [(j.arrival_s, j.duration_s) for j in t3.jobs] == [(0.0, 3600.0)] and t3.skipped == 2
    no_start = write(tmp_path, "ns.csv", "id,finish,gpus\na,60,1\n")
    with pytest.raises(InputError, match="--column start=NAME"):
        load_trace(no_start, columns={"end": "finish"})


def test_fractional_gpus_round_up_and_are_kept(tmp_path: Path) -> None:
    f = write(tmp_path, "ali.csv", "name,num_gpu,gpu_milli,duration\na,1,500,60\nb,2,1000,60\nc,1,250,60\n"
                                   "d,0,0,60\n")
    t = load_trace(f, skip_invalid=True)
    got = {j.job_id: (j.num_gpus, j.gpu_request) for j in t.jobs}
    assert got == {"a": (1, 0.5), "b": (2, None), "c": (1, 0.25)} and t.skipped == 1
    assert "requests no GPU" in t.skipped_reasons[0]
    assert any("2 jobs asked for a fractional number of GPUs" in n for n in t.notes)
    with pytest.raises(InputError, match="--fractional-gpus") as e:
        load_trace(f, fractional_gpus="error")
    assert (e.value.line, e.value.field) == (2, "gpu_milli")
    frac = write(tmp_path, "frac.csv", "id,duration,gpus\na,60,0.5\nb,60,2.5\n")
    assert [(j.num_gpus, j.gpu_request) for j in load_trace(frac).jobs] == [(1, 0.5), (3, 2.5)]
    pct = write(tmp_path, "pct.csv", "id,duration,plan_gpu\na,60,50\nb,60,700\n")
    t = load_trace(pct, columns={"num_gpus": "plan_gpu"}, gpu_unit="percent")
    assert [(j.num_gpus, j.gpu_request) for j in t.jobs] == [(1, 0.5), (7, None)]


def test_gpu_type_checked_only_when_the_cluster_is_known(tmp_path: Path) -> None:
    f = write(tmp_path, "t.csv", "id,duration,gpus,gpu_type\na,60,1,A100\nb,60,1,\n")
    t = load_trace(f)
    assert [j.gpu_type for j in t.jobs] == ["A100", None]
    with pytest.raises(InputError, match="not in the cluster") as e:
        load_trace(f, gpu_types=["V100", "K80"])
    assert (e.value.line, e.value.field) == (2, "gpu_type") and "K80, V100" in str(e.value)
    assert len(load_trace(ROOT / "data/traces/muri/trace3.csv", gpu_types=["V100"])) == 992  # no such column
    r, _ = simulate(tmp_path, "--trace", str(f), "--unknown-models", "map", cluster="hetero")
    assert r.exit_code == 2 and "t.csv:2" in r.output and "A100" in r.output


def test_unknown_models_error_map_or_profile_file(tmp_path: Path) -> None:
    f = write(tmp_path, "m.csv", "id,duration,gpus,model\na,60,1,llama-7b\nb,60,1,ResNet-50\nc,60,1,llama-7b\n")
    with pytest.raises(InputError, match="unknown model 'llama-7b'") as e:
        load_trace(f)
    assert (e.value.line, e.value.field) == (2, "model")
    t = load_trace(f, unknown_models="map", seed=3)
    assert [j.model for j in t.jobs] == [assign_model("a", seed=3), "resnet50", assign_model("c", seed=3)]
    assert any("2 jobs named a model not in the catalogue: llama-7b (2)" in n for n in t.notes)
    prof = write(tmp_path, "models.csv", "name,grad_mb,compute_ms,fw_ms,bw_ms,batch_size,mem_mb,source\n"
                                         "llama-7b,13000,900,,,4,30000,my measurements\n")
    w = load_workload_and_models(str(f), seed=0, models=str(prof))
    assert [j.model for j in w.jobs] == ["llama-7b", "resnet50", "llama-7b"]
    assert "llama-7b" in w.catalog and [m.name for m in w.models] == ["llama-7b"]
    assert w.catalog["llama-7b"].compute_ms == 900 and "resnet50" in w.catalog
    w2 = load_workload_and_models(str(f), seed=0, options={"models": str(prof)})  # sweep's trace_options
    assert [j.model for j in w2.jobs] == [j.model for j in w.jobs]
    r = CliRunner().invoke(cli, ["traces", "info", str(f), "--models", str(prof)])
    assert r.exit_code == 0 and "llama-7b" in r.output, r.output
    r, out = simulate(tmp_path, "--trace", str(f), "--models", str(prof))  # the run uses the extra profile
    assert r.exit_code == 0, r.output
    recs = (out / "records.csv").read_text()
    assert recs.count("llama-7b") == 2 and json.loads((out / "summary.json").read_text())["jobs_completed"] == 3


@pytest.mark.parametrize(("text", "line", "field", "needle"), [
    ("name,grad_mb,compute_ms,batch_size,mem_mb\nx,1,nan,4,10\n", 2, "compute_ms", "finite"),
    ("name,grad_mb,compute_ms,batch_size,mem_mb\nx,1,0,4,10\n", 2, "compute_ms", "> 0"),
    ("name,grad_mb,compute_ms,batch_size,mem_mb\nx,1,5,4.5,10\n", 2, "batch_size", "whole"),
    ("name,grad_mb,compute_ms,batch_size,mem_mb\nx,-1,5,4,10\n", 2, "grad_mb", ">= 0"),
    ("name,grad_mb,compute_ms,batch_size,mem_mb\nx,1,5,4,10\nx,1,5,4,10\n", 3, "name", "already defined"),
    ("name,grad_mb,compute_ms,batch_size,mem_mb,speed\nx,1,5,4,10,2\n", 1, "speed", "unknown column"),
    ("name,grad_mb,compute_ms,batch_size,mem_mb\n,1,5,4,10\n", 2, "name", "empty"),
    ("name,grad_mb,compute_ms,batch_size,mem_mb\nx,1,5,4\n", 2, None, "expected 5 fields"),
])
def test_model_profile_file_is_validated_with_locations(tmp_path: Path, text: str, line: int, field: str | None,
                                                        needle: str) -> None:
    f = write(tmp_path, "models.csv", text)
    with pytest.raises(InputError, match=needle) as e:
        load_models(f)
    assert (e.value.path, e.value.line, e.value.field) == (str(f), line, field)


def test_quoted_header_is_detected(tmp_path: Path) -> None:
    f = write(tmp_path, "q.csv", '"job_id","num_gpu","submit_time","iterations","model_name","batch_size"\n'
                                 '"0","1","1000","10","vgg16","16"\n')
    assert detect_format(f) == "muri"
    assert load_trace(f).jobs[0].arrival_s == 1.0
    g = write(tmp_path, "g.csv", '"JobID","Submit","Elapsed","NGPUs"\n"1","0","00:01:00","2"\n')
    assert detect_format(g) == "generic_csv"
    assert [(j.duration_s, j.num_gpus) for j in load_trace(g).jobs] == [(60.0, 2)]


def test_folder_of_traces_loads_as_one_trace(tmp_path: Path) -> None:
    d = tmp_path / "vcs"
    d.mkdir()
    write(d, "vc_a.csv", "id,submit,duration,gpus\n1,2024-03-01T08:00:00,60,1\n2,2024-03-01T08:01:00,60,2\n")
    write(d, "vc_b.csv", "id,submit,duration,gpus\n1,2024-03-01T07:00:00,60,4\n")
    write(d, "README.md", "not a trace")
    (d / "sub").mkdir()
    t = load_trace(d)
    assert [(j.job_id, j.group, j.arrival_s) for j in t.jobs] == [
        ("vc_b/1", "vc_b", 0.0), ("vc_a/1", "vc_a", 3600.0), ("vc_a/2", "vc_a", 3660.0)]
    assert t.jobs[1].source.endswith("vc_a.csv:2")
    assert any("README.md, sub/" in n for n in t.notes) and any("re-based" in n for n in t.notes)
    r, out = simulate(tmp_path, "--trace", str(d))
    assert r.exit_code == 0, r.output
    assert json.loads((out / "summary.json").read_text())["jobs"] == 3
    write(d, "vc_c.csv", "id,submit,duration,gpus\n1,100,60,1\n")
    with pytest.raises(InputError, match="mix absolute timestamps"):
        load_trace(d)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="no trace file"):
        load_trace(empty)
    gavel = load_trace(ROOT / "data/traces/gavel_philly_vc/seed0")
    assert len(gavel) == 15_264 and len({j.group for j in gavel.jobs}) == 15


def test_traces_info_takes_the_mapping_flags_and_names_flags_in_errors(tmp_path: Path) -> None:
    f = write(tmp_path, "slurm.csv", SLURM)
    r = CliRunner().invoke(cli, ["traces", "info", str(f), *SLURM_FLAGS])
    assert r.exit_code == 0, r.output
    for text in ("field mapping", "Submit", "Elapsed", "found automatically", "columns not used: Start, End",
                 "fractional"):
        assert text in r.output, text
    bad = write(tmp_path, "bad.csv", "a,b,c\n1,2,3\n")
    r = CliRunner().invoke(cli, ["traces", "info", str(bad), "--column", "num_gpus=a"])
    assert r.exit_code == 2 and "--column duration=NAME" in r.output and "error:" in r.output
    r = CliRunner().invoke(cli, ["traces", "info", str(bad), "--column", "duration=zzz"])
    assert r.exit_code == 2 and "--column duration=zzz" in r.output and "no column 'zzz'" in r.output
    r = CliRunner().invoke(cli, ["traces", "info", str(ROOT / "data/traces/philly_pollux/philly.csv"),
                                 "--time-unit", "min"])
    assert r.exit_code == 2 and "--time-unit" in r.output


def test_duration_that_looks_like_an_absolute_time_gives_a_warning(tmp_path: Path) -> None:
    # Alibaba-style: creation_time and deletion_time in seconds since the trace start
    rows = "".join(f"j{i},{i * 3600},{i * 3600 + 600 + (i * 7919) % 5000},1\n" for i in range(20))
    f = write(tmp_path, "abs.csv", "id,creation_time,deletion_time,gpus\n" + rows)
    t = load_trace(f, columns={"duration": "deletion_time"})
    assert any(n.startswith("warning:") and "--column end=deletion_time" in n for n in t.notes)
    fixed = load_trace(f, columns={"end": "deletion_time"})
    assert not any(n.startswith("warning:") for n in fixed.notes)
    assert sorted(j.duration_s for j in fixed.jobs)[0] >= 600
    ok = write(tmp_path, "ok.csv", "id,submit_time,duration,gpus\n" + "".join(
        f"j{i},{i * 60},{(i * 7919) % 90000 + 30},1\n" for i in range(20)))  # long jobs, short burst: no warning
    assert not any(n.startswith("warning:") for n in load_trace(ok).notes)


@pytest.mark.parametrize(("flags", "needle"), [
    (["--gpu-unit", "percent", "--column", "num_gpus=plan_gpu"], "fractional GPU requests │ 1"),
    (["--column", "num_gpus=plan_gpu", "--fractional-gpus", "error", "--gpu-unit", "percent"], "--fractional-gpus"),
    (["--column", "num_gpus=plan_gpu", "--gpu-unit", "percent", "--unknown-models", "map"], "llama-7b (1)"),
    (["--column", "num_gpus=plan_gpu", "--gpu-unit", "percent", "--models", "@models"], "my profile"),
    (["--column", "num_gpus=plan_gpu", "--gpu-unit", "percent", "--duration-unit", "min", "--time-unit", "h"],
     "7,200.0 s"),
    (["--column", "num_gpus=plan_gpu", "--gpu-unit", "percent", "--cluster", "hetero"], "V100"),
    (["--column", "num_gpus=plan_gpu", "--gpu-unit", "percent", "--cluster", "n8g8"], "not in the cluster"),
    (["--column", "num_gpus=plan_gpu", "--gpu-unit", "percent", "--column", "start="], "duration"),
    (["--format", "muri"], "header lacks"),
])
def test_each_mapping_flag_through_traces_info(tmp_path: Path, flags: list[str], needle: str) -> None:
    f = write(tmp_path, "pai.csv", "job_name,submit_time,duration,plan_gpu,gpu_type,model\n"
                                   "a,0,30,50,V100,resnet50\nb,2,10,200,,bert\n")
    prof = write(tmp_path, "models.csv", "name,grad_mb,compute_ms,batch_size,mem_mb,source\n"
                                         "llama-7b,13000,900,4,30000,my profile\n")
    if "--unknown-models" in flags or "--models" in flags:
        f.write_text(f.read_text().replace("bert", "llama-7b"))
    flags = [str(prof) if x == "@models" else x for x in flags]
    r = CliRunner().invoke(cli, ["traces", "info", str(f), *flags])
    errors = ("--fractional-gpus", "not in the cluster", "header lacks")
    assert r.exit_code == (2 if needle in errors else 0), r.output
    assert needle in r.output, r.output
