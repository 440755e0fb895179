"""SQLite part of forgetting: hard delete with lineage, and the purge that leaves no bytes behind.

`forget_turns`, `forget_session` and `forget_user` delete in one transaction everything that holds
the content or was derived from it (see `store.lineage` for how artifact tables join the cascade);
then `purge_deleted` makes the deletion physical in the files:

* `secure_delete` (set on every connection) overwrites deleted rows and freed pages with zeros;
* FTS5 keeps a deleted row's tokens in its index segments until they are merged (FTS5's own
  `secure-delete` option needs SQLite 3.42; this Python's is older), so every FTS5 table is merged
  into one segment (`optimize`), which rewrites the index without them;
* the WAL still holds old page images: `wal_checkpoint(TRUNCATE)` copies the zeroed pages into the
  database file and truncates the WAL to 0 bytes.

BENCHMARKS.md ("Forgetting") has the cost; docs/design.md says why this and not a bundled SQLite.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memsched.model import Forgotten
from memsched.store.base import row_ids
from memsched.store.lineage import Derived, Schema, fts5_tables, read_schema
from memsched.store.sqlite_base import SQLiteMixin, SQLiteTx

# Job payload keys that name the turns a job was made from.
_JOB_TURN_LISTS = ("turn_ids", "source_turn_ids")
_JOB_TURN_KEYS = ("turn_id", "command_turn_id")
# How long the purge's checkpoint waits for readers to leave the WAL before giving up (ms).
CHECKPOINT_WAIT_MS = 5000


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _chunks(ids: Sequence[int], size: int = 500) -> list[list[int]]:
    return [list(ids[i : i + size]) for i in range(0, len(ids), size)]


class ForgetMixin(SQLiteMixin):
    """Hard deletes of SQLiteStore. Every method is scoped by user."""

    path: str
    checkpoint_lock: threading.Lock

    if TYPE_CHECKING:  # provided by SQLiteStore (sqlite_vectors)

        def _drop_vector_graphs(self, user_id: str) -> None: ...

    # -- turns -----------------------------------------------------------------------------------------

    def forget_turns(self, user_id: str, turn_ids: Sequence[int], *, purge: bool = True) -> Forgotten:
        """Delete the user's turns and everything made from them; then purge the bytes (`purge`)."""
        out = Forgotten(user_id)
        with self.transaction() as tx:
            self._forget_turns_tx(tx, read_schema(tx), out, row_ids(turn_ids))
        if out.turn_ids:
            self._drop_vector_graphs(user_id)
        if purge and out.turn_ids:
            out.purge = self.purge_deleted()
        return out

    def _forget_turns_tx(self, tx: SQLiteTx, schema: Schema, out: Forgotten, ids: list[int]) -> None:
        found: list[tuple[int, str, str, int]] = []
        for chunk in _chunks(ids):
            found += tx.execute(
                f"SELECT id, session_id, content_hash, page_id FROM turns WHERE user_id = ? AND id IN ({_marks(len(chunk))})",
                (out.user_id, *chunk),
            ).fetchall()
        if not found:
            return
        gone = sorted(r[0] for r in found)
        out.turn_ids += gone
        out.sessions = sorted(set(out.sessions) | {r[1] for r in found})
        for entry in schema.derived:
            self._forget_derived(tx, entry, out, gone)
        # Bookmarks made from these turns go with them; their pages are bookmarked again after.
        pages: set[int] = set()
        for chunk in _chunks(gone):
            marks = _marks(len(chunk))
            pages |= {
                r[0]
                for r in tx.execute(
                    "SELECT DISTINCT bp.page_id FROM bookmark_turns bt JOIN bookmark_pages bp"
                    f" ON bp.bookmark_id = bt.bookmark_id WHERE bt.turn_id IN ({marks})",
                    chunk,
                )
            }
            out.count(
                "bookmarks",
                tx.execute(
                    "DELETE FROM bookmarks WHERE user_id = ? AND id IN"
                    f" (SELECT bookmark_id FROM bookmark_turns WHERE turn_id IN ({marks}))",
                    (out.user_id, *chunk),
                ).rowcount,
            )
        for table, scoped in schema.per_turn:
            for chunk in _chunks(gone):
                sql = f'DELETE FROM "{table}" WHERE turn_id IN ({_marks(len(chunk))})'
                args: list[Any] = list(chunk)
                if scoped:
                    sql += " AND user_id = ?"
                    args.append(out.user_id)
                out.count(table, tx.execute(sql, args).rowcount)
        self._forget_jobs(tx, out, gone)
        for chunk in _chunks(gone):
            marks = _marks(len(chunk))
            tx.execute(f"DELETE FROM turns_fts WHERE rowid IN ({marks})", chunk)
            out.count(
                "turns",
                tx.execute(
                    f"DELETE FROM turns WHERE user_id = ? AND id IN ({marks})", (out.user_id, *chunk)
                ).rowcount,
            )
        for h in {r[2] for r in found}:
            if not tx.execute(
                "SELECT 1 FROM turns WHERE user_id = ? AND content_hash = ? LIMIT 1", (out.user_id, h)
            ).fetchone():
                out.count(
                    "embeddings",
                    tx.execute(
                        "DELETE FROM embeddings WHERE user_id = ? AND content_hash = ?", (out.user_id, h)
                    ).rowcount,
                )
        out.pages = sorted(
            p
            for p in pages
            if tx.execute(
                "SELECT 1 FROM turns WHERE user_id = ? AND page_id = ? LIMIT 1", (out.user_id, p)
            ).fetchone()
        )

    def _forget_derived(self, tx: SQLiteTx, entry: Derived, out: Forgotten, ids: list[int]) -> None:
        hit: set[Any] = set()
        for chunk in _chunks(ids):
            hit |= {
                r[0]
                for r in tx.execute(
                    f'SELECT DISTINCT a."{entry.id_column}" FROM "{entry.table}" a, json_each(a."{entry.column}") j'
                    f" WHERE a.user_id = ? AND j.value IN ({_marks(len(chunk))})",
                    (out.user_id, *chunk),
                )
            }
        if not hit:
            return
        if entry.policy == "revert_fact":
            for fid in sorted(hit):
                self._revert_fact(tx, out.user_id, int(fid))
            out.count(entry.table, len(hit))
            return
        if entry.policy == "regenerate_summary":
            for sid in sorted(hit):
                row = tx.execute(
                    "SELECT session_id, first_seq, last_seq, kind, tokens FROM summaries WHERE id = ?", (sid,)
                ).fetchone()
                if row is not None:
                    out.summaries.append(
                        {
                            "session_id": row[0],
                            "first_seq": row[1],
                            "last_seq": row[2],
                            "kind": row[3],
                            "tokens": row[4],
                        }
                    )
        for chunk in _chunks(sorted(hit)):
            out.count(
                entry.table,
                tx.execute(
                    f'DELETE FROM "{entry.table}" WHERE user_id = ? AND "{entry.id_column}" IN ({_marks(len(chunk))})',
                    (out.user_id, *chunk),
                ).rowcount,
            )

    @staticmethod
    def _revert_fact(tx: SQLiteTx, user_id: str, fact_id: int) -> None:
        """Delete a fact; if it was in force, the value it had superseded is in force again."""
        row = tx.execute(
            "SELECT key, superseded_at, valid_from FROM profile_facts WHERE user_id = ? AND id = ?",
            (user_id, fact_id),
        ).fetchone()
        if row is None:
            return
        key, superseded_at, valid_from = row
        tx.execute("DELETE FROM profile_facts WHERE id = ?", (fact_id,))
        if superseded_at is None:
            prev = tx.execute(
                "SELECT id FROM profile_facts WHERE user_id = ? AND key = ? AND superseded_at = ?"
                " ORDER BY valid_from DESC, id DESC LIMIT 1",
                (user_id, key, valid_from),
            ).fetchone()
            if prev is not None:
                tx.execute(
                    "UPDATE profile_facts SET superseded_at = NULL, superseded_by = NULL WHERE id = ?",
                    (prev[0],),
                )

    def _forget_jobs(self, tx: SQLiteTx, out: Forgotten, ids: list[int]) -> None:
        """Delete jobs (not running ones: they find their turns gone) whose payload names these turns."""
        wanted = set(ids)
        doomed = []
        for jid, payload in tx.execute(
            "SELECT id, payload FROM jobs WHERE user_id = ? AND status != 'running' AND payload != '{}'",
            (out.user_id,),
        ):
            try:
                p = json.loads(payload)
            except ValueError:
                continue
            if not isinstance(p, dict):
                continue
            named = {p.get(k) for k in _JOB_TURN_KEYS}
            for k in _JOB_TURN_LISTS:
                if isinstance(p.get(k), list):
                    named |= set(p[k])
            if named & wanted:
                doomed.append(jid)
        for chunk in _chunks(doomed):
            out.count(
                "jobs", tx.execute(f"DELETE FROM jobs WHERE id IN ({_marks(len(chunk))})", chunk).rowcount
            )

    # -- sessions and users -----------------------------------------------------------------------------

    def forget_session(self, user_id: str, session_id: str, *, purge: bool = True) -> Forgotten:
        """Delete a session: its turns (with the cascade) and every row of any table scoped to it."""
        out = Forgotten(user_id)
        with self.transaction() as tx:
            schema = read_schema(tx)
            ids = [
                r[0]
                for r in tx.execute(
                    "SELECT id FROM turns WHERE user_id = ? AND session_id = ?", (user_id, session_id)
                )
            ]
            self._forget_turns_tx(tx, schema, out, ids)
            out.summaries = [s for s in out.summaries if s["session_id"] != session_id]
            for table in schema.per_session:
                if table in ("turns", "pages"):
                    continue
                out.count(
                    table,
                    tx.execute(
                        f'DELETE FROM "{table}" WHERE user_id = ? AND session_id = ?', (user_id, session_id)
                    ).rowcount,
                )
            out.count(
                "pages",
                tx.execute(
                    "DELETE FROM pages WHERE user_id = ? AND session_id = ?", (user_id, session_id)
                ).rowcount,
            )
            n = tx.execute(
                "DELETE FROM sessions WHERE user_id = ? AND id = ?", (user_id, session_id)
            ).rowcount
            out.count("sessions", n)
            if n:
                out.sessions = sorted(set(out.sessions) | {session_id})
            out.pages = [
                p for p in out.pages if tx.execute("SELECT 1 FROM pages WHERE id = ?", (p,)).fetchone()
            ]
        if out.turn_ids:
            self._drop_vector_graphs(user_id)
        if purge and (out.turn_ids or out.rows):
            out.purge = self.purge_deleted()
        return out

    def forget_user(self, user_id: str, *, purge: bool = True) -> Forgotten:
        """Delete a user and every row of every table that has their user id."""
        out = Forgotten(user_id)
        with self.transaction() as tx:
            schema = read_schema(tx)
            out.sessions = [r[0] for r in tx.execute("SELECT id FROM sessions WHERE user_id = ?", (user_id,))]
            ids = [r[0] for r in tx.execute("SELECT id FROM turns WHERE user_id = ?", (user_id,))]
            out.turn_ids = sorted(ids)
            for chunk in _chunks(ids):
                tx.execute(f"DELETE FROM turns_fts WHERE rowid IN ({_marks(len(chunk))})", chunk)
            # Children before parents: turns reference pages; everything references users.
            last = ("pages", "sessions")
            out.count("turns", tx.execute("DELETE FROM turns WHERE user_id = ?", (user_id,)).rowcount)
            for table in [t for t in schema.per_user if t not in ("turns", *last)] + [
                t for t in last if t in schema.per_user
            ]:
                out.count(table, tx.execute(f'DELETE FROM "{table}" WHERE user_id = ?', (user_id,)).rowcount)
            out.count("users", tx.execute("DELETE FROM users WHERE id = ?", (user_id,)).rowcount)
        self._drop_vector_graphs(user_id)
        if purge and out.rows:
            out.purge = self.purge_deleted()
        return out

    # -- no bytes left ---------------------------------------------------------------------------------

    def purge_deleted(self) -> dict[str, object]:
        """Make deletions physical in the files: merge FTS5 segments, checkpoint and truncate the WAL.

        Returns what it did and the milliseconds each step took. `wal_truncated` is False only when
        readers kept the WAL busy for `CHECKPOINT_WAIT_MS`; the next purge (or any checkpoint) then
        finishes the job.
        """
        report: dict[str, object] = {}
        t0 = time.perf_counter()
        with self.transaction() as tx:
            tables = fts5_tables(tx)
            for name in tables:
                tx.execute(f'INSERT INTO "{name}" ("{name}") VALUES (\'optimize\')')
        report["fts_optimized"] = tables
        report["fts_ms"] = round((time.perf_counter() - t0) * 1000.0, 3)
        if self.path == ":memory:":
            return report
        t0 = time.perf_counter()
        report["wal_truncated"] = self.truncate_wal()
        report["checkpoint_ms"] = round((time.perf_counter() - t0) * 1000.0, 3)
        return report

    def truncate_wal(self) -> bool:
        """Checkpoint the whole WAL into the database file and truncate it to zero bytes; False when
        readers kept it busy for `CHECKPOINT_WAIT_MS`."""
        db = self.db
        (wait,) = db.execute("PRAGMA busy_timeout").fetchone()
        db.execute(f"PRAGMA busy_timeout = {CHECKPOINT_WAIT_MS}")
        deadline = time.monotonic() + CHECKPOINT_WAIT_MS / 1000.0
        try:
            with self.checkpoint_lock:  # not beside the background checkpoint (`sqlite_checkpoint`)
                busy, _, _ = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                # Another connection's checkpoint in progress (another process's, or another store
                # object's background one on the same file) fails this one at once: SQLite does not
                # call the busy handler for the checkpointer lock. Such a checkpoint is short (or
                # itself waits for readers), so try again until the same deadline.
                while busy and time.monotonic() < deadline:
                    time.sleep(0.01)
                    busy, _, _ = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        finally:
            db.execute(f"PRAGMA busy_timeout = {int(wait)}")
        return not busy
