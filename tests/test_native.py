"""The optional compiled build (docs/engine.md "Compiled build"): when it is used, and that it changes nothing.

The byte-identity check needs a build (``make compiled``); CI builds one after the pure-Python run and sets
``DDLSCHED_REQUIRE_COMPILED=1``, which turns the skip into a failure."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ddlsched import native

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "data" / "traces" / "philly_pollux" / "philly.csv"
OUTPUTS = ("records.csv", "summary.json", "timeseries.csv")


def test_every_compiled_module_has_its_source() -> None:
    assert len(set(native.MODULES)) == len(native.MODULES)
    for m in native.MODULES:
        assert native.source_path(m).is_file(), m


def _fake_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, digests: dict[str, str] | None) -> None:
    manifest = tmp_path / "manifest.json"
    if digests is not None:
        manifest.write_text(json.dumps(digests))
    monkeypatch.setattr(native, "MANIFEST", manifest)
    monkeypatch.setattr(native, "built_extensions", lambda: [tmp_path / "x.so"])
    monkeypatch.delenv(native.PURE_ENV, raising=False)


def test_a_build_is_used_only_while_it_matches_its_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "built_extensions", lambda: [])
    assert native.decide()[0] == "pure"
    good = native.source_digests()
    _fake_build(tmp_path, monkeypatch, good)
    assert native.decide() == ("compiled", "build matches the source")
    stale = dict(good, **{native.MODULES[0]: "0" * 64})
    _fake_build(tmp_path, monkeypatch, stale)
    mode, why = native.decide()
    assert mode == "pure" and native.MODULES[0] in why and "older than the source" in why
    _fake_build(tmp_path, monkeypatch, None)
    assert native.decide()[0] == "pure"
    _fake_build(tmp_path, monkeypatch, good)
    monkeypatch.setenv(native.PURE_ENV, "1")
    assert native.decide() == ("pure", f"{native.PURE_ENV}=1")
    monkeypatch.setenv(native.PURE_ENV, "0")
    assert native.decide()[0] == "compiled"


def _module_file(env: dict[str, str]) -> str:
    code = "import ddlsched, ddlsched.engine.core as c, ddlsched.native as n; print(n.status()['mode'], c.__file__)"
    return subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def _require_build() -> None:
    mode, why = native.decide()
    if mode != "compiled":
        if os.environ.get("DDLSCHED_REQUIRE_COMPILED"):
            pytest.fail(f"DDLSCHED_REQUIRE_COMPILED is set but the compiled build is not in use: {why}")
        pytest.skip(f"no compiled build in use ({why}); make compiled")


def test_pure_switch_loads_the_sources() -> None:
    _require_build()
    env = dict(os.environ)
    env.pop(native.PURE_ENV, None)
    mode, path = _module_file(env).split(" ", 1)
    assert mode == "compiled" and not path.endswith(".py")
    mode, path = _module_file({**env, native.PURE_ENV: "1"}).split(" ", 1)
    assert mode == "pure" and path.endswith(".py")


CELLS = {
    "fifo": ["--cluster", "philly512", "--policy", "fifo+consolidated", "--window", "55d:58d"],
    "tiresias": ["--cluster", "philly512", "--policy", "tiresias+consolidated", "--max-jobs", "1500"],
    "srtf-spread": ["--cluster", "philly512", "--policy", "srtf+first_fit", "--max-jobs", "800",
                    "--perf-model", "maxmin", "--perf-param", "fairness=tcp"],
    "pack-phased": ["--cluster", "philly512", "--policy", "fifo+pack", "--max-jobs", "800", "--perf-model", "phased"],
    "tiresias-random": ["--cluster", "philly512", "--policy", "tiresias+random", "--window", "66.75d:78.5d",
                        "--load-scale", "1.35", "--max-jobs", "800", "--seed", "3"],
    "rounds-hlas": ["--cluster", "philly512", "--policy", "hlas", "--max-jobs", "300"],
    "taskdag-ada-srsf": ["--cluster", "philly512", "--policy", "ada-srsf", "--max-jobs", "60"],
}


def _digest(tmp: Path, name: str, args: list[str], pure: bool) -> str:
    out = tmp / f"{name}-{'pure' if pure else 'compiled'}"
    env = dict(os.environ, DDLSCHED_CACHE=str(tmp / "cache"))
    env.pop(native.PURE_ENV, None)
    if pure:
        env[native.PURE_ENV] = "1"
    subprocess.run([sys.executable, "-m", "ddlsched.cli", "simulate", "--trace", str(TRACE), *args,
                    "--out", str(out), "--quiet"], check=True, env=env, capture_output=True)
    return hashlib.sha256(b"".join((out / f).read_bytes() for f in OUTPUTS)).hexdigest()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(CELLS))
def test_compiled_and_pure_give_the_same_bytes(tmp_path: Path, name: str) -> None:
    _require_build()
    assert _digest(tmp_path, name, CELLS[name], pure=False) == _digest(tmp_path, name, CELLS[name], pure=True)


def test_a_compiled_class_shows_its_source_signature() -> None:
    """``--policy-param`` is checked against the constructor's signature, which a compiled class hides: the
    registry reads it from the class's source twin (``native.source_class``), in either build the same."""
    import inspect

    from ddlsched.policies.ordering import Tiresias
    from ddlsched.policies.registry import validate_params

    twin = native.source_class(Tiresias)
    params = inspect.signature(twin.__init__).parameters
    assert list(params)[1:] == ["thresholds", "service", "starvation_factor"]
    assert params["starvation_factor"].default == 1.0
    assert (twin is Tiresias) == (native.status()["mode"] == "pure")
    assert validate_params(twin.__init__, {"thresholds": [10, 20]}, "t") == {"thresholds": [10.0, 20.0]}
    assert native.source_class(native.__class__) is native.__class__  # not a compiled module's class: itself
