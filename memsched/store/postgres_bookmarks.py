"""PostgreSQL part of keyword bookmarks and cooperative paging (the SQLite twin is `sqlite_bookmarks.py`).

Same tables and lineage: `bookmark_pages`/`bookmark_turns` cascade with their bookmark, and
statement triggers (migration 003) delete the bookmarks made from a deleted turn and the vectors
nothing uses any more. The full-text index is a tsvector column ranked by BM25 (`postgres_base`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from memsched.model import Bookmark, Hit, utcnow
from memsched.store.postgres_base import (
    PgMixin,
    PgTx,
    as_vector,
    bm25_args,
    bm25_sql,
    chunks,
    dt,
    dumps,
    query_lexemes,
    sources_gone,
    ts,
    tsvector_literal,
)

_COLUMNS = (
    "id, user_id, session_id, kind, keywords, aliases, summary, importance, source, first_at, last_at,"
    " created_at, updated_at"
)


class PgBookmarksMixin(PgMixin):
    """Bookmark methods of PostgresStore. Every query is scoped by user."""

    # -- writing -------------------------------------------------------------------------------------

    def add_bookmarks(
        self, user_id: str, bookmarks: Sequence[Bookmark], *, replace_pages: bool = False
    ) -> None:
        with self.transaction() as tx:
            if replace_pages:
                pages = sorted({p for b in bookmarks for p in b.page_ids})
                if pages:
                    tx.execute(
                        "DELETE FROM bookmarks WHERE user_id = %s AND id IN"
                        " (SELECT bookmark_id FROM bookmark_pages WHERE page_id = ANY(%s))",
                        (user_id, pages),
                    )
            for b in bookmarks:
                self._insert(tx, user_id, b)

    def replace_bookmarks(self, user_id: str, old_ids: Sequence[int], new: Sequence[Bookmark]) -> None:
        with self.transaction() as tx:
            for chunk in chunks(old_ids):
                tx.execute("DELETE FROM bookmarks WHERE user_id = %s AND id = ANY(%s)", (user_id, chunk))
            for b in new:
                self._insert(tx, user_id, b)

    def update_bookmark(self, user_id: str, bookmark: Bookmark) -> None:
        if bookmark.id is None:
            raise ValueError("update_bookmark needs a stored bookmark (id is None)")
        now = utcnow()
        bookmark.updated_at = now
        fts, fts_len = tsvector_literal(bookmark.text, user_id)
        with self.transaction() as tx:
            tx.execute(
                "UPDATE bookmarks SET kind = %s, keywords = %s::jsonb, aliases = %s::jsonb, summary = %s,"
                " importance = %s, content_hash = %s, updated_at = %s, fts = %s::tsvector, fts_len = %s"
                " WHERE user_id = %s AND id = %s",
                (
                    bookmark.kind,
                    dumps(bookmark.keywords),
                    dumps(bookmark.aliases),
                    bookmark.summary,
                    bookmark.importance,
                    bookmark.hash,
                    ts(now),
                    fts,
                    fts_len,
                    user_id,
                    bookmark.id,
                ),
            )

    def delete_bookmarks(self, user_id: str, ids: Sequence[int] | None = None) -> int:
        with self.transaction() as tx:
            if ids is None:
                return int(tx.execute("DELETE FROM bookmarks WHERE user_id = %s", (user_id,)).rowcount)
            n = 0
            for chunk in chunks(ids):
                n += tx.execute(
                    "DELETE FROM bookmarks WHERE user_id = %s AND id = ANY(%s)", (user_id, chunk)
                ).rowcount
            return n

    def _insert(self, tx: PgTx, user_id: str, b: Bookmark) -> None:
        if b.user_id != user_id:
            raise ValueError(f"bookmark of user {b.user_id!r} stored under {user_id!r}")
        if sources_gone(tx, user_id, b.turn_ids):
            return  # made while one of its turns was being forgotten: it must not outlive it
        fts, fts_len = tsvector_literal(b.text, user_id)
        (bid,) = tx.execute(
            f"INSERT INTO bookmarks ({_COLUMNS.replace('id, ', '', 1)}, content_hash, fts, fts_len)"
            " VALUES (%s, %s, %s, %s::jsonb, %s::jsonb, %s, %s, %s, %s, %s, %s, %s, %s, %s::tsvector, %s)"
            " RETURNING id",
            (
                user_id,
                b.session_id,
                b.kind,
                dumps(b.keywords),
                dumps(b.aliases),
                b.summary,
                b.importance,
                b.source,
                ts(b.first_at),
                ts(b.last_at),
                ts(b.created_at),
                ts(b.updated_at),
                b.hash,
                fts,
                fts_len,
            ),
        ).fetchone()
        b.id = int(bid)
        # Only the user's own pages and turns: lineage never points across users.
        if b.page_ids:
            tx.execute(
                "INSERT INTO bookmark_pages SELECT %s, id FROM pages WHERE user_id = %s AND id = ANY(%s)"
                " ON CONFLICT DO NOTHING",
                (b.id, user_id, [int(p) for p in b.page_ids]),
            )
        if b.turn_ids:
            tx.execute(
                "INSERT INTO bookmark_turns SELECT %s, t FROM unnest(%s::bigint[]) t ON CONFLICT DO NOTHING",
                (b.id, [int(t) for t in b.turn_ids]),
            )

    # -- reading -------------------------------------------------------------------------------------

    def bookmarks(
        self, user_id: str, *, ids: Sequence[int] | None = None, page_id: int | None = None
    ) -> list[Bookmark]:
        sql = f"SELECT {_COLUMNS} FROM bookmarks WHERE user_id = %s"
        args: list[Any] = [user_id]
        if ids is not None:
            if not ids:
                return []
            sql += " AND id = ANY(%s)"
            args.append([int(i) for i in ids])
        if page_id is not None:
            sql += " AND id IN (SELECT bookmark_id FROM bookmark_pages WHERE page_id = %s)"
            args.append(page_id)
        return self._hydrate(self._all(sql + " ORDER BY first_at, id", args))

    def _hydrate(self, rows: Sequence[tuple[Any, ...]]) -> list[Bookmark]:
        if not rows:
            return []
        ids = [r[0] for r in rows]
        pages: dict[int, list[int]] = {i: [] for i in ids}
        turns: dict[int, list[int]] = {i: [] for i in ids}
        for chunk in chunks(ids):
            for bid, pid in self._all(
                "SELECT bookmark_id, page_id FROM bookmark_pages WHERE bookmark_id = ANY(%s) ORDER BY page_id",
                (chunk,),
            ):
                pages[bid].append(pid)
            for bid, tid in self._all(
                "SELECT bookmark_id, turn_id FROM bookmark_turns WHERE bookmark_id = ANY(%s) ORDER BY turn_id",
                (chunk,),
            ):
                turns[bid].append(tid)
        return [
            Bookmark(
                id=r[0],
                user_id=r[1],
                session_id=r[2],
                kind=r[3],
                keywords=list(r[4]),
                aliases=dict(r[5]),
                summary=r[6],
                importance=r[7],
                source=r[8],
                first_at=dt(r[9]),
                last_at=dt(r[10]),
                created_at=dt(r[11]),
                updated_at=dt(r[12]),
                page_ids=pages[r[0]],
                turn_ids=turns[r[0]],
            )
            for r in rows
        ]

    def iter_bookmarks(self, user_id: str) -> Iterator[Bookmark]:
        yield from self.bookmarks(user_id)

    def bookmark_count(self, user_id: str) -> int:
        row = self._one("SELECT count(*) FROM bookmarks WHERE user_id = %s", (user_id,))
        return int(row[0]) if row else 0

    def bookmarked_page_ids(self, user_id: str) -> set[int]:
        return {
            r[0]
            for r in self._all(
                "SELECT DISTINCT bp.page_id FROM bookmark_pages bp JOIN bookmarks b ON b.id = bp.bookmark_id"
                " WHERE b.user_id = %s",
                (user_id,),
            )
        }

    def bookmark_signature(self, user_id: str) -> tuple[int, float, int]:
        row = self._one(
            "SELECT count(*), coalesce(max(updated_at), 0), coalesce(max(id), 0) FROM bookmarks WHERE user_id = %s",
            (user_id,),
        )
        assert row is not None
        return int(row[0]), float(row[1]), int(row[2])

    # -- search --------------------------------------------------------------------------------------

    def search_bookmarks_bm25(self, user_id: str, query: str, limit: int = 20) -> list[Hit]:
        lexes = query_lexemes(query)
        if not lexes:
            return []
        rows = self._all(
            bm25_sql(
                "bookmarks", "SELECT count(*), coalesce(sum(fts_len), 0) FROM bookmarks WHERE user_id = %(u)s"
            ),
            bm25_args(user_id, lexes, limit),
        )
        return [Hit(turn_id=int(r[0]), score=float(r[1]), rank=i + 1) for i, r in enumerate(rows)]

    # -- vectors -------------------------------------------------------------------------------------

    def bookmark_vectors(self, user_id: str, model_id: str) -> tuple[np.ndarray, np.ndarray]:
        rows = self._all(
            "SELECT b.id, e.vector FROM bookmarks b JOIN embeddings e"
            " ON e.user_id = b.user_id AND e.model = %s AND e.content_hash = b.content_hash"
            " WHERE b.user_id = %s ORDER BY b.id",
            (model_id, user_id),
        )
        if not rows:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        return ids, np.stack([as_vector(r[1]) for r in rows])

    def bookmarks_missing_vectors(self, user_id: str, model_id: str) -> list[Bookmark]:
        rows = self._all(
            f"SELECT {', '.join('b.' + c.strip() for c in _COLUMNS.split(','))} FROM bookmarks b"
            " LEFT JOIN embeddings e ON e.user_id = b.user_id AND e.model = %s AND e.content_hash = b.content_hash"
            " WHERE b.user_id = %s AND e.content_hash IS NULL ORDER BY b.id",
            (model_id, user_id),
        )
        return self._hydrate(rows)

    # -- page use (LFU / recency) ----------------------------------------------------------------------

    def touch_pages(self, user_id: str, page_ids: Sequence[int], at: datetime | None = None) -> None:
        if not page_ids:
            return
        when = ts(at or utcnow())
        with self.transaction() as tx:
            tx.execute(
                "INSERT INTO page_use (page_id, user_id, uses, last_used)"
                " SELECT id, user_id, 1, %s FROM pages WHERE user_id = %s AND id = ANY(%s) ORDER BY id"
                " ON CONFLICT (page_id) DO UPDATE SET uses = page_use.uses + 1,"
                " last_used = greatest(page_use.last_used, excluded.last_used)",
                (when, user_id, sorted({int(p) for p in page_ids})),
            )

    def page_use(self, user_id: str) -> dict[int, tuple[int, datetime]]:
        return {
            r[0]: (int(r[1]), dt(r[2]))
            for r in self._all("SELECT page_id, uses, last_used FROM page_use WHERE user_id = %s", (user_id,))
        }
