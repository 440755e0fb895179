"""PostgreSQL session locks: advisory locks on pinned connections (the SQLite twin, lease rows, is in
`sqlite_jobs.py`).

A hold takes `pg_advisory_lock(key)` on a connection of a small pool of its own and keeps that
connection until it releases. What that buys over a lease row:

- **Arrival order across processes.** A waiter blocks inside PostgreSQL, in the lock's wait queue,
  which grants an exclusive lock first come, first served: turns of one session from many servers
  are served in the order their requests reached the database, not in the order they happen to win
  a poll. The wait is bounded by `lock_timeout` (set to what is left of the caller's timeout).
- **A dead holder lets go at once.** A session-level advisory lock belongs to its connection: when
  the holding process dies (SIGKILL, a lost machine) its connections close and the next waiter gets
  the lock, with no lease to wait out and nothing for `release_owner` to clean up.

What it costs: one connection per session in flight (holding, or waiting behind another process's
turn) for the whole exchange, upstream LLM call included; `MEMSCHED_PG_LOCK_CONNECTIONS` caps them
per process (default 20), and a hold that finds them all pinned waits for one (within
its timeout). These connections must reach PostgreSQL directly or through a session-mode pooler: a
transaction-mode pooler (PgBouncer's default) would hand the lock's backend to someone else.

The key is a stable 64-bit hash of (user id, session id) (the user id carries its tenant); two
sessions whose keys collide (about one pair in 2^64) are merely serialised with each other. The
holder's owner id is its connection's `application_name`, so `pg_stat_activity` and `lock_holder`
show who holds a session (cut to 63 ASCII bytes by PostgreSQL; this process's holders are reported
in full).
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memsched.errors import StoreError
from memsched.store.base import SessionLease, session_busy
from memsched.store.postgres_base import PgMixin

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

_CONNECT_WAIT = 10.0  # seconds a hold may wait for a new lock connection to open
_IDLE_NAME = "memsched-locks"  # application_name of a pooled lock connection that holds nothing


def session_key(user_id: str, session_id: str) -> int:
    """The advisory lock key of a session: a signed 64-bit hash, the same in every process."""
    digest = hashlib.blake2b(
        f"{user_id}\x00{session_id}".encode(), digest_size=8, person=b"memsched-session"
    ).digest()
    return int.from_bytes(digest, "big", signed=True)


class PgLocksMixin(PgMixin):
    """Session locks of PostgresStore (see the module docstring)."""

    _lock_pool: ConnectionPool[Any]
    _lock_pool_size: int
    # Backend pid -> owner of this process's holds, so `lock_holder` names them in full.
    _lock_owners: dict[int, str]
    _lock_owners_mutex: threading.Lock

    def session_hold(
        self,
        user_id: str,
        session_id: str,
        owner: str,
        *,
        timeout: float,
        lease_seconds: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> SessionLease:
        """Take the session's advisory lock on a pinned connection, waiting in PostgreSQL's lock
        queue for up to `timeout` seconds (0: one try). `lease_seconds` and `clock` do not apply."""
        import psycopg
        from psycopg_pool import PoolTimeout

        key = session_key(user_id, session_id)
        deadline = time.monotonic() + max(0.0, timeout)
        for attempt in (1, 2):
            try:
                conn = self._lock_pool.getconn(timeout=self._lock_conn_wait(deadline))
            except PoolTimeout:
                if self._lock_pool.get_stats().get("pool_size", 0) < self._lock_pool_size:
                    raise StoreError(
                        f"session {user_id}/{session_id} could not be locked: no new connection to the"
                        " database could be opened for it; is PostgreSQL reachable?"
                    ) from None
                raise StoreError(
                    f"session {user_id}/{session_id} could not be locked within {timeout:g}s: all"
                    f" {self._lock_pool_size} session-lock connections of this process are pinned by"
                    " sessions in flight; raise MEMSCHED_PG_LOCK_CONNECTIONS"
                ) from None
            try:
                taken = _take(conn, key, owner, deadline, try_once=timeout <= 0)
            except psycopg.OperationalError as exc:
                # The pooled connection had died (a server restart, an idle timeout): one fresh try.
                _discard(self._lock_pool, conn)
                if attempt == 2:
                    raise StoreError(f"session {user_id}/{session_id} could not be locked: {exc}") from exc
                continue
            except BaseException:
                # Interrupted mid-wait: the lock may have been granted after all, so the connection
                # (and whatever it holds) is closed rather than pooled.
                _discard(self._lock_pool, conn)
                raise
            if not taken:
                self._lock_pool.putconn(conn)
                raise session_busy(user_id, session_id, timeout)
            pid = conn.info.backend_pid
            with self._lock_owners_mutex:
                self._lock_owners[pid] = owner
            return _AdvisoryLease(self, conn, key, pid, user_id, session_id, owner)
        raise AssertionError("unreachable")

    def _lock_conn_wait(self, deadline: float) -> float:
        """How long to wait for a lock connection: what is left of the caller's timeout, or the time
        a new connection takes to open when the pool may still grow (a one-try hold needs one too)."""
        left = deadline - time.monotonic()
        stats = self._lock_pool.get_stats()
        if stats.get("pool_available", 0) or stats.get("pool_size", 0) < self._lock_pool_size:
            left = max(left, _CONNECT_WAIT)
        return max(0.001, left)

    def lock_holder(self, user_id: str, session_id: str) -> tuple[str, float] | None:
        """(owner, inf) of the session's holder in any process, from `pg_locks`, or None."""
        key = session_key(user_id, session_id)
        row = self._one(
            "SELECT a.pid, a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
            " WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1"
            " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " AND l.classid::int8 = %s AND l.objid::int8 = %s",
            ((key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF),
        )
        if row is None:
            return None
        with self._lock_owners_mutex:
            owner = self._lock_owners.get(int(row[0]))
        return (owner or str(row[1]) or f"pid {row[0]}", math.inf)

    def _lock_released(self, pid: int) -> None:
        with self._lock_owners_mutex:
            self._lock_owners.pop(pid, None)


def _take(conn: Any, key: int, owner: str, deadline: float, *, try_once: bool) -> bool:
    """Lock `key` on `conn`: True when held, False when `deadline` passed first."""
    from psycopg import errors

    left_ms = max(1, int((deadline - time.monotonic()) * 1000))
    conn.execute(
        "SELECT set_config('application_name', %s, false), set_config('lock_timeout', %s, false)",
        (owner, f"{left_ms}ms"),
    )
    if try_once:
        return bool(conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0])
    try:
        conn.execute("SELECT pg_advisory_lock(%s)", (key,))
    except errors.LockNotAvailable:  # lock_timeout: still held by another session
        return False
    return True


