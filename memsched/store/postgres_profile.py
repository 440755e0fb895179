"""PostgreSQL part of the profile (the SQLite twin, with the why, is `sqlite_profile.py`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memsched.store.base import Tx
from memsched.store.postgres_base import PgMixin, dumps, pg_tx

_COLUMNS = "id, key, value, valid_from, superseded_at, superseded_by, source_turn_ids, meta"


def _row(r: Sequence[Any], user_id: str) -> dict[str, Any]:
    return {
        "id": r[0],
        "user_id": user_id,
        "key": r[1],
        "value": r[2],
        "valid_from": r[3],
        "superseded_at": r[4],
        "superseded_by": r[5],
        "source_turn_ids": list(r[6]),
        "meta": dict(r[7] or {}),
    }


class PgProfileMixin(PgMixin):
    def facts(self, user_id: str, key: str | None = None, *, current: bool = False) -> list[dict[str, Any]]:
        sql = f"SELECT {_COLUMNS} FROM profile_facts WHERE user_id = %s"
        args: list[Any] = [user_id]
        if key is not None:
            sql += " AND key = %s"
            args.append(key)
        if current:
            sql += " AND superseded_at IS NULL"
        return [_row(r, user_id) for r in self._all(sql + " ORDER BY valid_from, id", args)]

    def fact_insert(
        self,
        tx: Tx,
        user_id: str,
        key: str,
        value: str,
        *,
        valid_from: float,
        source_turn_ids: Sequence[int] = (),
        meta: dict[str, Any] | None = None,
        now: float,
        superseded_at: float | None = None,
        superseded_by: int | None = None,
    ) -> int:
        (fid,) = (
            pg_tx(tx)
            .execute(
                "INSERT INTO profile_facts (user_id, key, value, valid_from, superseded_at, superseded_by,"
                " source_turn_ids, meta, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s) RETURNING id",
                (
                    user_id,
                    key,
                    value,
                    valid_from,
                    superseded_at,
                    superseded_by,
                    sorted({int(t) for t in source_turn_ids}),
                    dumps(meta or {}),
                    now,
                ),
            )
            .fetchone()
        )
        return int(fid)

    def fact_supersede(
        self, tx: Tx, user_id: str, fact_ids: Sequence[int], *, at: float, by: int | None = None
    ) -> int:
        if not fact_ids:
            return 0
        cur = pg_tx(tx).execute(
            "UPDATE profile_facts SET superseded_at = %s, superseded_by = %s WHERE user_id = %s AND id = ANY(%s)"
            " AND superseded_at IS NULL",
            (at, by, user_id, [int(i) for i in fact_ids]),
        )
        return int(cur.rowcount)
