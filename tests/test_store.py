from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from conftest import raw_sql
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memsched.errors import InputError, StoreError
from memsched.model import Turn
from memsched.store import Store
from memsched.store.sqlite import SQLiteStore

texts = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=200
)
stamps = st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC))


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(
    content=texts,
    role=st.sampled_from(["user", "assistant", "system"]),
    when=stamps,
    # Valid text (no NUL, no lone surrogates: those cannot be encoded), as for the content.
    speaker=st.none()
    | st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
        min_size=1,
        max_size=20,
    ),
    ext=st.none()
    | st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=10),
)
def test_turn_round_trip(
    store: Store, content: str, role: str, when: datetime, speaker: str | None, ext: str | None
) -> None:
    turn = Turn(
        user_id="u",
        session_id="s",
        role=role,
        content=content,
        created_at=when,
        speaker=speaker,
        external_id=ext,
        meta={"k": [1, "二"]},
    )
    (stored,) = store.add_turns([turn])
    (back,) = store.get_turns("u", [stored.id])
    assert back.content == content
    assert back.role == role
    assert back.speaker == speaker
    assert back.external_id == ext
    assert back.meta == {"k": [1, "二"]}
    assert back.created_at.tzinfo is UTC
    assert abs((back.created_at - when).total_seconds()) < 0.001
    # Read turns skip the dataclass's __init__ (`Turn.stored`): every field is what it would set.
    assert back == replace(back)


def test_pages_are_fixed_groups_per_session(store: Store) -> None:
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    turns = [Turn("u", "a", "user", f"a{i}", created_at=t0 + timedelta(minutes=i)) for i in range(10)]
    turns += [
        Turn("u", "b", "user", f"b{i}", created_at=t0 + timedelta(hours=1, minutes=i)) for i in range(3)
    ]
    store.add_turns(turns)
    pages = store.pages("u")
    assert [(p.session_id, p.page_no, p.turn_count) for p in pages] == [
        ("a", 0, 4),
        ("a", 1, 4),
        ("a", 2, 2),
        ("b", 0, 3),
    ]
    assert [t.content for t in store.page_turns("u", pages[1].id)] == ["a4", "a5", "a6", "a7"]
    assert [t.seq for t in store.session_turns("u", "a")] == list(range(10))
    assert [t.content for t in store.session_turns("u", "a", last=2)] == ["a8", "a9"]


