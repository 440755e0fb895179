"""What every PostgreSQL mixin shares: the unit of work, row helpers, and full-text search.

Full-text search runs over the same terms as SQLite's FTS5 index (`memsched.text.segment.terms`:
jieba for CJK, stop words dropped), split and stemmed the way FTS5's `porter unicode61` tokenizer
does it, and stored as a tsvector built here (lexemes given verbatim, with positions): no Postgres
parser or dictionary is involved, so the server's locale cannot change what is indexed. Ranking is
BM25 (k1 = 1.2, b = 0.75, FTS5's formula) with per-user statistics, computed in SQL from the
lexemes' positions: term frequency from `unnest(tsvector)` over each lexeme's newest matches (at
most `BM25_CANDIDATES_PER_TERM`), document frequency counted over all of them (`bm25_sql`).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import unicodedata
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from memsched.model import Turn
from memsched.store.base import BM25_CANDIDATES_PER_TERM, Tx
from memsched.text.segment import terms

if TYPE_CHECKING:
    import psycopg

TURN_COLUMNS = "id, user_id, session_id, seq, page_id, role, speaker, content, created_at, external_id, meta"

# BM25 as FTS5 computes it.
BM25_K1 = 1.2
BM25_B = 0.75


class PgTx(Tx):
    """A PostgreSQL unit of work: one pooled connection inside BEGIN ... COMMIT."""

    __slots__ = ("conn",)

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    def execute(self, sql: Any, args: Any = None) -> Any:
        """A cursor (typed Any, as sqlite3's rows are: callers unpack rows they know exist)."""
        return self.conn.execute(sql, args)

    def executemany(self, sql: Any, rows: Sequence[Any]) -> None:
        if rows:
            with self.conn.cursor() as cur:
                cur.executemany(sql, rows)


def pg_tx(tx: Tx) -> PgTx:
    """The PostgreSQL unit of work behind `tx`; a `Tx` of another store is a programming error."""
    if not isinstance(tx, PgTx):
        raise TypeError(f"a {type(tx).__name__} was passed to PostgresStore; use its own transaction()")
    return tx


class PgMixin:
    """The parts of PostgresStore every feature mixin may use."""

    if TYPE_CHECKING:  # provided by PostgresStore
        url: str
        _local: threading.local

        def transaction(self) -> AbstractContextManager[PgTx]: ...
        def _read(self) -> AbstractContextManager[psycopg.Connection[Any]]: ...
        def _all(self, sql: Any, args: Any = None) -> list[tuple[Any, ...]]: ...
        def _one(self, sql: Any, args: Any = None) -> tuple[Any, ...] | None: ...


def ts(value: datetime) -> float:
    return value.timestamp()


def dt(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)


def row_to_turn(row: Sequence[Any]) -> Turn:
    (tid, user_id, session_id, seq, page_id, role, speaker, content, created_at, external_id, meta) = row
    return Turn.stored(
        tid,
        user_id,
        session_id,
        seq,
        page_id,
        role,
        speaker,
        content,
        datetime.fromtimestamp(created_at, UTC),
        external_id,
        dict(meta) if meta else {},
    )


def as_vector(value: Any) -> np.ndarray:
    """A pgvector value as a float32 array (the adapter returns `pgvector.Vector`)."""
    to_numpy = getattr(value, "to_numpy", None)
    return np.asarray(to_numpy() if to_numpy is not None else value, dtype=np.float32)


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


# -- full-text search ------------------------------------------------------------------------------------

_ALNUM = re.compile(r"[^\W_]+")
_ASCII_WORD = re.compile(r"[a-z]+")
_MAX_POSITION = 16383  # tsvector positions stop here
_MAX_LEXEME_BYTES = 2046


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import snowballstemmer

    return snowballstemmer.stemmer("porter")


def _fold(token: str) -> str:
    # unicode61 remove_diacritics: "café" and "cafe" are one term.
    decomposed = unicodedata.normalize("NFKD", token)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


@lru_cache(maxsize=50_000)
def _lexemes_of_term(term: str) -> tuple[str, ...]:
    out: list[str] = []
    for tok in _ALNUM.findall(_fold(term.lower())):
        if len(tok) >= 3 and _ASCII_WORD.fullmatch(tok):
            tok = _stemmer().stemWord(tok)
        if len(tok.encode("utf-8")) <= _MAX_LEXEME_BYTES:
            out.append(tok)
    return tuple(out)


def lexemes(text: str) -> list[str]:
    """The lexemes FTS5 would index for `text` (segmented terms, split, folded, porter-stemmed)."""
    return [lex for t in terms(text) for lex in _lexemes_of_term(t)]


def _quote(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def user_tag(user_id: str) -> str:
    """A lexeme naming the user in every row's tsvector. Queries AND it with their terms, so the GIN
    index intersects the user's (short) posting list with the terms': a search costs what this
    user's history costs, not every user's. Not a word (it has a "#"), so no query can produce it."""
    return "#u" + hashlib.blake2b(user_id.encode("utf-8"), digest_size=10).hexdigest()


def tsvector_literal(text: str, user_id: str) -> tuple[str, int]:
    """(tsvector input with positions, number of lexemes = the document length for BM25)."""
    return _tsvector(lexemes(text), user_id)


def tsvector_of_index_text(body: str, user_id: str) -> tuple[str, int]:
    """`tsvector_literal` of a text from what SQLite's full-text index holds for it (`index_text`:
    its terms joined by spaces), without segmenting it again. The same result: a lexeme never
    spans a space, so the terms' lexemes are those of the space-separated pieces, in order."""
    return _tsvector([lex for piece in body.split() for lex in _lexemes_of_term(piece)], user_id)


def _tsvector(lex: list[str], user_id: str) -> tuple[str, int]:
    positions: dict[str, list[int]] = {}
    for i, lexeme in enumerate(lex, start=1):
        positions.setdefault(lexeme, []).append(min(i, _MAX_POSITION))
    positions.pop(user_tag(user_id), None)
    body = " ".join(f"{_quote(k)}:{','.join(map(str, sorted(set(v))[:256]))}" for k, v in positions.items())
    return f"{_quote(user_tag(user_id))} {body}", len(lex)


def query_lexemes(text: str) -> list[str]:
    """The distinct lexemes of a query, in order."""
    return list(dict.fromkeys(lexemes(text)))


def tsquery_literal(user_id: str, lexes: Sequence[str]) -> str:
    """A tsquery for the user's rows that ORs the lexemes, each quoted (user text is never syntax)."""
    return f"{_quote(user_tag(user_id))} & (" + " | ".join(_quote(lx) for lx in lexes) + ")"


def hnsw_index_name(model_id: str, dim: int) -> str:
    """The name of the model's partial HNSW index on `embeddings` (one per model and width)."""
    return "embeddings_hnsw_" + hashlib.blake2b(f"{model_id}/{dim}".encode(), digest_size=6).hexdigest()


def sources_gone(tx: PgTx, user_id: str, turn_ids: Sequence[int]) -> bool:
    """Whether any of these turns no longer exists (see `store.lineage.sources_gone`)."""
    ids = sorted({int(i) for i in turn_ids})
    if not ids:
        return False
    (n,) = tx.execute(
        "SELECT count(*) FROM turns WHERE user_id = %s AND id = ANY(%s)", (user_id, ids)
    ).fetchone()
    return bool(n < len(ids))


def bm25_sql(table: str, stats: str, length_column: str = "fts_len") -> str:
    """BM25 over `table`'s `fts` column for one user, with the parameters of `bm25_args`. `stats`
    selects (documents, total length) of the user's collection (parameter `%(u)s`). Returns
    (id, score) best first; nothing when the user has no documents.

    Ranked are, for each query lexeme, its newest `cap` matches among the user's rows (all of them
    when it has fewer): a lexeme the user wrote in thousands of turns no longer makes every one of
    them a candidate. Statistics stay exact: each lexeme's document frequency counts all its
    matches (the GIN index answers the count), N and the average length are the user's. A turn
    left out matches only lexemes with more than `cap` matches, so when those lexemes' largest
    possible contributions (idf x (k1 + 1) each) add up to less than the k-th score, the top k are
    exactly FTS5's; otherwise they are the best among recent matches (BENCHMARKS.md, session 15).

    The statistics are read in the same statement as the matches, so both see one snapshot: read
    apart, a document stored in between (by another process) could make a term's document
    frequency exceed N, and the IDF's logarithm negative."""
    return f"""
        WITH st AS (
            SELECT s.n::float8 AS n, greatest(s.total::float8 / greatest(s.n, 1), 1.0) AS avgdl
            FROM ({stats}) AS s(n, total)
        ), q AS (
            SELECT x.lexeme, x.tq FROM unnest(%(lexes)s::text[], %(tqs)s::tsquery[]) AS x(lexeme, tq)
        ), df AS MATERIALIZED (
            -- each tsquery carries the user's tag: the count is the user's rows only
            SELECT q.lexeme, (SELECT count(*) FROM {table} d WHERE d.fts @@ q.tq) AS n FROM q
        ), pick AS (
            -- "+ 0": ordered by an expression no btree has, the newest matches come from the GIN
            -- index's bitmap, not from walking the user's whole history backwards through a btree
            SELECT DISTINCT ON (r.id) r.* FROM q CROSS JOIN LATERAL (
                SELECT d.id, d.{length_column} AS dl, d.fts FROM {table} d
                WHERE d.user_id = %(u)s AND d.fts @@ q.tq AND d.id > %(after)s
                ORDER BY d.id + 0 DESC LIMIT %(cap)s
            ) r
        ), cand AS (
            SELECT p.id, p.dl, u.lexeme, coalesce(array_length(u.positions, 1), 1) AS tf
            FROM pick p CROSS JOIN LATERAL unnest(p.fts) u
            WHERE u.lexeme = ANY(%(lexes)s::text[])
        )
        SELECT c.id,
               sum(greatest(ln(greatest((st.n - d.n + 0.5) / (d.n + 0.5), 1.0)), 1e-6)
                   * c.tf * {BM25_K1 + 1} / (c.tf + {BM25_K1} * ({1 - BM25_B} + {BM25_B} * c.dl / st.avgdl))) AS s
        FROM cand c JOIN df d USING (lexeme) CROSS JOIN st
        WHERE st.n > 0
        GROUP BY c.id ORDER BY s DESC, c.id LIMIT %(k)s
    """


def bm25_args(user_id: str, lexes: Sequence[str], limit: int, after_id: int = 0) -> dict[str, Any]:
    """The parameters of `bm25_sql` for the user's `lexes` (from `query_lexemes`); with `after_id`,
    only rows with a higher id are ranked (the statistics stay the whole collection's)."""
    return {
        "u": user_id,
        "after": after_id,
        "lexes": list(lexes),
        "tqs": [tsquery_literal(user_id, [lx]) for lx in lexes],
        "cap": BM25_CANDIDATES_PER_TERM,
        "k": limit,
    }


def chunks(ids: Sequence[int], size: int = 5000) -> Iterator[list[int]]:
    items = [int(i) for i in ids]
    for start in range(0, len(items), size):
        yield items[start : start + size]
