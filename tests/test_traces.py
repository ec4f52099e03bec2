"""Trace loaders: bundled files, errors, detection, generic CSV, model mapping."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from ddlsched.cli.traces import traces
from ddlsched.errors import InputError
from ddlsched.workload import default_catalog
from ddlsched.workload.info import trace_info
from ddlsched.workload.loaders import FORMATS, detect_format, load_trace
from ddlsched.workload.loaders.muri import detect_submit_unit
from ddlsched.workload.model_mapping import MODEL_ALIASES, assign_model

ROOT = Path(__file__).resolve().parents[1] / "data" / "traces"
GAVEL_COUNTS = {"0e4a51": 1181, "103959": 986, "11cb48": 2000, "23dbec": 9, "2869ce": 533, "51b7ef": 18,
                "6214e9": 2000, "6c71a0": 2000, "795a4c": 3, "7f04ca": 972, "925e2b": 4, "b436b2": 2000,
                "e13805": 607, "ed69ec": 951, "ee9e8c": 2000}


def hist(trace) -> dict[int, int]:
    return dict(sorted(Counter(j.num_gpus for j in trace.jobs).items()))


def check_jobs(trace) -> None:
    ids = [j.job_id for j in trace.jobs]
    assert len(set(ids)) == len(ids)
    assert all((j.iterations is None) != (j.duration_s is None) for j in trace.jobs)
    arr = [j.arrival_s for j in trace.jobs]
    assert arr == sorted(arr)
    catalog = default_catalog()
    assert all(j.model in catalog for j in trace.jobs)


# ---- bundled traces -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def philly():
    return load_trace(ROOT / "philly_pollux" / "philly.csv")


def test_philly_pollux(philly) -> None:
    assert len(philly) == 82_247 and philly.format == "philly_pollux" and philly.skipped == 0
    assert hist(philly) == {1: 76_627, 2: 1_818, 4: 1_870, 8: 1_643, 12: 7, 16: 199, 24: 7, 32: 67, 64: 6, 128: 3}
    assert philly.jobs[0].arrival_s == 0.0
    assert all(j.duration_s is not None and j.iterations is None for j in philly.jobs)
    users = Counter(j.user for j in philly.jobs)
    assert len(users) == 15 and users["6214e9"] == 41_226 and users["11cb48"] == 16_091
    info = trace_info(philly)
    assert info["total_gpu_seconds"] == pytest.approx(sum(j.duration_s * j.num_gpus for j in philly.jobs))
    assert any("hash(seed=0" in n for n in philly.notes)
    check_jobs(philly)


def test_gavel_all_vcs() -> None:
    files = sorted((ROOT / "gavel_philly_vc" / "seed0").glob("*.trace"))
    assert {f.stem: len(load_trace(f)) for f in files} == GAVEL_COUNTS
    t = load_trace(ROOT / "gavel_philly_vc" / "seed0" / "0e4a51.trace")
    first = next(j for j in t.jobs if j.source.endswith(":1"))
    assert (first.model, first.batch_size, first.iterations, first.num_gpus) == ("transformer", 128, 95121, 1)
    assert {j.model for j in t.jobs} <= {"resnet18", "resnet50", "transformer", "lstm", "recommendation",
                                         "cyclegan", "a3c"}
    check_jobs(t)


@pytest.mark.parametrize(("name", "count"), [("trace1", 1494), ("trace2", 5755), ("trace3", 992), ("trace4", 2638),
                                             ("cluster_exp_cluster_trace", 400), ("job_type_1", 992)])
def test_muri(name: str, count: int) -> None:
    t = load_trace(ROOT / "muri" / f"{name}.csv")
    assert len(t) == count and t.format == "muri"
    assert all(j.iterations is not None for j in t.jobs)
    check_jobs(t)


def test_muri_units_ms() -> None:
    t = load_trace(ROOT / "muri" / "trace1.csv")
    j1 = next(j for j in t.jobs if j.job_id == "1")
    assert j1.arrival_s == pytest.approx(201_694.0) and j1.model == "dqn" and j1.num_gpus == 8
    assert all(j.arrival_s == 0 for j in load_trace(ROOT / "muri" / "trace1_pr.csv").jobs)
    testbed = load_trace(ROOT / "muri" / "cluster_exp_cluster_trace.csv")
    assert hist(testbed) == {1: 36, 2: 15, 4: 19, 8: 287, 16: 3, 32: 40}


def test_sjf_bsbf_unit_rule_and_override() -> None:
    f = ROOT / "sjf_bsbf_testbed" / "trace_data_new.csv"
    auto = load_trace(f)
    assert len(auto) == 30 and max(j.arrival_s for j in auto.jobs) == pytest.approx(600.0)
    assert any("not whole seconds" in n for n in auto.notes)
    secs = load_trace(f, time_unit="s")
    assert max(j.arrival_s for j in secs.jobs) == pytest.approx(600_000.0)
    assert len(load_trace(ROOT / "sjf_bsbf_testbed" / "cluster_trace_12.csv")) == 14
    assert len(load_trace(ROOT / "sjf_bsbf_testbed" / "trace_data_new_32.csv")) == 61
    assert detect_submit_unit(["0", "1500", "2000"]) == "ms"
    assert detect_submit_unit(["0", "1.5", "20"]) == "s"


def test_muri_fractional_submit_read_as_seconds(tmp_path: Path) -> None:
    f = tmp_path / "m.csv"
    f.write_text("job_id,num_gpu,submit_time,iterations,model_name,batch_size\n0,1,0,10,vgg16,16\n1,2,2.5,10,bert,4\n")
    t = load_trace(f)
    assert [j.arrival_s for j in t.jobs] == [0.0, 2.5]
    with pytest.raises(InputError, match="time unit"):
        load_trace(f, time_unit="fortnight")


def test_elasticflow() -> None:
    t = load_trace(ROOT / "elasticflow_philly" / "philly_103959.csv")
    assert len(t) == 876 and hist(t) == {1: 513, 2: 33, 4: 330}
    j0 = next(j for j in t.jobs if j.job_id == "0")
    assert (j0.iterations, j0.model, j0.batch_size) == (1_282_877, "vgg16", 256)
    check_jobs(t)


def test_pollux_and_sia() -> None:
    for sub, n_files, per_file in [("pollux_workloads", 8, 160), ("sia_workloads/philly", 8, 160),
                                   ("sia_workloads/saturn", 10, 160), ("sia_workloads/scale/rate_10", 10, 80)]:
        files = sorted((ROOT / sub).glob("*.csv"))
        assert len(files) == n_files
        for f in files:
            t = load_trace(f)
            assert len(t) == per_file and t.format == "pollux"
    t = load_trace(ROOT / "pollux_workloads" / "workload-1.csv")
    c = next(j for j in t.jobs if j.job_id == "cifar10-0")
    assert (c.model, c.num_gpus, c.batch_size, c.arrival_s) == ("resnet18", 6, 2048, 107.0)
    assert c.duration_s == pytest.approx(0.5 * 3600 / 6)
    assert any("gpu_hours" in n for n in t.notes)
    check_jobs(t)


def test_tiresias() -> None:
    t = load_trace(ROOT / "tiresias" / "60_job.csv")
    assert len(t) == 60 and hist(t) == {1: 30, 2: 10, 4: 10, 8: 10}
    assert Counter(j.model for j in t.jobs) == dict.fromkeys(
        ["vgg11", "vgg16", "vgg19", "resnet50", "resnet101", "resnet152", "inception3", "inception4", "alexnet",
         "googlenet"], 6)
    check_jobs(t)


def test_tiresias_duration_lists() -> None:
    for name, n in [("yarn-gput1000", 1001), ("yarn-gput5000", 5000), ("yarn-gput10000", 9999)]:
        t = load_trace(ROOT / "tiresias" / f"{name}.csv")
        assert len(t) == n and all(j.arrival_s == 0 and j.num_gpus == 1 for j in t.jobs)
        assert any("arrives at 0" in note for note in t.notes)
    a = load_trace(ROOT / "tiresias" / "yarn-gput1000.csv", arrival_rate_per_s=0.01, num_gpus=2, seed=3)
    b = load_trace(ROOT / "tiresias" / "yarn-gput1000.csv", arrival_rate_per_s=0.01, num_gpus=2, seed=3)
    assert a.jobs == b.jobs and a.jobs[-1].arrival_s > 0 and all(j.num_gpus == 2 for j in a.jobs)
    assert any("Poisson" in note for note in a.notes)


def test_tiresias_duration_list_shuffled() -> None:
    """The lists are sorted by duration; ``shuffle`` hands the same Poisson times to the rows in a seeded order."""
    path = ROOT / "tiresias" / "yarn-gput1000.csv"
    plain = load_trace(path, arrival_rate_per_s=0.01, seed=3)
    a = load_trace(path, arrival_rate_per_s=0.01, seed=3, shuffle=True)
    assert a.jobs == load_trace(path, arrival_rate_per_s=0.01, seed=3, shuffle=True).jobs
    assert sorted(j.arrival_s for j in a.jobs) == [j.arrival_s for j in plain.jobs]
    assert sorted(j.job_id for j in a.jobs) == sorted(j.job_id for j in plain.jobs)
    durations = [j.duration_s for j in a.jobs]  # in arrival order: no longer sorted
    assert durations != sorted(durations) and [j.duration_s for j in plain.jobs] == sorted(durations)
    other = load_trace(path, arrival_rate_per_s=0.01, seed=4, shuffle=True)
    assert [j.job_id for j in other.jobs] != [j.job_id for j in a.jobs]
    assert any("shuffle" in note for note in a.notes)
    with pytest.raises(InputError, match="shuffle needs arrival_rate_per_s"):
        load_trace(path, shuffle=True)
    with pytest.raises(InputError, match="shuffle must be true or false"):
        load_trace(path, arrival_rate_per_s=0.01, shuffle="yes")


# ---- detection ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("rel", "fmt"), [
    ("philly_pollux/philly.csv", "philly_pollux"),
    ("gavel_philly_vc/seed0/23dbec.trace", "gavel"),
    ("muri/trace3.csv", "muri"),
    ("sjf_bsbf_testbed/cluster_trace_12.csv", "muri"),
    ("elasticflow_philly/philly_103959.csv", "elasticflow"),
    ("pollux_workloads/workload-3.csv", "pollux"),
    ("sia_workloads/saturn/workload-2.csv", "pollux"),
    ("tiresias/60_job.csv", "tiresias"),
    ("tiresias/yarn-gput1000.csv", "tiresias"),
])
def test_detect_format(rel: str, fmt: str) -> None:
    assert detect_format(ROOT / rel) == fmt


def test_detect_generic_and_ambiguous(tmp_path: Path) -> None:
    g = tmp_path / "new.csv"
    g.write_text("job_id,submission_time,duration,num_gpu\na,0,60,1\nb,30,120,4\n")
    assert detect_format(g) == "generic_csv"
    t = load_trace(g)
    assert [(j.job_id, j.arrival_s, j.duration_s, j.num_gpus) for j in t.jobs] == [("a", 0, 60, 1), ("b", 30, 120, 4)]
    amb = tmp_path / "amb.csv"
    amb.write_text("job_id,num_gpu,submit_time,iterations,model_name,duration\n0,1,0,10,vgg16,5\n")
    with pytest.raises(InputError, match="ambiguous") as e:
        detect_format(amb)
    assert "muri" in str(e.value) and "tiresias" in str(e.value) and "--format" in str(e.value)
    assert len(load_trace(amb, format="tiresias")) == 1
    with pytest.raises(InputError, match="cluster spec"):
        detect_format(ROOT / "muri" / "n8g8.csv")
    unk = tmp_path / "unk.csv"
    unk.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(InputError, match="--format"):
        detect_format(unk)


# ---- errors ---------------------------------------------------------------------------------------------------

def test_missing_file() -> None:
    with pytest.raises(InputError, match="not found"):
        load_trace("/nonexistent/trace.csv")
    with pytest.raises(InputError, match="not found"):
        load_trace("/nonexistent/trace.csv", format="muri")


MURI_HEAD = "job_id,num_gpu,submit_time,iterations,model_name,batch_size,duration\n"


@pytest.mark.parametrize(("row", "line", "field", "text"), [
    ("1,2,1000,abc,vgg16,16,5", 3, "iterations", "not a number"),
    ("1,0,1000,10,vgg16,16,5", 3, "num_gpu", "> 0"),
    ("1,-4,1000,10,vgg16,16,5", 3, "num_gpu", "> 0"),
    ("1,2,1000,10,vgg16", 3, None, "expected 7 fields"),
    ("1,2,-5,10,vgg16,16,5", 3, "submit_time", ">= 0"),
])
def test_bad_rows(tmp_path: Path, row: str, line: int, field: str | None, text: str) -> None:
    f = tmp_path / "bad_trace.csv"
    f.write_text(MURI_HEAD + "0,1,0,10,vgg16,16,5\n" + row + "\n2,1,2000,10,bert,4,5\n")
    with pytest.raises(InputError) as e:
        load_trace(f)
    msg = str(e.value)
    assert "bad_trace.csv" in msg and f":{line}" in msg and text in msg
    assert e.value.line == line and e.value.field == field
    if field:
        assert field in msg
    t = load_trace(f, skip_invalid=True)
    assert len(t) == 2 and t.skipped == 1 and f":{line}" in t.skipped_reasons[0]


def test_bad_philly_rows(tmp_path: Path) -> None:
    f = tmp_path / "philly.csv"
    f.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,a\n"
                 "10/09/2017 07:01,66.0,1,66.0,a\n2017-10-09 07:02:55,0,1,0,a\n2017-10-09 07:03:55,5,x,5,a\n")
    with pytest.raises(InputError, match="unknown time format") as e:
        load_trace(f)
    assert e.value.line == 3 and e.value.field == "timestamp"
    t = load_trace(f, skip_invalid=True)
    assert len(t) == 1 and t.skipped == 3
    assert [r.split(",")[1].strip() for r in t.skipped_reasons] == ["field 'timestamp': unknown time format "
                                                                    "'10/09/2017 07:01'", "field 'duration': must "
                                                                    "be > 0", "field 'num_gpus': not a number: 'x'"]


def test_bad_gavel_row(tmp_path: Path) -> None:
    f = tmp_path / "x.trace"
    good = "ResNet-50 (batch size 64)\tcmd\t-n\t1\t100\t5.0\t2\n"
    f.write_text(good + "A3C\tcmd\t-n\t1\t100\tsoon\t1\n" + good.replace("\t2\n", "\t\n"))
    with pytest.raises(InputError) as e:
        load_trace(f)
    assert e.value.line == 2 and e.value.field == "arrival_time" and "x.trace:2" in str(e.value)
    t = load_trace(f, skip_invalid=True)
    assert len(t) == 1 and t.skipped == 2 and t.jobs[0].model == "resnet50" and t.jobs[0].batch_size == 64


def test_duplicate_ids_and_bad_options(tmp_path: Path) -> None:
    f = tmp_path / "d.csv"
    f.write_text(MURI_HEAD + "0,1,0,10,vgg16,16,5\n0,1,0,10,vgg16,16,5\n")
    with pytest.raises(InputError, match="duplicate job id"):
        load_trace(f)
    with pytest.raises(InputError, match="not accepted"):
        load_trace(f, columns={})
    with pytest.raises(InputError, match="unknown format"):
        load_trace(f, format="nope")


# ---- generic CSV ----------------------------------------------------------------------------------------------

def test_generic_csv_renamed_columns_minutes(tmp_path: Path) -> None:
    f = tmp_path / "mine.csv"
    f.write_text("JobName,SubmittedMin,RunMin,Cards,Net,Owner\nj1,2,10,4,ResNet-50,alice\nj0,0,1.5,1,,bob\n")
    cols = {"job_id": "JobName", "arrival": "SubmittedMin", "duration": "RunMin", "num_gpus": "Cards",
            "model": "Net", "user": "Owner"}
    t = load_trace(f, format="generic_csv", columns=cols, time_unit="min")
    assert [(j.job_id, j.arrival_s, j.duration_s, j.num_gpus, j.user) for j in t.jobs] == [
        ("j0", 0.0, 90.0, 1, "bob"), ("j1", 120.0, 600.0, 4, "alice")]
    assert t.jobs[1].model == "resnet50"
    assert t.jobs[0].model == assign_model("j0", seed=0)
    with pytest.raises(InputError) as e:
        load_trace(f, format="generic_csv", columns={**cols, "num_gpus": "Owner"}, time_unit="min")
    assert e.value.field == "Owner" and e.value.line == 2


# ---- model mapping --------------------------------------------------------------------------------------------

def test_every_alias_is_in_catalogue() -> None:
    catalog = default_catalog()
    assert all(v in catalog for v in MODEL_ALIASES.values())


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**31), ids=st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=20,
                                                unique=True))
def test_assign_model_deterministic_and_order_free(seed: int, ids: list[str]) -> None:
    mix = {"resnet50": 2.0, "bert": 1.0, "vgg16": 0.0}
    first = {i: assign_model(i, seed=seed, mix=mix) for i in ids}
    again = {i: assign_model(i, seed=seed, mix=mix) for i in reversed(ids)}
    assert first == again
    assert set(first.values()) <= {"resnet50", "bert"}


def test_assign_model_follows_mix() -> None:
    picks = Counter(assign_model(f"job-{i}", seed=7, mix={"a": 3, "b": 1}) for i in range(4000))
    assert 0.70 < picks["a"] / 4000 < 0.80
    with pytest.raises(InputError):
        assign_model("x", mix={})


def test_philly_mapping_independent_of_row_order(tmp_path: Path) -> None:
    rows = ["2017-10-09 07:01:55,66.0,1,66.0,a", "2017-10-09 07:00:00,10.0,2,20.0,b"]
    f1, f2 = tmp_path / "p1.csv", tmp_path / "p2.csv"
    head = "timestamp,duration,num_gpus,gpu_time,cluster\n"
    f1.write_text(head + "\n".join(rows) + "\n")
    f2.write_text(head + "\n".join(rows) + "\n2017-10-09 08:00:00,5.0,1,5.0,c\n")
    a, b = load_trace(f1, seed=4), load_trace(f2, seed=4)
    assert {j.job_id: j.model for j in a.jobs}.items() <= {j.job_id: j.model for j in b.jobs}.items()
    assert a.jobs[0].job_id == "philly-1" and a.jobs[0].arrival_s == 0.0 and a.jobs[1].arrival_s == 115.0


# ---- FORMATS / CLI --------------------------------------------------------------------------------------------

def test_formats_table() -> None:
    assert set(FORMATS) == {"philly_pollux", "gavel", "muri", "elasticflow", "pollux", "tiresias", "slurm",
                            "kubernetes", "generic_csv"}
    assert all(f.description and callable(f.load) for f in FORMATS.values())


def test_cli_info() -> None:
    r = CliRunner().invoke(traces, ["info", str(ROOT / "elasticflow_philly" / "philly_103959.csv")])
    assert r.exit_code == 0, r.output
    assert "876" in r.output and "513" in r.output and "elasticflow" in r.output
    r = CliRunner().invoke(traces, ["info", "/nonexistent.csv"])
    assert r.exit_code != 0 and "not found" in r.output
    r = CliRunner().invoke(traces, ["info", "--format", "muri", "--skip-invalid",
                                    str(ROOT / "sjf_bsbf_testbed" / "trace_data_new.csv")])
    assert r.exit_code == 0 and "30" in r.output
