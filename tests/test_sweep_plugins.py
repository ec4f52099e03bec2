"""Policy plug-ins in sweeps: ``plugins:`` in the sweep file and ``--plugin``, imported in every worker."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ddlsched.cli import cli
from ddlsched.errors import ConfigError
from ddlsched.experiments.sweep import _run_cell_dict, run_sweep
from ddlsched.experiments.sweep_config import load_cells
from ddlsched.policies.registry import load_plugin

POLICY = '''
import ddlsched
from ddlsched.policies.placement import PLACEMENTS


@ddlsched.register
class FewestFirst(ddlsched.Policy):
    """Fewest GPUs first, consolidated, backfilling."""

    name = "{name}"
    description = "fewest GPUs first (test plug-in)"
    requirements = ddlsched.Requirements(model="fluid", preemptive=False)

    def __init__(self, reverse: bool = False) -> None:
        self.reverse = reverse
        self.placement = PLACEMENTS["consolidated"]()

    def schedule(self, view):
        free = view.allocation()
        out = []
        for job in sorted(view.pending, key=lambda j: ((-1 if self.reverse else 1) * j.num_gpus, j.seq)):
            gpus = self.placement.place(job, free, view) if job.num_gpus <= free.num_free else None
            if gpus is not None:
                free.take(gpus)
                out.append(ddlsched.Start(job.job_id, tuple(gpus)))
        return out
'''


def _plugin(folder: Path, name: str, file: str = "my_policies.py") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / file
    p.write_text(POLICY.replace("{name}", name))
    return p


def _sweep(folder: Path, policy: str, plugins: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    cfg = folder / "sweep.yaml"
    cfg.write_text(f"""name: plug
{plugins}
policies:
  - {policy}
  - {{name: {policy}, label: rev, params: {{reverse: true}}}}
  - fifo
traces: [{{synthetic: {{jobs: 30, rate_per_s: 1.0}}}}]
clusters: [wang2020]
seeds: [0, 1]
""")
    return cfg


def _rows(out: Path) -> list[dict[str, str]]:
    with (out / "results.csv").open() as f:
        return list(csv.DictReader(f))


def test_plugin_in_sweep_file_runs_on_the_local_pool(tmp_path: Path) -> None:
    _plugin(tmp_path / "plug", "t-fewest-a")
    cfg = _sweep(tmp_path / "cfg", "t-fewest-a", "plugins: [../plug/my_policies.py]")  # relative to the file
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["sweep", str(cfg), "--out", str(out), "--workers", "2", "--quiet"])
    assert res.exit_code == 0, res.output
    rows = _rows(out)
    assert len(rows) == 6 and all(int(r["jobs_completed"]) == 30 for r in rows)
    assert {r["policy_name"] for r in rows} == {"t-fewest-a", "fifo+consolidated"}
    mine = [r for r in rows if r["policy"] == "t-fewest-a"]
    rev = [r for r in rows if r["policy"] == "rev"]
    assert [r["avg_jct_s"] for r in mine] != [r["avg_jct_s"] for r in rev]  # the parameter reached the policy
    cell = json.loads(next((out / "cells").glob("t-fewest-a_*/cell.json")).read_text())
    assert cell["params"]["plugins"] == [str((tmp_path / "plug" / "my_policies.py").resolve())]


def test_plugin_flag_on_sweep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _plugin(tmp_path, "t-fewest-b", "flag_policies.py")
    cfg = _sweep(tmp_path / "cfg", "t-fewest-b")
    monkeypatch.chdir(tmp_path)  # --plugin paths are relative to the current folder
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["sweep", str(cfg), "--plugin", "flag_policies.py", "--out", str(out),
                                   "--workers", "2", "--quiet"])
    assert res.exit_code == 0, res.output
    assert sum(r["policy_name"] == "t-fewest-b" for r in _rows(out)) == 4
    # adding or removing a plug-in does not change the cells: a rerun skips them all
    res = CliRunner().invoke(cli, ["sweep", str(cfg), "--plugin", "flag_policies.py", "--out", str(out), "--quiet"])
    assert res.exit_code == 0 and "0 run, 6 already finished" in res.output


def test_module_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _plugin(tmp_path / "mods", "t-fewest-c", "t_sweep_mod_policies.py")
    monkeypatch.syspath_prepend(str(tmp_path / "mods"))  # spawned workers get the same sys.path
    cfg = _sweep(tmp_path, "t-fewest-c", "plugins: t_sweep_mod_policies")
    _, cells = load_cells(cfg)
    assert cells[0].params.plugins == ("t_sweep_mod_policies",)
    outcome = run_sweep(cells, tmp_path / "out", workers=2)
    assert outcome.ran == 6 and not outcome.failed


def test_unknown_policy_without_plugin_is_a_located_error(tmp_path: Path) -> None:
    cfg = _sweep(tmp_path, "t-never-registered")
    res = CliRunner().invoke(cli, ["sweep", str(cfg), "--out", str(tmp_path / "o")])
    assert res.exit_code != 0 and isinstance(res.exception, ConfigError)
    msg = str(res.exception)
    assert msg.startswith(f"{cfg}, field 'policy'") and "t-never-registered" in msg and "--plugin" in msg
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(("plugins", "needle"), [
    ("plugins: [missing.py]", "plug-in file not found"),
    ("plugins: [broken.py]", "NameError"),
    ("plugins: [no_such_module_xyz]", "cannot import plug-in module"),
])
def test_bad_plugin_is_a_located_error(tmp_path: Path, plugins: str, needle: str) -> None:
    (tmp_path / "broken.py").write_text("x = 1\nundefined_name\n")
    cfg = _sweep(tmp_path, "fifo", plugins)
    with pytest.raises(ConfigError) as ei:
        load_cells(cfg)
    assert str(ei.value).startswith(f"{cfg}, field 'plugins.0'") and needle in str(ei.value)


def test_worker_imports_the_shipped_source(tmp_path: Path) -> None:
    """A Ray worker on another machine has no copy of the file: the source shipped with the cell is enough."""
    gone = str(tmp_path / "elsewhere" / "gone_policies.py")
    source = POLICY.replace("{name}", "t-fewest-d").encode()
    params = {"policy": "t-fewest-d", "cluster": "wang2020", "trace": {"synthetic": {"jobs": 10, "rate_per_s": 0.1}},
              "plugins": [gone]}
    out = _run_cell_dict(params, ((gone, source),))
    assert out.error is None, out.error
    assert json.loads(out.files["summary.json"])["policy"] == "t-fewest-d"
    assert load_plugin(gone) == load_plugin(gone, source)  # loaded once


def test_plugin_on_ray_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ray", reason="ray is an optional extra (pip install 'ddlsched[ray]')")
    plug = _plugin(tmp_path / "plug", "t-fewest-e")
    cfg = _sweep(tmp_path, "t-fewest-e", "plugins: [plug/my_policies.py]")
    _, cells = load_cells(cfg)
    from ddlsched.experiments.sweep import plugin_sources

    sources = plugin_sources(cells)
    plug.unlink()  # the workers must not need the file
    monkeypatch.setattr("ddlsched.experiments.sweep.plugin_sources", lambda _cells: sources)
    outcome = run_sweep(cells, tmp_path / "out", workers=2, backend="ray")
    assert outcome.ran == 6 and not outcome.failed, outcome.failed
