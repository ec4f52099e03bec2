"""Config and flag fuzz campaign (issue 11): bad cluster files, sweep files and CLI flags.

Every case must end with a non-zero exit and ONE line on stderr, ``error: ...``, that names the file (and the
line or the field) or the flag; no traceback, no hang, and nothing written that looks like a complete run.
The cases run in-process through ``ddlsched.cli.main`` (the console entry point), so the whole campaign takes
a few seconds. A longer, randomised setting: ``pytest -m fuzz_long tests/test_fuzz_configs.py``.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from ddlsched.cli import main

MURI = str(Path(__file__).resolve().parents[1] / "data/traces/muri/trace1.csv")

CLUSTER: dict[str, Any] = {
    "name": "c",
    "network": {"intra_server_gbps": 1200, "nic_gbps": 25, "oversubscription": 2, "hop_latency_us": 1},
    "gpu_types": {"V100": {"mem_gb": 32, "speed": 1.0}},
    "racks": [{"count": 2, "servers": [{"count": 2, "gpus": 4, "gpu_type": "V100", "nic_gbps": 25}]}],
}
SWEEP: dict[str, Any] = {
    "name": "fz",
    "policies": ["fifo", {"name": "tiresias", "params": {"starvation_factor": 2.0}}],
    "traces": [{"synthetic": {"jobs": 5, "rate_per_s": 0.1}}],
    "clusters": ["wang2020"],
    "seeds": [0],
    "load_scale": 1.0,
    "restart_penalty_s": 30,
    "oversubscription": None,
    "max_jobs": 5,
}


@dataclass(frozen=True)
class Case:
    id: str
    kind: str  # cluster | sweep | flag
    content: str | bytes | None = None  # the file's text (cluster/sweep)
    suffix: str = ".yaml"
    args: tuple[str, ...] = ()  # extra CLI arguments
    must_name: tuple[str, ...] = ()  # besides the file: substrings the error line must contain (field, flag)


def _set(d: Any, path: tuple[Any, ...], value: Any) -> Any:
    d = json.loads(json.dumps(d))
    cur = d
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = value
    return d


def _yaml(d: Any) -> str:
    return yaml.safe_dump(d, sort_keys=False, allow_unicode=True)


# YAML spellings of bad values (raw text, so that .nan/.inf/huge ints reach the loader as written)
BAD_FLOATS = {"nan": ".nan", "inf": ".inf", "-inf": "-.inf", "neg": "-1", "str": "abc", "bool": "true",
              "list": "[1]", "map": "{a: 1}", "null": "null", "huge": "1.0e+400"}
BAD_COUNTS = {"bool": "true", "frac": "1.5", "neg": "-1", "zero": "0", "big": "1000000000",
              "huge": "100000000000000000000", "str": "'8'", "inf": ".inf", "null": "null", "list": "[2]"}
MARK = "__FUZZ__"


def _mutated(base: dict[str, Any], path: tuple[Any, ...], raw: str) -> str:
    return _yaml(_set(base, path, MARK)).replace(f"'{MARK}'", raw).replace(MARK, raw)


def cluster_cases() -> list[Case]:
    out: list[Case] = []
    float_fields = [("network", "intra_server_gbps"), ("network", "nic_gbps"), ("network", "oversubscription"),
                    ("network", "hop_latency_us"), ("gpu_types", "V100", "mem_gb"), ("gpu_types", "V100", "speed"),
                    ("racks", 0, "servers", 0, "nic_gbps")]
    for path in float_fields:
        for k, raw in BAD_FLOATS.items():
            if k == "neg" and path[-1] == "hop_latency_us":
                raw = "-1.0e-3"
            if k == "null" and path[-1] in ("nic_gbps",) and path[0] == "racks":
                continue  # null = use the network default
            out.append(Case(f"cluster-{'.'.join(map(str, path))}-{k}", "cluster", _mutated(CLUSTER, path, raw),
                            must_name=(str(path[-1]),)))
    for path in [("racks", 0, "count"), ("racks", 0, "servers", 0, "count"), ("racks", 0, "servers", 0, "gpus")]:
        for k, raw in BAD_COUNTS.items():
            out.append(Case(f"cluster-{'.'.join(map(str, path))}-{k}", "cluster", _mutated(CLUSTER, path, raw),
                            must_name=(str(path[-1]),)))
    for k, raw in {"unknown": "Z100", "int": "5", "null": "null", "empty": "''"}.items():
        out.append(Case(f"cluster-gpu_type-{k}", "cluster",
                        _mutated(CLUSTER, ("racks", 0, "servers", 0, "gpu_type"), raw), must_name=("gpu_type",)))
    for where, path in [("top", ()), ("network", ("network",)), ("gpu", ("gpu_types", "V100")),
                        ("rack", ("racks", 0)), ("server", ("racks", 0, "servers", 0))]:
        d = json.loads(json.dumps(CLUSTER))
        cur = d
        for k in path:
            cur = cur[k]
        cur["speeed"] = 1
        out.append(Case(f"cluster-unknown-key-{where}", "cluster", _yaml(d), must_name=("speeed",)))
    good = _yaml(CLUSTER)
    structural = {
        "empty": "", "only-comment": "# nothing\n", "list-top": "- 1\n- 2\n", "scalar-top": "42\n",
        "no-gpu-types": good.replace("gpu_types:\n  V100:\n    mem_gb: 32\n    speed: 1.0\n", "gpu_types: {}\n"),
        "no-racks": _yaml({**CLUSTER, "racks": []}),
        "empty-servers": _yaml(_set(CLUSTER, ("racks", 0, "servers"), [])),
        "dup-top-key": good + "name: again\n",
        "dup-nested-key": good.replace("  nic_gbps: 25\n", "  nic_gbps: 25\n  nic_gbps: 10\n", 1),
        "cyclic-alias": "name: c\nnetwork: &n\n  x: *n\n" + good.split("\n", 1)[1],
        "self-alias-list": "name: c\ngpu_types: &a [*a]\nracks: []\n",
        "syntax": "name: c\nracks: [\n",
        "tab-indent": "name: c\nnetwork:\n\tnic_gbps: 25\n",
        "bad-utf8": good.encode().replace(b"name: c", b"name: c\xff\xfe"),
        "latin1-comment": b"# caf\xe9\n" + good.encode(),
        "nul-byte": good.encode() + b"\x00\n",
        "bom-utf16": "\ufeffname: c\n".encode("utf-16"),
        "name-list": _mutated(CLUSTER, ("name",), "[a, b]"),
        "too-many-gpus": _mutated(_set(CLUSTER, ("racks", 0, "count"), 100000), ("racks", 0, "servers", 0, "count"),
                                  "100000"),
        "huge-alias-bomb": "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                           "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c]\n"
                           + good,
    }
    for k, text in structural.items():
        out.append(Case(f"cluster-{k}", "cluster", text))
    toml_cases = {
        "toml-nan": 'name = "c"\n[network]\nnic_gbps = nan\n[gpu_types.V100]\nmem_gb = 32\n'
                    '[[racks]]\n[[racks.servers]]\ngpus = 4\ngpu_type = "V100"\n',
        "toml-inf": 'name = "c"\n[gpu_types.V100]\nmem_gb = inf\n[[racks]]\n[[racks.servers]]\ngpus = 4\n'
                    'gpu_type = "V100"\n',
        "toml-syntax": 'name = "c\n',
        "toml-dup": 'name = "c"\nname = "d"\n',
        "toml-bad-utf8": b'name = "c\xff"\n',
        "toml-bool-gpus": 'name = "c"\n[gpu_types.V100]\nmem_gb = 32\n[[racks]]\n[[racks.servers]]\ngpus = true\n'
                          'gpu_type = "V100"\n',
    }
    for k, text in toml_cases.items():
        out.append(Case(f"cluster-{k}", "cluster", text, suffix=".toml"))
    return out


def sweep_cases() -> list[Case]:
    out: list[Case] = []
    values: dict[str, dict[str, str]] = {
        "name": {"dotdot": "../../x", "abs": "/tmp/x", "slash": "a/b", "dot": ".", "empty": "''", "int": "5",
                 "list": "[a]"},
        "seeds": {"neg": "[-1]", "frac": "[1.5]", "str": "[a]", "bool": "[true]", "nan": "[.nan]", "empty": "[]",
                  "huge": "[100000000000000000000000]"},
        "load_scale": {"nan": ".nan", "inf": ".inf", "neg": "-1", "zero": "0", "huge": "1.0e+300", "tiny": "1.0e-320",
                       "str": "abc"},
        "restart_penalty_s": {"nan": ".nan", "inf": ".inf", "neg": "-5", "huge": "1.0e+300", "str": "x"},
        "oversubscription": {"nan": ".nan", "inf": ".inf", "neg": "-1", "zero": "0"},
        "max_jobs": {"zero": "0", "neg": "-1", "frac": "1.5", "bool": "true", "str": "many"},
        "policies": {"unknown": "[nope]", "empty": "[]", "int": "[5]", "null": "null",
                     "bad-param-type": "[{name: tiresias, params: {starvation_factor: x}}]",
                     "bad-param-range": "[{name: tiresias, params: {starvation_factor: -1}}]",
                     "bad-param-nan": "[{name: tiresias, params: {starvation_factor: .nan}}]",
                     "unknown-param": "[{name: fifo, params: {nope: 1}}]",
                     "grid-not-list": "[{name: tiresias, grid: {starvation_factor: 2}}]",
                     "grid-bad": "[{name: tiresias, grid: {starvation_factor: [1.0, x]}}]",
                     "params-and-grid": "[{name: tiresias, params: {starvation_factor: 1.0}, "
                                        "grid: {starvation_factor: [2.0]}}]",
                     "bad-thresholds": "[{name: tiresias, params: {thresholds: [-5]}}]"},
        "traces": {"missing": "[missing.csv]", "empty": "[]", "both": "[{path: a.csv, synthetic: {jobs: 5}}]",
                   "jobs-zero": "[{synthetic: {jobs: 0, rate_per_s: 0.1}}]",
                   "rate-nan": "[{synthetic: {jobs: 5, rate_per_s: .nan}}]",
                   "rate-neg": "[{synthetic: {jobs: 5, rate_per_s: -1}}]",
                   "jobs-huge": "[{synthetic: {jobs: 1000000000000, rate_per_s: 0.1}}]",
                   "bad-format": "[{path: x.csv, format: nope}]",
                   "bad-option": "[{path: " + MURI + ", options: {time_unit: fortnight}}]",
                   "unknown-option": "[{path: " + MURI + ", options: {nope: 1}}]"},
        "clusters": {"unknown": "[nope]", "missing-file": "[missing.yaml]", "empty": "[]", "int": "[5]"},
        "perf_model": {"unknown": "nope", "int": "5"},
        "perf_params": {"unknown": "{nope: [1]}", "nan": "{interference: [.nan]}", "str": "{interference: [x]}"},
        "plugins": {"missing": "[missing.py]", "module": "[no_such_module_qq]", "int": "[5]"},
    }
    for key, vals in values.items():
        for k, raw in vals.items():
            out.append(Case(f"sweep-{key}-{k}", "sweep", _mutated(SWEEP, (key,), raw), must_name=(key,)))
    good = _yaml(SWEEP)
    structural = {
        "empty": "", "list-top": "- 1\n", "unknown-key": good + "seedz: [1]\n", "dup-key": good + "seeds: [1]\n",
        "cyclic-alias": "name: fz\nperf_params: &p {a: *p}\n" + good.split("\n", 1)[1],
        "syntax": "policies: [fifo\n", "bad-utf8": good.encode() + b"# \xff\xfe\n",
        "no-policies": _yaml({k: v for k, v in SWEEP.items() if k != "policies"}),
        "toml-syntax": ("policies = [\n", ".toml"),
        "toml-nan": ('policies = ["fifo"]\ntraces = ["x.csv"]\nclusters = ["wang2020"]\nload_scale = nan\n', ".toml"),
    }
    for k, v in structural.items():
        text, suffix = v if isinstance(v, tuple) else (v, ".yaml")
        out.append(Case(f"sweep-{k}", "sweep", text, suffix=suffix))
    return out


def flag_cases() -> list[Case]:
    out: list[Case] = []
    flags = {
        "--load-scale": ["nan", "inf", "-inf", "-1", "0", "1e-320", "1e400", "abc", "", "1e7"],
        "--restart-penalty": ["nan", "inf", "-1000", "1e400", "x", "1e300"],
        "--time-unit": ["fortnight", "", "MIN"],
        "--seed": ["-1", "1.5", "18446744073709551616", "x"],
        "--max-jobs": ["0", "-1", "x", "1e3"],
        "--policy-param": ["starvation_factor=x", "starvation_factor=-1", "starvation_factor=NaN",
                           "starvation_factor=1e400", "nope=1", "=1", "novalue", "thresholds=[1e400]",
                           "thresholds=[-5]", "thresholds=x", "starvation_factor=[1]",
                           "starvation_factor=" + "9" * 40],
        "--perf-param": ["nope=1", "x", "interference=NaN", "interference=abc"],
        "--model-param": ["nope=1", "max_rounds=x"],
        "--policy": ["nope", "", "fifo+nope", "nope+consolidated"],
        "--cluster": ["nope", "", "/nonexistent/c.yaml"],
        "--perf-model": ["nope"],
        "--column": ["x", "nope=a"],
        "--duration-unit": ["decade"],
        "--models": ["/nonexistent/models.csv"],
    }
    for flag, vals in flags.items():
        for v in vals:
            named = (v,) if flag in ("--cluster", "--models") and v else (flag.lstrip("-"),)  # a file: its path
            out.append(Case(f"flag{flag}={v[:24]}", "flag", args=(flag, v), must_name=named))
    out.append(Case("flag-compare-policy-nope", "flag", args=("--compare", "fifo,nope"), must_name=("nope",)))
    for flag, v in {"--workers": "0", "--backend": "nope", "--address": "x"}.items():
        out.append(Case(f"flag-sweep{flag}={v}", "flag", args=("--sweep", flag, v), must_name=(flag,)))
    return out


CASES = cluster_cases() + sweep_cases() + flag_cases()


def run_main(args: list[str], cwd: Path) -> tuple[int, str]:
    """``ddlsched ARGS`` in-process; (exit status, stderr). An exception other than SystemExit escapes (a traceback)."""
    err = io.StringIO()
    old_argv = sys.argv
    sys.argv = ["ddlsched", *args]
    code: Any = 0
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), contextlib.chdir(cwd):
        try:
            main()
        except SystemExit as e:
            code = e.code
        finally:
            sys.argv = old_argv
    return (0 if code is None else int(code)), err.getvalue()


def _command(case: Case, tmp: Path) -> tuple[list[str], Path | None]:
    out = tmp / "out"
    if case.kind == "cluster":
        f = tmp / f"cluster{case.suffix}"
        f.write_bytes(case.content if isinstance(case.content, bytes) else str(case.content).encode())
        return ["simulate", "--trace", MURI, "--max-jobs", "5", "--cluster", str(f), "--policy", "fifo",
                "--out", str(out), "--quiet"], f
    if case.kind == "sweep":
        f = tmp / f"sweep{case.suffix}"
        f.write_bytes(case.content if isinstance(case.content, bytes) else str(case.content).encode())
        return ["sweep", str(f), "--out", str(out), "--quiet"], f
    if case.args and case.args[0] == "--sweep":
        f = tmp / "sweep.yaml"
        f.write_text(_yaml(SWEEP))
        return ["sweep", str(f), "--out", str(out), "--quiet", *case.args[1:]], None
    if case.args and case.args[0] == "--compare":
        return ["compare", "--trace", MURI, "--max-jobs", "5", "--cluster", "wang2020", "--policies", case.args[1],
                "--out", str(out), "--quiet"], None
    base = {"--trace": MURI, "--max-jobs": "5", "--cluster": "wang2020", "--policy": "tiresias",
            "--out": str(out)}
    flag, value = case.args
    if flag == "--model-param":
        base["--policy"] = "hlas"
    if flag == "--restart-penalty" or flag == "--perf-param" or flag == "--perf-model":
        base["--policy"] = "tiresias"
    if flag in base:
        base[flag] = value
        extra: list[str] = []
    else:
        extra = [flag, value]
    return ["simulate", *[x for kv in base.items() for x in kv], "--quiet", *extra], None


def check(case: Case, tmp: Path) -> None:
    args, f = _command(case, tmp)
    code, err = run_main(args, tmp)
    lines = [x for x in err.splitlines() if x.strip() and not x.startswith("note: ")]  # notes may come first
    assert code == 2, f"exit {code}; stderr: {err!r}"
    assert len(lines) == 1 and lines[0].startswith("error: "), f"not one error line: {err!r}"
    line = lines[0]
    assert "Traceback" not in err
    if f is not None:
        assert str(f) in line, f"the file is not named: {line!r}"
    for needle in case.must_name:  # a flag may be named as its field: --policy-param / policy_param
        assert needle in line or needle.replace("-", "_") in line, f"{needle!r} not named: {line!r}"
    out = tmp / "out"
    assert not list(out.rglob("summary.json")) if out.exists() else True, "a complete-looking run was written"


@pytest.mark.timeout(30)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_config_or_flag_is_one_located_error(case: Case, tmp_path: Path) -> None:
    check(case, tmp_path)


def test_campaign_size() -> None:
    counts = {k: sum(c.kind == k for c in CASES) for k in ("cluster", "sweep", "flag")}
    assert sum(counts.values()) >= 150 and all(v >= 20 for v in counts.values()), counts
    assert len({c.id for c in CASES}) == len(CASES)


def _random_mutations(seed: int, n: int) -> list[Case]:
    """Random single-field mutations of the cluster and sweep files (the long setting)."""
    import random

    rng = random.Random(seed)
    pool = list(BAD_FLOATS.values()) + list(BAD_COUNTS.values()) + ["''", "[]", "{}", "~", "0x10", "1_0", "-0"]
    paths: list[tuple[str, dict[str, Any], tuple[Any, ...], Callable[[], None] | None]] = []
    for base, kind in ((CLUSTER, "cluster"), (SWEEP, "sweep")):
        def walk(d: Any, p: tuple[Any, ...], base: dict[str, Any] = base, kind: str = kind) -> None:
            if isinstance(d, dict):
                for k, v in d.items():
                    walk(v, (*p, k))
            elif isinstance(d, list):
                for i, v in enumerate(d):
                    walk(v, (*p, i))
            if p:
                paths.append((kind, base, p, None))
        walk(base, ())
    out = []
    for i in range(n):
        kind, base, p, _ = rng.choice(paths)
        raw = rng.choice(pool)
        out.append(Case(f"rand{i}-{kind}-{'.'.join(map(str, p))}={raw}", kind, _mutated(base, p, raw)))
    return out


@pytest.mark.fuzz_long
def test_random_mutations_never_traceback(tmp_path: Path) -> None:
    """Random mutations may be valid: only require no traceback, no hang, and a clean exit status."""
    for i, case in enumerate(_random_mutations(0, 600)):
        d = tmp_path / str(i)
        d.mkdir()
        args, _ = _command(case, d)
        code, err = run_main(args, d)
        assert code in (0, 1, 2) and "Traceback" not in err, (case.id, err)
        if code == 2:
            assert len([x for x in err.splitlines() if x.strip()]) == 1, (case.id, err)
