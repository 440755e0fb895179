"""SQLite part of the companion state: each user's carried mood and learned daily routine.

One row per user in each table. Both record the turn ids they were derived from
(`cause_turn_ids` for the mood, `source_turn_ids` for the routine's samples), so forgetting a turn
deletes the mood it caused and the routine learned from it (the lineage cascade of
`store/lineage.py`; the routine is learned again by its next job).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from memsched.store.base import Tx
from memsched.store.sqlite_base import SQLiteMixin, run_script, sqlite_tx


def m009_companion(db: sqlite3.Connection) -> None:
    run_script(
        db,
        """
        CREATE TABLE moods (
            user_id TEXT PRIMARY KEY,
            label TEXT NOT NULL,
            intensity REAL NOT NULL,
            cause_turn_ids TEXT NOT NULL DEFAULT '[]',
            updated_at REAL NOT NULL,
            meta TEXT NOT NULL DEFAULT '{}'
        );
        -- Minutes of the local day (0..1439) the user usually stops / starts writing.
        CREATE TABLE routines (
            user_id TEXT PRIMARY KEY,
            sleep_minute INTEGER,
            wake_minute INTEGER,
            confidence REAL NOT NULL DEFAULT 0,
            timezone TEXT,
            days INTEGER NOT NULL DEFAULT 0,
            source_turn_ids TEXT NOT NULL DEFAULT '[]',
            updated_at REAL NOT NULL,
            meta TEXT NOT NULL DEFAULT '{}'
        );
        """,
    )


class CompanionMixin(SQLiteMixin):
    """Mood and routine rows of SQLiteStore; writers take the caller's transaction `tx`."""

    def mood_get(self, user_id: str) -> dict[str, Any] | None:
        """The user's stored mood (as last written, before decay), or None."""
        r = self.db.execute(
            "SELECT label, intensity, cause_turn_ids, updated_at, meta FROM moods WHERE user_id = ?",
            (user_id,),
        ).fetchone()
        if r is None:
            return None
        return {
            "label": r[0],
            "intensity": r[1],
            "cause_turn_ids": json.loads(r[2]),
            "updated_at": r[3],
            "meta": json.loads(r[4]),
        }

    def mood_put(self, tx: Tx, user_id: str, row: dict[str, Any]) -> None:
        sqlite_tx(tx).execute(
            "INSERT INTO moods (user_id, label, intensity, cause_turn_ids, updated_at, meta)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (user_id) DO UPDATE SET label = excluded.label,"
            " intensity = excluded.intensity, cause_turn_ids = excluded.cause_turn_ids,"
            " updated_at = excluded.updated_at, meta = excluded.meta",
            (
                user_id,
                row["label"],
                float(row["intensity"]),
                json.dumps([int(i) for i in row.get("cause_turn_ids", [])]),
                float(row["updated_at"]),
                json.dumps(row.get("meta", {}), ensure_ascii=False),
            ),
        )

    def routine_get(self, user_id: str) -> dict[str, Any] | None:
        r = self.db.execute(
            "SELECT sleep_minute, wake_minute, confidence, timezone, days, source_turn_ids, updated_at, meta"
            " FROM routines WHERE user_id = ?",
            (user_id,),
        ).fetchone()
        if r is None:
            return None
        return {
            "sleep_minute": r[0],
            "wake_minute": r[1],
            "confidence": r[2],
            "timezone": r[3],
            "days": r[4],
            "source_turn_ids": json.loads(r[5]),
            "updated_at": r[6],
            "meta": json.loads(r[7]),
        }

    def routine_put(self, tx: Tx, user_id: str, row: dict[str, Any]) -> None:
        sqlite_tx(tx).execute(
            "INSERT INTO routines (user_id, sleep_minute, wake_minute, confidence, timezone, days,"
            " source_turn_ids, updated_at, meta) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (user_id) DO UPDATE SET sleep_minute = excluded.sleep_minute,"
            " wake_minute = excluded.wake_minute, confidence = excluded.confidence,"
            " timezone = excluded.timezone, days = excluded.days,"
            " source_turn_ids = excluded.source_turn_ids, updated_at = excluded.updated_at,"
            " meta = excluded.meta",
            (
                user_id,
                row.get("sleep_minute"),
                row.get("wake_minute"),
                float(row.get("confidence", 0.0)),
                row.get("timezone"),
                int(row.get("days", 0)),
                json.dumps([int(i) for i in row.get("source_turn_ids", [])]),
                float(row["updated_at"]),
                json.dumps(row.get("meta", {}), ensure_ascii=False),
            ),
        )

    def user_turn_times(self, user_id: str, since: float = 0.0) -> list[tuple[int, float]]:
        """(turn id, created_at) of the user's own messages (role user) since `since`, oldest first."""
        return [
            (int(r[0]), float(r[1]))
            for r in self.db.execute(
                "SELECT id, created_at FROM turns WHERE user_id = ? AND role = 'user' AND created_at >= ?"
                " ORDER BY created_at, id",
                (user_id, since),
            )
        ]

    def last_active(self, user_id: str) -> float | None:
        """When the user last wrote a message (epoch seconds), or None."""
        r = self.db.execute(
            "SELECT created_at FROM turns WHERE user_id = ? AND role = 'user' ORDER BY created_at DESC LIMIT 1",
            (user_id,),
        ).fetchone()
        return float(r[0]) if r else None
