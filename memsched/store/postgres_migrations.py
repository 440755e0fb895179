"""PostgreSQL schema migrations: named, ordered SQL scripts, each applied once in a transaction.

The same rules as SQLite's (`migrations.py`): append, never edit one that has shipped. The runner
holds an advisory lock while it migrates, so processes starting together apply each one once.
Times are epoch seconds (double precision), as in SQLite, so the two stores share their callers'
arithmetic; ids are identities that are never reused; lineage (`source_turn_ids`) is a bigint[].
"""

from __future__ import annotations

# Feature migrations may live beside the SQL they serve, as in SQLite's list.
from memsched.store.postgres_companion import M009_COMPANION
from memsched.store.postgres_vocab import M010_TERM_VECTORS
from memsched.text.gloss import HAN_REGEX

M001_CORE = """
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE users (
    id text PRIMARY KEY,
    created_at double precision NOT NULL,
    -- BM25 statistics of the user's turns, kept as turns come and go (no scan per search)
    fts_docs bigint NOT NULL DEFAULT 0,
    fts_len bigint NOT NULL DEFAULT 0
);
CREATE TABLE sessions (
    user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    id text NOT NULL,
    created_at double precision NOT NULL,
    next_seq integer NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id, id)
);
CREATE TABLE pages (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id text NOT NULL,
    session_id text NOT NULL,
    page_no integer NOT NULL,
    created_at double precision NOT NULL,
    UNIQUE (user_id, session_id, page_no),
    FOREIGN KEY (user_id, session_id) REFERENCES sessions(user_id, id) ON DELETE CASCADE
);
CREATE TABLE turns (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id text NOT NULL,
    session_id text NOT NULL,
    seq integer NOT NULL,
    page_id bigint NOT NULL REFERENCES pages(id),
    role text NOT NULL CHECK (role IN ('user', 'assistant', 'system')),
    speaker text,
    content text NOT NULL,
    created_at double precision NOT NULL,
    external_id text,
    content_hash text NOT NULL,
    meta jsonb NOT NULL DEFAULT '{}',
    fts tsvector NOT NULL,
    fts_len integer NOT NULL,
    UNIQUE (user_id, session_id, seq),
    FOREIGN KEY (user_id, session_id) REFERENCES sessions(user_id, id) ON DELETE CASCADE
);
CREATE INDEX turns_user_time ON turns(user_id, created_at, id);
CREATE INDEX turns_user_id ON turns(user_id, id);
CREATE INDEX turns_page ON turns(page_id);
CREATE INDEX turns_by_hash ON turns(user_id, content_hash);
CREATE INDEX turns_fts ON turns USING gin (fts);
-- One column holds every model's vectors (their widths differ); each model gets its own partial
-- HNSW index on the cast to its width when its first vector is stored (PostgresStore.put_vectors).
CREATE TABLE embeddings (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id text NOT NULL,
    model text NOT NULL,
    content_hash text NOT NULL,
    dim integer NOT NULL,
    vector vector NOT NULL,
    UNIQUE (user_id, model, content_hash)
);
CREATE INDEX embeddings_by_model ON embeddings(user_id, model, id);
"""

M002_JOBS = """
CREATE TABLE jobs (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind text NOT NULL,
    user_id text NOT NULL,
    session_id text,
    payload jsonb NOT NULL DEFAULT '{}',
    priority integer NOT NULL DEFAULT 2,
    status text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'done', 'dead')),
    attempts integer NOT NULL DEFAULT 0,
    max_attempts integer NOT NULL DEFAULT 5,
    run_after double precision NOT NULL,
    last_error text,
    ordered boolean NOT NULL DEFAULT false,
    lease_owner text,
    lease_until double precision,
    created_at double precision NOT NULL,
    finished_at double precision,
    dedupe_key text
);
CREATE INDEX jobs_claim ON jobs(priority, id) WHERE status = 'queued';
CREATE INDEX jobs_running ON jobs(lease_until) WHERE status = 'running';
CREATE INDEX jobs_status ON jobs(status, finished_at);
CREATE INDEX jobs_chain ON jobs(user_id, session_id, id) WHERE ordered AND status IN ('queued', 'running');
CREATE INDEX jobs_user ON jobs(user_id, session_id, status, priority);
CREATE INDEX jobs_dedupe ON jobs(kind, user_id, dedupe_key) WHERE dedupe_key IS NOT NULL AND status = 'queued';
CREATE TABLE session_locks (
    user_id text NOT NULL,
    session_id text NOT NULL,
    owner text NOT NULL,
    lease_until double precision NOT NULL,
    PRIMARY KEY (user_id, session_id)
);
"""

