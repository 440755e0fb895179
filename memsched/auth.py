"""Tenants and API keys of the HTTP service.

Keys come from `MEMSCHED_API_KEYS=tenant:key,tenant:key` or from `memsched keys add TENANT`, which
prints a new key once and stores only a salted hash of it (HMAC-SHA256 with a random 16-byte salt;
the secret is 32 random bytes, so no slow KDF is needed: there is nothing to guess). A client sends
`Authorization: Bearer <key>`; the key names its tenant, and the tenant is the namespace of every user
id the client names (`memsched.server.identity`). Keys never appear in logs, errors or reprs: only
their public id (`msk-<id>-…`) is ever shown.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass, field
from typing import Any

from memsched.errors import ConfigError, InputError
from memsched.model import utcnow

KEY_PREFIX = "msk"
# The tenant whose users keep unprefixed ids: data stored before keys were configured stays reachable
# with a key of this tenant.
DEFAULT_TENANT = "default"
TENANT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MIN_ENV_KEY_CHARS = 16


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a verified key speaks for: its tenant and its public key id (never the secret)."""

    tenant: str
    key_id: str


def check_tenant(tenant: str) -> str:
    if not TENANT_RE.match(tenant or ""):
        raise InputError(
            f"tenant names are 1-64 letters, digits, '.', '_' or '-' (starting with a letter or digit), got {tenant!r}"
        )
    return tenant


def parse_env_keys(spec: str | None) -> list[tuple[str, str]]:
    """(tenant, key) pairs of a `tenant:key,tenant:key` setting. Errors name the entry, not the key."""
    pairs: list[tuple[str, str]] = []
    for n, entry in enumerate((spec or "").split(","), start=1):
        entry = entry.strip()
        if not entry:
            continue
        tenant, sep, key = entry.partition(":")
        if not sep or not TENANT_RE.match(tenant.strip()):
            raise ConfigError(f"MEMSCHED_API_KEYS entry {n} must be tenant:key with a valid tenant name")
        if len(key.strip()) < MIN_ENV_KEY_CHARS:
            raise ConfigError(
                f"MEMSCHED_API_KEYS entry {n} (tenant {tenant.strip()!r}): the key must have at least"
                f" {MIN_ENV_KEY_CHARS} characters"
            )
        pairs.append((tenant.strip(), key.strip()))
    return pairs


def _digest(salt: bytes, secret: str) -> bytes:
    return hmac.new(salt, secret.encode("utf-8"), hashlib.sha256).digest()


def new_key(store: Any, tenant: str) -> str:
    """Create a key for `tenant`, store its salted hash, and return the key (shown once, never again)."""
    check_tenant(tenant)
    key_id = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    salt = secrets.token_bytes(16)
    store.key_add(key_id, tenant, salt, _digest(salt, secret), now=utcnow().timestamp())
    return f"{KEY_PREFIX}-{key_id}-{secret}"


def public_id(key: str) -> str:
    """The part of a key that may be shown (`msk-<id>`), or `env` for a key from the environment."""
    parts = key.split("-", 2)
    return f"{KEY_PREFIX}-{parts[1]}" if len(parts) == 3 and parts[0] == KEY_PREFIX else "env"


@dataclass(slots=True)
class Keyring:
    """Verifies presented keys against the environment's keys and the store's hashed keys."""

    store: Any
    env_spec: str | None = field(default=None, repr=False)
    _env: list[tuple[str, bytes]] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        # Only hashes of the environment's keys are kept, compared in constant time.
        self._env = [(t, hashlib.sha256(k.encode()).digest()) for t, k in parse_env_keys(self.env_spec)]

    def configured(self) -> bool:
        """Whether any key exists: without one, the service serves loopback only and asks for none."""
        return bool(self._env) or self.store.keys_active() > 0

    def tenants(self) -> set[str]:
        """The tenants that have a key (the environment's, and the store's not revoked)."""
        stored = {str(r["tenant"]) for r in self.store.keys_list() if r.get("revoked_at") is None}
        return {t for t, _ in self._env} | stored

    def verify(self, presented: str) -> Principal | None:
        """The principal of a valid key, or None (unknown, revoked or malformed: the caller says 401)."""
        if not presented:
            return None
        parts = presented.split("-", 2)
        if len(parts) == 3 and parts[0] == KEY_PREFIX:
            row = self.store.key_get(parts[1])
            if (
                row is not None
                and row["revoked_at"] is None
                and hmac.compare_digest(_digest(bytes(row["salt"]), parts[2]), bytes(row["hash"]))
            ):
                return Principal(str(row["tenant"]), f"{KEY_PREFIX}-{parts[1]}")
        digest = hashlib.sha256(presented.encode("utf-8", "replace")).digest()
        found: Principal | None = None
        for tenant, known in self._env:
            if hmac.compare_digest(digest, known):  # no early exit: the time does not tell which key
                found = Principal(tenant, "env")
        return found
