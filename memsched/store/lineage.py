"""Lineage: which stored artifacts were made from which turns, so forgetting a turn reaches them.

One mechanism for every artifact kind. A table joins the cascade by either

* having a `source_turn_ids` column (a JSON array of turn ids) — found automatically, its rows are
  deleted when any source turn goes; or
* having a `turn_id` column (one row per turn: a turn's resolved dates, a caption) — found
  automatically, its rows go with their turn; or
* one line, `register_derived("table", column=..., policy=...)`, for another column name or for a
  policy other than "delete" (a fact hands back to the value it superseded; a summary is rewritten
  from the turns that remain).

Forgetting a session or a user needs no registration at all: every table with a `user_id` column
(and a `session_id` column, for a session) is emptied of that user's (session's) rows.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Literal

from memsched.store.sqlite_base import SQLiteTx

Db = sqlite3.Connection | SQLiteTx

Policy = Literal["delete", "revert_fact", "regenerate_summary"]


@dataclass(frozen=True, slots=True)
class Derived:
    """An artifact table and how forgetting one of its source turns treats a row of it."""

    table: str
    column: str = "source_turn_ids"  # a JSON array of turn ids
    policy: Policy = "delete"
    id_column: str = "id"


_REGISTERED: dict[str, Derived] = {}


def register_derived(
    table: str, column: str = "source_turn_ids", policy: Policy = "delete", id_column: str = "id"
) -> Derived:
    """Add (or override) an artifact table of the cascade. Returns its entry."""
    entry = _REGISTERED[table] = Derived(table, column, policy, id_column)
    return entry


def registered(table: str) -> Derived | None:
    """The registered cascade entry of `table`, if any (each backend reads its own schema)."""
    return _REGISTERED.get(table)


# Built-in artifacts whose column or policy is not the default.
register_derived("traces", column="turn_ids")  # a trace quotes its message
register_derived("profile_facts", policy="revert_fact")
register_derived("summaries", policy="regenerate_summary")
# One row per user: a mood goes with the words that caused it, a routine with its samples (relearned).
register_derived("moods", column="cause_turn_ids", id_column="user_id")
register_derived("routines", id_column="user_id")


def _tables(db: Db) -> dict[str, list[str]]:
    """Plain tables (not FTS shadow or internal ones) -> their columns."""
    out: dict[str, list[str]] = {}
    for (name,) in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'"
        " AND name NOT LIKE 'sqlite_%'"
    ):
        out[name] = [r[1] for r in db.execute(f'PRAGMA table_info("{name}")')]
    return out


def _is_shadow(name: str, virtual: set[str]) -> bool:
    return any(name.startswith(f"{v}_") for v in virtual)


def virtual_tables(db: Db) -> list[str]:
    return [
        r[0]
        for r in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL%'"
        )
    ]


def fts5_tables(db: Db) -> list[str]:
    return [
        r[0]
        for r in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL%'"
            " AND lower(sql) LIKE '%using fts5%'"
        )
    ]


@dataclass(slots=True)
class Schema:
    """What the cascade needs to know about the database, read from `sqlite_master`."""

    derived: list[Derived] = field(default_factory=list)  # JSON-lineage artifact tables
    per_turn: list[tuple[str, bool]] = field(default_factory=list)  # (table, has user_id) with turn_id
    per_user: list[str] = field(default_factory=list)  # tables with a user_id column
    per_session: list[str] = field(default_factory=list)  # tables with user_id and session_id


def read_schema(db: Db) -> Schema:
    tables = _tables(db)
    virtual = set(virtual_tables(db))
    schema = Schema()
    for name, columns in sorted(tables.items()):
        if _is_shadow(name, virtual):
            continue
        entry = _REGISTERED.get(name)
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
    return schema


def sources_gone(db: Db, user_id: str, turn_ids: list[int] | tuple[int, ...] | set[int]) -> bool:
    """Whether any of these turns no longer exists: an artifact made from them must not be stored
    (it was computed from a turn forgotten while it was being made)."""
    ids = sorted({int(i) for i in turn_ids})
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        (n,) = db.execute(
            f"SELECT count(*) FROM turns WHERE user_id = ? AND id IN ({marks})", (user_id, *chunk)
        ).fetchone()
        if n < len(chunk):
            return True
    return False
