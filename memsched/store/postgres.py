"""The shared store: PostgreSQL with pgvector, for many API and worker processes on one database.

Selected by `MEMSCHED_DATABASE_URL=postgresql://…` (see `memsched.store.open_store`). psycopg 3 with
a connection pool; every query scoped by user; vectors in a pgvector column with one HNSW index per
model; full-text search over the same segmented terms as SQLite, ranked by BM25 with per-user
statistics (`postgres_base`); jobs claimed with `FOR UPDATE SKIP LOCKED` and announced with
`NOTIFY` (`postgres_jobs`). docs/deploy.md says how to run it.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import numpy as np

from memsched.config import DEFAULT_PAGE_SIZE, DEFAULT_PG_LOCK_CONNECTIONS
from memsched.errors import StoreError
from memsched.model import Hit, Page, Session, Turn, utcnow
from memsched.store.base import Tx, row_ids, validate_turn
from memsched.store.postgres_base import (
    TURN_COLUMNS,
    PgTx,
    as_vector,
    bm25_args,
    bm25_sql,
    chunks,
    dt,
    dumps,
    hnsw_index_name,
    pg_tx,
    query_lexemes,
    row_to_turn,
    ts,
    tsvector_literal,
)
from memsched.store.postgres_bookmarks import PgBookmarksMixin
from memsched.store.postgres_companion import PgCompanionMixin
from memsched.store.postgres_export import PgExportMixin
from memsched.store.postgres_forget import PgForgetMixin
from memsched.store.postgres_jobs import PgJobsMixin
from memsched.store.postgres_keys import PgKeysMixin
from memsched.store.postgres_locks import PgLocksMixin
from memsched.store.postgres_migrations import MIGRATIONS
from memsched.store.postgres_profile import PgProfileMixin
from memsched.store.postgres_state import PgStateMixin
from memsched.store.postgres_vectors import PgVectorSearchMixin
from memsched.store.postgres_vocab import PgVocabMixin
from memsched.text.gloss import HAN_REGEX
from memsched.text.timeexpr import searchable_text

log = logging.getLogger("memsched.store")

DEFAULT_POOL_SIZE = 10
_MIGRATION_LOCK = 0x6D656D73  # "mems": one advisory lock id for schema changes
_HNSW_MAX_DIM = 2000  # pgvector's limit for an HNSW index on `vector`


def redact(url: str) -> str:
    """The URL without its password."""
    return re.sub(r"//([^:/@]*):[^@]*@", r"//\1:***@", url)


class PostgresStore(
    PgJobsMixin,
    PgLocksMixin,
    PgBookmarksMixin,
    PgStateMixin,
    PgForgetMixin,
    PgKeysMixin,
    PgProfileMixin,
    PgCompanionMixin,
    PgVocabMixin,
    PgVectorSearchMixin,
    PgExportMixin,
):
    """A `Store` on PostgreSQL (>= 13) with the pgvector extension. Thread-safe (a pool of connections)."""

    def __init__(
        self,
        url: str,
        page_size: int | None = None,
        *,
        pool_size: int | None = None,
        lock_connections: int | None = None,
    ) -> None:
        """`pool_size`: connections for queries; `lock_connections`: connections pinned by session
        locks, one per session in flight (`postgres_locks`). Both are per process."""
        import psycopg
        from psycopg_pool import ConnectionPool

        self.url = url
        self._local = threading.local()
        self._hnsw: set[tuple[str, int]] = set()
        try:
            with psycopg.connect(url, autocommit=True) as conn:
                self._migrate(conn)
        except psycopg.OperationalError as exc:
            raise StoreError(f"cannot open database {redact(url)}: {exc}") from exc
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size or DEFAULT_POOL_SIZE,
            kwargs={"autocommit": True},
            configure=_configure,
            open=True,
            name="memsched",
        )
        # Opened on demand: a process that takes no session lock (a worker) opens none.
        self._lock_pool_size = lock_connections or DEFAULT_PG_LOCK_CONNECTIONS
        self._lock_pool = ConnectionPool(
            url,
            min_size=0,
            max_size=self._lock_pool_size,
            kwargs={"autocommit": True},
            open=True,
            name="memsched-locks",
        )
        self._lock_owners = {}
        self._lock_owners_mutex = threading.Lock()
        self._listener: Any = None
        self._jobs_cond = threading.Condition()
        self.page_size = self._init_page_size(page_size)

    # -- connections -------------------------------------------------------------------------------

    @property
    def location(self) -> str:
        return redact(self.url)

    @contextmanager
    def _read(self) -> Iterator[Any]:
        """The connection of this thread's open transaction (so reads see its writes), else a pooled one."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            yield conn
            return
        with self._pool.connection() as conn:
            yield conn

    def _all(self, sql: Any, args: Any = None) -> list[tuple[Any, ...]]:
        with self._read() as conn:
            return list(conn.execute(sql, args).fetchall())

    def _one(self, sql: Any, args: Any = None) -> tuple[Any, ...] | None:
        with self._read() as conn:
            row = conn.execute(sql, args).fetchone()
            return None if row is None else tuple(row)

    @contextmanager
    def transaction(self) -> Iterator[PgTx]:
        """BEGIN ... COMMIT on one pooled connection; rolls back on any exception. Inside an open
        transaction of this thread it nests as a savepoint."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            with conn.transaction():
                yield PgTx(conn)
            return
        with self._pool.connection() as conn:
            self._local.conn = conn
            try:
                with conn.transaction():
                    yield PgTx(conn)
            finally:
                self._local.conn = None

    def close(self) -> None:
        self._stop_listener()
        self._lock_pool.close()  # closing a pinned connection releases its lock
        self._pool.close()

    # -- schema --------------------------------------------------------------------------------------

    def _migrate(self, conn: Any) -> None:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            conn.execute(
                "CREATE TABLE IF NOT EXISTS migrations (name text PRIMARY KEY, applied_at double precision NOT NULL)"
            )
            applied = {r[0] for r in conn.execute("SELECT name FROM migrations")}
            known = {name for name, _ in MIGRATIONS}
            if unknown := applied - known:
                raise StoreError(
                    f"{redact(self.url)} was migrated by a newer memsched ({', '.join(sorted(unknown))});"
                    " upgrade memsched"
                )
            for name, script in MIGRATIONS:
                if name in applied:
                    continue
                with conn.transaction():
                    conn.execute(script)
                    conn.execute("INSERT INTO migrations VALUES (%s, %s)", (name, ts(utcnow())))

    def migrations(self) -> list[str]:
        return [r[0] for r in self._all("SELECT name FROM migrations ORDER BY name")]

    def _init_page_size(self, requested: int | None) -> int:
        size = requested or DEFAULT_PAGE_SIZE
        with self.transaction() as tx:
            tx.execute("INSERT INTO meta VALUES ('page_size', %s) ON CONFLICT DO NOTHING", (str(size),))
            row = tx.execute("SELECT value FROM meta WHERE key = 'page_size'").fetchone()
        return int(row[0])

    # -- users and sessions --------------------------------------------------------------------------

    def has_user(self, user_id: str) -> bool:
        return self._one("SELECT 1 FROM users WHERE id = %s", (user_id,)) is not None

    def users(self) -> list[str]:
        return [r[0] for r in self._all("SELECT id FROM users ORDER BY id")]

    def sessions(self, user_id: str) -> list[Session]:
        rows = self._all(
            "SELECT id, created_at, next_seq FROM sessions WHERE user_id = %s ORDER BY created_at, id",
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
        tx = pg_tx(tx)
        for turn in turns:
            validate_turn(turn)
        stored: list[Turn] = []
        stats: dict[str, list[int]] = {}
        for turn in turns:
            now = ts(turn.created_at)
            if (
                skip_duplicates
                and tx.execute(
                    "SELECT 1 FROM turns WHERE user_id = %s AND session_id = %s AND content_hash = %s"
                    " AND role = %s AND created_at = %s LIMIT 1",
                    (turn.user_id, turn.session_id, turn.hash, turn.role, now),
                ).fetchone()
            ):
                continue
            stored.append(turn)
            tx.execute(
                "INSERT INTO users (id, created_at) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                (turn.user_id, now),
            )
            tx.execute(
                "INSERT INTO sessions (user_id, id, created_at) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                (turn.user_id, turn.session_id, now),
            )
            (seq,) = tx.execute(
                "UPDATE sessions SET next_seq = next_seq + 1 WHERE user_id = %s AND id = %s RETURNING next_seq - 1",
                (turn.user_id, turn.session_id),
            ).fetchone()
            page_no = seq // self.page_size
            tx.execute(
                "INSERT INTO pages (user_id, session_id, page_no, created_at) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT DO NOTHING",
                (turn.user_id, turn.session_id, page_no, now),
            )
            (page_id,) = tx.execute(
                "SELECT id FROM pages WHERE user_id = %s AND session_id = %s AND page_no = %s",
                (turn.user_id, turn.session_id, page_no),
            ).fetchone()
            # The dates the turn mentions ("上周" -> 2024-10-15) are searchable as well as its words.
            fts, fts_len = tsvector_literal(searchable_text(turn), turn.user_id)
            (tid,) = tx.execute(
                "INSERT INTO turns (user_id, session_id, seq, page_id, role, speaker, content, created_at,"
                " external_id, content_hash, meta, fts, fts_len)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s::tsvector, %s) RETURNING id",
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
                    dumps(turn.meta or {}),
                    fts,
                    fts_len,
                ),
            ).fetchone()
            turn.id, turn.seq, turn.page_id = int(tid), seq, int(page_id)
            s = stats.setdefault(turn.user_id, [0, 0])
            s[0] += 1
            s[1] += fts_len
        for user_id in sorted(stats):
            tx.execute(
                "UPDATE users SET fts_docs = fts_docs + %s, fts_len = fts_len + %s WHERE id = %s",
                (stats[user_id][0], stats[user_id][1], user_id),
            )
        return stored

    def get_turns(self, user_id: str, ids: Sequence[int]) -> list[Turn]:
        out: list[Turn] = []
        for chunk in chunks(row_ids(ids)):
            out.extend(
                row_to_turn(r)
                for r in self._all(
                    f"SELECT {TURN_COLUMNS} FROM turns WHERE user_id = %s AND id = ANY(%s)", (user_id, chunk)
                )
            )
        out.sort(key=lambda t: t.id or 0)
        return out

    def session_turns(self, user_id: str, session_id: str, last: int | None = None) -> list[Turn]:
        if last is None:
            rows = self._all(
                f"SELECT {TURN_COLUMNS} FROM turns WHERE user_id = %s AND session_id = %s ORDER BY seq",
                (user_id, session_id),
            )
        else:
            rows = self._all(
                f"SELECT {TURN_COLUMNS} FROM turns WHERE user_id = %s AND session_id = %s"
                " ORDER BY seq DESC LIMIT %s",
                (user_id, session_id, last),
            )[::-1]
        return [row_to_turn(r) for r in rows]

    def session_turns_after(self, user_id: str, session_id: str, after_seq: int) -> list[Turn]:
        rows = self._all(
            f"SELECT {TURN_COLUMNS} FROM turns WHERE user_id = %s AND session_id = %s AND seq > %s ORDER BY seq",
            (user_id, session_id, after_seq),
        )
        return [row_to_turn(r) for r in rows]

    def session_turns_between(
        self, user_id: str, session_id: str, first_seq: int, last_seq: int
    ) -> list[Turn]:
        rows = self._all(
            f"SELECT {TURN_COLUMNS} FROM turns WHERE user_id = %s AND session_id = %s"
            " AND seq BETWEEN %s AND %s ORDER BY seq",
            (user_id, session_id, first_seq, last_seq),
        )
        return [row_to_turn(r) for r in rows]

    def recent_turns(self, user_id: str, limit: int) -> list[Turn]:
        rows = self._all(
            f"SELECT {TURN_COLUMNS} FROM turns WHERE user_id = %s ORDER BY created_at DESC, id DESC LIMIT %s",
            (user_id, limit),
        )
        return [row_to_turn(r) for r in reversed(rows)]

    def turn_ids_between(self, user_id: str, start: datetime, end: datetime, limit: int) -> list[int]:
        rows = self._all(
            "SELECT id FROM turns WHERE user_id = %s AND created_at >= %s AND created_at < %s"
            " ORDER BY created_at, id LIMIT %s",
            (user_id, ts(start), ts(end), limit),
        )
        return [int(r[0]) for r in rows]

    def iter_turns(self, user_id: str, after_id: int = 0) -> Iterator[Turn]:
        # Keyset pages, so a long history is never held in memory at once.
        last: tuple[float, int] = (float("-inf"), 0)
        while True:
            rows = self._all(
                f"SELECT {TURN_COLUMNS} FROM turns WHERE user_id = %s AND id > %s AND (created_at, id) > (%s, %s)"
                " ORDER BY created_at, id LIMIT 1000",
                (user_id, after_id, last[0], last[1]),
            )
            for r in rows:
                yield row_to_turn(r)
            if len(rows) < 1000:
                return
            last = (rows[-1][8], rows[-1][0])

    def turns_by_id(self, user_id: str, after_id: int, limit: int) -> list[Turn]:
        rows = self._all(
            f"SELECT {TURN_COLUMNS} FROM turns WHERE user_id = %s AND id > %s ORDER BY id LIMIT %s",
            (user_id, after_id, limit),
        )
        return [row_to_turn(r) for r in rows]

    def turn_count(self, user_id: str) -> int:
        row = self._one("SELECT count(*) FROM turns WHERE user_id = %s", (user_id,))
        return int(row[0]) if row else 0

    def max_turn_id(self, user_id: str) -> int:
        row = self._one("SELECT max(id) FROM turns WHERE user_id = %s", (user_id,))
        return int(row[0] or 0) if row else 0

    def neighbours(
        self, user_id: str, turn_ids: Sequence[int], radius: int = 1
    ) -> dict[int, list[tuple[int, int]]]:
        out: dict[int, list[tuple[int, int]]] = {}
        if not turn_ids:
            return out
        rows = self._all(
            "SELECT c.id, n.id, abs(n.seq - c.seq) FROM turns c JOIN turns n"
            " ON n.user_id = c.user_id AND n.session_id = c.session_id"
            " AND n.seq BETWEEN c.seq - %s AND c.seq + %s AND n.id != c.id"
            " WHERE c.user_id = %s AND c.id = ANY(%s) ORDER BY c.id, abs(n.seq - c.seq), n.seq",
            (radius, radius, user_id, [int(t) for t in turn_ids]),
        )
        found = {
            r[0]
            for r in self._all(
                "SELECT id FROM turns WHERE user_id = %s AND id = ANY(%s)",
                (user_id, [int(t) for t in turn_ids]),
            )
        }
        for tid in turn_ids:
            if tid in found:
                out[tid] = []
        for cid, nid, dist in rows:
            out[cid].append((nid, dist))
        return out

    def turn_meta(self, user_id: str, turn_ids: Sequence[int]) -> dict[int, tuple[int, str, int, str]]:
        out: dict[int, tuple[int, str, int, str]] = {}
        for chunk in chunks(turn_ids):
            for tid, pid, sid, seq, label in self._all(
                "SELECT id, page_id, session_id, seq, coalesce(speaker, role) FROM turns"
                " WHERE user_id = %s AND id = ANY(%s)",
                (user_id, chunk),
            ):
                out[tid] = (pid, sid, seq, label)
        return out

    def turn_meta_update(self, tx: Tx, user_id: str, turn_id: int, meta: dict[str, Any]) -> None:
        tx = pg_tx(tx)
        tx.execute(
            "UPDATE turns SET meta = %s::jsonb WHERE user_id = %s AND id = %s",
            (dumps(meta or {}), user_id, turn_id),
        )

    def speakers(self, user_id: str) -> list[str]:
        # A skip scan of the (user_id, speaker) index: one seek per speaker, not a scan of the turns.
        sql = """WITH RECURSIVE s(name) AS (
    SELECT (SELECT min(speaker) FROM turns WHERE user_id = %(u)s AND speaker IS NOT NULL)
    UNION ALL
    SELECT (SELECT min(speaker) FROM turns WHERE user_id = %(u)s AND speaker > s.name) FROM s WHERE s.name IS NOT NULL
) SELECT name FROM s WHERE name IS NOT NULL"""
        return [r[0] for r in self._all(sql, {"u": user_id})]

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
            " FROM pages p JOIN turns t ON t.page_id = p.id WHERE p.user_id = %s"
        )
        args: list[Any] = [user_id]
        if session_id is not None:
            sql += " AND p.session_id = %s"
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
            for r in self._all(sql, args)
        ]

    def page_turns(self, user_id: str, page_id: int) -> list[Turn]:
        rows = self._all(
            f"SELECT {TURN_COLUMNS} FROM turns WHERE user_id = %s AND page_id = %s ORDER BY seq",
            (user_id, page_id),
        )
        return [row_to_turn(r) for r in rows]

    def page_turn_ids(self, user_id: str, page_ids: Sequence[int]) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {p: [] for p in page_ids}
        for chunk in chunks(page_ids):
            for tid, pid in self._all(
                "SELECT id, page_id FROM turns WHERE user_id = %s AND page_id = ANY(%s) ORDER BY page_id, seq",
                (user_id, chunk),
            ):
                out[pid].append(tid)
        return out

    def turn_pages(self, user_id: str) -> dict[int, int]:
        return {r[0]: r[1] for r in self._all("SELECT id, page_id FROM turns WHERE user_id = %s", (user_id,))}

    # -- search --------------------------------------------------------------------------------------

    def search_bm25(self, user_id: str, query: str, limit: int = 50, after_id: int = 0) -> list[Hit]:
        lexes = query_lexemes(query)
        if not lexes:
            return []
        rows = self._all(
            bm25_sql("turns", "SELECT fts_docs, fts_len FROM users WHERE id = %(u)s"),
            bm25_args(user_id, lexes, limit, after_id),
        )
        return [Hit(turn_id=int(r[0]), score=float(r[1]), rank=i + 1) for i, r in enumerate(rows)]

    # -- vectors -------------------------------------------------------------------------------------

    def vectors(self, user_id: str, model_id: str, after_id: int = 0) -> tuple[np.ndarray, np.ndarray]:
        rows = self._all(
            "SELECT t.id, e.vector FROM turns t JOIN embeddings e"
            " ON e.user_id = t.user_id AND e.model = %s AND e.content_hash = t.content_hash"
            " WHERE t.user_id = %s AND t.id > %s ORDER BY t.id",
            (model_id, user_id, after_id),
        )
        return _matrix(rows)

    def vector_version(self, user_id: str, model_id: str) -> tuple[int, int]:
        return self.vector_versions(user_id, [model_id])[0]

    def vector_versions(self, user_id: str, model_ids: Sequence[str]) -> list[tuple[int, int]]:
        row = self._one(
            "SELECT (SELECT max(id) FROM turns WHERE user_id = %s)"
            + "".join(
                ", (SELECT max(id) FROM embeddings WHERE user_id = %s AND model = %s)" for _ in model_ids
            ),
            (user_id, *(x for model_id in model_ids for x in (user_id, model_id))),
        )
        assert row is not None
        return [(int(vector or 0), int(row[0] or 0)) for vector in row[1:]]

    def vectors_checked(self, user_id: str, model_id: str) -> int:
        """Always 0: concurrent writers can commit a lower turn id after a higher one, so a recorded
        watermark could skip a turn that became visible later (`set_vectors_checked`)."""
        return 0

    def set_vectors_checked(self, user_id: str, model_id: str, turn_id: int) -> None:
        return None

    def vectors_since(
        self, user_id: str, model_id: str, after_vector: int, after_turn: int
    ) -> tuple[np.ndarray, np.ndarray]:
        rows = self._all(
            "SELECT t.id, e.vector FROM embeddings e JOIN turns t"
            " ON t.user_id = e.user_id AND t.content_hash = e.content_hash"
            " WHERE e.user_id = %s AND e.model = %s AND e.id > %s"
            " UNION"
            " SELECT t.id, e.vector FROM turns t JOIN embeddings e"
            " ON e.user_id = t.user_id AND e.model = %s AND e.content_hash = t.content_hash"
            " WHERE t.user_id = %s AND t.id > %s",
            (user_id, model_id, after_vector, model_id, user_id, after_turn),
        )
        return _matrix(rows)

    def turns_missing_vectors(
        self, user_id: str, model_id: str, limit: int = 1000, after_id: int = 0, han_only: bool = False
    ) -> list[tuple[int, str]]:
        rows = self._all(
            "SELECT t.id, t.role, t.speaker, t.content FROM turns t LEFT JOIN embeddings e"
            " ON e.user_id = t.user_id AND e.model = %s AND e.content_hash = t.content_hash"
            " WHERE t.user_id = %s AND t.id > %s AND e.content_hash IS NULL"
            + (" AND t.content ~ %s" if han_only else "")
            + " ORDER BY t.id LIMIT %s",
            (model_id, user_id, after_id, *([HAN_REGEX] if han_only else []), limit),
        )
        return [(r[0], f"{r[2] or r[1]}: {r[3]}") for r in rows]

    def put_vectors(self, user_id: str, model_id: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        if not items:
            return
        self._ensure_vector_index(model_id, int(np.asarray(items[0][1]).shape[-1]))
        with self.transaction() as tx:
            self.put_vectors_tx(tx, user_id, model_id, items)

    def put_vector_batches(
        self,
        user_id: str,
        batches: Sequence[tuple[str, Sequence[tuple[str, np.ndarray]]]],
        checked: Sequence[tuple[str, int]] = (),
    ) -> None:
        # `checked` is not kept (`set_vectors_checked`): a watermark alone needs no transaction.
        batches = [(model_id, items) for model_id, items in batches if items]
        if not batches:
            return
        for model_id, items in batches:
            self._ensure_vector_index(model_id, int(np.asarray(items[0][1]).shape[-1]))
        with self.transaction() as tx:
            # Only vectors a turn still uses: a turn forgotten since the pass read it keeps no vector.
            # FOR SHARE holds those turns until this commits (a forget's DELETE waits, and its
            # cleanup of vectors then sees these); a turn a forget deleted first is not returned.
            live = {
                r[0]
                for r in tx.execute(
                    "SELECT content_hash FROM turns WHERE user_id = %s AND content_hash = ANY(%s) FOR SHARE",
                    (user_id, sorted({h for _, items in batches for h, _ in items})),
                ).fetchall()
            }
            for model_id, items in batches:
                kept = [(h, v) for h, v in items if h in live]
                if kept:
                    self.put_vectors_tx(tx, user_id, model_id, kept)

    def put_vectors_tx(
        self, tx: Tx, user_id: str, model_id: str, items: Sequence[tuple[str, np.ndarray]]
    ) -> None:
        """`put_vectors` inside the caller's transaction, so a turn and its vectors commit together."""
        tx = pg_tx(tx)
        # A rewritten vector gets a new id, as SQLite's INSERT OR REPLACE gives it a new rowid:
        # `vector_version` must move so in-memory indexes pick it up.
        tx.executemany(
            "INSERT INTO embeddings (user_id, model, content_hash, dim, vector) VALUES (%s, %s, %s, %s, %s)"
            " ON CONFLICT (user_id, model, content_hash) DO UPDATE SET dim = excluded.dim,"
            " vector = excluded.vector, id = DEFAULT",
            [
                (user_id, model_id, h, int(v.shape[-1]), np.asarray(v, dtype=np.float32).reshape(-1))
                for h, v in items
            ],
        )

    def vector_count(self, user_id: str, model_id: str) -> int:
        row = self._one(
            "SELECT count(*) FROM embeddings WHERE user_id = %s AND model = %s", (user_id, model_id)
        )
        return int(row[0]) if row else 0

    def turn_vectors(self, user_id: str, model_id: str, turn_ids: Sequence[int]) -> dict[int, np.ndarray]:
        out: dict[int, np.ndarray] = {}
        for chunk in chunks(turn_ids):
            for tid, vec in self._all(
                "SELECT t.id, e.vector FROM turns t JOIN embeddings e ON e.user_id = t.user_id AND e.model = %s"
                " AND e.content_hash = t.content_hash WHERE t.user_id = %s AND t.id = ANY(%s)",
                (model_id, user_id, chunk),
            ):
                out[tid] = as_vector(vec)
        return out

    def _ensure_vector_index(self, model_id: str, dim: int, build_memory: str | None = None) -> None:
        """One HNSW index (cosine) per (model, width), made when the model's first vectors arrive.
        `build_memory`: `maintenance_work_mem` for the build (a bulk load's, `store.transfer`)."""
        key = (model_id, dim)
        if key in self._hnsw or dim > _HNSW_MAX_DIM or getattr(self._local, "conn", None) is not None:
            return
        from psycopg import errors, sql

        name = hnsw_index_name(model_id, dim)
        try:
            with self._pool.connection() as conn, conn.transaction():
                conn.execute("SET LOCAL lock_timeout = '5s'")
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK + 1,))
                if build_memory:
                    conn.execute(
                        sql.SQL("SET LOCAL maintenance_work_mem = {}").format(sql.Literal(build_memory))
                    )
                conn.execute(
                    sql.SQL(
                        "CREATE INDEX IF NOT EXISTS {} ON embeddings USING hnsw ((vector::vector({})) vector_cosine_ops)"
                        " WHERE model = {} AND dim = {}"
                    ).format(sql.Identifier(name), sql.Literal(dim), sql.Literal(model_id), sql.Literal(dim))
                )
        except errors.LockNotAvailable:
            log.info("vector index for %s not made yet (table busy); will try again", model_id)
            return
        self._hnsw.add(key)


def _configure(conn: Any) -> None:
    from pgvector.psycopg import register_vector

    register_vector(conn)


def _matrix(rows: list[tuple[Any, ...]]) -> tuple[np.ndarray, np.ndarray]:
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    matrix = np.stack([as_vector(r[1]) for r in rows])
    return ids, matrix
