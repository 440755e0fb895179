"""PostgreSQL part of a user's export (the SQLite twin, with the why, is `sqlite_export.py`)."""

from __future__ import annotations

from typing import Any

from memsched.store.base import Tx
from memsched.store.postgres_base import PgMixin, pg_tx


class PgExportMixin(PgMixin):
    def claim_user(self, tx: Tx, user_id: str, created_at: float) -> bool:
        # The unique key makes a second inserter wait for the first transaction's end, then insert
        # nothing: exactly one claim wins.
        row = (
            pg_tx(tx)
            .execute(
                "INSERT INTO users (id, created_at) VALUES (%s, %s) ON CONFLICT DO NOTHING RETURNING id",
                (user_id, created_at),
            )
            .fetchone()
        )
        return row is not None

    def export_facts(self, user_id: str) -> list[dict[str, Any]]:
        rows = self._all(
            "SELECT id, key, value, valid_from, superseded_at, superseded_by, source_turn_ids, meta,"
            " created_at FROM profile_facts WHERE user_id = %s ORDER BY id",
            (user_id,),
        )
        return [
            {
                "id": r[0],
                "key": r[1],
                "value": r[2],
                "valid_from": r[3],
                "superseded_at": r[4],
                "superseded_by": r[5],
                "source_turn_ids": list(r[6]),
                "meta": dict(r[7] or {}),
                "created_at": r[8],
            }
            for r in rows
        ]

    def export_summaries(self, user_id: str) -> list[dict[str, Any]]:
        rows = self._all(
            "SELECT session_id, first_seq, last_seq, kind, method, content, tokens, source_tokens,"
            " source_turn_ids, created_at FROM summaries WHERE user_id = %s ORDER BY id",
            (user_id,),
        )
        return [
            {
                "session_id": r[0],
                "first_seq": r[1],
                "last_seq": r[2],
                "kind": r[3],
                "method": r[4],
                "content": r[5],
                "tokens": r[6],
                "source_tokens": r[7],
                "source_turn_ids": list(r[8]),
                "created_at": r[9],
            }
            for r in rows
        ]

    def export_session_states(self, user_id: str) -> list[dict[str, Any]]:
        rows = self._all(
            "SELECT session_id, data, updated_at FROM session_state WHERE user_id = %s ORDER BY session_id",
            (user_id,),
        )
        return [{"session_id": r[0], "data": dict(r[1] or {}), "updated_at": r[2]} for r in rows]

    def export_traces(
        self, user_id: str, after: tuple[float, str] | None, limit: int
    ) -> list[dict[str, Any]]:
        sql = "SELECT id, session_id, created_at, turn_ids, data FROM traces WHERE user_id = %s"
        args: list[Any] = [user_id]
        if after is not None:
            sql += " AND (created_at, id) > (%s, %s)"
            args += [after[0], after[1]]
        rows = self._all(sql + " ORDER BY created_at, id LIMIT %s", [*args, limit])
        return [
            {"id": r[0], "session_id": r[1], "created_at": r[2], "turn_ids": list(r[3]), "data": dict(r[4])}
            for r in rows
        ]
