"""Full-text search is scoped to one user inside FTS5 (the `u` column), and old stores migrate."""

from __future__ import annotations

from pathlib import Path

import pytest

from memsched.model import Bookmark, Turn, utcnow
from memsched.store import migrations as migrations_module
from memsched.store import sqlite as sqlite_module
from memsched.store.sqlite import SQLiteStore
from memsched.store.sqlite_fts import user_match, user_tag


def _turns(user: str, texts: list[str]) -> list[Turn]:
    return [Turn(user_id=user, session_id="s1", role="user", content=t) for t in texts]


def _bookmark(user: str, turn: Turn, keyword: str) -> Bookmark:
    now = utcnow()
    return Bookmark(
        user_id=user,
        session_id=turn.session_id,
        keywords=[keyword],
        summary=f"about {keyword}",
        page_ids=[turn.page_id or 0],
        turn_ids=[turn.id or 0],
        first_at=now,
        last_at=now,
    )


def test_user_tag_is_one_stable_token_the_stemmer_keeps() -> None:
    tag = user_tag("alice")
    assert tag == user_tag("alice") != user_tag("bob")
    assert tag.isalnum() and tag[-1].isdigit()
    assert user_match("alice", "   ") is None
    assert user_match("alice", "sushi") == f'u : "{tag}" AND body : ("sushi")'


def test_search_never_returns_another_users_rows(store: SQLiteStore) -> None:
    store.add_turns(_turns("alice", ["we ate sushi in Kyoto", "杭州的西湖很美"]))
    store.add_turns(_turns("bob", ["sushi again, sushi sushi", "我也去了杭州西湖"]))
    alice = {t.id for t in store.session_turns("alice", "s1")}
    hits = store.search_bm25("alice", "sushi 西湖")
    assert {h.turn_id for h in hits} == alice
    assert store.search_bm25("carol", "sushi") == []


def test_a_store_made_before_the_per_user_index_migrates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.db"
    older = [m for m in migrations_module.MIGRATIONS if m[0] != "006_fts_per_user"]
    monkeypatch.setattr(sqlite_module, "MIGRATIONS", older)
    # The old code wrote (body) rows; emulate it by writing through the old schema directly.
    old = SQLiteStore(path, page_size=4)
    assert "006_fts_per_user" not in old.migrations()
    with old.transaction() as tx:
        for i, (user, text) in enumerate([("alice", "tapas in Lisbon"), ("bob", "tapas in Madrid")], 1):
            tx.execute("INSERT INTO users (id, created_at) VALUES (?, 0) ON CONFLICT DO NOTHING", (user,))
            tx.execute(
                "INSERT INTO sessions (user_id, id, created_at, next_seq) VALUES (?, 's1', 0, 1)", (user,)
            )
            tx.execute(
                "INSERT INTO pages (id, user_id, session_id, page_no, created_at) VALUES (?, ?, 's1', 0, 0)",
                (i, user),
            )
            tx.execute(
                "INSERT INTO turns (id, user_id, session_id, seq, page_id, role, content, created_at,"
                " content_hash) VALUES (?, ?, 's1', 0, ?, 'user', ?, 0, ?)",
                (i, user, i, text, f"h{i}"),
            )
            tx.execute("INSERT INTO turns_fts (rowid, body) VALUES (?, ?)", (i, text.lower()))
    old.close()

    monkeypatch.setattr(sqlite_module, "MIGRATIONS", migrations_module.MIGRATIONS)
    new = SQLiteStore(path, page_size=4)
    try:
        assert "006_fts_per_user" in new.migrations()
        assert [h.turn_id for h in new.search_bm25("alice", "tapas")] == [1]
        assert [h.turn_id for h in new.search_bm25("bob", "tapas")] == [2]
        # rows written after the migration are searchable too, bookmarks included
        (turn,) = new.add_turns(_turns("alice", ["more tapas tonight"]))
        assert {h.turn_id for h in new.search_bm25("alice", "tapas")} == {1, turn.id}
        new.add_bookmarks("alice", [_bookmark("alice", turn, "tapas")])
        new.add_bookmarks("bob", [_bookmark("bob", new.get_turns("bob", [2])[0], "tapas")])
        assert len(new.search_bookmarks_bm25("alice", "tapas")) == 1
    finally:
        new.close()


def test_a_word_common_only_among_other_users_is_not_capped_for_this_one(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cap check asks the whole table first and the user's rows only for a word common there:
    a word another user says often but this one rarely is ranked over all of this user's matches,
    and the other user's matches of it are still capped."""
    from memsched.store import postgres_base, sqlite_fts

    store.add_turns(_turns("alice", [f"garden party {i}" for i in range(4)]))
    store.add_turns(_turns("bob", [f"garden chores {i}" for i in range(20)]))
    alice_before = [(h.turn_id, h.score) for h in store.search_bm25("alice", "garden", limit=50)]
    bob_all = {h.turn_id for h in store.search_bm25("bob", "garden", limit=50)}
    assert len(alice_before) == 4 and len(bob_all) == 20
    for module in (postgres_base, sqlite_fts):
        monkeypatch.setattr(module, "BM25_CANDIDATES_PER_TERM", 5)
    assert [(h.turn_id, h.score) for h in store.search_bm25("alice", "garden", limit=50)] == alice_before
    bob = store.search_bm25("bob", "garden", limit=50)
    assert sorted(h.turn_id for h in bob) == sorted(bob_all)[-5:]


def test_the_cap_check_asks_every_term_in_one_statement(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which query terms are over the cap is one statement for all of them (a statement per term
    was a GIL hand-off per term under load), then one for the terms common in the table; a long
    message with more terms than one statement holds is searched in a few, with the same hits."""
    from memsched.store import sqlite_fts

    store = SQLiteStore(tmp_path / "m.db")
    words = [f"w{i}x" for i in range(450)]
    store.add_turns(_turns("alice", [" ".join(words[i : i + 9]) for i in range(0, 450, 9)]))
    bob = [t.id for t in store.add_turns(_turns("bob", [f"garden chores {i}" for i in range(20)]))]
    seen: list[str] = []
    store.db.set_trace_callback(seen.append)
    try:
        found = store.search_bm25("alice", " ".join(words), limit=100)
        nth = [s for s in seen if "ORDER BY rowid DESC LIMIT 1 OFFSET" in s]
        assert len(found) == 50 and len(nth) == 3  # 450 terms, 200 a statement
        seen.clear()
        monkeypatch.setattr(sqlite_fts, "BM25_CANDIDATES_PER_TERM", 5)
        hits = store.search_bm25("bob", "garden chores party", limit=50)
        nth = [s for s in seen if "ORDER BY rowid DESC LIMIT 1 OFFSET" in s]
        # every term over the whole table, then the two common ones among bob's rows (two asks each)
        assert len(nth) == 2 and nth[1].count("OFFSET") == 4
    finally:
        store.db.set_trace_callback(None)
        store.close()
    assert sorted(h.turn_id for h in hits) == sorted(bob)[-5:]
