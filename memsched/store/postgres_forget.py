"""PostgreSQL part of forgetting: hard delete with lineage (the SQLite twin is `sqlite_forget.py`).

The cascade is the same one (`store.lineage`): every table with a `source_turn_ids` column (a bigint[]
here, or json), a `turn_id` column, a registered lineage column, or a `user_id`/`session_id` column
joins it, read from `information_schema`. Rows are gone for every reader at commit.

What "no bytes left" means on PostgreSQL: a deleted row stays in its table and index pages as a dead
tuple until VACUUM removes it, and in the write-ahead log until the log is recycled. `purge_deleted`
runs VACUUM on the tables that lost rows, which removes the dead tuples from the heap and from every
index (the GIN full-text index and the HNSW vector index included) and makes their space reusable;
the old bytes can remain in free space inside the files until it is reused. Rewriting the files
without them takes `VACUUM FULL` (an exclusive lock per table) or pg_repack, and WAL archives,
replicas and backups keep data until their own retention ends: docs/deploy.md, "Deleting data".
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from memsched.model import Forgotten
from memsched.store.base import row_ids
from memsched.store.lineage import Derived, Schema, registered
from memsched.store.postgres_base import PgMixin, PgTx, chunks

_JOB_TURN_LISTS = ("turn_ids", "source_turn_ids")
_JOB_TURN_KEYS = ("turn_id", "command_turn_id")
_SKIP = ("migrations", "meta")


def read_schema(tx: PgTx) -> tuple[Schema, dict[tuple[str, str], str]]:
    """The cascade's view of the database, and each (table, column)'s data type."""
    tables: dict[str, list[str]] = {}
    types: dict[tuple[str, str], str] = {}
    for table, column, data_type in tx.execute(
        "SELECT table_name, column_name, data_type FROM information_schema.columns"
        " WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"
    ).fetchall():
        if table in _SKIP:
            continue
        tables.setdefault(table, []).append(column)
        types[(table, column)] = data_type
    schema = Schema()
    for name, columns in sorted(tables.items()):
        entry = registered(name)
        if entry is not None and entry.column in columns:
            schema.derived.append(entry)
        elif "source_turn_ids" in columns:
            schema.derived.append(Derived(name))
        if "turn_id" in columns:
            schema.per_turn.append((name, "user_id" in columns))
        if "user_id" in columns:
            schema.per_user.append(name)
            if "session_id" in columns:
                schema.per_session.append(name)
    return schema, types


class PgForgetMixin(PgMixin):
    """Hard deletes of PostgresStore. Every method is scoped by user."""

    def forget_turns(self, user_id: str, turn_ids: Sequence[int], *, purge: bool = True) -> Forgotten:
        out = Forgotten(user_id)
        with self.transaction() as tx:
            schema, types = read_schema(tx)
            self._forget_turns_tx(tx, schema, types, out, row_ids(turn_ids))
        if purge and out.turn_ids:
            out.purge = self.purge_deleted(list(out.rows))
        return out

    def _forget_turns_tx(
        self, tx: PgTx, schema: Schema, types: dict[tuple[str, str], str], out: Forgotten, ids: list[int]
    ) -> None:
        found: list[tuple[Any, ...]] = []
        for chunk in chunks(ids):
            found += tx.execute(
                "SELECT id, session_id, content_hash, page_id, fts_len FROM turns WHERE user_id = %s AND id = ANY(%s)",
                (out.user_id, chunk),
            ).fetchall()
        if not found:
            return
        gone = sorted(int(r[0]) for r in found)
        out.turn_ids += gone
        out.sessions = sorted(set(out.sessions) | {r[1] for r in found})
        for entry in schema.derived:
            self._forget_derived(tx, entry, types.get((entry.table, entry.column), ""), out, gone)
        pages = {
            r[0]
            for r in tx.execute(
                "SELECT DISTINCT bp.page_id FROM bookmark_turns bt JOIN bookmark_pages bp"
                " ON bp.bookmark_id = bt.bookmark_id WHERE bt.turn_id = ANY(%s)",
                (gone,),
            ).fetchall()
        }
        out.count(
            "bookmarks",
            tx.execute(
                "DELETE FROM bookmarks WHERE user_id = %s AND id IN"
                " (SELECT bookmark_id FROM bookmark_turns WHERE turn_id = ANY(%s))",
                (out.user_id, gone),
            ).rowcount,
        )
        for table, scoped in schema.per_turn:
            sql = f'DELETE FROM "{table}" WHERE turn_id = ANY(%s)'
            args: list[Any] = [gone]
            if scoped:
                sql += " AND user_id = %s"
                args.append(out.user_id)
            out.count(table, tx.execute(sql, args).rowcount)
        self._forget_jobs(tx, out, gone)
        out.count(
            "turns",
            tx.execute("DELETE FROM turns WHERE user_id = %s AND id = ANY(%s)", (out.user_id, gone)).rowcount,
        )
        tx.execute(
            "UPDATE users SET fts_docs = fts_docs - %s, fts_len = fts_len - %s WHERE id = %s",
            (len(found), sum(int(r[4]) for r in found), out.user_id),
        )
        out.count(
            "embeddings",
            tx.execute(
                "DELETE FROM embeddings e WHERE e.user_id = %s AND e.content_hash = ANY(%s)"
                " AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.user_id = e.user_id AND t.content_hash = e.content_hash)"
                " AND NOT EXISTS (SELECT 1 FROM bookmarks b WHERE b.user_id = e.user_id AND b.content_hash = e.content_hash)",
                (out.user_id, sorted({r[2] for r in found})),
            ).rowcount,
        )
        out.pages = sorted(
            p
            for p in pages
            if tx.execute(
                "SELECT 1 FROM turns WHERE user_id = %s AND page_id = %s LIMIT 1", (out.user_id, p)
            ).fetchone()
        )

    def _forget_derived(
        self, tx: PgTx, entry: Derived, data_type: str, out: Forgotten, ids: list[int]
    ) -> None:
        col = f'a."{entry.column}"'
        arg: list[int] | list[str]
        if data_type == "ARRAY":
            match, arg = f"{col}::bigint[] && %s::bigint[]", ids
        else:  # json / jsonb / text holding a JSON array
            match = (
                f"EXISTS (SELECT 1 FROM json_array_elements_text({col}::json) j WHERE j = ANY(%s::text[]))"
            )
            arg = [str(i) for i in ids]
        hit = sorted(
            {
                r[0]
                for r in tx.execute(
                    f'SELECT a."{entry.id_column}" FROM "{entry.table}" a WHERE a.user_id = %s AND {match}',
                    (out.user_id, arg),
                ).fetchall()
            }
        )
        if not hit:
            return
        if entry.policy == "revert_fact":
            for fid in hit:
                self._revert_fact(tx, out.user_id, int(fid))
            out.count(entry.table, len(hit))
            return
        if entry.policy == "regenerate_summary":
            for row in tx.execute(
                "SELECT session_id, first_seq, last_seq, kind, tokens FROM summaries WHERE id = ANY(%s) ORDER BY id",
                (hit,),
            ).fetchall():
                out.summaries.append(
                    {
                        "session_id": row[0],
                        "first_seq": row[1],
                        "last_seq": row[2],
                        "kind": row[3],
                        "tokens": row[4],
                    }
                )
        out.count(
            entry.table,
            tx.execute(
                f'DELETE FROM "{entry.table}" WHERE user_id = %s AND "{entry.id_column}" = ANY(%s)',
                (out.user_id, hit),
            ).rowcount,
        )

    @staticmethod
    def _revert_fact(tx: PgTx, user_id: str, fact_id: int) -> None:
        row = tx.execute(
            "SELECT key, superseded_at, valid_from FROM profile_facts WHERE user_id = %s AND id = %s",
            (user_id, fact_id),
        ).fetchone()
        if row is None:
            return
        key, superseded_at, valid_from = row
        tx.execute("DELETE FROM profile_facts WHERE id = %s", (fact_id,))
        if superseded_at is None:
            tx.execute(
                "UPDATE profile_facts SET superseded_at = NULL, superseded_by = NULL WHERE id = (SELECT id FROM profile_facts"
                " WHERE user_id = %s AND key = %s AND superseded_at = %s ORDER BY valid_from DESC, id DESC LIMIT 1)",
                (user_id, key, valid_from),
            )

    def _forget_jobs(self, tx: PgTx, out: Forgotten, ids: list[int]) -> None:
        wanted = set(ids)
        doomed = []
        for jid, payload in tx.execute(
            "SELECT id, payload FROM jobs WHERE user_id = %s AND status != 'running' AND payload != '{}'::jsonb",
            (out.user_id,),
        ).fetchall():
            if not isinstance(payload, dict):
                continue
            named = {payload.get(k) for k in _JOB_TURN_KEYS}
            for k in _JOB_TURN_LISTS:
                if isinstance(payload.get(k), list):
                    named |= set(payload[k])
            if named & wanted:
                doomed.append(jid)
        if doomed:
            out.count("jobs", tx.execute("DELETE FROM jobs WHERE id = ANY(%s)", (doomed,)).rowcount)

    def forget_session(self, user_id: str, session_id: str, *, purge: bool = True) -> Forgotten:
        out = Forgotten(user_id)
        with self.transaction() as tx:
            schema, types = read_schema(tx)
            ids = [
                r[0]
                for r in tx.execute(
                    "SELECT id FROM turns WHERE user_id = %s AND session_id = %s", (user_id, session_id)
                ).fetchall()
            ]
            self._forget_turns_tx(tx, schema, types, out, ids)
            out.summaries = [s for s in out.summaries if s["session_id"] != session_id]
            for table in schema.per_session:
                if table in ("turns", "pages"):
                    continue
                out.count(
                    table,
                    tx.execute(
                        f'DELETE FROM "{table}" WHERE user_id = %s AND session_id = %s', (user_id, session_id)
                    ).rowcount,
                )
            out.count(
                "pages",
                tx.execute(
                    "DELETE FROM pages WHERE user_id = %s AND session_id = %s", (user_id, session_id)
                ).rowcount,
            )
            n = tx.execute(
                "DELETE FROM sessions WHERE user_id = %s AND id = %s", (user_id, session_id)
            ).rowcount
            out.count("sessions", n)
            if n:
                out.sessions = sorted(set(out.sessions) | {session_id})
            out.pages = [
                p for p in out.pages if tx.execute("SELECT 1 FROM pages WHERE id = %s", (p,)).fetchone()
            ]
        if purge and (out.turn_ids or out.rows):
            out.purge = self.purge_deleted(list(out.rows))
        return out

    def forget_user(self, user_id: str, *, purge: bool = True) -> Forgotten:
        out = Forgotten(user_id)
        with self.transaction() as tx:
            schema, _ = read_schema(tx)
            out.sessions = [
                r[0] for r in tx.execute("SELECT id FROM sessions WHERE user_id = %s", (user_id,)).fetchall()
            ]
            out.turn_ids = sorted(
                r[0] for r in tx.execute("SELECT id FROM turns WHERE user_id = %s", (user_id,)).fetchall()
            )
            out.count("turns", tx.execute("DELETE FROM turns WHERE user_id = %s", (user_id,)).rowcount)
            # Children before parents: bookmarks and page use reference pages; pages reference sessions.
            last = ("pages", "sessions")
            for table in [t for t in schema.per_user if t not in ("turns", *last)] + [
                t for t in last if t in schema.per_user
            ]:
                out.count(table, tx.execute(f'DELETE FROM "{table}" WHERE user_id = %s', (user_id,)).rowcount)
            out.count("users", tx.execute("DELETE FROM users WHERE id = %s", (user_id,)).rowcount)
        if purge and out.rows:
            out.purge = self.purge_deleted(list(out.rows))
        return out

    def purge_deleted(self, tables: Sequence[str] | None = None) -> dict[str, object]:
        """VACUUM the tables that lost rows (all of memsched's when `tables` is None): the dead tuples
        leave the heap and every index. See the module docstring for what that does not cover."""
        t0 = time.perf_counter()
        if getattr(self._local, "conn", None) is not None:
            return {"vacuumed": [], "skipped": "inside a transaction"}
        with self._read() as conn:
            names = [
                r[0]
                for r in conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
                    " AND tablename NOT IN ('migrations', 'meta') ORDER BY tablename"
                ).fetchall()
            ]
            if tables is not None:
                wanted = set(tables) | {"turns", "embeddings"}
                names = [n for n in names if n in wanted]
            for name in names:
                conn.execute(f'VACUUM "{name}"')
        return {"vacuumed": names, "vacuum_ms": round((time.perf_counter() - t0) * 1000.0, 3)}
