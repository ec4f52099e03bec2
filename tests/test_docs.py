"""Documentation that is generated or promised stays true."""

from __future__ import annotations

import re
from pathlib import Path

from ddlsched.vocabulary import markdown

ROOT = Path(__file__).resolve().parents[1]


def test_metrics_page_is_generated_from_the_vocabulary() -> None:
    expected = markdown()
    hint = "run: python -m ddlsched.vocabulary > docs/metrics.md"
    assert (ROOT / "docs" / "metrics.md").read_text() == expected, hint


# ------------------------------------------------------------------ citations stay inside the repository
SCANNED = ("src", "tests", "docs", "examples", "benchmarks", "README.md", "BENCHMARKS.md")
TEXT = {".py", ".md", ".csv", ".json", ".yaml", ".yml", ".toml", ".txt"}
OUTSIDE = ("ALGORITHMS" + ".md", "ARCHITECTURE" + ".md", "shared/" + "design")  # built so this file does not match
CITE = re.compile(r"(docs/[\w./-]+?\.md)(?: §(\d+(?:\.\d+)?))?")


def _files() -> list[Path]:
    out: list[Path] = []
    for name in SCANNED:
        p = ROOT / name
        out += [p] if p.is_file() else [f for f in sorted(p.rglob("*")) if f.is_file() and f.suffix in TEXT]
    return [f for f in out if "golden" not in f.parts and f.name != "test_docs.py"]


def _headings(page: Path) -> set[str]:
    """Section numbers of a page's headings: '# 4. Title' → '4', '## 4.3 Title' → '4.3', '## 3. Title' → '3'."""
    return {m.group(1) for m in re.finditer(r"^#+ (\d+(?:\.\d+)*)\.? ", page.read_text(), re.M)}


def citations(files: list[Path]) -> list[tuple[Path, str, str | None]]:
    return [(f, m.group(1), m.group(2)) for f in files for m in CITE.finditer(f.read_text(errors="replace"))]


def test_nothing_cites_notes_outside_the_repository() -> None:
    bad = [f"{f.relative_to(ROOT)}: {word}" for f in _files() for word in OUTSIDE
           if word in f.read_text(errors="replace")]
    assert not bad, bad


def test_every_cited_docs_page_and_section_exists() -> None:
    problems = check_citations(_files())
    assert not problems, problems


def check_citations(files: list[Path], root: Path = ROOT) -> list[str]:
    problems = []
    for f, page, section in citations(files):
        target = ROOT / page
        if not target.is_file():
            problems.append(f"{f.relative_to(root)}: {page} does not exist")
        elif section is not None and section not in _headings(target):
            problems.append(f"{f.relative_to(root)}: {page} has no section §{section}")
    return problems


def test_the_citation_check_catches_a_broken_citation(tmp_path: Path) -> None:
    bad = tmp_path / "x.py"
    bad.write_text('"""See docs/physics.md §99 and docs/nowhere.md."""\n')
    problems = [p.split(": ", 1)[1] for p in check_citations([bad], root=tmp_path)]
    assert problems == ["docs/physics.md has no section §99", "docs/nowhere.md does not exist"]
