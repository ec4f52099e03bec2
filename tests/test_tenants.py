"""Tenant config: the tenants section of a cluster file or a separate file, validated against the cluster; bad
input exits 2 naming the file and field, before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ddlsched.cli import cli
from ddlsched.cluster.config import load_cluster_file
from ddlsched.cluster.tenants import load_tenants_file
from ddlsched.cluster.topology import Cluster, GPUType, ServerSpec
from ddlsched.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
MURI = ROOT / "data" / "traces" / "muri" / "trace1.csv"

CLUSTER = """\
name: two-types
gpu_types:
  V100: {mem_gb: 32}
  K80: {mem_gb: 12, speed: 0.3}
racks:
  - servers:
      - {count: 1, gpus: 8, gpu_type: V100}
      - {count: 1, gpus: 4, gpu_type: K80}
"""

TENANTS = """\
tenants:
  default: other
  cohorts: {org: {}, research: {parent: org}}
  members: {alice: vision}
  queues:
    vision: {weight: 2, quota: 6, borrow_limit: 2, cohort: research}
    speech: {weight: 1, quota: {V100: 2, K80: 4}, cohort: org}
"""


def _cluster(tmp_path: Path, tenants: str = TENANTS) -> Path:
    p = tmp_path / "c.yaml"
    p.write_text(CLUSTER + tenants)
    return p


def _hand() -> Cluster:
    return Cluster.build("h", [[ServerSpec(8, "V100", 10.0), ServerSpec(4, "K80", 10.0)]],
                         {"V100": GPUType("V100", 32768), "K80": GPUType("K80", 12288, 0.3)})


def test_tenants_section_is_read_and_resolved(tmp_path: Path) -> None:
    c = load_cluster_file(_cluster(tmp_path))
    ts = c.tenants
    assert ts is not None and ts.names == ["vision", "speech", "other"]
    v, s, o = (ts.tenants[n] for n in ts.names)
    assert (v.weight, v.quota, v.borrow_limit, v.cohort, v.root_cohort) == (2.0, 6, 2, "research", "org")
    assert (s.quota, s.quota_by_type, s.root_cohort) == (6, {"V100": 2, "K80": 4}, "org")
    assert (o.weight, o.quota, o.borrow_limit) == (1.0, 0, None)  # the default tenant, created
    assert [ts.of(u) for u in ("alice", "speech", "bob", None)] == ["vision", "speech", "other", "other"]
    assert "2 job(s) of 2 trace user(s)" in ts.note(["alice", "bob", None, "vision"])
    assert ts.note(["alice", "speech"]) == ""
    assert load_cluster_file(tmp_path / "c.yaml").num_gpus == 12


def test_cluster_without_tenants_has_none(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text(CLUSTER)
    assert load_cluster_file(p).tenants is None


def test_separate_file_top_level_or_section(tmp_path: Path) -> None:
    body = TENANTS.split("\n", 1)[1].replace("\n  ", "\n")[2:]  # the section's content, dedented
    (tmp_path / "t.yaml").write_text(body)
    (tmp_path / "t2.yaml").write_text(TENANTS)
    a, b = load_tenants_file(tmp_path / "t.yaml", _hand()), load_tenants_file(tmp_path / "t2.yaml", _hand())
    assert a.tenants == b.tenants and a.default == b.default == "other"


@pytest.mark.parametrize(("edit", "field", "message"), [
    ({"weight: 2": "weight: -1"}, "tenants.queues.vision.weight", "weight must be > 0"),
    ({"weight: 2": "weight: 0"}, "tenants.queues.vision.weight", "weight must be > 0"),
    ({"quota: 6,": "quota: 13,"}, "tenants.queues.vision.quota", "larger than the cluster (12 GPUs)"),
    ({"quota: 6,": "quota: 7,"}, "tenants.queues", "quotas add up to 13 GPUs"),
    ({"K80: 4}": "K80: 5}"}, "tenants.queues.speech.quota.K80", "larger than the cluster's 4"),
    ({"quota: 6,": "quota: {K80: 1},"}, "tenants.queues", "quotas on K80 add up to 5 GPUs"),
    ({"K80: 4}": "A100: 1}"}, "tenants.queues.speech.quota.A100", "no GPU type 'A100'"),
    ({"quota: 6,": "quota: -1,"}, "tenants.queues.vision.quota", ">= 0"),
    ({"borrow_limit: 2": "borrow_limit: -3"}, "tenants.queues.vision.borrow_limit", ">= 0"),
    ({"org: {}": "org: {parent: research}"}, "tenants.cohorts.org.parent", "cohort cycle"),
    ({"org: {}": "org: {parent: org}"}, "tenants.cohorts.org.parent", "cohort cycle: org → org"),
    ({"{parent: org}": "{parent: nope}"}, "tenants.cohorts.research.parent", "unknown parent cohort 'nope'"),
    ({"cohort: org}": "cohort: nope}"}, "tenants.queues.speech.cohort", "unknown cohort 'nope'"),
    ({"alice: vision": "alice: nobody"}, "tenants.members.alice", "unknown tenant 'nobody'"),
    ({"weight: 2,": "weight: 2, colour: red,"}, "tenants.queues.vision.colour", "unknown key"),
    ({"weight: 2": "weight: .nan"}, "tenants.queues.vision.weight", ""),
    ({"quota: 6,": "quota: 1.5,"}, "tenants.queues.vision.quota", ""),
])
def test_bad_tenants_are_located_errors(tmp_path: Path, edit: dict[str, str], field: str, message: str) -> None:
    text = TENANTS
    for old, new in edit.items():
        assert old in text
        text = text.replace(old, new, 1)
    p = _cluster(tmp_path, text)
    with pytest.raises(ConfigError) as e:
        load_cluster_file(p)
    assert e.value.path == str(p) and e.value.field == field and message in str(e.value)


def test_bad_tenants_exit_2_before_any_run(tmp_path: Path) -> None:
    bad = _cluster(tmp_path, TENANTS.replace("quota: 6,", "quota: 99,"))
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["simulate", "--trace", str(MURI), "--cluster", str(bad), "--policy", "fifo",
                                 "--max-jobs", "5", "--out", str(out), "--quiet"])
    assert r.exit_code == 2, r.output
    assert "c.yaml" in r.output and "tenants.queues.vision.quota" in r.output
    assert not out.exists() or not any(out.iterdir())
    t = tmp_path / "t.yaml"
    t.write_text("queues: {a: {quota: {H100: 1}}}\n")
    r = CliRunner().invoke(cli, ["simulate", "--trace", str(MURI), "--cluster", "rack256", "--tenants", str(t),
                                 "--policy", "fifo", "--max-jobs", "5", "--out", str(tmp_path / "o2"), "--quiet"])
    assert r.exit_code == 2 and "t.yaml" in r.output and "queues.a.quota.H100" in r.output, r.output
    assert not (tmp_path / "o2").exists() or not any((tmp_path / "o2").iterdir())


def test_cluster_file_tenants_reach_the_run_and_api_tenants_file_replaces_them(tmp_path: Path) -> None:
    import ddlsched
    from ddlsched.workload import JobSpec

    jobs = [JobSpec(f"j{i}", 10.0 * i, 1, "resnet50", duration_s=100.0, user=("alice", "speech", "bob")[i % 3])
            for i in range(6)]
    r = ddlsched.simulate(jobs, str(_cluster(tmp_path)), "quota")
    assert sorted(r.summary["tenants"]) == ["other", "speech", "vision"]
    assert r.summary["tenants"]["vision"]["jobs"] == 2 and r.summary["tenants"]["other"]["jobs"] == 2
    t = tmp_path / "t.toml"
    t.write_text('[queues.speech]\nquota = 3\n')
    r = ddlsched.simulate(jobs, str(_cluster(tmp_path)), "fifo", tenants=t)
    assert sorted(r.summary["tenants"]) == ["default", "speech"] and r.summary["tenants"]["default"]["jobs"] == 4


def test_tenant_column_flag(tmp_path: Path) -> None:
    import json

    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration,model,team,user\n"
                     + "".join(f"j{i},{i * 10},1,100,resnet50,{'ab'[i % 2]},u{i}\n" for i in range(6)))
    (tmp_path / "tn.yaml").write_text("queues: {a: {quota: 2}, b: {quota: 2}}\n")
    args = ["simulate", "--trace", str(trace), "--cluster", "rack256", "--tenants", str(tmp_path / "tn.yaml"),
            "--policy", "quota", "--quiet"]
    r = CliRunner().invoke(cli, [*args, "--tenant-column", "team", "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert (s["tenants"]["a"]["jobs"], s["tenants"]["b"]["jobs"], s["tenants"]["default"]["jobs"]) == (3, 3, 0)
    r = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "o2")])  # the user column: nobody is a tenant
    assert r.exit_code == 0 and "6 job(s) of 6 trace user(s)" in r.output, r.output
    r = CliRunner().invoke(cli, [*args, "--tenant-column", "team", "--column", "user=user", "--out",
                                 str(tmp_path / "o3")])
    assert r.exit_code == 2 and "--tenant-column" in r.output, r.output
