"""Full-text search that costs what one user's history costs, not what every user's does.

FTS5 has no per-user index: `MATCH terms AND t.user_id = ?` walks the postings of every user who
ever used a query term and only then drops the other users' rows, so a query slows down as the
store fills with other people (measured in BENCHMARKS.md, "Scale": 0.2 ms at 10k stored turns, 23
ms at 1M). Each FTS row therefore carries a second indexed column, `u`, holding one token that
names its user, and every query is `u : "<tag>" AND body : (terms)`: FTS5 drives the AND from the
short user doclist and seeks in the term doclists, and bm25 gives the `u` column weight 0, so
scores are those of the body alone (IDF still counts the whole table, as before).

The tag is a hash of the user id, ending in a digit so that the porter stemmer leaves it whole.
Queries still join `turns`/`bookmarks` on user id, so a hash collision can never leak a row.
"""

from __future__ import annotations

import hashlib
import sqlite3

from memsched.text.segment import fts_query

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
