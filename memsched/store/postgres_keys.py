"""PostgreSQL part of API keys (the SQLite twin, with the why, is `sqlite_keys.py`)."""

from __future__ import annotations

from typing import Any

from memsched.store.postgres_base import PgMixin

_COLUMNS = "key_id, tenant, salt, hash, created_at, revoked_at"


def _row(r: Any) -> dict[str, Any]:
    return {
        "key_id": r[0],
        "tenant": r[1],
        "salt": bytes(r[2]),
        "hash": bytes(r[3]),
        "created_at": r[4],
        "revoked_at": r[5],
    }


class PgKeysMixin(PgMixin):
    """API-key rows of PostgresStore (operator data, scoped by tenant, never by user)."""

    def key_add(self, key_id: str, tenant: str, salt: bytes, digest: bytes, *, now: float) -> None:
        with self.transaction() as tx:
            tx.execute(
                "INSERT INTO api_keys (key_id, tenant, salt, hash, created_at) VALUES (%s, %s, %s, %s, %s)",
                (key_id, tenant, salt, digest, now),
            )

    def key_get(self, key_id: str) -> dict[str, Any] | None:
        r = self._one(f"SELECT {_COLUMNS} FROM api_keys WHERE key_id = %s", (key_id,))
        return _row(r) if r else None

    def keys_list(self, tenant: str | None = None) -> list[dict[str, Any]]:
        sql = f"SELECT {_COLUMNS} FROM api_keys"
        args: tuple[Any, ...] = ()
        if tenant is not None:
            sql += " WHERE tenant = %s"
            args = (tenant,)
        return [_row(r) for r in self._all(sql + " ORDER BY id", args)]

    def key_revoke(self, key_id: str, *, now: float) -> bool:
        with self.transaction() as tx:
            cur = tx.execute(
                "UPDATE api_keys SET revoked_at = %s WHERE key_id = %s AND revoked_at IS NULL", (now, key_id)
            )
            return bool(cur.rowcount == 1)

    def keys_active(self) -> int:
        row = self._one("SELECT count(*) FROM api_keys WHERE revoked_at IS NULL")
        return int(row[0]) if row else 0
