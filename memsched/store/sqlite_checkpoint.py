"""WAL checkpoints off the commit path.

SQLite's automatic checkpoint runs inside whichever commit pushes the write-ahead log past 1,000
pages: with the background worker writing vectors, that is now and then a turn's own commit, which
then pays for copying the log into the database file and syncing it. Connections of a file store
switch the automatic checkpoint off and one process-wide thread checkpoints instead (PASSIVE: it
never blocks a reader or a writer), every 0.2 s when the log was written since the last time.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import weakref
from typing import Protocol

log = logging.getLogger("memsched.store")

INTERVAL = 0.2  # seconds between looks at the logs


class Checkpointable(Protocol):
    path: str
    checkpoint_lock: threading.Lock  # held by anyone else checkpointing this store (a forget's TRUNCATE)

    def checkpoint_connection(self) -> sqlite3.Connection | None: ...


_stores: weakref.WeakSet[Checkpointable] = weakref.WeakSet()
_lock = threading.Lock()
_thread: threading.Thread | None = None


def register(store: Checkpointable) -> None:
    """Checkpoint `store`'s log from the background thread from now on (until it is collected)."""
    global _thread
    with _lock:
        _stores.add(store)
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_run, name="memsched-wal-checkpoint", daemon=True)
            _thread.start()


def _wal_stamp(store: Checkpointable) -> int | None:
    try:
        return os.stat(store.path + "-wal").st_mtime_ns
    except OSError:
        return None


def _run() -> None:
    seen: dict[int, int] = {}  # id(store) -> the log's mtime when last checkpointed
    stop = threading.Event()
    while not stop.wait(INTERVAL):
        with _lock:
            stores = list(_stores)
        for store in stores:
            stamp = _wal_stamp(store)
            if stamp is None or seen.get(id(store)) == stamp:
                continue  # nothing written since the last checkpoint
            if not store.checkpoint_lock.acquire(blocking=False):
                continue  # a forget is truncating the log
            try:
                conn = store.checkpoint_connection()
                if conn is not None:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    seen[id(store)] = stamp
            except sqlite3.Error as exc:  # closed meanwhile, or busy: the next look tries again
                log.debug("WAL checkpoint of %s skipped: %s", store.path, exc)
            finally:
                store.checkpoint_lock.release()
        live = {id(s) for s in stores}
        for key in [k for k in seen if k not in live]:
            del seen[key]
        del stores
