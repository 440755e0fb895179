"""PostgreSQL part of the companion state (the SQLite twin, with the why, is `sqlite_companion.py`).

Lineage columns are bigint[] here; the forget cascade finds them the same way (`store.lineage`).
"""

from __future__ import annotations

from typing import Any

from memsched.store.base import Tx
from memsched.store.postgres_base import PgMixin, dumps, pg_tx

M009_COMPANION = """
CREATE TABLE moods (
    user_id text PRIMARY KEY,
    label text NOT NULL,
    intensity double precision NOT NULL,
    cause_turn_ids bigint[] NOT NULL DEFAULT '{}',
    updated_at double precision NOT NULL,
    meta jsonb NOT NULL DEFAULT '{}'
);
CREATE TABLE routines (
    user_id text PRIMARY KEY,
    sleep_minute integer,
    wake_minute integer,
    confidence double precision NOT NULL DEFAULT 0,
    timezone text,
    days integer NOT NULL DEFAULT 0,
    source_turn_ids bigint[] NOT NULL DEFAULT '{}',
    updated_at double precision NOT NULL,
    meta jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX turns_user_role_time ON turns(user_id, role, created_at);
"""


class PgCompanionMixin(PgMixin):
    """Mood and routine rows of PostgresStore; writers take the caller's transaction `tx`."""

    def mood_get(self, user_id: str) -> dict[str, Any] | None:
        r = self._one(
            "SELECT label, intensity, cause_turn_ids, updated_at, meta FROM moods WHERE user_id = %s",
            (user_id,),
        )
        if r is None:
            return None
        return {
            "label": r[0],
            "intensity": r[1],
            "cause_turn_ids": list(r[2]),
            "updated_at": r[3],
            "meta": dict(r[4] or {}),
        }

    def mood_put(self, tx: Tx, user_id: str, row: dict[str, Any]) -> None:
        pg_tx(tx).execute(
            "INSERT INTO moods (user_id, label, intensity, cause_turn_ids, updated_at, meta)"
            " VALUES (%s, %s, %s, %s, %s, %s::jsonb) ON CONFLICT (user_id) DO UPDATE SET label = excluded.label,"
            " intensity = excluded.intensity, cause_turn_ids = excluded.cause_turn_ids,"
            " updated_at = excluded.updated_at, meta = excluded.meta",
            (
                user_id,
                row["label"],
                float(row["intensity"]),
                [int(i) for i in row.get("cause_turn_ids", [])],
                float(row["updated_at"]),
                dumps(row.get("meta", {})),
            ),
        )

    def routine_get(self, user_id: str) -> dict[str, Any] | None:
        r = self._one(
            "SELECT sleep_minute, wake_minute, confidence, timezone, days, source_turn_ids, updated_at, meta"
            " FROM routines WHERE user_id = %s",
            (user_id,),
        )
        if r is None:
            return None
        return {
            "sleep_minute": r[0],
            "wake_minute": r[1],
            "confidence": r[2],
            "timezone": r[3],
            "days": r[4],
            "source_turn_ids": list(r[5]),
            "updated_at": r[6],
            "meta": dict(r[7] or {}),
        }

    def routine_put(self, tx: Tx, user_id: str, row: dict[str, Any]) -> None:
        pg_tx(tx).execute(
            "INSERT INTO routines (user_id, sleep_minute, wake_minute, confidence, timezone, days,"
            " source_turn_ids, updated_at, meta) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb)"
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
                [int(i) for i in row.get("source_turn_ids", [])],
                float(row["updated_at"]),
                dumps(row.get("meta", {})),
            ),
        )

    def user_turn_times(self, user_id: str, since: float = 0.0) -> list[tuple[int, float]]:
        return [
            (int(r[0]), float(r[1]))
            for r in self._all(
                "SELECT id, created_at FROM turns WHERE user_id = %s AND role = 'user' AND created_at >= %s"
                " ORDER BY created_at, id",
                (user_id, since),
            )
        ]

    def last_active(self, user_id: str) -> float | None:
        r = self._one(
            "SELECT created_at FROM turns WHERE user_id = %s AND role = 'user' ORDER BY created_at DESC LIMIT 1",
            (user_id,),
        )
        return float(r[0]) if r else None