M003_BOOKMARKS = """
CREATE TABLE bookmarks (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    session_id text NOT NULL,
    kind text NOT NULL DEFAULT 'fact',
    keywords jsonb NOT NULL,
    aliases jsonb NOT NULL DEFAULT '{}',
    summary text NOT NULL,
    importance double precision NOT NULL DEFAULT 0.5,
    source text NOT NULL,
    content_hash text NOT NULL,
    first_at double precision NOT NULL,
    last_at double precision NOT NULL,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL,
    fts tsvector NOT NULL,
    fts_len integer NOT NULL
);
CREATE INDEX bookmarks_user ON bookmarks(user_id, id);
CREATE INDEX bookmarks_hash ON bookmarks(user_id, content_hash);
CREATE INDEX bookmarks_fts ON bookmarks USING gin (fts);
CREATE TABLE bookmark_pages (
    bookmark_id bigint NOT NULL REFERENCES bookmarks(id) ON DELETE CASCADE,
    page_id bigint NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
    PRIMARY KEY (bookmark_id, page_id)
);
CREATE INDEX bookmark_pages_page ON bookmark_pages(page_id);
CREATE TABLE bookmark_turns (
    bookmark_id bigint NOT NULL REFERENCES bookmarks(id) ON DELETE CASCADE,
    turn_id bigint NOT NULL,
    PRIMARY KEY (bookmark_id, turn_id)
);
CREATE INDEX bookmark_turns_turn ON bookmark_turns(turn_id);
CREATE TABLE page_use (
    page_id bigint PRIMARY KEY REFERENCES pages(id) ON DELETE CASCADE,
    user_id text NOT NULL,
    uses integer NOT NULL DEFAULT 0,
    last_used double precision NOT NULL
);
CREATE INDEX page_use_user ON page_use(user_id, last_used);
-- Lineage, as SQLite's triggers do it: deleting a turn deletes every bookmark made from it;
-- deleting a bookmark deletes its vector when no other bookmark or turn of the user has that text.
CREATE FUNCTION memsched_turns_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM bookmarks WHERE id IN (
        SELECT bt.bookmark_id FROM bookmark_turns bt JOIN old_turns o ON o.id = bt.turn_id);
    RETURN NULL;
END $$;
CREATE TRIGGER turns_deleted AFTER DELETE ON turns REFERENCING OLD TABLE AS old_turns
    FOR EACH STATEMENT EXECUTE FUNCTION memsched_turns_deleted();
CREATE FUNCTION memsched_bookmarks_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM embeddings e USING old_bookmarks o
    WHERE e.user_id = o.user_id AND e.content_hash = o.content_hash
      AND NOT EXISTS (SELECT 1 FROM bookmarks b WHERE b.user_id = o.user_id AND b.content_hash = o.content_hash)
      AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.user_id = o.user_id AND t.content_hash = o.content_hash);
    RETURN NULL;
END $$;
CREATE TRIGGER bookmarks_deleted AFTER DELETE ON bookmarks REFERENCING OLD TABLE AS old_bookmarks
    FOR EACH STATEMENT EXECUTE FUNCTION memsched_bookmarks_deleted();
"""

