"""SQLite schema migrations (Postgres has its own list in `postgres_migrations.py`): named, ordered functions, each applied once in a transaction on open.

New databases and old ones go through the same path. Append new migrations; never edit an old one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from memsched.store.sqlite_base import run_script

Migration = tuple[str, Callable[[sqlite3.Connection], None]]


def m001_core(db: sqlite3.Connection) -> None:
    run_script(
        db,
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE users (id TEXT PRIMARY KEY, created_at REAL NOT NULL);
        CREATE TABLE sessions (
            user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            id TEXT NOT NULL,
            created_at REAL NOT NULL,
            next_seq INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (user_id, id)
        );
        CREATE TABLE pages (
            id INTEGER PRIMARY KEY,
            user_id TEXT NOT NULL,
            session_id TEXT NOT NULL,
            page_no INTEGER NOT NULL,
            created_at REAL NOT NULL,
            UNIQUE (user_id, session_id, page_no),
            FOREIGN KEY (user_id, session_id) REFERENCES sessions(user_id, id) ON DELETE CASCADE
        );
        CREATE TABLE turns (
            id INTEGER PRIMARY KEY,
            user_id TEXT NOT NULL,
            session_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            page_id INTEGER NOT NULL REFERENCES pages(id),
            role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system')),
            speaker TEXT,
            content TEXT NOT NULL,
            created_at REAL NOT NULL,
            external_id TEXT,
            content_hash TEXT NOT NULL,
            meta TEXT NOT NULL DEFAULT '{}',
            UNIQUE (user_id, session_id, seq),
            FOREIGN KEY (user_id, session_id) REFERENCES sessions(user_id, id) ON DELETE CASCADE
        );
        CREATE INDEX turns_user_time ON turns(user_id, created_at, id);
        CREATE INDEX turns_page ON turns(page_id);
        CREATE INDEX turns_dedupe ON turns(user_id, session_id, content_hash);
        -- Segmented, stop-word-free text (see memsched.text.segment); rowid = turns.id.
        CREATE VIRTUAL TABLE turns_fts USING fts5(body, tokenize = 'porter unicode61 remove_diacritics 2');
        -- Vectors keyed by what was embedded (content hash) and by which model, per user, so a
        -- re-index skips unchanged text and a new model re-embeds.
        CREATE TABLE embeddings (
            user_id TEXT NOT NULL,
            model TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            dim INTEGER NOT NULL,
            vector BLOB NOT NULL,
            PRIMARY KEY (user_id, model, content_hash)
        );
        -- Rowids grow with every write, and an index carries the rowid: "vectors newer than X" is a
        -- range scan. This is how in-memory indexes notice vectors embedded late or elsewhere.
        CREATE INDEX embeddings_by_model ON embeddings(user_id, model);
        CREATE INDEX turns_by_hash ON turns(user_id, content_hash);
        -- (user_id) alone, so max(id) of a user, asked on every turn, is one index lookup.
        CREATE INDEX turns_user ON turns(user_id);
        """,
    )


def m015_turn_counts(db: sqlite3.Connection) -> None:
    """Each user's number of turns, kept by triggers, so `turn_count` (asked on every turn: the
    soft-term layer's check that nothing was deleted elsewhere) is one primary-key read instead of
    counting the user's index entries (~0.35 ms at 10k turns, growing with the history). A migration
    that rebuilds `turns` must create the triggers again (they belong to the table)."""
    from memsched.store.sqlite_base import run_script

    run_script(
        db,
        """
        ALTER TABLE users ADD COLUMN turns INTEGER NOT NULL DEFAULT 0;
        UPDATE users SET turns = (SELECT count(*) FROM turns t WHERE t.user_id = users.id);
        CREATE TRIGGER turns_counted AFTER INSERT ON turns
        BEGIN UPDATE users SET turns = turns + 1 WHERE id = NEW.user_id; END;
        CREATE TRIGGER turns_uncounted AFTER DELETE ON turns
        BEGIN UPDATE users SET turns = turns - 1 WHERE id = OLD.user_id; END;
        """,
    )


def _later() -> list[Migration]:
    # Feature migrations live beside the SQL they serve; imported here to keep one ordered list.
    from memsched.store.sqlite_bookmarks import m003_bookmarks
    from memsched.store.sqlite_companion import m009_companion
    from memsched.store.sqlite_fts import m_fts_per_user
    from memsched.store.sqlite_ids import m005_ids_never_reused
    from memsched.store.sqlite_jobs import m002_jobs
    from memsched.store.sqlite_keys import m007_api_keys
    from memsched.store.sqlite_profile import m008_profile_superseded_by
    from memsched.store.sqlite_state import m004_state
    from memsched.store.sqlite_vectors import m011_vector_packs, m012_vectors_checked
    from memsched.store.sqlite_vocab import (
        m010_term_vectors,
        m013_han_terms_glossed,
        m014_han_terms_reglossed,
    )

    return [
        ("002_jobs", m002_jobs),
        ("003_bookmarks", m003_bookmarks),
        ("004_state", m004_state),
        ("005_ids_never_reused", m005_ids_never_reused),
        ("006_fts_per_user", m_fts_per_user),
        ("007_api_keys", m007_api_keys),
        ("008_profile_superseded_by", m008_profile_superseded_by),
        ("009_companion", m009_companion),
        ("010_term_vectors", m010_term_vectors),
        ("011_vector_packs", m011_vector_packs),
        ("012_vectors_checked", m012_vectors_checked),
        ("013_han_terms_glossed", m013_han_terms_glossed),
        ("014_han_terms_reglossed", m014_han_terms_reglossed),
        ("015_turn_counts", m015_turn_counts),
    ]


MIGRATIONS: list[Migration] = [("001_core", m001_core), *_later()]

# Migrations that rebuild tables run with foreign keys off (dropping a parent table with them on
# would cascade into its children); the runner checks the keys before it commits.
FOREIGN_KEYS_OFF: set[str] = {"005_ids_never_reused"}
