"""`memsched migrate`: an embedded SQLite database copied into a real PostgreSQL (pgserver).

The source is made the way a user makes one (chat turns through the scheduler with a fake LLM,
bookmarks, a summary, profile facts with a superseded one, mood, routine, state, traces, queued
jobs, API keys, two embedder models, a forgotten turn), then copied; both stores are read back
through the `Store` protocol and must agree table by table.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import raw_sql
from typer.testing import CliRunner

from memsched import Config, Memory
from memsched.bookmarks import generate_bookmarks
from memsched.cli import app
from memsched.embed.hashing import HashEmbedder
from memsched.errors import InputError, StoreError
from memsched.llm.client import OpenAIChatClient
from memsched.scheduler import Scheduler
from memsched.store import open_store
from memsched.store.postgres import PostgresStore
from memsched.store.sqlite import SQLiteStore
from memsched.store.transfer import PROGRESS_KEY, SKIPPED, TABLES, migrate_sqlite_to_postgres
from memsched.summarize import create_summary
from memsched.testing import FakeOpenAI

LINES = [
    "call me Marzipanova from now on",
    "last week I went hiking near Kyoto with my sister",
    "我周末想去看一场电影",
    "I am reading a book about volcanoes",
    "actually, call me Juniper",
    "the train was late again this morning",
]


def embedders() -> dict[str, HashEmbedder]:
    return {"hash": HashEmbedder(), "hash64": HashEmbedder(dim=64)}


def make_source(home: Path, fake: FakeOpenAI) -> Path:
    """A SQLite database with a row in every table memsched keeps."""
    memory = Memory(Config.load(home=home, page_size=4), embedders=embedders())  # type: ignore[arg-type]
    llm = OpenAIChatClient(fake.base_url, "key", "fake-model", timeout=10.0, retries=0)
    sched = Scheduler(memory, llm=llm, summary_llm=None, start_workers=False)
    try:
        for i, line in enumerate(LINES):
            sched.turn("u", "s1" if i < 4 else "s2", line)
        sched.turn("v", "s1", "晚饭吃了番茄炒蛋")
        store = memory.store
        memory.index("u")
        memory.index("v")
        generate_bookmarks(memory, "u", llm=None)
        turns = store.session_turns("u", "s1")
        assert create_summary(
            memory, "u", "s1", turns[0].seq or 0, turns[-1].seq or 0, kind="topic", llm=None, max_tokens=400
        )
        now = datetime(2026, 11, 30, tzinfo=UTC).timestamp()
        with store.transaction() as tx:
            store.mood_put(
                tx,
                "u",
                {"label": "tired", "intensity": 0.6, "cause_turn_ids": [turns[0].id], "updated_at": now},
            )
            store.routine_put(
                tx,
                "u",
                {
                    "sleep_minute": 1380,
                    "wake_minute": 420,
                    "confidence": 0.7,
                    "timezone": "Asia/Tokyo",
                    "days": 5,
                    "source_turn_ids": [turns[1].id],
                    "updated_at": now,
                    "meta": {"k": [1, 2]},
                },
            )
            store.session_state_update(tx, "u", "s1", {"topic": "hiking", "n": 3}, now=now)
        store.key_add("k1", "acme", b"salt", hashlib.sha256(b"secret").digest(), now=now)
        store.touch_pages("u", [turns[0].page_id or 0])
        # a running job (its worker is gone after the copy) and a forgotten turn (a gap in the ids)
        assert store.jobs_claim("w1", now=time.time() + 3600, lease_until=time.time() + 7200) is not None
        store.forget_turns("u", [turns[-1].id or 0])
        assert store.facts_history("u"), "the renames made profile facts"
        assert len(store.traces_list("u")) >= 5
        path = Path(memory.config.db_path)
    finally:
        sched.close()
        llm.close()
        memory.close()
    return path


@pytest.fixture
def source(tmp_path: Path, fake: FakeOpenAI) -> Path:
    return make_source(tmp_path / "src", fake)


@pytest.fixture
def target(pg_url: str) -> str:
    return pg_url


def snapshot(store: Any) -> dict[str, Any]:
    """Everything a store holds, read through the protocol (ids included)."""
    out: dict[str, Any] = {"users": store.users(), "page_size": store.page_size}
    for user in store.users():
        sessions = store.sessions(user)
        out[f"{user}/sessions"] = [(s.id, s.created_at, s.turn_count) for s in sessions]
        out[f"{user}/pages"] = [(p.id, p.session_id, p.page_no) for p in store.pages(user)]
        turns = list(store.iter_turns(user))
        out[f"{user}/turns"] = [
            (
                t.id,
                t.session_id,
                t.seq,
                t.page_id,
                t.role,
                t.speaker,
                t.content,
                t.created_at,
                t.external_id,
                t.meta,
            )
            for t in turns
        ]
        for model in ("hash-256", "hash-64"):
            ids, matrix = store.vectors(user, model)
            out[f"{user}/vectors/{model}"] = (ids.tolist(), matrix.tobytes())
        out[f"{user}/bookmarks"] = [
            (
                b.id,
                b.kind,
                b.keywords,
                b.aliases,
                b.summary,
                b.importance,
                b.source,
                sorted(b.page_ids),
                sorted(b.turn_ids),
                b.first_at,
                b.updated_at,
            )
            for b in store.iter_bookmarks(user)
        ]
        out[f"{user}/page_use"] = store.page_use(user)
        out[f"{user}/facts"] = store.facts_history(user)
        out[f"{user}/summaries"] = [store.session_summaries(user, s.id) for s in sessions]
        out[f"{user}/state"] = [store.session_state(user, s.id) for s in sessions]
        out[f"{user}/traces"] = store.traces_list(user, limit=1000)
        out[f"{user}/mood"] = store.mood_get(user)
        out[f"{user}/routine"] = store.routine_get(user)
        # ranks, not scores: FTS5 takes its BM25 statistics over all users, PostgreSQL per user
        out[f"{user}/search"] = [h.turn_id for h in store.search_bm25(user, "hiking Kyoto sister")]
    out["jobs"] = [
        {k: v for k, v in j.items() if k not in ("lease_owner", "lease_until", "status")}
        for j in store.jobs_list(limit=1000)
    ]
    out["keys"] = store.keys_list()
    return out


def counts(store: Any) -> dict[str, int]:
    return {
        t.name: raw_sql(store, f"SELECT count(*) FROM {t.name}")[0][0] for t in TABLES if t.name != "meta"
    }


def test_every_table_of_a_sqlite_store_is_copied_or_skipped_on_purpose(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "x.db")
    names = {
        r[0]
        for r in store.db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'"
        )
    }
    fts = {
        r[0]
        for r in store.db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL%'"
        )
    }
    store.close()
    shadows = {n for n in names if any(n.startswith(f + "_") for f in fts)}
    assert names - shadows - SKIPPED == {t.name for t in TABLES}


def test_full_copy_equals_the_source(source: Path, target: str) -> None:
    report = migrate_sqlite_to_postgres(source, target, batch_size=3)
    src = SQLiteStore(source)
    dst = PostgresStore(target)
    try:
        assert snapshot(dst) == snapshot(src)
        assert counts(dst) == counts(src)
        assert all(t.copied == t.source for name, t in report.tables.items() if name != "meta")
        # the job that was running in SQLite is queued on PostgreSQL, with no lease
        assert {j["status"] for j in dst.jobs_list(limit=1000)} == {"queued"}
        # identity counters are past every id SQLite ever gave (the forgotten turn's too)
        (high,) = src.db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'turns'").fetchone()
        assert high > src.max_turn_id("u")
        new = dst.add_turns([_turn("u", "s3", "a turn written after the copy")])[0]
        assert new.id == high + 1
        # the BM25 statistics of each user are those of its turns
        for user in src.users():
            docs, length = raw_sql(dst, "SELECT fts_docs, fts_len FROM users WHERE id = ?", (user,))[0]
            n, total = raw_sql(
                dst, "SELECT count(*), coalesce(sum(fts_len), 0) FROM turns WHERE user_id = ?", (user,)
            )[0]
            assert (docs, length) == (n, total) and n > 0
        # one vector index per model
        indexes = raw_sql(
            dst, "SELECT count(*) FROM pg_indexes WHERE starts_with(indexname, 'embeddings_hnsw_')"
        )[0][0]
        assert indexes == 2
    finally:
        src.close()
        dst.close()


@pytest.mark.parametrize(
    "text",
    [
        *LINES,
        "晚饭吃了番茄炒蛋, then a café crème at 7:30 — naïve Übermensch!!",
        "user: 上周我们在 Lisbon 吃了 pastel de nata, it's 2024-10-15 (Tuesday)",
        "  spaces\tand\nnewlines   everywhere  ",
        "x " * 300 + "supercalifragilisticexpialidocious" * 3,
    ],
)
def test_a_tsvector_from_sqlites_index_text_is_the_one_from_segmenting(text: str) -> None:
    from memsched.store.postgres_base import tsvector_literal, tsvector_of_index_text
    from memsched.text.segment import index_text

    assert tsvector_of_index_text(index_text(text), "u") == tsvector_literal(text, "u")


def test_the_copy_indexes_turns_from_sqlites_full_text_rows(source: Path, target: str) -> None:
    """The tsvector of a copied turn is made from what SQLite's full-text index holds for it (not
    segmented again): a word only that index has is found on PostgreSQL too."""
    db = sqlite3.connect(source)
    (tid,) = db.execute("SELECT min(id) FROM turns WHERE user_id = 'u'").fetchone()
    (body,) = db.execute("SELECT body FROM turns_fts WHERE rowid = ?", (tid,)).fetchone()
    db.execute("UPDATE turns_fts SET body = ? WHERE rowid = ?", (body + " zebracorn", tid))
    db.commit()
    db.close()
    migrate_sqlite_to_postgres(source, target)
    dst = PostgresStore(target)
    try:
        assert [h.turn_id for h in dst.search_bm25("u", "zebracorn")] == [tid]
    finally:
        dst.close()


def test_a_copy_without_vector_indexes_leaves_them_to_the_store(source: Path, target: str) -> None:
    """`vector_indexes=False` (a benchmark's bulk load) copies every row but builds no HNSW index;
    the store builds a model's index when that model's next vectors arrive."""
    import numpy as np

    migrate_sqlite_to_postgres(source, target, vector_indexes=False)
    hnsw = "SELECT count(*) FROM pg_indexes WHERE starts_with(indexname, 'embeddings_hnsw_')"
    src = SQLiteStore(source)
    dst = PostgresStore(target)
    try:
        assert snapshot(dst) == snapshot(src) and counts(dst) == counts(src)
        assert raw_sql(dst, hnsw)[0][0] == 0
        model, dim = src.db.execute("SELECT model, dim FROM embeddings LIMIT 1").fetchone()
        dst.put_vectors("u", model, [("a new text", np.ones(dim, dtype=np.float32))])
        assert raw_sql(dst, hnsw)[0][0] == 1
    finally:
        src.close()
        dst.close()


def _turn(user: str, session: str, content: str) -> Any:
    from memsched.model import Turn

    return Turn(user_id=user, session_id=session, role="user", content=content)


def test_running_twice_changes_nothing(source: Path, target: str) -> None:
    migrate_sqlite_to_postgres(source, target)
    dst = PostgresStore(target)
    before = (snapshot(dst), counts(dst))
    dst.close()
    again = migrate_sqlite_to_postgres(source, target)
    assert sum(t.copied for t in again.tables.values()) == 0
    assert all(t.present == t.source for t in again.tables.values())
    dst = PostgresStore(target)
    try:
        assert (snapshot(dst), counts(dst)) == before
    finally:
        dst.close()


class Interrupted(Exception):
    pass


def index_defs(store: Any) -> set[tuple[str, str]]:
    """The target's indexes (name, definition), its HNSW ones left out."""
    return {
        (str(n), str(d))
        for n, d in raw_sql(
            store,
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()"
            " AND NOT starts_with(indexname, 'embeddings_hnsw_')",
        )
    }


def test_a_bulk_copy_builds_every_index_the_schema_has(source: Path, target: str, pg_server: Any) -> None:
    """Into an empty database the copy drops the secondary indexes and builds them after the rows:
    the target ends with exactly the indexes of a freshly migrated database, and no marker of them."""
    other = pg_server.database()
    fresh = PostgresStore(other)
    expected = index_defs(fresh)
    fresh.close()
    pg_server.release(other)
    assert any("gin" in d for _, d in expected), "the schema has full-text indexes to drop"
    migrate_sqlite_to_postgres(source, target)
    dst = PostgresStore(target)
    try:
        assert index_defs(dst) == expected
        # vacuumed and analysed after the load
        vacuumed = raw_sql(
            dst,
            "SELECT count(*) FROM pg_stat_user_tables WHERE relname IN ('turns', 'embeddings')"
            " AND last_vacuum IS NOT NULL AND last_analyze IS NOT NULL",
        )
        assert vacuumed[0][0] == 2
        marker = raw_sql(dst, "SELECT value FROM meta WHERE key = ?", (PROGRESS_KEY,))[0][0]
        assert '"complete": true' in marker and "dropped_indexes" not in marker
    finally:
        dst.close()


def test_an_interrupted_bulk_copy_rebuilds_the_indexes_it_dropped(source: Path, target: str) -> None:
    dst = PostgresStore(target, page_size=4)  # the source's (a store writes its page size)
    expected = index_defs(dst)
    dst.close()

    def stop_in_turns(table: str, done: int) -> None:
        if table == "turns" and done >= 4:
            raise Interrupted

    with pytest.raises(Interrupted):
        migrate_sqlite_to_postgres(source, target, batch_size=2, after_batch=stop_in_turns)
    dst = PostgresStore(target)
    try:
        assert index_defs(dst) == expected
        assert raw_sql(dst, "SELECT count(*) FROM turns")[0][0] == 4  # the rows stay, to resume
    finally:
        dst.close()


def test_an_interrupted_copy_resumes_and_completes(source: Path, target: str) -> None:
    seen: list[tuple[str, int]] = []

    def stop_in_turns(table: str, done: int) -> None:
        seen.append((table, done))
        if table == "turns" and done >= 4:
            raise Interrupted

    with pytest.raises(Interrupted):
        migrate_sqlite_to_postgres(source, target, batch_size=2, after_batch=stop_in_turns)
    dst = PostgresStore(target)
    assert raw_sql(dst, "SELECT count(*) FROM turns")[0][0] == 4  # two batches committed
    assert raw_sql(dst, "SELECT count(*) FROM bookmarks")[0][0] == 0  # later tables not reached
    dst.close()
    report = migrate_sqlite_to_postgres(source, target, batch_size=2)
    assert report.tables["turns"].resumed == 4
    assert report.tables["users"].resumed == report.tables["users"].source
    assert report.tables["turns"].copied == report.tables["turns"].source - 4
    src = SQLiteStore(source)
    dst = PostgresStore(target)
    try:
        assert snapshot(dst) == snapshot(src)
        assert counts(dst) == counts(src)
        assert (
            '"complete": true' in raw_sql(dst, "SELECT value FROM meta WHERE key = ?", (PROGRESS_KEY,))[0][0]
        )
    finally:
        src.close()
        dst.close()


def test_a_killed_copy_process_resumes(source: Path, target: str, tmp_path: Path) -> None:
    """A real process killed mid-copy (SIGKILL): the re-run ends with the complete copy."""
    script = (
        "import os, sys\n"
        "from memsched.store.transfer import migrate_sqlite_to_postgres\n"
        "def kill(table, done):\n"
        "    if table == 'embeddings':\n"
        "        os.kill(os.getpid(), 9)\n"
        "migrate_sqlite_to_postgres(sys.argv[1], sys.argv[2], batch_size=2, after_batch=kill)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    dst = PostgresStore(target, page_size=4)  # the source's (a store writes its page size)
    expected = index_defs(dst)
    dst.close()
    proc = subprocess.run(
        [sys.executable, "-c", script, str(source), target], env=env, capture_output=True, timeout=120
    )
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]
    dst = PostgresStore(target)
    # killed mid bulk copy: the secondary indexes are still dropped (the marker names them)
    assert index_defs(dst) < expected
    dst.close()
    runner = CliRunner()
    result = runner.invoke(app, ["migrate", "--from", str(source), "--to", target])
    assert result.exit_code == 0, result.output
    src = SQLiteStore(source)
    dst = PostgresStore(target)
    try:
        assert snapshot(dst) == snapshot(src)
        assert index_defs(dst) == expected  # the resumed run built them
    finally:
        src.close()
        dst.close()


def test_different_data_under_the_same_ids_is_an_error_and_nothing_changes(
    source: Path, target: str, tmp_path: Path
) -> None:
    other = tmp_path / "other.db"
    mem = Memory(Config.load(db=other, page_size=4), embedders=embedders())  # type: ignore[arg-type]
    mem.add("someone", "elsewhere", "user", "a different first turn")
    mem.close()
    migrate_sqlite_to_postgres(other, target)
    dst = PostgresStore(target)
    before = (snapshot(dst), counts(dst))
    dst.close()
    with pytest.raises(
        StoreError, match=r"different data in users|different data in turns|different data in pages"
    ):
        migrate_sqlite_to_postgres(source, target)
    dst = PostgresStore(target)
    try:
        after_turns = raw_sql(dst, "SELECT id, user_id, content FROM turns ORDER BY id")
        assert after_turns == [(1, "someone", "a different first turn")]
        assert snapshot(dst)["someone/turns"] == before[0]["someone/turns"]
    finally:
        dst.close()


def test_a_changed_row_is_named(source: Path, target: str) -> None:
    migrate_sqlite_to_postgres(source, target)
    db = sqlite3.connect(source)
    (tid,) = db.execute("SELECT min(id) FROM turns").fetchone()
    db.execute("UPDATE turns SET content = 'edited after the copy' WHERE id = ?", (tid,))
    db.commit()
    db.close()
    with pytest.raises(StoreError, match=rf"turns for id {tid}\b"):
        migrate_sqlite_to_postgres(source, target)
    dst = PostgresStore(target)
    try:
        assert raw_sql(dst, "SELECT content FROM turns WHERE id = ?", (tid,))[0][0] != "edited after the copy"
    finally:
        dst.close()


def test_cli_migrate_copies_and_prints_a_summary(
    source: Path, target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMSCHED_HOME", str(source.parent))
    runner = CliRunner()
    dry = runner.invoke(app, ["migrate", "--to", target, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "turns" in dry.output and "would copy" in dry.output
    dst = PostgresStore(target)
    assert raw_sql(dst, "SELECT count(*) FROM turns")[0][0] == 0
    dst.close()
    result = runner.invoke(app, ["migrate", "--to", target])
    assert result.exit_code == 0, result.output
    n_turns = raw_sql(SQLiteStore(source), "SELECT count(*) FROM turns")[0][0]
    rows = [[c.strip() for c in ln.split("│")] for ln in result.output.splitlines()]
    turns_row = next(r for r in rows if len(r) > 3 and r[1] == "turns")
    assert turns_row[2:4] == [str(n_turns), str(n_turns)]  # in source, copied


def test_the_migrated_user_gets_the_same_context_and_search(
    source: Path, target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    migrate_sqlite_to_postgres(source, target)
    queries = ["where did I go hiking?", "what am I reading?", "电影"]
    on_sqlite = Memory(Config.load(db=source), embedders=embedders())  # type: ignore[arg-type]
    monkeypatch.setenv("MEMSCHED_DATABASE_URL", target)
    on_pg = Memory(Config.load(home=tmp_path / "pghome"), embedders=embedders())  # type: ignore[arg-type]
    try:
        assert isinstance(on_pg.store, PostgresStore)
        for q in queries:
            a = on_sqlite.context("u", q, session_id="s9", budget=300)
            b = on_pg.context("u", q, session_id="s9", budget=300)
            assert [m["content"] for m in b.messages] == [m["content"] for m in a.messages]
            assert [(h.turn.id, h.turn.content) for h in on_pg.search("u", q)] == [
                (h.turn.id, h.turn.content) for h in on_sqlite.search("u", q)
            ]
    finally:
        on_sqlite.close()
        on_pg.close()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--to", "mysql://x/y"], "postgresql://"),
        (["--to", "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2"], "cannot open database"),
        (["--to", "postgresql://x/y", "--build-memory", "lots"], "--build-memory must be a PostgreSQL size"),
    ],
)
def test_cli_bad_target(source: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["migrate", "--from", str(source), *args])
    assert result.exit_code == 1
    assert message in result.output


def test_missing_source_is_an_error(tmp_path: Path, target: str) -> None:
    with pytest.raises(InputError, match="no SQLite database"):
        migrate_sqlite_to_postgres(tmp_path / "nope.db", target)
    (tmp_path / "junk.db").write_bytes(b"not a database at all" * 100)
    with pytest.raises(InputError, match="not a SQLite database"):
        migrate_sqlite_to_postgres(tmp_path / "junk.db", target)
    assert not (tmp_path / "nope.db").exists()


def test_open_store_on_the_copy_reads_the_same_page_size(source: Path, target: str) -> None:
    migrate_sqlite_to_postgres(source, target)
    store = open_store(target)
    try:
        assert store.page_size == 4
    finally:
        store.close()
