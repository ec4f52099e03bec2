"""Documentation that is generated or promised stays true."""

from __future__ import annotations

from pathlib import Path

from ddlsched.vocabulary import markdown

ROOT = Path(__file__).resolve().parents[1]


def test_metrics_page_is_generated_from_the_vocabulary() -> None:
    expected = markdown()
    hint = "run: python -m ddlsched.vocabulary > docs/metrics.md"
    assert (ROOT / "docs" / "metrics.md").read_text() == expected, hint
