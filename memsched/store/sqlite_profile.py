"""SQLite part of the profile (issue 7): facts with several current values per key (likes, pets),
retraction of one value, and `superseded_by` links from a replaced fact to the one that replaced it.

The `profile_facts` table itself is migration 004's (`sqlite_state.py`); migration 008 adds the
`superseded_by` column. Every row keeps the turn ids it came from (`source_turn_ids`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from memsched.store.base import Tx
from memsched.store.sqlite_base import SQLiteMixin, run_script, sqlite_tx

_COLUMNS = "id, key, value, valid_from, superseded_at, superseded_by, source_turn_ids, meta"


def m008_profile_superseded_by(db: sqlite3.Connection) -> None:
    run_script(db, "ALTER TABLE profile_facts ADD COLUMN superseded_by INTEGER;")


def _row(r: Sequence[Any], user_id: str) -> dict[str, Any]:
    return {
        "id": r[0],
        "user_id": user_id,
        "key": r[1],
        "value": r[2],
        "valid_from": r[3],
        "superseded_at": r[4],
        "superseded_by": r[5],
        "source_turn_ids": json.loads(r[6]),
        "meta": json.loads(r[7]) if r[7] else {},
    }


class ProfileMixin(SQLiteMixin):
    def facts(self, user_id: str, key: str | None = None, *, current: bool = False) -> list[dict[str, Any]]:
        sql = f"SELECT {_COLUMNS} FROM profile_facts WHERE user_id = ?"
        args: list[Any] = [user_id]
        if key is not None:
            sql += " AND key = ?"
            args.append(key)
        if current:
            sql += " AND superseded_at IS NULL"
        rows = self.db.execute(sql + " ORDER BY valid_from, id", args).fetchall()
        return [_row(r, user_id) for r in rows]

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
        cur = sqlite_tx(tx).execute(
            "INSERT INTO profile_facts (user_id, key, value, valid_from, superseded_at, superseded_by,"
            " source_turn_ids, meta, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                user_id,
                key,
                value,
                valid_from,
                superseded_at,
                superseded_by,
                json.dumps(sorted(set(source_turn_ids))),
                json.dumps(meta or {}, ensure_ascii=False),
                now,
            ),
        )
        return int(cur.lastrowid or 0)

    def fact_supersede(
        self, tx: Tx, user_id: str, fact_ids: Sequence[int], *, at: float, by: int | None = None
    ) -> int:
        if not fact_ids:
            return 0
        marks = ",".join("?" * len(fact_ids))
        cur = sqlite_tx(tx).execute(
            f"UPDATE profile_facts SET superseded_at = ?, superseded_by = ? WHERE user_id = ? AND id IN ({marks})"
            " AND superseded_at IS NULL",
            (at, by, user_id, *fact_ids),
        )
        return int(cur.rowcount)
