"""The worked examples of docs/traces.md run as written: every ``$ ddlsched ...`` line of a ``console`` block, from
the repository's layout (``data/``, ``examples/`` linked into a temporary folder that receives ``out/``), exits 0
and prints every line shown under it."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest

from ddlsched.cli import main

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "traces.md"


def examples() -> list[tuple[str, list[str]]]:
    """(command, the lines shown under it) of every console block of the page."""
    out: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```console\n(.*?)```", PAGE.read_text(), re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                out.append((line[2:], []))
            elif line.strip():
                out[-1][1].append(line)
    return out


def test_the_page_has_a_worked_example_per_export_format() -> None:
    text = " ".join(cmd for cmd, _ in examples())
    for needle in ("sacct_gpu.txt", "pods_gpu.csv", "--gpus-from"):
        assert needle in text


@pytest.mark.parametrize(("cmd", "shown"), examples(), ids=[c[:60] for c, _ in examples()])
def test_worked_example_runs_as_written(cmd: str, shown: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    for d in ("data", "examples"):
        (tmp_path / d).symlink_to(ROOT / d)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DDLSCHED_CACHE", "off")
    argv = shlex.split(cmd)
    assert argv[0] == "ddlsched"
    monkeypatch.setattr(sys, "argv", argv)
    code = 0
    try:
        main()
    except SystemExit as e:
        code = int(e.code or 0)
    out = capsys.readouterr()
    text = out.out + out.err
    assert code == 0, text
    for line in shown:
        assert line in text, f"not printed: {line}\n---\n{text}"


def test_cluster_page_examples_load(tmp_path: Path) -> None:
    import ddlsched

    text = (ROOT / "docs" / "clusters.md").read_text()
    blocks = re.findall(r"```(yaml|toml)\n(.*?)```", text, re.S)
    assert [k for k, _ in blocks] == ["yaml", "toml"]
    for kind, body in blocks:
        f = tmp_path / f"c.{kind}"
        f.write_text(body)
        assert ddlsched.load_cluster(f).num_gpus > 0
    for link in re.findall(r"\]\(\.\./(examples/clusters/[\w.]+)\)", text):
        assert ddlsched.load_cluster(ROOT / link).num_gpus > 0
    assert "docs/clusters.md" in (ROOT / "README.md").read_text()


def test_after_make_demo_the_readme_commands_have_a_way_onto_the_path() -> None:
    """The README says how to get ``ddlsched`` on the PATH after ``make demo``, the demo prints it, and the
    console script it names is what an install of this package provides (the venv running the tests has it)."""
    readme = (ROOT / "README.md").read_text()
    using = readme[readme.index("## Using it"):]
    hint = "`. .venv/bin/activate`"
    assert hint in using[: using.index("```")]
    assert ". $(VENV)/bin/activate" in (ROOT / "Makefile").read_text().split("\ndemo:", 1)[1].split("\n\n")[0]
    assert 'ddlsched = "ddlsched.cli:main"' in (ROOT / "pyproject.toml").read_text()
    assert (Path(sys.executable).parent / "ddlsched").exists()


def test_api_page_window_example_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("DDLSCHED_CACHE", "off")
    block = next(b for b in re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "api.md").read_text(), re.S)
                 if "warmup=" in b)
    ns: dict[str, object] = {"ddlsched": __import__("ddlsched")}
    exec(compile(block, "docs/api.md", "exec"), ns)
    s, r = ns["s"], ns["r"]
    assert s.filtered == {"state": 4, "never_ran": 2, "zero_gpus": 2, "step": 5}  # type: ignore[attr-defined]
    assert r.summary["rows_read"] == 25  # type: ignore[attr-defined]
