"""Behaviour lock: each golden case reproduces its committed files byte for byte (see tests/golden_cases.py)."""

from __future__ import annotations

import pytest

from golden_cases import CASES, GOLDEN, run_case


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_case_is_byte_identical(name: str) -> None:
    expected = {f.name: f.read_bytes() for f in sorted((GOLDEN / name).iterdir())}
    got = run_case(name)
    assert sorted(got) == sorted(expected), f"{name}: files differ"
    for f, data in got.items():
        assert data == expected[f], f"{name}/{f} changed; regenerate only with a commit that says why"
