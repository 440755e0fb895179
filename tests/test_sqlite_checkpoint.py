"""WAL checkpoints run on a background thread, never inside a commit (a turn's commit used to pay for
copying the log now and then: `record` p99 10-13 ms against a p50 of 2; BENCHMARKS.md "P0 in session 20")."""

from __future__ import annotations

import os
import time
from pathlib import Path

from memsched.store.sqlite import SQLiteStore


def _grow(store: SQLiteStore, rows: int) -> None:
    with store.transaction() as tx:
        tx.execute("CREATE TABLE IF NOT EXISTS filler (x BLOB)")
    for _ in range(rows // 100):
        with store.transaction() as tx:
            for _ in range(100):
                tx.execute("INSERT INTO filler VALUES (?)", (os.urandom(2000),))


def test_commits_leave_the_log_to_the_checkpoint_thread(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    try:
        assert store.db.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)
        db_file = tmp_path / "m.db"
        before = db_file.stat().st_size
        with store.checkpoint_lock:  # the background thread stands aside
            _grow(store, 2000)  # ~4 MB: past SQLite's own automatic checkpoint of 1,000 pages
            time.sleep(0.5)
            # No commit copied the log into the database file.
            assert db_file.stat().st_size == before
        deadline = time.monotonic() + 30
        while db_file.stat().st_size < before + 3_000_000 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert db_file.stat().st_size >= before + 3_000_000  # the thread checkpointed it
    finally:
        store.close()


def test_a_closed_store_is_left_alone(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    _grow(store, 200)
    store.close()
    assert store.checkpoint_connection() is None


def test_a_forget_waits_out_another_connections_checkpoint(tmp_path: Path) -> None:
    """Another connection's checkpoint in progress (`memsched forget` beside a running server, whose
    background thread checkpoints the same file) made a forget's TRUNCATE fail at once: SQLite does not
    call the busy handler for the checkpointer lock, so the WAL kept the forgotten text
    (`wal_truncated: false`). Here another connection holds that lock while it waits for a reader."""
    import sqlite3
    import threading

    path = tmp_path / "m.db"
    store = SQLiteStore(path)
    try:
        with store.checkpoint_lock:  # the background thread stands aside
            _grow(store, 200)
            reader = sqlite3.connect(path, check_same_thread=False)
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM filler").fetchone()  # pins the WAL
            other = sqlite3.connect(path, check_same_thread=False)
            other.execute("PRAGMA busy_timeout = 3000")
            started = threading.Event()

            def checkpoint() -> None:
                started.set()
                other.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()  # holds the lock, waits

            t = threading.Thread(target=checkpoint)
            t.start()
            started.wait()
            time.sleep(0.3)
            threading.Timer(0.5, reader.rollback).start()  # the reader finishes a little later
        truncated = store.truncate_wal()  # what a forget's purge does last
        t.join()
        assert truncated is True
        assert os.path.getsize(str(path) + "-wal") == 0
        reader.close()
        other.close()
    finally:
        store.close()
