"""What every SQLite mixin shares: the unit of work, the script runner, and turn rows.

Kept apart from `sqlite.py` so feature mixins and migrations import it without importing the store.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from memsched.model import Turn
from memsched.store.base import Tx

TURN_COLUMNS = "id, user_id, session_id, seq, page_id, role, speaker, content, created_at, external_id, meta"


class SQLiteTx(Tx):
    """A SQLite unit of work: one connection inside BEGIN IMMEDIATE ... COMMIT."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, args: Any = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, args)

    def executemany(self, sql: str, rows: Iterable[Any]) -> sqlite3.Cursor:
        return self.conn.executemany(sql, rows)


def sqlite_tx(tx: Tx) -> SQLiteTx:
    """The SQLite unit of work behind `tx`; a `Tx` of another store is a programming error."""
    if not isinstance(tx, SQLiteTx):
        raise TypeError(f"a {type(tx).__name__} was passed to SQLiteStore; use its own transaction()")
    return tx


class SQLiteMixin:
    """The parts of SQLiteStore every feature mixin may use."""

    if TYPE_CHECKING:  # provided by SQLiteStore

        @property
        def db(self) -> sqlite3.Connection: ...

        def transaction(self) -> AbstractContextManager[SQLiteTx]: ...


def run_script(db: sqlite3.Connection | SQLiteTx, script: str) -> None:
    """Execute statements one by one: `executescript` would COMMIT the migration's transaction."""
    statement = ""
    for line in script.splitlines(keepends=True):
        if line.strip().startswith("--"):
            continue
        statement += line
        if sqlite3.complete_statement(statement):
            db.execute(statement)
            statement = ""
    if statement.strip():
        raise ValueError(f"incomplete SQL statement in migration: {statement.strip()[:80]}")


def ts(dt: datetime) -> float:
    return dt.timestamp()


def dt(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)


def row_to_turn(row: sqlite3.Row | tuple[Any, ...]) -> Turn:
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
        json.loads(meta) if meta and meta != "{}" else {},
    )
