"""Every policy by name, one registration style, validated parameters, and plug-ins.

* Built-in and plug-in policies are :class:`~ddlsched.policies.base.Policy` subclasses decorated with
  :func:`register`; the class's ``name`` is the policy's name and its ``__init__``'s typed keyword parameters are
  its parameters (``--policy-param key=value``), validated by type, range and finiteness before the run.
* ``ORDER+PLACEMENT`` composes a baseline (e.g. ``tiresias+first_fit``); a bare ordering uses ``consolidated``.
* Plug-ins: :func:`load_plugin` imports a ``.py`` file or a module (``--plugin``, ``plugins:`` in a sweep file);
  installed packages can also declare an entry point in the group ``ddlsched.policies``.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import json
import sys
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ConfigDict, ValidationError, create_model

from ddlsched.errors import ConfigError
from ddlsched.native import source_class
from ddlsched.policies.base import Policy
from ddlsched.policies.baselines import OrderedPolicy
from ddlsched.policies.ordering import ORDERINGS
from ddlsched.policies.placement import PLACEMENTS

P = TypeVar("P", bound=type[Policy])


@dataclass(frozen=True)
class PolicyEntry:
    name: str
    description: str
    cls: type[Policy]
    family: str
    origin: str


_NAMED: dict[str, PolicyEntry] = {}
_BUILTIN_MODULES = (
    "ddlsched.policies.ada_srsf",
    "ddlsched.policies.sjf_bco",
    "ddlsched.policies.delay",
    "ddlsched.policies.sharing",
    "ddlsched.policies.hare",
    "ddlsched.policies.hare_alg1",
    "ddlsched.policies.hare_allox",
    "ddlsched.policies.hare_fifo",
    "ddlsched.policies.hare_homo",
    "ddlsched.policies.quota",
    "ddlsched.policies.fair_maxmin",
    "ddlsched.policies.fair_maxmin_het",
    "ddlsched.policies.ftf",
    "ddlsched.policies.hindsight",
)
_loaded = False
_plugins: dict[str, str] = {}  # spec -> module name


def register(cls: P) -> P:
    """Class decorator: make a :class:`Policy` subclass available by its ``name`` everywhere (CLI, sweeps, API)."""
    if not (isinstance(cls, type) and issubclass(cls, Policy)):
        raise TypeError("@register takes a subclass of ddlsched.Policy")
    name = cls.__dict__.get("name") or ""
    if not name or not isinstance(name, str) or "+" in name:
        raise ValueError(f"{cls.__qualname__}: set a class attribute name = '...' (no '+') to register it")
    if name in ORDERINGS or name in PLACEMENTS:
        kind = "ordering" if name in ORDERINGS else "placement"
        raise ValueError(f"{cls.__qualname__}: name {name!r} is a built-in {kind}'s; choose another name, or "
                         "results would carry the built-in's name")
    old = _NAMED.get(name)
    if old is not None and old.cls is not cls:
        raise ValueError(f"policy {name!r} is registered twice ({old.origin} and {cls.__module__})")
    _NAMED[name] = PolicyEntry(name, cls.description, cls, cls.family, cls.__module__)
    return cls


def _load_builtins() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for mod in _BUILTIN_MODULES:
        importlib.import_module(mod)
    for ep in entry_points(group="ddlsched.policies"):
        try:
            ep.load()
        except (Exception, SystemExit) as e:  # a broken third-party plug-in must not take the built-ins down
            raise ConfigError(f"entry point {ep.name!r} ({ep.value}) failed to load: {e}", field="plugin") from None


def load_plugin(spec: str | Path, source: bytes | None = None) -> str:
    """Import a policy plug-in: a path to a ``.py`` file, or an importable module name. Returns the module name.
    Importing it runs its ``@register`` decorators. Loading the same plug-in twice is a no-op.

    ``source``: the file's bytes, read elsewhere (a sweep ships a file plug-in's source with each cell, so a Ray
    worker on another machine needs no copy of the file); the file itself is then not read."""
    key = str(spec)
    if key in _plugins:
        return _plugins[key]
    _load_builtins()
    path = Path(key)
    if source is not None or path.suffix == ".py" or path.exists():
        if source is None and not path.is_file():
            raise ConfigError("plug-in file not found", path=key, field="plugin")
        try:
            text = path.read_bytes() if source is None else source
        except OSError as e:
            raise ConfigError(f"cannot read plug-in: {e.strerror}", path=key, field="plugin") from None
        mod_name = f"ddlsched_plugin_{_mod_stem(path.stem)}_{hashlib.sha256(text).hexdigest()[:12]}"
        if mod_name not in sys.modules:
            _exec_plugin(mod_name, key, text)
    else:
        mod_name = key
        try:
            importlib.import_module(key)
        except ImportError as e:
            raise ConfigError(f"cannot import plug-in module {key!r}: {e}", field="plugin") from None
        except SystemExit as e:
            raise ConfigError(f"plug-in module {key!r} called sys.exit({e.code!r}) while being imported",
                              field="plugin") from None
        except Exception as e:
            raise ConfigError(f"plug-in module {key!r} failed to import: {type(e).__name__}: {e}",
                              field="plugin") from None
    _plugins[key] = mod_name
    return mod_name


def _mod_stem(stem: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in stem)


def _exec_plugin(mod_name: str, key: str, text: bytes) -> None:
    """Run a plug-in file's source as module ``mod_name`` (registered in ``sys.modules`` first, so that
    dataclasses and pickling inside it work); any failure is a ConfigError naming the file."""
    module = types.ModuleType(mod_name)
    module.__file__ = key
    sys.modules[mod_name] = module
    try:
        code = compile(text, key, "exec")
        exec(code, module.__dict__)
    except SystemExit as e:
        del sys.modules[mod_name]
        raise ConfigError(f"plug-in called sys.exit({e.code!r}) while being imported", path=key,
                          field="plugin") from None
    except Exception as e:
        del sys.modules[mod_name]
        line = getattr(e, "lineno", None) if isinstance(e, SyntaxError) else None
        raise ConfigError(f"plug-in failed to import: {type(e).__name__}: {e}", path=key, line=line,
                          field="plugin") from None


def plugin_source(spec: str) -> bytes | None:
    """The bytes of a file plug-in (to ship to workers), or None for a module name."""
    path = Path(spec)
    if path.suffix == ".py" or path.is_file():
        try:
            return path.read_bytes()
        except OSError as e:
            raise ConfigError(f"cannot read plug-in: {e.strerror}", path=spec, field="plugin") from None
    return None


# ---------------------------------------------------------------- parameters
_MODELS: dict[Callable[..., Any], Any] = {}


def _param_model(fn: Callable[..., Any]) -> Any:
    """A strict pydantic model of ``fn``'s keyword parameters (cached)."""
    if fn in _MODELS:
        return _MODELS[fn]
    sig = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:
        hints = {}
    fields: dict[str, Any] = {}
    for pname, p in sig.parameters.items():
        if pname == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        default = ... if p.default is p.empty else p.default
        fields[pname] = (hints.get(pname, Any), default)
    model = create_model(f"Params_{getattr(fn, '__qualname__', 'policy')}".replace(".", "_"),
                         __config__=ConfigDict(extra="forbid", strict=True, allow_inf_nan=False,
                                               arbitrary_types_allowed=True), **fields)
    _MODELS[fn] = model
    return model


