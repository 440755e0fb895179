"""Full-text search that costs what one user's history costs, not what every user's does.

FTS5 has no per-user index: `MATCH terms AND t.user_id = ?` walks the postings of every user who
ever used a query term and only then drops the other users' rows, so a query slows down as the
store fills with other people (measured in BENCHMARKS.md, "Scale": 0.2 ms at 10k stored turns, 23
ms at 1M). Each FTS row therefore carries a second indexed column, `u`, holding one token that
names its user, and every query is `u : "<tag>" AND body : (terms)`: FTS5 drives the AND from the
short user doclist and seeks in the term doclists, and bm25 gives the `u` column weight 0, so
scores are those of the body alone (IDF still counts the whole table, as before).

The tag is a hash of the user id, ending in a digit so that the porter stemmer leaves it whole.
Queries still check the user id of what they return in `turns`/`bookmarks`, so a hash collision can
never leak a row.

FTS5's bm25() has no early stop: `ORDER BY bm25(…) LIMIT k` scores every row that matches any query
term, ~2 us a row, so a 100k-turn user's common words (14,465 matches for "你还记得我朋友搬去哪里了
吗？") cost ~30 ms of CPU per query. `search_turns` ranks like PostgreSQL's `bm25_sql`: when a query
term has more than `BM25_CANDIDATES_PER_TERM` matches among the user's rows, each term contributes
only to its newest that many matches (one FTS5 query per term, rowids newest first, stopping at the
cap), and a turn's score is the sum of its terms' contributions. BM25 is a sum over terms of
idf x saturated tf (each with the same N, average length and document frequency FTS5 uses for the
whole query), so a turn within every one of its terms' windows gets exactly FTS5's score; a turn
older than a common term's window is scored without that term (at most idf x (k1 + 1) of a word
common enough to have been capped). When no term reaches the cap (every LoCoMo user) the single
FTS5 query runs as before: same scores, same order.
"""

from __future__ import annotations

import hashlib
import sqlite3

from memsched.store.base import BM25_CANDIDATES_PER_TERM
from memsched.text.segment import fts_phrases, fts_query

FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"


def user_tag(user_id: str) -> str:
    """The token that marks a user's rows in the full-text tables."""
    return "u" + hashlib.blake2b(user_id.encode("utf-8"), digest_size=10).hexdigest() + "0"


def user_match(user_id: str, query: str) -> str | None:
    """The MATCH expression for `query` restricted to one user's rows (None: nothing to search)."""
    match = fts_query(query)
    if match is None:
        return None
    return f'u : "{user_tag(user_id)}" AND body : ({match})'


# The rowid of a MATCH's n-th newest row (NULL when it has fewer), as one column of a SELECT that asks it
# of every query term at once: FTS5 reads rowids newest first without scoring, and one statement
# instead of one per term saves a GIL hand-off each (a busy server switches threads at each).
_NTH_NEWEST = "(SELECT rowid FROM turns_fts WHERE turns_fts MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?)"
_ASKS_PER_STATEMENT = 200  # columns of one SELECT (SQLite allows 2,000)
_RANK = (
    "SELECT rowid, bm25(turns_fts, 0.0, 1.0) AS s FROM turns_fts WHERE turns_fts MATCH ?"
    " AND rowid >= ? AND rowid < ? ORDER BY s LIMIT ?"
)


_EVERY_MATCH = (
    "SELECT t.id, bm25(turns_fts, 0.0, 1.0) AS s FROM turns_fts JOIN turns t ON t.id = turns_fts.rowid"
    " WHERE turns_fts MATCH ? AND turns_fts.rowid > ? AND t.user_id = ? ORDER BY s LIMIT ?"
)


def _every_match(
    db: sqlite3.Connection, user_id: str, match: str, limit: int, after_id: int = 0
) -> list[tuple[int, float]]:
    """The best `limit` of every row matching `match` (after rowid `after_id`), scored by FTS5 at once."""
    rows = db.execute(_EVERY_MATCH, (match, after_id, user_id, limit)).fetchall()
    # FTS5's bm25() is "lower is better"; flip it so every layer's score grows with relevance.
    return [(int(r[0]), -float(r[1])) for r in rows]


def _nth_newest(db: sqlite3.Connection, asks: list[tuple[str, int]]) -> list[int | None]:
    """For each (MATCH expression, n): the rowid of its match with n newer ones, or None (one statement)."""
    out: list[int | None] = []
    for start in range(0, len(asks), _ASKS_PER_STATEMENT):  # a long message has many terms
        part = asks[start : start + _ASKS_PER_STATEMENT]
        sql = "SELECT " + ", ".join([_NTH_NEWEST] * len(part))
        row = db.execute(sql, [v for ask in part for v in ask]).fetchone()
        out.extend(None if r is None else int(r) for r in row)
    return out


