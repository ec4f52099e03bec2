"""A physics model's parameters are read the same whether its module is compiled or not (perf.constructor_params)."""

from __future__ import annotations

import ast

import pytest

from ddlsched.cluster.presets import load_cluster
from ddlsched.errors import ConfigError
from ddlsched.native import source_path
from ddlsched.perf import PERF_MODELS, PerfModel, constructor_params, make_perf_model


def _source_params(cls: type) -> dict[str, str]:
    """The constructor's keyword parameters after ``cluster``, read from the module's source file."""
    if cls is PerfModel:  # the base takes only ``cluster`` (and rejects anything else)
        return {}
    tree = ast.parse(source_path(cls.__module__).read_text())
    (klass,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls.__name__]
    inits = [n for n in klass.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"]
    if not inits:  # inherited
        return _source_params(cls.__mro__[1])
    (init,) = inits
    args = [*init.args.args, *init.args.kwonlyargs]
    return {a.arg: ast.unparse(a.annotation) for a in args if a.arg not in ("self", "cluster")
            and a.annotation is not None}


@pytest.mark.parametrize("name", sorted(PERF_MODELS))
def test_constructor_params_match_source(name: str) -> None:
    cls = PERF_MODELS[name]
    assert constructor_params(cls) == _source_params(cls)
    declared = cls.__dict__.get("init_params")
    if declared is not None:  # the table a compiled build reads must be the source's, in order
        assert list(declared.items()) == list(_source_params(cls).items())


def test_maxmin_declares_its_params() -> None:
    assert "init_params" in PERF_MODELS["maxmin"].__dict__


def test_maxmin_params_checked_by_name_and_value() -> None:
    cluster = load_cluster("philly512")
    assert make_perf_model("maxmin", cluster, efficiency=0.9, fairness="flow").params() == {
        "efficiency": 0.9, "fairness": "flow"}
    with pytest.raises(ConfigError, match="unknown parameter"):
        make_perf_model("maxmin", cluster, efficency=0.9)
    with pytest.raises(ConfigError, match="not a finite number"):
        make_perf_model("maxmin", cluster, efficiency=float("nan"))
    with pytest.raises(ConfigError, match="efficiency must be in"):
        make_perf_model("maxmin", cluster, efficiency=2.0)
