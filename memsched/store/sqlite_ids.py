"""Row ids that are never handed out twice (AUTOINCREMENT), so id watermarks stay true after deletes.

Without AUTOINCREMENT SQLite gives a new row `max(rowid) + 1`: forgetting the newest turns makes it
hand their ids out again, and every "newer than id X" question then has a wrong answer (the
retriever's embedding watermark skips the new turns; an in-memory vector index whose
`vector_version` went back to an earlier value misses new vectors; a queued `page:<id>` job or a
cached bookmark signature can point at a different page or bookmark than the one it was made for).

SQLite cannot add AUTOINCREMENT to an existing table, so migration 005 rebuilds `turns`, `pages`,
`bookmarks` and `embeddings` (the last gains an `id` column: its rowid feeds `vector_version`).
The rebuild keeps every column, index and trigger the table had, including those later migrations
of other features added, by reading them back from `sqlite_master`.
"""

from __future__ import annotations

import re
import sqlite3

# Tables rebuilt with AUTOINCREMENT. A table whose ids feed a watermark, a cache key or a job's
# dedupe key belongs here; new tables simply declare `id INTEGER PRIMARY KEY AUTOINCREMENT`.
AUTOINCREMENT_TABLES = ("pages", "turns", "bookmarks", "embeddings")

_ID_PK = re.compile(r"\bid\s+INTEGER\s+PRIMARY\s+KEY\b(?!\s+AUTOINCREMENT)", re.I)


def _create_sql(db: sqlite3.Connection, table: str) -> str | None:
    row = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
    return None if row is None else str(row[0])


def _with_autoincrement(table: str, sql: str) -> str:
    if _ID_PK.search(sql):
        return _ID_PK.sub("id INTEGER PRIMARY KEY AUTOINCREMENT", sql, count=1)
    # A rowid table without an `id` column (embeddings): give it one, and keep its primary key as a
    # UNIQUE constraint so INSERT OR REPLACE still replaces by (user, model, content hash).
    head, _, body = sql.partition("(")
    body = re.sub(r"\bPRIMARY\s+KEY\s*\(", "UNIQUE (", body, count=1, flags=re.I)
    return f"{head}(\n            id INTEGER PRIMARY KEY AUTOINCREMENT,{body}"


def rebuild_with_autoincrement(db: sqlite3.Connection, table: str) -> bool:
    """Rebuild `table` so its ids are never reused; keeps rows, rowids, indexes and triggers.

    Must run with foreign keys off (the migration runner does that for names in
    `migrations.FOREIGN_KEYS_OFF`): dropping a parent table with them on would cascade. Returns
    False when the table is missing or already uses AUTOINCREMENT.
    """
    sql = _create_sql(db, table)
    if sql is None or "AUTOINCREMENT" in sql.upper():
        return False
    columns = [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
    dependants = [
        str(r[0])
        for r in db.execute(
            "SELECT sql FROM sqlite_master WHERE tbl_name = ? AND type IN ('index', 'trigger')"
            " AND sql IS NOT NULL ORDER BY type, name",
            (table,),
        )
    ]
    new = f"{table}__rebuild"
    new_sql = _with_autoincrement(table, sql)
    new_sql = re.sub(rf"^\s*CREATE\s+TABLE\s+(?:\"?{table}\"?)", f"CREATE TABLE {new}", new_sql, flags=re.I)
    db.execute(new_sql)
    cols = ", ".join(columns)
    # Rows keep their ids (the rowid, for a table without an id column: rebuilt in rowid order so
    # "newer" keeps its meaning); the explicit ids also set sqlite_sequence to the current maximum.
    if "id" in columns:
        db.execute(f"INSERT INTO {new} ({cols}) SELECT {cols} FROM {table}")
    else:
        db.execute(f"INSERT INTO {new} (id, {cols}) SELECT rowid, {cols} FROM {table} ORDER BY rowid")
    db.execute(f"DROP TABLE {table}")
    # Legacy mode renames only this table: the modern rename re-parses every trigger in the schema
    # and fails on those that name the table we have just dropped.
    (legacy,) = db.execute("PRAGMA legacy_alter_table").fetchone()
    db.execute("PRAGMA legacy_alter_table = ON")
    try:
        db.execute(f"ALTER TABLE {new} RENAME TO {table}")
    finally:
        db.execute(f"PRAGMA legacy_alter_table = {'ON' if legacy else 'OFF'}")
    for statement in dependants:
        db.execute(statement)
    return True


def m005_ids_never_reused(db: sqlite3.Connection) -> None:
    for table in AUTOINCREMENT_TABLES:
        rebuild_with_autoincrement(db, table)