def search_turns(
    db: sqlite3.Connection, user_id: str, query: str, limit: int, after_id: int = 0
) -> list[tuple[int, float]]:
    """The user's best `limit` turns for `query` by BM25 as (turn id, score), best first, common
    terms ranked over their newest `BM25_CANDIDATES_PER_TERM` matches only (module docstring).
    With `after_id`, only turns with a higher rowid, every match ranked: FTS5 seeks each doclist
    to the rowid, so a search of the turns added since an earlier one costs what they cost."""
    phrases = fts_phrases(query)
    if not phrases or limit <= 0:
        return []
    cap = BM25_CANDIDATES_PER_TERM
    user = f'u : "{user_tag(user_id)}"'
    everything = f"{user} AND body : ({' OR '.join(phrases)})"
    if after_id > 0:
        return _every_match(db, user_id, everything, limit, after_id)
    # Where each term's newest `cap` matches begin (None: it has no more than `cap`): rowids only,
    # newest first, which FTS5 reads without scoring. A term with no more than `cap` matches in the
    # whole table has no more for this user: that is asked first, of the term's doclist alone (the
    # user's AND walks the user's whole doclist, ~0.27 ms at 10k turns even for a term used 8 times,
    # against ~0.015 ms); only a term common in the table is counted for the user.
    over = _nth_newest(db, [(f"body : {p}", cap) for p in phrases])
    frequent = [p for p, past in zip(phrases, over, strict=True) if past is not None]
    theirs = iter(_nth_newest(db, [(f"{user} AND body : {p}", n) for p in frequent for n in (cap - 1, cap)]))
    starts: list[int | None] = []
    for past in over:
        # the user's cap-th newest match, where the user has more than `cap`
        nth, beyond = (next(theirs), next(theirs)) if past is not None else (None, None)
        starts.append(nth if beyond is not None else None)
    if all(r is None for r in starts):
        return _every_match(db, user_id, everything, limit)
    # The window: back to where the commonest term has `cap` matches. Inside it every match of any
    # term is ranked; before it, only turns with a term that has at most `cap` matches in all.
    window = max(r for r in starts if r is not None)
    top = 1 << 62
    rows = db.execute(_RANK, (everything, window, top, limit)).fetchall()
    rare = [p for p, r in zip(phrases, starts, strict=True) if r is None]
    if rare:
        common = [p for p, r in zip(phrases, starts, strict=True) if r is not None]
        # Each term is one phrase of the expression, so bm25() adds every term of the turn; the
        # "OR <user>" only makes the common terms optional (the user column weighs 0).
        older = f"{user} AND body : ({' OR '.join(rare)}) AND (body : ({' OR '.join(common)}) OR {user})"
        rows += db.execute(_RANK, (older, 0, window, limit)).fetchall()
    rows.sort(key=lambda r: (r[1], -r[0]))
    ids = [int(r[0]) for r in rows[: 2 * limit]]
    marks = ",".join("?" * len(ids))
    mine = {
        r[0]
        for r in db.execute(f"SELECT id FROM turns WHERE user_id = ? AND id IN ({marks})", (user_id, *ids))
    }
    return [(int(r[0]), -float(r[1])) for r in rows if r[0] in mine][:limit]


def _rebuild(db: sqlite3.Connection, table: str, owner: str) -> None:
    """Recreate `table` as (u, body), tagging every row with the user of its `owner` row."""
    new = f"{table}__peruser"
    db.execute(f"CREATE VIRTUAL TABLE {new} USING fts5(u, body, tokenize = '{FTS_TOKENIZE}')")
    cur = db.execute(f"SELECT f.rowid, o.user_id, f.body FROM {table} f JOIN {owner} o ON o.id = f.rowid")
    while rows := cur.fetchmany(5000):
        db.executemany(
            f"INSERT INTO {new} (rowid, u, body) VALUES (?, ?, ?)",
            [(rowid, user_tag(uid), body) for rowid, uid, body in rows],
        )
    db.execute(f"DROP TABLE {table}")
    # Legacy mode renames only this table (the modern rename re-parses triggers that name the
    # table just dropped, and fails on them).
    (legacy,) = db.execute("PRAGMA legacy_alter_table").fetchone()
    db.execute("PRAGMA legacy_alter_table = ON")
    try:
        db.execute(f"ALTER TABLE {new} RENAME TO {table}")
    finally:
        db.execute(f"PRAGMA legacy_alter_table = {'ON' if legacy else 'OFF'}")


def m_fts_per_user(db: sqlite3.Connection) -> None:
    _rebuild(db, "turns_fts", "turns")
    _rebuild(db, "bookmarks_fts", "bookmarks")
