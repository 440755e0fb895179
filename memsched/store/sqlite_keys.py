"""SQLite part of API keys: one row per key, holding only a salted hash of its secret.

A key is `msk-<key_id>-<secret>`: the key id finds the row, the secret is checked against
HMAC-SHA256(salt, secret). The secret is 32 random bytes, so a fast keyed hash is enough (a slow KDF
protects guessable passwords; nothing here is guessable). Keys belong to tenants, not users: forgetting
a user leaves them alone.
"""

from __future__ import annotations

from typing import Any

from memsched.store.sqlite_base import SQLiteMixin, SQLiteTx, run_script


def m007_api_keys(db: Any) -> None:
    run_script(
        db,
        """
        CREATE TABLE api_keys (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            key_id TEXT NOT NULL UNIQUE,
            tenant TEXT NOT NULL,
            salt BLOB NOT NULL,
            hash BLOB NOT NULL,
            created_at REAL NOT NULL,
            revoked_at REAL
        );
        CREATE INDEX api_keys_tenant ON api_keys(tenant);
        """,
    )


def _row(r: Any) -> dict[str, Any]:
    return {
        "key_id": r[0],
        "tenant": r[1],
        "salt": r[2],
        "hash": r[3],
        "created_at": r[4],
        "revoked_at": r[5],
    }


_COLUMNS = "key_id, tenant, salt, hash, created_at, revoked_at"


class KeysMixin(SQLiteMixin):
    """API-key rows of SQLiteStore (operator data, scoped by tenant, never by user)."""

    def key_add(self, key_id: str, tenant: str, salt: bytes, digest: bytes, *, now: float) -> None:
        with self.transaction() as tx:
            _insert(tx, key_id, tenant, salt, digest, now)

    def key_get(self, key_id: str) -> dict[str, Any] | None:
        r = self.db.execute(f"SELECT {_COLUMNS} FROM api_keys WHERE key_id = ?", (key_id,)).fetchone()
        return _row(r) if r else None

    def keys_list(self, tenant: str | None = None) -> list[dict[str, Any]]:
        sql = f"SELECT {_COLUMNS} FROM api_keys"
        args: tuple[Any, ...] = ()
        if tenant is not None:
            sql += " WHERE tenant = ?"
            args = (tenant,)
        return [_row(r) for r in self.db.execute(sql + " ORDER BY id", args)]

    def key_revoke(self, key_id: str, *, now: float) -> bool:
        with self.transaction() as tx:
            cur = tx.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL", (now, key_id)
            )
            return cur.rowcount == 1

    def keys_active(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM api_keys WHERE revoked_at IS NULL").fetchone()[0])


def _insert(tx: SQLiteTx, key_id: str, tenant: str, salt: bytes, digest: bytes, now: float) -> None:
    tx.execute(
        "INSERT INTO api_keys (key_id, tenant, salt, hash, created_at) VALUES (?, ?, ?, ?, ?)",
        (key_id, tenant, salt, digest, now),
    )