def _discard(pool: ConnectionPool[Any], conn: Any) -> None:
    """Close `conn` (ending its backend, and any lock it holds) and give its slot back to the pool."""
    try:
        conn.close()
    finally:
        pool.putconn(conn)


class _AdvisoryLease(SessionLease):
    """A session's advisory lock and the connection it lives on, pinned until `release`."""

    __slots__ = ("_conn", "_key", "_mutex", "_pid", "_store")

    def __init__(
        self,
        store: PgLocksMixin,
        conn: Any,
        key: int,
        pid: int,
        user_id: str,
        session_id: str,
        owner: str,
    ) -> None:
        super().__init__(user_id, session_id, owner)
        self._store = store
        self._conn: Any = conn
        self._key = key
        self._pid = pid
        self._mutex = threading.Lock()

    def renew(self, lease_seconds: float) -> bool:
        """True while the connection (so the lock) lives: there is no lease to extend. The round trip
        also keeps an idle-connection timeout or a middlebox from cutting a long hold."""
        import psycopg

        with self._mutex:
            if self._conn is None:
                return False
            try:
                self._conn.execute("SELECT 1")
            except psycopg.Error:
                return False
            return True

    def release(self) -> bool:
        import psycopg

        with self._mutex:
            conn, self._conn = self._conn, None
        if conn is None:
            return False
        self._store._lock_released(self._pid)
        try:
            row = conn.execute(
                "SELECT pg_advisory_unlock(%s), set_config('application_name', %s, false)",
                (self._key, _IDLE_NAME),
            ).fetchone()
        except psycopg.Error:
            _discard(self._store._lock_pool, conn)  # a connection that died took the lock with it
            return False
        self._store._lock_pool.putconn(conn)
        return bool(row[0])