def _required(fn: Callable[..., Any]) -> list[str]:
    """``fn``'s keyword parameters without a default."""
    return [name for name, p in inspect.signature(fn).parameters.items()
            if name != "self" and p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def validate_params(fn: Callable[..., Any], params: dict[str, Any], what: str) -> dict[str, Any]:
    """Check ``params`` against ``fn``'s typed signature; return them converted (e.g. lists → tuples)."""
    if not params and not _required(fn):
        return {}  # what the model below returns for no parameters, without building it (≈ 20 ms the first time)
    model = _param_model(fn)
    try:
        payload = json.dumps(params, allow_nan=True)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{what}: parameters must be JSON values ({e})", field="policy_param") from None
    try:
        parsed = model.model_validate_json(payload)
    except ValidationError as e:
        msgs = []
        for err in e.errors():
            loc = ".".join(str(x) for x in err["loc"]) or "?"
            if err["type"] == "extra_forbidden":
                allowed = ", ".join(model.model_fields) or "none"
                msgs.append(f"unknown parameter {loc!r} (allowed: {allowed})")
            else:
                msgs.append(f"{loc}={json.dumps(err.get('input'))[:60]}: {err['msg']}")
        raise ConfigError(f"{what}: " + "; ".join(msgs), field="policy_param") from None
    return {k: getattr(parsed, k) for k in parsed.model_fields_set}


def parameters(name: str) -> dict[str, tuple[str, Any]]:
    """Parameter name → (type, default) of a named policy (for ``ddlsched policies``)."""
    _load_builtins()
    entry = _NAMED.get(name)
    if entry is None:
        return {}
    out = {}
    for pname, p in inspect.signature(source_class(entry.cls).__init__).parameters.items():
        if pname != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            ann = p.annotation if isinstance(p.annotation, str) else getattr(p.annotation, "__name__",
                                                                            str(p.annotation))
            out[pname] = (str(ann), None if p.default is p.empty else p.default)
    return out


# ---------------------------------------------------------------- construction
SLOW_COMBINATIONS: dict[str, int] = {"tiresias+first_fit": 9_500, "tiresias+random": 9_500}
"""ORDER+PLACEMENT baselines measured to pass a minute on 10,000 Philly jobs (``Policy.paper_scale_jobs``):
preemptive least-attained-service order with spreading placement preempts and re-spreads tens of thousands of
times, and every change re-solves the shared links (BENCHMARKS.md, "Every policy at ~0.7 load", run B of
2026-11-26)."""
def make_policy(name: str, params: dict[str, Any] | None = None) -> Policy:
    """Build a policy from its name and parameters (see the module docstring)."""
    params = dict(params or {})
    if "+" not in name:  # ORDER+PLACEMENT is never a registered name (``register``), so it needs no registry
        _load_builtins()
    entry = _NAMED.get(name)
    if entry is not None:
        kwargs = validate_params(source_class(entry.cls).__init__, params, f"policy {name!r}")
        try:
            return entry.cls(**kwargs)
        except (TypeError, ValueError) as e:
            raise ConfigError(f"policy {name!r}: {e}", field="policy_param") from None
    order_name, _, place_name = name.partition("+")
    place_name = place_name or "consolidated"
    if order_name not in ORDERINGS or place_name not in PLACEMENTS:
        raise ConfigError(f"unknown policy {name!r}; run 'ddlsched policies' to list them "
                          f"(orderings: {', '.join(ORDERINGS)}; placements: {', '.join(PLACEMENTS)}; "
                          "a policy from a file needs --plugin FILE)", field="policy")
    backfill = params.pop("backfill", order_name != "fifo")
    if not isinstance(backfill, bool):
        raise ConfigError(f"policy {name!r}: backfill must be true or false", field="policy_param")
    order_cls = ORDERINGS[order_name]
    kwargs = validate_params(source_class(order_cls).__init__, params, f"ordering {order_name!r}")
    try:
        ordering = order_cls(**kwargs)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"ordering {order_name!r}: {e}", field="policy_param") from None
    policy = OrderedPolicy(ordering, PLACEMENTS[place_name](), backfill=backfill, name=f"{order_name}+{place_name}")
    if policy.name in SLOW_COMBINATIONS:
        policy.paper_scale_jobs = SLOW_COMBINATIONS[policy.name]
    return policy


