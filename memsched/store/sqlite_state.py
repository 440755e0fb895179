"""SQLite part of the scheduler's state: profile facts with history, session summaries, per-session
state, and per-turn traces.

Every artifact row records the turn ids it was derived from (`source_turn_ids`, a JSON array), so a
hard delete of turns can find and drop what was made from them (`state_forget_turns`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from memsched.model import Turn
from memsched.store.base import Tx
from memsched.store.lineage import sources_gone
from memsched.store.sqlite_base import TURN_COLUMNS, SQLiteMixin, row_to_turn, run_script, sqlite_tx


def m004_state(db: sqlite3.Connection) -> None:
    run_script(
        db,
        """
        CREATE TABLE profile_facts (
            id INTEGER PRIMARY KEY,
            user_id TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            valid_from REAL NOT NULL,
            superseded_at REAL,
            source_turn_ids TEXT NOT NULL DEFAULT '[]',
            meta TEXT NOT NULL DEFAULT '{}',
            created_at REAL NOT NULL
        );
        CREATE INDEX profile_facts_user_key ON profile_facts(user_id, key, valid_from);
        -- Summaries replace a contiguous seq range [first_seq, last_seq] of one session in later
        -- contexts; the raw turns stay stored and searchable.
        CREATE TABLE summaries (
            id INTEGER PRIMARY KEY,
            user_id TEXT NOT NULL,
            session_id TEXT NOT NULL,
            first_seq INTEGER NOT NULL,
            last_seq INTEGER NOT NULL,
            kind TEXT NOT NULL,
            method TEXT NOT NULL,
            content TEXT NOT NULL,
            tokens INTEGER NOT NULL,
            source_tokens INTEGER NOT NULL,
            source_turn_ids TEXT NOT NULL DEFAULT '[]',
            created_at REAL NOT NULL,
            UNIQUE (user_id, session_id, first_seq, last_seq)
        );
        CREATE INDEX summaries_session ON summaries(user_id, session_id, last_seq);
        CREATE TABLE session_state (
            user_id TEXT NOT NULL,
            session_id TEXT NOT NULL,
            data TEXT NOT NULL DEFAULT '{}',
            updated_at REAL NOT NULL,
            PRIMARY KEY (user_id, session_id)
        );
        CREATE TABLE traces (
            id TEXT PRIMARY KEY,
            user_id TEXT NOT NULL,
            session_id TEXT,
            created_at REAL NOT NULL,
            turn_ids TEXT NOT NULL DEFAULT '[]',
            data TEXT NOT NULL
        );
        CREATE INDEX traces_session ON traces(user_id, session_id, created_at);
        """,
    )


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
        "source_turn_ids": json.loads(r[6]),
        "meta": json.loads(r[7]),
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
        "source_turn_ids": json.loads(r[10]),
        "created_at": r[11],
    }


def _marks(n: int) -> str:
    return ",".join("?" * n)


class StateMixin(SQLiteMixin):
    """Profile-fact, summary, session-state and trace methods of SQLiteStore.

    Methods taking `tx` write inside a transaction the caller opened with `transaction()`, so a turn
    and everything derived from it commit together.
    """

    # -- profile facts -------------------------------------------------------------------------------

    def facts_current(self, user_id: str) -> list[dict[str, Any]]:
        """The user's facts in force (not superseded), one per key, oldest key first."""
        rows = self.db.execute(
            f"SELECT {_FACT_COLUMNS} FROM profile_facts WHERE user_id = ? AND superseded_at IS NULL"
            " ORDER BY valid_from, id",
            (user_id,),
        ).fetchall()
        return [_fact_row(r) for r in rows]

    def facts_history(self, user_id: str, key: str | None = None) -> list[dict[str, Any]]:
        """Every value the user's facts (of `key`, or all) have had, oldest first."""
        sql = f"SELECT {_FACT_COLUMNS} FROM profile_facts WHERE user_id = ?"
        args: list[Any] = [user_id]
        if key is not None:
            sql += " AND key = ?"
            args.append(key)
        rows = self.db.execute(sql + " ORDER BY valid_from, id", args).fetchall()
        return [_fact_row(r) for r in rows]

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
        """Make `value` the user's current `key`, superseding the previous value at `valid_from`.

        Setting the value already in force adds the sources to it instead of writing a new row (so
        repeating "call me 大王" does not grow the history). Returns the id of the fact in force.
        """
        tx = sqlite_tx(tx)
        current = tx.execute(
            "SELECT id, value, source_turn_ids FROM profile_facts"
            " WHERE user_id = ? AND key = ? AND superseded_at IS NULL ORDER BY valid_from DESC, id DESC",
            (user_id, key),
        ).fetchall()
        if current and current[0][1] == value:
            fid = int(current[0][0])
            self.fact_add_sources(tx, fid, source_turn_ids)
            return fid
        if current:
            tx.execute(
                f"UPDATE profile_facts SET superseded_at = ? WHERE id IN ({_marks(len(current))})",
                (valid_from, *[r[0] for r in current]),
            )
        cur = tx.execute(
            "INSERT INTO profile_facts (user_id, key, value, valid_from, superseded_at, source_turn_ids,"
            " meta, created_at) VALUES (?, ?, ?, ?, NULL, ?, ?, ?)",
            (
                user_id,
                key,
                value,
                valid_from,
                json.dumps(sorted(set(source_turn_ids))),
                json.dumps(meta or {}, ensure_ascii=False),
                now,
            ),
        )
        return int(cur.lastrowid or 0)

    def fact_add_sources(self, tx: Tx, fact_id: int, turn_ids: Iterable[int]) -> None:
        """Append turn ids to a fact's lineage (e.g. once the command turn that set it is stored)."""
        tx = sqlite_tx(tx)
        ids = list(turn_ids)
        if not ids:
            return
        row = tx.execute("SELECT source_turn_ids FROM profile_facts WHERE id = ?", (fact_id,)).fetchone()
        if row is None:
            return
        merged = sorted(set(json.loads(row[0])) | set(ids))
        tx.execute("UPDATE profile_facts SET source_turn_ids = ? WHERE id = ?", (json.dumps(merged), fact_id))

    # -- summaries -----------------------------------------------------------------------------------

    def summary_add(self, tx: Tx, row: dict[str, Any]) -> int:
        """Store a summary (keys as the `summaries` columns); an identical range is not stored twice.
        Returns its id, or 0 when one of its source turns was forgotten meanwhile (nothing stored)."""
        tx = sqlite_tx(tx)
        if sources_gone(tx, row["user_id"], row["source_turn_ids"]):
            return 0
        cur = tx.execute(
            "INSERT OR IGNORE INTO summaries (user_id, session_id, first_seq, last_seq, kind, method,"
            " content, tokens, source_tokens, source_turn_ids, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?,"
            " ?, ?)",
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
                json.dumps(sorted(set(row["source_turn_ids"]))),
                row["created_at"],
            ),
        )
        if cur.rowcount:
            return int(cur.lastrowid or 0)
        (sid,) = tx.execute(
            "SELECT id FROM summaries WHERE user_id = ? AND session_id = ? AND first_seq = ? AND last_seq = ?",
            (row["user_id"], row["session_id"], row["first_seq"], row["last_seq"]),
        ).fetchone()
        return int(sid)

    def summaries_delete(self, tx: Tx, user_id: str, ids: Sequence[int]) -> int:
        tx = sqlite_tx(tx)
        if not ids:
            return 0
        cur = tx.execute(
            f"DELETE FROM summaries WHERE user_id = ? AND id IN ({_marks(len(ids))})", (user_id, *ids)
        )
        return cur.rowcount

    def session_summaries(self, user_id: str, session_id: str) -> list[dict[str, Any]]:
        """The session's summaries in seq order."""
        rows = self.db.execute(
            f"SELECT {_SUMMARY_COLUMNS} FROM summaries WHERE user_id = ? AND session_id = ?"
            " ORDER BY first_seq, id",
            (user_id, session_id),
        ).fetchall()
        return [_summary_row(r) for r in rows]

    # -- turns by seq, vectors ----------------------------------------------------------------

    def session_turns_after(self, user_id: str, session_id: str, after_seq: int) -> list[Turn]:
        """The session's turns with seq > `after_seq`, in seq order."""
        rows = self.db.execute(
            f"SELECT {TURN_COLUMNS} FROM turns WHERE user_id = ? AND session_id = ? AND seq > ? ORDER BY seq",
            (user_id, session_id, after_seq),
        ).fetchall()
        return [row_to_turn(r) for r in rows]

    def session_turns_between(
        self, user_id: str, session_id: str, first_seq: int, last_seq: int
    ) -> list[Turn]:
        """The session's turns with first_seq <= seq <= last_seq, in seq order."""
        rows = self.db.execute(
            f"SELECT {TURN_COLUMNS} FROM turns WHERE user_id = ? AND session_id = ? AND seq BETWEEN ? AND ?"
            " ORDER BY seq",
            (user_id, session_id, first_seq, last_seq),
        ).fetchall()
        return [row_to_turn(r) for r in rows]

    def put_vectors_tx(
        self, tx: Tx, user_id: str, model_id: str, items: Sequence[tuple[str, np.ndarray]]
    ) -> None:
        """`put_vectors` inside the caller's transaction, so a turn and its vectors commit together."""
        tx = sqlite_tx(tx)
        tx.executemany(
            "INSERT OR REPLACE INTO embeddings (user_id, model, content_hash, dim, vector) VALUES (?, ?, ?, ?, ?)",
            [
                (user_id, model_id, h, int(v.shape[-1]), np.asarray(v, dtype=np.float32).tobytes())
                for h, v in items
            ],
        )

    def turn_meta_update(self, tx: Tx, user_id: str, turn_id: int, meta: dict[str, Any]) -> None:
        """Replace a turn's `meta` (JSON) — e.g. to clear the reply_failed mark once a retry succeeds."""
        tx = sqlite_tx(tx)
        tx.execute(
            "UPDATE turns SET meta = ? WHERE user_id = ? AND id = ?",
            (json.dumps(meta, ensure_ascii=False) if meta else "{}", user_id, turn_id),
        )

    # -- per-session state ---------------------------------------------------------------------------

    def session_state(self, user_id: str, session_id: str) -> dict[str, Any]:
        """The session's scheduler state (segment start, history tokens, ...); {} when none yet."""
        row = self.db.execute(
            "SELECT data FROM session_state WHERE user_id = ? AND session_id = ?", (user_id, session_id)
        ).fetchone()
        return dict(json.loads(row[0])) if row else {}

    def session_state_update(
        self, tx: Tx, user_id: str, session_id: str, values: dict[str, Any], *, now: float
    ) -> dict[str, Any]:
        """Merge `values` into the session's state inside `tx`; returns the new state."""
        tx = sqlite_tx(tx)
        row = tx.execute(
            "SELECT data FROM session_state WHERE user_id = ? AND session_id = ?", (user_id, session_id)
        ).fetchone()
        data = dict(json.loads(row[0])) if row else {}
        data.update(values)
        tx.execute(
            "INSERT INTO session_state (user_id, session_id, data, updated_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (user_id, session_id) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at",
            (user_id, session_id, json.dumps(data, ensure_ascii=False), now),
        )
        return data

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
        tx = sqlite_tx(tx)
        tx.execute(
            "INSERT OR REPLACE INTO traces (id, user_id, session_id, created_at, turn_ids, data)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (
                trace_id,
                user_id,
                session_id,
                created_at,
                json.dumps(list(turn_ids)),
                json.dumps(data, ensure_ascii=False, default=str),
            ),
        )

    def trace_get(self, trace_id: str, user_id: str | None = None) -> dict[str, Any] | None:
        """A stored trace by id (optionally only if it belongs to `user_id`), or None."""
        sql = "SELECT data FROM traces WHERE id = ?"
        args: list[Any] = [trace_id]
        if user_id is not None:
            sql += " AND user_id = ?"
            args.append(user_id)
        row = self.db.execute(sql, args).fetchone()
        return dict(json.loads(row[0])) if row else None

    def traces_list(
        self, user_id: str, session_id: str | None = None, limit: int = 50
    ) -> list[dict[str, Any]]:
        """The user's (or session's) traces, newest first."""
        sql = "SELECT data FROM traces WHERE user_id = ?"
        args: list[Any] = [user_id]
        if session_id is not None:
            sql += " AND session_id = ?"
            args.append(session_id)
        sql += " ORDER BY created_at DESC LIMIT ?"
        args.append(limit)
        return [dict(json.loads(r[0])) for r in self.db.execute(sql, args)]

    # -- lineage: deleting what was derived from turns ------------------------------------------------

    def state_forget_turns(self, tx: Tx, user_id: str, turn_ids: Sequence[int]) -> dict[str, int]:
        """Delete every summary, fact and trace derived from any of `turn_ids`.

        A deleted fact that was in force hands over to the value it had superseded (forgetting
        "call me 大王" brings back the earlier name). Returns counts per artifact kind.
        """
        tx = sqlite_tx(tx)
        if not turn_ids:
            return {"summaries": 0, "facts": 0, "traces": 0}
        ids = [int(t) for t in turn_ids]
        marks = _marks(len(ids))

        def derived(table: str, column: str) -> list[int | str]:
            return [
                r[0]
                for r in tx.execute(
                    f"SELECT DISTINCT a.id FROM {table} a, json_each(a.{column}) j"
                    f" WHERE a.user_id = ? AND j.value IN ({marks})",
                    (user_id, *ids),
                )
            ]

        summary_ids = [int(x) for x in derived("summaries", "source_turn_ids")]
        self.summaries_delete(tx, user_id, summary_ids)

        facts = 0
        for fid in derived("profile_facts", "source_turn_ids"):
            row = tx.execute(
                "SELECT key, superseded_at, valid_from FROM profile_facts WHERE id = ?", (fid,)
            ).fetchone()
            if row is None:
                continue
            key, superseded_at, valid_from = row
            tx.execute("DELETE FROM profile_facts WHERE id = ?", (fid,))
            facts += 1
            if superseded_at is None:
                prev = tx.execute(
                    "SELECT id FROM profile_facts WHERE user_id = ? AND key = ? AND superseded_at = ?"
                    " ORDER BY valid_from DESC, id DESC LIMIT 1",
                    (user_id, key, valid_from),
                ).fetchone()
                if prev is not None:
                    tx.execute("UPDATE profile_facts SET superseded_at = NULL WHERE id = ?", (prev[0],))

        trace_ids = derived("traces", "turn_ids")
        if trace_ids:
            tx.execute(f"DELETE FROM traces WHERE id IN ({_marks(len(trace_ids))})", trace_ids)
        return {"summaries": len(summary_ids), "facts": facts, "traces": len(trace_ids)}

    def state_delete_user(self, tx: Tx, user_id: str) -> int:
        """Delete all of the user's facts, summaries, session state and traces inside `tx`."""
        tx = sqlite_tx(tx)
        n = 0
        for table in ("profile_facts", "summaries", "session_state", "traces"):
            n += tx.execute(f"DELETE FROM {table} WHERE user_id = ?", (user_id,)).rowcount
        return n

    def state_delete_session(self, tx: Tx, user_id: str, session_id: str) -> int:
        """Delete the session's summaries, state and traces inside `tx` (facts are per user)."""
        tx = sqlite_tx(tx)
        n = 0
        for table in ("summaries", "session_state", "traces"):
            n += tx.execute(
                f"DELETE FROM {table} WHERE user_id = ? AND session_id = ?", (user_id, session_id)
            ).rowcount
        return n