M004_STATE = """
CREATE TABLE profile_facts (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id text NOT NULL,
    key text NOT NULL,
    value text NOT NULL,
    valid_from double precision NOT NULL,
    superseded_at double precision,
    source_turn_ids bigint[] NOT NULL DEFAULT '{}',
    meta jsonb NOT NULL DEFAULT '{}',
    created_at double precision NOT NULL
);
CREATE INDEX profile_facts_user_key ON profile_facts(user_id, key, valid_from);
CREATE TABLE summaries (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id text NOT NULL,
    session_id text NOT NULL,
    first_seq integer NOT NULL,
    last_seq integer NOT NULL,
    kind text NOT NULL,
    method text NOT NULL,
    content text NOT NULL,
    tokens integer NOT NULL,
    source_tokens integer NOT NULL,
    source_turn_ids bigint[] NOT NULL DEFAULT '{}',
    created_at double precision NOT NULL,
    UNIQUE (user_id, session_id, first_seq, last_seq)
);
CREATE INDEX summaries_session ON summaries(user_id, session_id, last_seq);
CREATE TABLE session_state (
    user_id text NOT NULL,
    session_id text NOT NULL,
    data jsonb NOT NULL DEFAULT '{}',
    updated_at double precision NOT NULL,
    PRIMARY KEY (user_id, session_id)
);
CREATE TABLE traces (
    id text PRIMARY KEY,
    user_id text NOT NULL,
    session_id text,
    created_at double precision NOT NULL,
    turn_ids bigint[] NOT NULL DEFAULT '{}',
    data json NOT NULL  -- json, not jsonb: a trace reads back with its keys in the order written
);
CREATE INDEX traces_session ON traces(user_id, session_id, created_at);
"""

M007_API_KEYS = """
CREATE TABLE api_keys (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key_id text NOT NULL UNIQUE,
    tenant text NOT NULL,
    salt bytea NOT NULL,
    hash bytea NOT NULL,
    created_at double precision NOT NULL,
    revoked_at double precision
);
CREATE INDEX api_keys_tenant ON api_keys(tenant);
"""

M008_PROFILE_SUPERSEDED_BY = "ALTER TABLE profile_facts ADD COLUMN superseded_by bigint;"

# Session locks are advisory locks now (`postgres_locks.py`): the lease rows are gone.
M011_ADVISORY_SESSION_LOCKS = "DROP TABLE IF EXISTS session_locks;"

# speakers(): one seek per distinct speaker instead of a scan of the user's turns.
M012_TURNS_USER_SPEAKER = "CREATE INDEX turns_user_speaker ON turns(user_id, speaker);"

# Chinese terms are embedded through their English senses now (`vocab.word_text`): the rows made
# from the words themselves go, and the next background pass embeds them again.
M013_HAN_TERMS_GLOSSED = f"DELETE FROM term_vectors WHERE term ~ '{HAN_REGEX}';"

# And again once the glosses lost CC-CEDICT's pronunciation notes and surname entries ("Taiwan pr",
# "two-character surname"), on which alone 玩 expanded to 诸葛.
M014_HAN_TERMS_REGLOSSED = M013_HAN_TERMS_GLOSSED


# Names follow SQLite's where a migration has a twin there (005 and 006 had nothing to do here:
# identities are never reused, and the full-text index is per-user from the start).
MIGRATIONS: list[tuple[str, str]] = [
    ("001_core", M001_CORE),
    ("002_jobs", M002_JOBS),
    ("003_bookmarks", M003_BOOKMARKS),
    ("004_state", M004_STATE),
    ("007_api_keys", M007_API_KEYS),
    ("008_profile_superseded_by", M008_PROFILE_SUPERSEDED_BY),
    ("009_companion", M009_COMPANION),
    ("010_term_vectors", M010_TERM_VECTORS),
    ("011_advisory_session_locks", M011_ADVISORY_SESSION_LOCKS),
    ("012_turns_user_speaker", M012_TURNS_USER_SPEAKER),
    ("013_han_terms_glossed", M013_HAN_TERMS_GLOSSED),
    ("014_han_terms_reglossed", M014_HAN_TERMS_REGLOSSED),
]