def canonical_name(name: str) -> str:
    """The name a run is reported under: a bare ordering gets its placement (``fifo`` → ``fifo+consolidated``)."""
    if "+" in name:
        return name
    _load_builtins()
    if name in _NAMED or "+" in name or name not in ORDERINGS:
        return name
    return f"{name}+consolidated"


def list_policies() -> list[tuple[str, str]]:
    """(name, description) of every ordering+placement combination and every named policy."""
    _load_builtins()
    out: list[tuple[str, str]] = []
    for o in ORDERINGS.values():
        for p in PLACEMENTS.values():
            out.append((f"{o.name}+{p.name}", f"{o.description}; placement: {p.description}"))
    for e in sorted(_NAMED.values(), key=lambda e: e.name):
        out.append((e.name, e.description))
    return out


def policy_rows() -> list[tuple[str, str, str, str, str]]:
    """(name, execution model, family, description, clairvoyant yes/no) of every policy, for ``ddlsched policies``.
    Clairvoyant: the policy may know job durations (``Requirements.clairvoyant``; as built with default
    parameters)."""
    _load_builtins()
    rows = [(f"{o.name}+{p.name}", "fluid", "baseline", f"{o.description}; placement: {p.description}",
             "yes" if o.clairvoyant else "no")
            for o in ORDERINGS.values() for p in PLACEMENTS.values()]
    for e in sorted(_NAMED.values(), key=lambda e: e.name):
        model = e.cls.requirements.model  # class default; variants that change it per instance say so
        rows.append((e.name, model, e.family or "-", e.description, _yes_no(clairvoyant(e.name))))
    return rows


def _yes_no(flag: bool | None) -> str:
    return "?" if flag is None else "yes" if flag else "no"


def clairvoyant(name: str, params: dict[str, Any] | None = None) -> bool | None:
    """Whether the policy ``name`` (with ``params``) declares it may know job durations; None if it cannot be
    built (an unknown name, a plug-in not loaded, bad parameters)."""
    try:
        policy = make_policy(name, params)
    except Exception:  # a table's label must not fail the run that made the table
        return None
    return bool(getattr(policy.requirements, "clairvoyant", False))


def entries() -> list[PolicyEntry]:
    _load_builtins()
    return sorted(_NAMED.values(), key=lambda e: e.name)
