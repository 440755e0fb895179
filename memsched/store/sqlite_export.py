"""SQLite part of a user's export (data portability): whole rows of the per-user tables an export
carries beyond turns, in a stable order, so `memsched.export` can write everything held about a user.
The PostgreSQL twin is `postgres_export.py` (same rows out)."""

from __future__ import annotations

import json
from typing import Any

from memsched.store.base import Tx
from memsched.store.sqlite_base import SQLiteMixin, sqlite_tx


class ExportMixin(SQLiteMixin):
    def claim_user(self, tx: Tx, user_id: str, created_at: float) -> bool:
        # The write transaction is exclusive (BEGIN IMMEDIATE): nothing comes between look and insert.
        cur = sqlite_tx(tx).execute(
            "INSERT OR IGNORE INTO users (id, created_at) VALUES (?, ?)", (user_id, created_at)
        )
        return cur.rowcount == 1

    def export_facts(self, user_id: str) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT id, key, value, valid_from, superseded_at, superseded_by, source_turn_ids, meta,"
            " created_at FROM profile_facts WHERE user_id = ? ORDER BY id",
            (user_id,),
        ).fetchall()
        return [
            {
                "id": r[0],
                "key": r[1],
                "value": r[2],
                "valid_from": r[3],
                "superseded_at": r[4],
                "superseded_by": r[5],
                "source_turn_ids": json.loads(r[6]),
                "meta": json.loads(r[7]) if r[7] else {},
                "created_at": r[8],
            }
            for r in rows
        ]

    def export_summaries(self, user_id: str) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT session_id, first_seq, last_seq, kind, method, content, tokens, source_tokens,"
            " source_turn_ids, created_at FROM summaries WHERE user_id = ? ORDER BY id",
            (user_id,),
        ).fetchall()
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
                "source_turn_ids": json.loads(r[8]),
                "created_at": r[9],
            }
            for r in rows
        ]

    def export_session_states(self, user_id: str) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT session_id, data, updated_at FROM session_state WHERE user_id = ? ORDER BY session_id",
            (user_id,),
        ).fetchall()
        return [{"session_id": r[0], "data": json.loads(r[1]), "updated_at": r[2]} for r in rows]

    def export_traces(
        self, user_id: str, after: tuple[float, str] | None, limit: int
    ) -> list[dict[str, Any]]:
        sql = "SELECT id, session_id, created_at, turn_ids, data FROM traces WHERE user_id = ?"
        args: list[Any] = [user_id]
        if after is not None:
            sql += " AND (created_at > ? OR (created_at = ? AND id > ?))"
            args += [after[0], after[0], after[1]]
        rows = self.db.execute(sql + " ORDER BY created_at, id LIMIT ?", [*args, limit]).fetchall()
        return [
            {
                "id": r[0],
                "session_id": r[1],
                "created_at": r[2],
                "turn_ids": json.loads(r[3]),
                "data": json.loads(r[4]),
            }
            for r in rows
        ]
