"""The embedded default store: one SQLite file in WAL mode, FTS5 for BM25, vectors as BLOBs."""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from memsched.config import DEFAULT_PAGE_SIZE
from memsched.errors import StoreError
from memsched.model import Hit, Page, Session, Turn, utcnow
from memsched.store.base import Tx, row_ids, validate_turn
from memsched.store.migrations import FOREIGN_KEYS_OFF, MIGRATIONS
from memsched.store.sqlite_base import TURN_COLUMNS, SQLiteTx, dt, row_to_turn, sqlite_tx, ts
from memsched.store.sqlite_bookmarks import BookmarksMixin
from memsched.store.sqlite_checkpoint import register as register_checkpoints
from memsched.store.sqlite_companion import CompanionMixin
from memsched.store.sqlite_export import ExportMixin
from memsched.store.sqlite_forget import ForgetMixin
from memsched.store.sqlite_fts import search_turns, user_tag
from memsched.store.sqlite_jobs import JobsMixin
from memsched.store.sqlite_keys import KeysMixin
from memsched.store.sqlite_profile import ProfileMixin
from memsched.store.sqlite_state import StateMixin
from memsched.store.sqlite_vectors import VectorPackMixin, join_rows
from memsched.store.sqlite_vocab import VocabMixin
from memsched.text.gloss import HAN_GLOB
from memsched.text.segment import index_text
from memsched.text.timeexpr import searchable_text

# The pattern as a literal, not a bound parameter: SQLite prepares a statement again each time a
# GLOB's pattern is bound (it might allow the LIKE optimisation), ~20 us a call hot, more in a
# loaded server, where the gloss layer's missing-vector check runs after every proxied reply.
_HAN_GLOB_SQL = "'" + HAN_GLOB.replace("'", "''") + "'"


def open_error(path: str, exc: sqlite3.Error) -> str:
    """What to tell a user whose database file could not be opened, with what to do about it."""
    text = str(exc)
    if "not a database" in text or "malformed" in text:
        return (
            f"database {path} is not a readable SQLite database ({text}): the file is corrupt or is"
            " something else; restore it from a backup or point --db/MEMSCHED_DB at another file"
        )
    if "unable to open" in text or "readonly" in text or "read-only" in text:
        return (
            f"cannot open database {path} for writing ({text}): memsched needs write access to the"
            " file and to its directory (SQLite keeps its write-ahead log beside it)"
        )
    return f"cannot open database {path}: {text}"