def test_migrations_recorded_and_wal(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    s = SQLiteStore(path)
    assert s.migrations()[0] == "001_core"
    assert s.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    s.add_turns([Turn("u", "s", "user", "hello")])
    s.close()
    again = SQLiteStore(path)  # reopening applies nothing twice and keeps the data
    assert again.turn_count("u") == 1
    assert again.migrations() == s.migrations()
    again.close()


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "n.db"
    SQLiteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO migrations VALUES ('999_future', 0)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer memsched"):
        SQLiteStore(path)


def test_bad_turns_rejected_and_nothing_partial(store: Store) -> None:
    good = Turn("u", "s", "user", "kept")
    store.add_turns([good])
    with pytest.raises(InputError, match="role"):
        store.add_turns([Turn("u", "s", "user", "would be lost"), Turn("u", "s", "robot", "x")])  # type: ignore[arg-type]
    assert [t.content for t in store.iter_turns("u")] == ["kept"]


def test_skip_duplicates(store: Store) -> None:
    when = datetime(2024, 5, 1, tzinfo=UTC)
    first = store.add_turns([Turn("u", "s", "user", "same", created_at=when)], skip_duplicates=True)
    second = store.add_turns([Turn("u", "s", "user", "same", created_at=when)], skip_duplicates=True)
    assert len(first) == 1 and second == []
    assert store.turn_count("u") == 1


def test_delete_removes_text_index_and_vectors(store: Store) -> None:
    a, b = store.add_turns([Turn("u", "s", "user", "zebra crossing"), Turn("u", "s", "user", "lion king")])
    store.put_vectors(
        "u", "m", [(a.hash, np.ones(4, dtype=np.float32)), (b.hash, np.ones(4, dtype=np.float32))]
    )
    assert store.delete_turns("u", [a.id]) == 1
    assert store.search_bm25("u", "zebra") == []
    ids, _ = store.vectors("u", "m")
    assert list(ids) == [b.id]
    assert raw_sql(store, "SELECT count(*) FROM embeddings")[0][0] == 1


def test_delete_user_is_total_and_scoped(store: Store) -> None:
    store.add_turns([Turn("alice", "s", "user", "alpha secret"), Turn("bob", "s", "user", "alpha public")])
    assert store.delete_user("alice") == 1
    assert not store.has_user("alice")
    assert store.search_bm25("alice", "alpha") == []
    assert len(store.search_bm25("bob", "alpha")) == 1
    for table in ("turns", "sessions", "pages"):
        assert raw_sql(store, f"SELECT count(*) FROM {table} WHERE user_id = 'alice'")[0][0] == 0


def test_memory_database_shared_between_threads() -> None:
    import threading

    s = SQLiteStore(":memory:")
    s.add_turns([Turn("u", "s", "user", "from main")])
    seen: list[int] = []
    th = threading.Thread(target=lambda: seen.append(s.turn_count("u")))
    th.start()
    th.join()
    assert seen == [1]


def test_sqlite_writers_of_one_process_queue_in_process(tmp_path: Path) -> None:
    """Concurrent write transactions of one process wait for each other in the store, not in SQLite's
    busy handler: with that handler off (busy_timeout 0), none of them fails with "database is locked"."""
    import threading
    import time

    s = SQLiteStore(tmp_path / "w.db")
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            s.db.execute("PRAGMA busy_timeout = 0")  # this thread's connection: fail at once if locked
            for i in range(20):
                with s.transaction() as tx:
                    tx.execute("INSERT INTO meta VALUES (?, ?)", (f"w{n}-{i}", "x"))
                    time.sleep(0.0005)  # hold the write lock a moment, so that writers overlap
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    (count,) = s.db.execute("SELECT COUNT(*) FROM meta WHERE key LIKE 'w%'").fetchone()
    assert count == 8 * 20
    # A nested transaction still fails in SQLite (the lock is re-entrant), it does not hang.
    with pytest.raises(sqlite3.OperationalError), s.transaction(), s.transaction():
        pass
    s.close()


def test_a_turn_of_a_known_session_and_page_costs_four_statements(tmp_path: Path) -> None:
    """Users, sessions and pages are inserted when new only: a turn of a known session and page is
    the seq update, the page lookup, the turn and its full-text row; seqs and pages are as before."""
    store = SQLiteStore(tmp_path / "m.db", page_size=4)
    store.add_turns([Turn("u", "s", "user", "t0")])
    seen: list[str] = []
    store.db.set_trace_callback(lambda sql: seen.append(sql))
    for i in range(1, 6):  # seq 4 opens page 1
        store.add_turns([Turn("u", "s", "user", f"t{i}")])
    store.db.set_trace_callback(None)
    # SQLite traces a statement again for each step of a trigger it fires (the turn count kept in
    # `users`, migration 015): those repeats are not statements of ours.
    own = [
        s
        for n, s in enumerate(seen)
        if not s.startswith("--") and s not in ("BEGIN IMMEDIATE", "COMMIT") and (n == 0 or s != seen[n - 1])
    ]
    assert len(own) == 4 * 5 + 1, own
    assert [t.seq for t in store.session_turns("u", "s")] == list(range(6))
    assert [(p.page_no, p.turn_count) for p in store.pages("u")] == [(0, 4), (1, 2)]
    # A new session of a known user, and a new user, get their rows as before.
    store.add_turns([Turn("u", "s2", "user", "other session"), Turn("v", "s", "user", "other user")])
    assert [s.id for s in store.sessions("u")] == ["s", "s2"] and store.has_user("v")
    assert [(s.id, s.turn_count) for s in store.sessions("v")] == [("s", 1)]
    store.close()


def test_turn_count_is_kept_through_inserts_deletes_and_a_forgotten_user(tmp_path: Path) -> None:
    """`turn_count` reads the count the triggers keep (migration 015), and it follows every way turns
    come and go; a user's row, count included, goes with the user."""
    store = SQLiteStore(tmp_path / "m.db")
    ids = [t.id for t in store.add_turns([Turn("u", "s", "user", f"t{i}") for i in range(5)])]
    store.add_turns([Turn("v", "s", "user", "other")])
    assert store.turn_count("u") == 5 and store.turn_count("v") == 1 and store.turn_count("w") == 0
    store.delete_turns("u", [i for i in ids[:2] if i is not None])
    assert store.turn_count("u") == 3
    store.delete_user("v")
    assert store.turn_count("v") == 0
    assert store.db.execute("SELECT count(*) FROM users WHERE id = 'v'").fetchone()[0] == 0
    counted = store.db.execute("SELECT count(*) FROM turns WHERE user_id = 'u'").fetchone()[0]
    assert store.turn_count("u") == counted == 3
    store.close()


def test_migration_015_counts_the_turns_already_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store made before migration 015 gets each user's count from the turns it holds."""
    from memsched.store import migrations as migrations_module
    from memsched.store import sqlite as sqlite_module

    before = [m for m in migrations_module.MIGRATIONS if m[0] != "015_turn_counts"]
    monkeypatch.setattr(sqlite_module, "MIGRATIONS", before)
    old = SQLiteStore(tmp_path / "m.db")
    old.add_turns([Turn("u", "s", "user", f"t{i}") for i in range(4)] + [Turn("v", "s", "user", "x")])
    old.close()
    monkeypatch.setattr(sqlite_module, "MIGRATIONS", migrations_module.MIGRATIONS)
    store = SQLiteStore(tmp_path / "m.db")
    assert "015_turn_counts" in store.migrations()
    assert (store.turn_count("u"), store.turn_count("v")) == (4, 1)
    store.add_turns([Turn("u", "s", "user", "t4")])
    assert store.turn_count("u") == 5
    store.close()
