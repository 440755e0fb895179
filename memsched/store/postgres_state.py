"""PostgreSQL part of the scheduler's state: profile facts with history, session summaries,
per-session state and traces (the SQLite twin is `sqlite_state.py`; same rows in, same rows out).

Lineage is a bigint[] (`source_turn_ids`, `turn_ids`), so "everything made from these turns" is an
array-overlap test (`&&`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from memsched.store.base import Tx
from memsched.store.postgres_base import PgMixin, dumps, pg_tx, sources_gone

_FACT_COLUMNS = "id, user_id, key, value, valid_from, superseded_at, source_turn_ids, meta, created_at"
_SUMMARY_COLUMNS = (
    "id, user_id, session_id, first_seq, last_seq, kind, method, content, tokens, source_tokens,"
    " source_turn_ids, created_at"
)


def _fact_row(r: Sequence[Any]) -> dict[str, Any]:
    return {
        "id": r[0],
        "user_id": r[1],
        "key": r[2],
        "value": r[3],
        "valid_from": r[4],
        "superseded_at": r[5],
        "source_turn_ids": list(r[6]),
        "meta": dict(r[7] or {}),
        "created_at": r[8],
    }


def _summary_row(r: Sequence[Any]) -> dict[str, Any]:
    return {
        "id": r[0],
        "user_id": r[1],
        "session_id": r[2],
        "first_seq": r[3],
        "last_seq": r[4],
        "kind": r[5],
        "method": r[6],
        "content": r[7],
        "tokens": r[8],
        "source_tokens": r[9],
        "source_turn_ids": list(r[10]),
        "created_at": r[11],
    }


class PgStateMixin(PgMixin):
    """Profile-fact, summary, session-state and trace methods of PostgresStore."""

    # -- profile facts -------------------------------------------------------------------------------

    def facts_current(self, user_id: str) -> list[dict[str, Any]]:
        rows = self._all(
            f"SELECT {_FACT_COLUMNS} FROM profile_facts WHERE user_id = %s AND superseded_at IS NULL"
            " ORDER BY valid_from, id",
            (user_id,),
        )
        return [_fact_row(r) for r in rows]

    def facts_history(self, user_id: str, key: str | None = None) -> list[dict[str, Any]]:
        sql = f"SELECT {_FACT_COLUMNS} FROM profile_facts WHERE user_id = %s"
        args: list[Any] = [user_id]
        if key is not None:
            sql += " AND key = %s"
            args.append(key)
        return [_fact_row(r) for r in self._all(sql + " ORDER BY valid_from, id", args)]

    def fact_set(
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
    ) -> int:
        tx = pg_tx(tx)
        current = tx.execute(
            "SELECT id, value FROM profile_facts WHERE user_id = %s AND key = %s AND superseded_at IS NULL"
            " ORDER BY valid_from DESC, id DESC FOR UPDATE",
            (user_id, key),
        ).fetchall()
        if current and current[0][1] == value:
            fid = int(current[0][0])
            self.fact_add_sources(tx, fid, source_turn_ids)
            return fid
        if current:
            tx.execute(
                "UPDATE profile_facts SET superseded_at = %s WHERE id = ANY(%s)",
                (valid_from, [r[0] for r in current]),
            )
        (fid,) = tx.execute(
            "INSERT INTO profile_facts (user_id, key, value, valid_from, superseded_at, source_turn_ids,"
            " meta, created_at) VALUES (%s, %s, %s, %s, NULL, %s, %s::jsonb, %s) RETURNING id",
            (
                user_id,
                key,
                value,
                valid_from,
                sorted({int(t) for t in source_turn_ids}),
                dumps(meta or {}),
                now,
            ),
        ).fetchone()
        return int(fid)

    def fact_add_sources(self, tx: Tx, fact_id: int, turn_ids: Iterable[int]) -> None:
        tx = pg_tx(tx)
        ids = sorted({int(t) for t in turn_ids})
        if not ids:
            return
        tx.execute(
            "UPDATE profile_facts SET source_turn_ids ="
            " ARRAY(SELECT DISTINCT x FROM unnest(source_turn_ids || %s::bigint[]) x ORDER BY x) WHERE id = %s",
            (ids, fact_id),
        )

    # -- summaries -----------------------------------------------------------------------------------

    def summary_add(self, tx: Tx, row: dict[str, Any]) -> int:
        tx = pg_tx(tx)
        if sources_gone(tx, row["user_id"], row["source_turn_ids"]):
            return 0
        found = tx.execute(
            "INSERT INTO summaries (user_id, session_id, first_seq, last_seq, kind, method, content, tokens,"
            " source_tokens, source_turn_ids, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
            " ON CONFLICT DO NOTHING RETURNING id",
            (
                row["user_id"],
                row["session_id"],
                row["first_seq"],
                row["last_seq"],
                row["kind"],
                row["method"],
                row["content"],
                row["tokens"],
                row["source_tokens"],
                sorted({int(t) for t in row["source_turn_ids"]}),
                row["created_at"],
            ),
        ).fetchone()
        if found is not None:
            return int(found[0])
        (sid,) = tx.execute(
            "SELECT id FROM summaries WHERE user_id = %s AND session_id = %s AND first_seq = %s AND last_seq = %s",
            (row["user_id"], row["session_id"], row["first_seq"], row["last_seq"]),
        ).fetchone()
        return int(sid)

    def summaries_delete(self, tx: Tx, user_id: str, ids: Sequence[int]) -> int:
        tx = pg_tx(tx)
        if not ids:
            return 0
        cur = tx.execute(
            "DELETE FROM summaries WHERE user_id = %s AND id = ANY(%s)", (user_id, [int(i) for i in ids])
        )
        return int(cur.rowcount)

    def session_summaries(self, user_id: str, session_id: str) -> list[dict[str, Any]]:
        rows = self._all(
            f"SELECT {_SUMMARY_COLUMNS} FROM summaries WHERE user_id = %s AND session_id = %s"
            " ORDER BY first_seq, id",
            (user_id, session_id),
        )
        return [_summary_row(r) for r in rows]

    # -- per-session state ---------------------------------------------------------------------------

    def session_state(self, user_id: str, session_id: str) -> dict[str, Any]:
        row = self._one(
            "SELECT data FROM session_state WHERE user_id = %s AND session_id = %s", (user_id, session_id)
        )
        return dict(row[0]) if row else {}

    def session_state_update(
        self, tx: Tx, user_id: str, session_id: str, values: dict[str, Any], *, now: float
    ) -> dict[str, Any]:
        tx = pg_tx(tx)
        row = tx.execute(
            "INSERT INTO session_state (user_id, session_id, data, updated_at) VALUES (%s, %s, %s::jsonb, %s)"
            " ON CONFLICT (user_id, session_id) DO UPDATE SET data = session_state.data || excluded.data,"
            " updated_at = excluded.updated_at RETURNING data",
            (user_id, session_id, dumps(values), now),
        ).fetchone()
        return dict(row[0])

    # -- traces --------------------------------------------------------------------------------------

    def trace_put(
        self,
        tx: Tx,
        trace_id: str,
        user_id: str,
        session_id: str | None,
        *,
        created_at: float,
        turn_ids: Sequence[int],
        data: dict[str, Any],
    ) -> None:
        tx = pg_tx(tx)
        tx.execute(
            "INSERT INTO traces (id, user_id, session_id, created_at, turn_ids, data)"
            " VALUES (%s, %s, %s, %s, %s, %s::json) ON CONFLICT (id) DO UPDATE SET user_id = excluded.user_id,"
            " session_id = excluded.session_id, created_at = excluded.created_at,"
            " turn_ids = excluded.turn_ids, data = excluded.data",
            (trace_id, user_id, session_id, created_at, [int(t) for t in turn_ids], dumps(data)),
        )

    def trace_get(self, trace_id: str, user_id: str | None = None) -> dict[str, Any] | None:
        sql = "SELECT data FROM traces WHERE id = %s"
        args: list[Any] = [trace_id]
        if user_id is not None:
            sql += " AND user_id = %s"
            args.append(user_id)
        row = self._one(sql, args)
        return dict(row[0]) if row else None

    def traces_list(
        self, user_id: str, session_id: str | None = None, limit: int = 50
    ) -> list[dict[str, Any]]:
        sql = "SELECT data FROM traces WHERE user_id = %s"
        args: list[Any] = [user_id]
        if session_id is not None:
            sql += " AND session_id = %s"
            args.append(session_id)
        sql += " ORDER BY created_at DESC LIMIT %s"
        args.append(limit)
        return [dict(r[0]) for r in self._all(sql, args)]

    # -- lineage: deleting what was derived from turns ------------------------------------------------

    def state_forget_turns(self, tx: Tx, user_id: str, turn_ids: Sequence[int]) -> dict[str, int]:
        """Delete every summary, fact and trace derived from any of `turn_ids` (see the SQLite twin)."""
        tx = pg_tx(tx)
        if not turn_ids:
            return {"summaries": 0, "facts": 0, "traces": 0}
        ids = [int(t) for t in turn_ids]
        summaries = tx.execute(
            "DELETE FROM summaries WHERE user_id = %s AND source_turn_ids && %s::bigint[]", (user_id, ids)
        ).rowcount
        facts = 0
        for fid, key, superseded_at, valid_from in tx.execute(
            "SELECT id, key, superseded_at, valid_from FROM profile_facts"
            " WHERE user_id = %s AND source_turn_ids && %s::bigint[] ORDER BY id",
            (user_id, ids),
        ).fetchall():
            tx.execute("DELETE FROM profile_facts WHERE id = %s", (fid,))
            facts += 1
            if superseded_at is None:
                tx.execute(
                    "UPDATE profile_facts SET superseded_at = NULL WHERE id = (SELECT id FROM profile_facts"
                    " WHERE user_id = %s AND key = %s AND superseded_at = %s ORDER BY valid_from DESC, id DESC"
                    " LIMIT 1)",
                    (user_id, key, valid_from),
                )
        traces = tx.execute(
            "DELETE FROM traces WHERE user_id = %s AND turn_ids && %s::bigint[]", (user_id, ids)
        ).rowcount
        return {"summaries": int(summaries), "facts": facts, "traces": int(traces)}

    def state_delete_user(self, tx: Tx, user_id: str) -> int:
        tx = pg_tx(tx)
        n = 0
        for table in ("profile_facts", "summaries", "session_state", "traces"):
            n += tx.execute(f"DELETE FROM {table} WHERE user_id = %s", (user_id,)).rowcount
        return n

    def state_delete_session(self, tx: Tx, user_id: str, session_id: str) -> int:
        tx = pg_tx(tx)
        n = 0
        for table in ("summaries", "session_state", "traces"):
            n += tx.execute(
                f"DELETE FROM {table} WHERE user_id = %s AND session_id = %s", (user_id, session_id)
            ).rowcount
        return n