class SQLiteStore(
    JobsMixin,
    BookmarksMixin,
    StateMixin,
    ForgetMixin,
    KeysMixin,
    ProfileMixin,
    CompanionMixin,
    VocabMixin,
    VectorPackMixin,
    ExportMixin,
):
    """A `Store` on one SQLite file. Safe to share between threads (a connection per thread)."""

    def __init__(self, path: str | Path, page_size: int | None = None) -> None:
        self.path = str(path)
        if self.path == ":memory:":
            # A named shared-cache memory database, so every thread's connection sees the same data.
            self._uri = f"file:memsched-{uuid.uuid4().hex}?mode=memory&cache=shared"
        else:
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(
                    f"cannot create the directory of database {self.path}: {exc.strerror or exc}"
                    " (set --home/MEMSCHED_HOME or --db/MEMSCHED_DB to a writable place)"
                ) from exc
            self._uri = Path(self.path).resolve().as_uri()
        self._local = threading.local()
        self._jobs_cond = threading.Condition()
        self._all_conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        # SQLite has one writer at a time. Threads of this process queue for it here, where the one
        # that commits wakes the next at once; without it they meet in SQLite's busy handler, which
        # polls with sleeps of 1-100 ms and, under 50 concurrent turns, left the lock idle while
        # writers slept (BENCHMARKS.md, "Proxy throughput"). Other processes still meet there.
        # Re-entrant so that a nested transaction fails in SQLite, as before, and does not hang.
        self._write_lock = threading.RLock()
        try:
            self._keepalive = self._connect()  # keeps a memory database alive between threads
            self._migrate()
            self.page_size = self._init_page_size(page_size)
        except sqlite3.Error as exc:
            self.close()
            raise StoreError(open_error(self.path, exc)) from exc
        self._ckpt_conn: sqlite3.Connection | None = None
        self._closed = False
        self.checkpoint_lock = threading.Lock()
        if self.path != ":memory:":
            register_checkpoints(self)

    # -- connections -------------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self._uri, uri=True, isolation_level=None, check_same_thread=False, timeout=30
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open database {self.path}: {exc}") from exc
        conn.execute("PRAGMA busy_timeout = 30000")
        conn.execute("PRAGMA foreign_keys = ON")
        # Deleted content is overwritten with zeros, not left in free pages: deletion is physical.
        conn.execute("PRAGMA secure_delete = ON")
        if self.path != ":memory:":
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            # Checkpoints run on their own thread, not inside a turn's commit (`sqlite_checkpoint`).
            conn.execute("PRAGMA wal_autocheckpoint = 0")
        with self._conns_lock:
            self._all_conns.append(conn)
        return conn

    @property
    def db(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
        return conn

    @property
    def location(self) -> str:
        return self.path

    @contextmanager
    def transaction(self) -> Iterator[SQLiteTx]:
        """BEGIN IMMEDIATE ... COMMIT; rolls back on any exception. Not re-entrant."""
        db = self.db
        with self._write_lock:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield SQLiteTx(db)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            else:
                db.execute("COMMIT")

    def checkpoint_connection(self) -> sqlite3.Connection | None:
        """The connection the checkpoint thread uses (None once the store is closed)."""
        with self._conns_lock:
            if self._closed:
                return None
        if self._ckpt_conn is None:
            self._ckpt_conn = self._connect()
        return self._ckpt_conn

    def close(self) -> None:
        # Not while the checkpoint thread is inside a checkpoint on one of these connections.
        ckpt = getattr(self, "checkpoint_lock", None)
        if ckpt is not None:
            ckpt.acquire()
        try:
            with self._conns_lock:
                self._closed = True
                for conn in self._all_conns:
                    try:
                        conn.close()
                    except sqlite3.Error:
                        pass
                self._all_conns.clear()
        finally:
            if ckpt is not None:
                ckpt.release()
        self._local = threading.local()

    # -- schema --------------------------------------------------------------------------------------

    def _migrate(self) -> None:
        db = self.db
        db.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
        applied = {r[0] for r in db.execute("SELECT name FROM migrations")}
        known = {name for name, _ in MIGRATIONS}
        if unknown := applied - known:
            raise StoreError(
                f"{self.path} was migrated by a newer memsched ({', '.join(sorted(unknown))}); upgrade memsched"
            )
        for name, apply in MIGRATIONS:
            if name in applied:
                continue
            fk_off = name in FOREIGN_KEYS_OFF
            if fk_off:
                db.execute("PRAGMA foreign_keys = OFF")  # a no-op inside a transaction: set it before
            try:
                with self.transaction() as tx:
                    if tx.execute("SELECT 1 FROM migrations WHERE name = ?", (name,)).fetchone():
                        continue  # another process applied it while we waited for the lock
                    apply(tx.conn)
                    if fk_off and (bad := tx.execute("PRAGMA foreign_key_check").fetchall()):
                        raise StoreError(f"migration {name} broke foreign keys: {bad[:3]}")
                    tx.execute("INSERT INTO migrations VALUES (?, ?)", (name, ts(utcnow())))
            finally:
                if fk_off:
                    db.execute("PRAGMA foreign_keys = ON")

    def migrations(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT name FROM migrations ORDER BY name")]

    def _init_page_size(self, requested: int | None) -> int:
        row = self.db.execute("SELECT value FROM meta WHERE key = 'page_size'").fetchone()
        if row is not None:
            # Pages already formed keep their size; a different setting applies to new stores only.
            return int(row[0])
        size = requested or DEFAULT_PAGE_SIZE
        self.db.execute("INSERT OR IGNORE INTO meta VALUES ('page_size', ?)", (str(size),))
        return int(self.db.execute("SELECT value FROM meta WHERE key = 'page_size'").fetchone()[0])

    # -- users and sessions --------------------------------------------------------------------------

    def has_user(self, user_id: str) -> bool:
        return self.db.execute("SELECT 1 FROM users WHERE id = ?", (user_id,)).fetchone() is not None

    def users(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT id FROM users ORDER BY id")]

    def sessions(self, user_id: str) -> list[Session]:
        rows = self.db.execute(
            "SELECT s.id, s.created_at, s.next_seq FROM sessions s WHERE s.user_id = ? ORDER BY s.created_at, s.id",
            (user_id,),
        )
        return [Session(user_id=user_id, id=r[0], created_at=dt(r[1]), turn_count=r[2]) for r in rows]

    # -- turns ---------------------------------------------------------------------------------------

    def add_turns(self, turns: Sequence[Turn], skip_duplicates: bool = False) -> list[Turn]:
        with self.transaction() as tx:
            return self.insert_turns(tx, turns, skip_duplicates=skip_duplicates)

    def insert_turns(self, tx: Tx, turns: Sequence[Turn], skip_duplicates: bool = False) -> list[Turn]:
        """Insert inside an open transaction, so callers can write derived rows (jobs) atomically.

        With `skip_duplicates`, a turn whose session already holds the same speaker, text and time
        is not stored again (re-importing a file adds nothing); it is left out of the result.
        """
        tx = sqlite_tx(tx)
        for turn in turns:
            validate_turn(turn)
        stored: list[Turn] = []
        for turn in turns:
            if (
                skip_duplicates
                and tx.execute(
                    "SELECT 1 FROM turns WHERE user_id = ? AND session_id = ? AND content_hash = ?"
                    " AND role = ? AND created_at = ? LIMIT 1",
                    (turn.user_id, turn.session_id, turn.hash, turn.role, ts(turn.created_at)),
                ).fetchone()
            ):
                continue
            stored.append(turn)
            now = ts(turn.created_at)
            # The session's next seq; the user and session rows are made only when it has none yet
            # (the write transaction is exclusive: nothing comes between the look and the insert).
            # Two statements per turn of a known session and page, five for a new one.
            taken = tx.execute(
                "UPDATE sessions SET next_seq = next_seq + 1 WHERE user_id = ? AND id = ? RETURNING next_seq - 1",
                (turn.user_id, turn.session_id),
            ).fetchone()
            if taken is None:
                tx.execute("INSERT OR IGNORE INTO users (id, created_at) VALUES (?, ?)", (turn.user_id, now))
                tx.execute(
                    "INSERT INTO sessions (user_id, id, created_at, next_seq) VALUES (?, ?, ?, 1)",
                    (turn.user_id, turn.session_id, now),
                )
                taken = (0,)
            (seq,) = taken
            page_no = seq // self.page_size
            page = tx.execute(
                "SELECT id FROM pages WHERE user_id = ? AND session_id = ? AND page_no = ?",
                (turn.user_id, turn.session_id, page_no),
            ).fetchone()
            if page is None:
                page = tx.execute(
                    "INSERT INTO pages (user_id, session_id, page_no, created_at) VALUES (?, ?, ?, ?) RETURNING id",
                    (turn.user_id, turn.session_id, page_no, now),
                ).fetchone()
            (page_id,) = page
            cur = tx.execute(
                "INSERT INTO turns (user_id, session_id, seq, page_id, role, speaker, content, created_at,"
                " external_id, content_hash, meta) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    turn.user_id,
                    turn.session_id,
                    seq,
                    page_id,
                    turn.role,
                    turn.speaker,
                    turn.content,
                    now,
                    turn.external_id,
                    turn.hash,
                    json.dumps(turn.meta, ensure_ascii=False) if turn.meta else "{}",
                ),
            )
            turn.id, turn.seq, turn.page_id = cur.lastrowid, seq, page_id
            # The dates the turn mentions ("上周" -> 2024-10-15) are searchable as well as its words.
            body = index_text(searchable_text(turn))
            tx.execute(
                "INSERT INTO turns_fts (rowid, u, body) VALUES (?, ?, ?)",
                (turn.id, user_tag(turn.user_id), body),
            )
        return stored

    def get_turns(self, user_id: str, ids: Sequence[int]) -> list[Turn]:
        if not ids:
            return []
        out: list[Turn] = []
        ids = row_ids(ids)
        # `+user_id`: by primary key, the user a filter (see `turn_vectors`).
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            out.extend(
                row_to_turn(r)
                for r in self.db.execute(
                    f"SELECT {TURN_COLUMNS} FROM turns WHERE +user_id = ? AND id IN ({marks})",
                    (user_id, *chunk),
                )
            )
        out.sort(key=lambda t: t.id or 0)
        return out

    def session_turns(self, user_id: str, session_id: str, last: int | None = None) -> list[Turn]:
        if last is None:
            rows = self.db.execute(
                f"SELECT {TURN_COLUMNS} FROM turns WHERE user_id = ? AND session_id = ? ORDER BY seq",
                (user_id, session_id),
            ).fetchall()
        else:
            rows = self.db.execute(
                f"SELECT {TURN_COLUMNS} FROM turns WHERE user_id = ? AND session_id = ?"
                " ORDER BY seq DESC LIMIT ?",
                (user_id, session_id, last),
            ).fetchall()[::-1]
        return [row_to_turn(r) for r in rows]

    def recent_turns(self, user_id: str, limit: int) -> list[Turn]:
        rows = self.db.execute(
            f"SELECT {TURN_COLUMNS} FROM turns WHERE user_id = ? ORDER BY created_at DESC, id DESC LIMIT ?",
            (user_id, limit),
        ).fetchall()
        return [row_to_turn(r) for r in reversed(rows)]

    def turn_ids_between(self, user_id: str, start: datetime, end: datetime, limit: int) -> list[int]:
        rows = self.db.execute(
            "SELECT id FROM turns WHERE user_id = ? AND created_at >= ? AND created_at < ?"
            " ORDER BY created_at, id LIMIT ?",
            (user_id, ts(start), ts(end), limit),
        ).fetchall()
        return [int(r[0]) for r in rows]

    def iter_turns(self, user_id: str, after_id: int = 0) -> Iterator[Turn]:
        rows = self.db.execute(
            f"SELECT {TURN_COLUMNS} FROM turns WHERE user_id = ? AND id > ? ORDER BY created_at, id",
            (user_id, after_id),
        )
        for r in rows:
            yield row_to_turn(r)

    def turns_by_id(self, user_id: str, after_id: int, limit: int) -> list[Turn]:
        rows = self.db.execute(
            f"SELECT {TURN_COLUMNS} FROM turns WHERE user_id = ? AND id > ? ORDER BY id LIMIT ?",
            (user_id, after_id, limit),
        ).fetchall()
        return [row_to_turn(r) for r in rows]

    def turn_count(self, user_id: str) -> int:
        # Kept by triggers (migration 015): one primary-key read, not a count of the user's turns.
        row = self.db.execute("SELECT turns FROM users WHERE id = ?", (user_id,)).fetchone()
        return int(row[0]) if row else 0

    def max_turn_id(self, user_id: str) -> int:
        row = self.db.execute("SELECT max(id) FROM turns WHERE user_id = ?", (user_id,)).fetchone()
        return int(row[0] or 0)

    def neighbours(
        self, user_id: str, turn_ids: Sequence[int], radius: int = 1
    ) -> dict[int, list[tuple[int, int]]]:
        """For each turn, (id, distance) of the turns up to `radius` positions away in its session."""
        out: dict[int, list[tuple[int, int]]] = {}
        for tid in turn_ids:
            row = self.db.execute(
                "SELECT session_id, seq FROM turns WHERE user_id = ? AND id = ?", (user_id, tid)
            ).fetchone()
            if row is None:
                continue
            rows = self.db.execute(
                "SELECT id, abs(seq - ?) FROM turns WHERE user_id = ? AND session_id = ? AND seq BETWEEN ? AND ?"
                " AND id != ? ORDER BY abs(seq - ?), seq",
                (row[1], user_id, row[0], row[1] - radius, row[1] + radius, tid, row[1]),
            )
            out[tid] = [(r[0], r[1]) for r in rows]
        return out

    def delete_turns(self, user_id: str, ids: Sequence[int]) -> int:
        """Physically delete turns and everything made from them (`forget_turns`). Returns how many."""
        return len(self.forget_turns(user_id, ids).turn_ids)

    def delete_user(self, user_id: str) -> int:
        """Physically delete a user and everything stored for them. Returns the number of turns removed."""
        return len(self.forget_user(user_id).turn_ids)

    # -- pages ---------------------------------------------------------------------------------------

    def pages(self, user_id: str, session_id: str | None = None) -> list[Page]:
        sql = (
            "SELECT p.id, p.session_id, p.page_no, p.created_at, min(t.seq), max(t.seq), count(t.id)"
            " FROM pages p JOIN turns t ON t.page_id = p.id WHERE p.user_id = ?"
        )
        args: list[Any] = [user_id]
        if session_id is not None:
            sql += " AND p.session_id = ?"
            args.append(session_id)
        sql += " GROUP BY p.id ORDER BY p.created_at, p.id"
        return [
            Page(
                id=r[0],
                user_id=user_id,
                session_id=r[1],
                page_no=r[2],
                created_at=dt(r[3]),
                first_seq=r[4],
                last_seq=r[5],
                turn_count=r[6],
            )
            for r in self.db.execute(sql, args)
        ]

    def page_turns(self, user_id: str, page_id: int) -> list[Turn]:
        rows = self.db.execute(
            f"SELECT {TURN_COLUMNS} FROM turns WHERE user_id = ? AND page_id = ? ORDER BY seq",
            (user_id, page_id),
        )
        return [row_to_turn(r) for r in rows]

    # -- search --------------------------------------------------------------------------------------

    def search_bm25(self, user_id: str, query: str, limit: int = 50, after_id: int = 0) -> list[Hit]:
        rows = search_turns(self.db, user_id, query, limit, after_id)
        return [Hit(turn_id=i, score=s, rank=n + 1) for n, (i, s) in enumerate(rows)]

    # -- vectors -------------------------------------------------------------------------------------

    def vectors(self, user_id: str, model_id: str, after_id: int = 0) -> tuple[np.ndarray, np.ndarray]:
        rows = self.db.execute(
            "SELECT t.id, e.dim, e.vector FROM turns t JOIN embeddings e"
            " ON e.user_id = t.user_id AND e.model = ? AND e.content_hash = t.content_hash"
            " WHERE t.user_id = ? AND t.id > ? ORDER BY t.id",
            (model_id, user_id, after_id),
        ).fetchall()
        return join_rows(rows)

    def vector_version(self, user_id: str, model_id: str) -> tuple[int, int]:
        """(newest vector row, newest turn id) of the user: when it changes, an index is stale."""
        return self.vector_versions(user_id, [model_id])[0]

    def vector_versions(self, user_id: str, model_ids: Sequence[str]) -> list[tuple[int, int]]:
        row = self.db.execute(
            "SELECT (SELECT max(id) FROM turns WHERE user_id = ?)"
            + "".join(
                ", (SELECT max(rowid) FROM embeddings WHERE user_id = ? AND model = ?)" for _ in model_ids
            ),
            (user_id, *(x for model_id in model_ids for x in (user_id, model_id))),
        ).fetchone()
        return [(int(vector or 0), int(row[0] or 0)) for vector in row[1:]]

    def vectors_since(
        self, user_id: str, model_id: str, after_vector: int, after_turn: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Turn vectors written after vector row `after_vector`, plus those of turns after `after_turn`.

        The first catches vectors embedded late (a backfill, another process); the second catches new
        turns whose text already had a vector. Either may repeat turns the caller holds already.
        """
        return self._vectors_since(self.db, user_id, model_id, after_vector, after_turn)

    def _vectors_since(
        self, db: Any, user_id: str, model_id: str, after_vector: int, after_turn: int
    ) -> tuple[np.ndarray, np.ndarray]:
        rows = db.execute(
            "SELECT t.id, e.dim, e.vector FROM embeddings e JOIN turns t"
            " ON t.user_id = e.user_id AND t.content_hash = e.content_hash"
            " WHERE e.user_id = ? AND e.model = ? AND e.rowid > ?"
            " UNION"
            " SELECT t.id, e.dim, e.vector FROM turns t JOIN embeddings e"
            " ON e.user_id = t.user_id AND e.model = ? AND e.content_hash = t.content_hash"
            " WHERE t.user_id = ? AND t.id > ?",
            (user_id, model_id, after_vector, model_id, user_id, after_turn),
        ).fetchall()
        return join_rows(rows)

    def turns_missing_vectors(
        self, user_id: str, model_id: str, limit: int = 1000, after_id: int = 0, han_only: bool = False
    ) -> list[tuple[int, str]]:
        rows = self.db.execute(
            "SELECT t.id, t.role, t.speaker, t.content FROM turns t LEFT JOIN embeddings e"
            " ON e.user_id = t.user_id AND e.model = ? AND e.content_hash = t.content_hash"
            " WHERE t.user_id = ? AND t.id > ? AND e.content_hash IS NULL"
            + (f" AND t.content GLOB {_HAN_GLOB_SQL}" if han_only else "")
            + " ORDER BY t.id LIMIT ?",
            (model_id, user_id, after_id, limit),
        ).fetchall()
        return [(r[0], f"{r[2] or r[1]}: {r[3]}") for r in rows]

    def put_vectors(self, user_id: str, model_id: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        with self.transaction() as tx:
            tx.executemany(
                "INSERT OR REPLACE INTO embeddings (user_id, model, content_hash, dim, vector) VALUES (?, ?, ?, ?, ?)",
                [
                    (user_id, model_id, h, int(v.shape[-1]), np.asarray(v, dtype=np.float32).tobytes())
                    for h, v in items
                ],
            )
            # The embedding worker's writes keep each user's vectors packed (sqlite_vectors.py).
            self._repack(tx, user_id, model_id)

    def put_vector_batches(
        self,
        user_id: str,
        batches: Sequence[tuple[str, Sequence[tuple[str, np.ndarray]]]],
        checked: Sequence[tuple[str, int]] = (),
    ) -> None:
        batches = [(model_id, items) for model_id, items in batches if items]
        if not batches and not checked:
            return
        with self.transaction() as tx:
            if checked:
                self._set_vectors_checked_tx(tx, user_id, checked)
            # Only vectors a turn still uses: a turn forgotten since the pass read it keeps no vector.
            # The write lock (BEGIN IMMEDIATE) keeps a forget out until this commits.
            wanted = sorted({h for _, items in batches for h, _ in items})
            live: set[str] = set()
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                live.update(
                    r[0]
                    for r in tx.execute(
                        "SELECT content_hash FROM turns WHERE user_id = ? AND content_hash IN"
                        f" ({', '.join('?' * len(chunk))})",
                        (user_id, *chunk),
                    ).fetchall()
                )
            for model_id, items in batches:
                kept = [(h, v) for h, v in items if h in live]
                if kept:
                    self.put_vectors_tx(tx, user_id, model_id, kept)
                    self._repack(tx, user_id, model_id)

    def vector_count(self, user_id: str, model_id: str) -> int:
        return int(
            self.db.execute(
                "SELECT count(*) FROM embeddings WHERE user_id = ? AND model = ?", (user_id, model_id)
            ).fetchone()[0]
        )
