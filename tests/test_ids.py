"""Row ids are never reused, so watermarks (embedding backfill, vector_version) survive deletes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memsched.memory import Memory
from memsched.store.migrations import MIGRATIONS
from memsched.store.sqlite import SQLiteStore


def test_forgetting_the_newest_turns_keeps_embeddings_and_the_vector_index_right(mem: Memory) -> None:
    for text in ("我的猫叫芝麻", "I like green tea", "周末去爬山", "my bike is red"):
        mem.add("u", "s", "user", text)
    assert mem.search("u", "green tea")  # warms the in-memory index and the backfill watermark
    newest = [t.id for t in mem.store.session_turns("u", "s", last=2)]
    top = mem.store.max_turn_id("u")
    mem.delete_turns("u", [i for i in newest if i is not None])
    fresh = [mem.add("u", "s", "user", text) for text in ("滑雪板是蓝色的", "the violin lesson is on Friday")]
    assert all(t.id is not None and t.id > top for t in fresh)  # ids past every id ever used
    for embedder in mem.embedders.values():
        assert mem.store.turns_missing_vectors("u", embedder.model_id) == []
    (hit, *_) = mem.search("u", "the violin lesson is on Friday")
    assert hit.turn.id == fresh[1].id
    assert hit.candidate.ranks.get("hash") == 1  # found by the dense layer, not only by BM25
    (hit, *_) = mem.search("u", "滑雪板是蓝色的")
    assert hit.turn.id == fresh[0].id and hit.candidate.ranks.get("hash") == 1


def test_vector_version_never_goes_back(mem: Memory) -> None:
    a = mem.add("u", "s", "user", "first words")
    b = mem.add("u", "s", "user", "second words")
    model = next(iter(mem.embedders.values())).model_id
    before = mem.store.vector_version("u", model)
    mem.delete_turns("u", [b.id or 0])
    mem.add("u", "s", "user", "third words")
    after = mem.store.vector_version("u", model)
    assert after[0] > before[0] and after[1] > before[1]
    assert a.id is not None


def _old_database(path: Path) -> None:
    """A database as memsched made it before migration 005, with a few rows and a deleted newest turn."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA foreign_keys = ON")
    db.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    for name, apply in MIGRATIONS:
        if name.startswith("005") or name > "005":
            break
        db.execute("BEGIN")
        apply(db)
        db.execute("INSERT INTO migrations VALUES (?, 0)", (name,))
        db.execute("COMMIT")
    db.close()


def test_migration_005_keeps_rows_indexes_and_triggers(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _old_database(path)
    # Fill it through the current code paths of the old schema.
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("INSERT INTO users VALUES ('u', 0)")
    raw.execute("INSERT INTO sessions (user_id, id, created_at, next_seq) VALUES ('u', 's', 0, 3)")
    raw.execute("INSERT INTO pages (user_id, session_id, page_no, created_at) VALUES ('u', 's', 0, 0)")
    for i in range(3):
        raw.execute(
            "INSERT INTO turns (user_id, session_id, seq, page_id, role, content, created_at, content_hash)"
            " VALUES ('u', 's', ?, 1, 'user', ?, 0, ?)",
            (i, f"text {i}", f"h{i}"),
        )
        raw.execute("INSERT INTO embeddings VALUES ('u', 'm', ?, 2, x'0000803f00000000')", (f"h{i}",))
    raw.execute("DELETE FROM turns WHERE id = 3")
    raw.close()

    store = SQLiteStore(path)
    try:
        assert "005_ids_never_reused" in store.migrations()
        assert [t.content for t in store.session_turns("u", "s")] == ["text 0", "text 1"]
        names = {r[0] for r in store.db.execute("SELECT name FROM sqlite_master WHERE tbl_name = 'turns'")}
        assert {"turns_user", "turns_by_hash", "bookmarks_source_turn_deleted"} <= names
        ids, matrix = store.vectors("u", "m")
        assert list(ids) == [1, 2] and matrix.shape == (2, 2)
        assert store.db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert store.db.execute("PRAGMA foreign_key_check").fetchall() == []
        store.db.execute(
            "INSERT INTO turns (user_id, session_id, seq, page_id, role, content, created_at, content_hash)"
            " VALUES ('u', 's', 3, 1, 'user', 'new', 0, 'h9')"
        )
        # An id deleted before the migration ran is unknown to it; from then on none is reused.
        assert store.max_turn_id("u") == 3
        store.db.execute("DELETE FROM turns WHERE id = 3")
        store.db.execute(
            "INSERT INTO turns (user_id, session_id, seq, page_id, role, content, created_at, content_hash)"
            " VALUES ('u', 's', 4, 1, 'user', 'newer', 0, 'h8')"
        )
        assert store.max_turn_id("u") == 4
    finally:
        store.close()
