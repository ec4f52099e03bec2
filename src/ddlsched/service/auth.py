"""Bearer tokens: one per tenant and one admin token, read from a file or the environment (never a CLI argument).

Tokens file (YAML or JSON)::

    admin: <token>            # optional here when DDLSCHED_ADMIN_TOKEN is set
    tenants:
      alice: <token>
      bob: <token>

``DDLSCHED_ADMIN_TOKEN`` (environment) sets or overrides the admin token; ``DDLSCHED_TOKENS_FILE`` names the file when
``--tokens`` is not given. A tenant's token sees and cancels only that tenant's jobs; the admin's sees all.
"""

from __future__ import annotations

import hmac
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ddlsched.errors import ConfigError

ADMIN_ENV = "DDLSCHED_ADMIN_TOKEN"
FILE_ENV = "DDLSCHED_TOKENS_FILE"
MIN_TOKEN_LEN = 16
TENANT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class Principal:
    """Who a request comes from: a tenant, or the admin (``tenant`` None)."""

    tenant: str | None

    @property
    def admin(self) -> bool:
        return self.tenant is None

    def may_see(self, tenant: str) -> bool:
        return self.tenant is None or self.tenant == tenant


class Tokens:
    """Token → principal (constant-time comparison against every known token)."""

    def __init__(self, tenants: dict[str, str], admin: str | None) -> None:
        self._pairs: list[tuple[bytes, Principal]] = [(t.encode(), Principal(n)) for n, t in tenants.items()]
        if admin:
            self._pairs.append((admin.encode(), Principal(None)))
        self.tenants = sorted(tenants)

    def __len__(self) -> int:
        return len(self._pairs)

    def lookup(self, token: str) -> Principal | None:
        got = token.encode()
        found = None
        for known, who in self._pairs:
            if hmac.compare_digest(known, got):
                found = who
        return found


def _check_token(tok: Any, where: str) -> str:
    if not isinstance(tok, str) or len(tok) < MIN_TOKEN_LEN or any(c.isspace() for c in tok):
        raise ConfigError(f"a token must be a string of at least {MIN_TOKEN_LEN} characters without spaces",
                          field=where)
    return tok


def load_tokens(path: str | Path | None, env: dict[str, str] | None = None) -> tuple[Tokens, list[str]]:
    """The tokens from ``path`` (or ``$DDLSCHED_TOKENS_FILE``) and ``$DDLSCHED_ADMIN_TOKEN``; returns them and notes
    (e.g. a tokens file readable by other users). No token at all is an error: the service never runs open."""
    env = dict(os.environ) if env is None else env
    notes: list[str] = []
    tenants: dict[str, str] = {}
    admin: str | None = None
    file = path or env.get(FILE_ENV)
    if file:
        p = Path(file)
        try:
            raw = yaml.safe_load(p.read_text())
        except OSError as e:
            raise ConfigError(f"cannot read the tokens file: {e.strerror}", path=str(p)) from None
        except yaml.YAMLError as e:
            raise ConfigError(f"not YAML/JSON: {e}", path=str(p)) from None
        if not isinstance(raw, dict) or set(raw) - {"admin", "tenants"}:
            raise ConfigError("expected a mapping with keys 'admin' and 'tenants'", path=str(p))
        if raw.get("admin") is not None:
            admin = _check_token(raw["admin"], "admin")
        ts = raw.get("tenants") or {}
        if not isinstance(ts, dict):
            raise ConfigError("'tenants' must map tenant names to tokens", path=str(p), field="tenants")
        for name, tok in ts.items():
            if not isinstance(name, str) or not TENANT_RE.match(name):
                raise ConfigError(f"tenant name {name!r}: letters, digits, '.', '_', '-' (≤ 64)", path=str(p),
                                  field="tenants")
            tenants[name] = _check_token(tok, f"tenants.{name}")
        if p.stat().st_mode & (stat.S_IRGRP | stat.S_IROTH):
            notes.append(f"{p} is readable by other users; chmod 600 it")
    if env.get(ADMIN_ENV):
        admin = _check_token(env[ADMIN_ENV], ADMIN_ENV)
    every = list(tenants.values()) + ([admin] if admin else [])
    if len(set(every)) != len(every):
        raise ConfigError("two principals share a token; every tenant and the admin need their own", field="tokens")
    if not every:
        raise ConfigError(f"no tokens: give --tokens FILE, ${FILE_ENV} or ${ADMIN_ENV} (the service never runs "
                          "without authentication)", field="--tokens")
    return Tokens(tenants, admin), notes


__all__ = ["ADMIN_ENV", "FILE_ENV", "Principal", "Tokens", "load_tokens"]
