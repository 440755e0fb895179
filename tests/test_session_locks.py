"""Session locks (`LockStore.session_hold`, `SessionLock`) on SQLite and PostgreSQL.

Both: one holder at a time across threads and connections, the busy error on timeout, a dead holder
lets go. PostgreSQL only (advisory locks): waiters are granted in the order they queued, a holder
whose connection dies releases at once (no lease to wait out), the holder is named from any process,
and a pooled lock connection that died is replaced.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from memsched.config import Config
from memsched.errors import StoreError
from memsched.jobs.queue import SessionLock
from memsched.store import Store, open_store
from memsched.store.base import SessionLease
from memsched.testing.clock import FakeClock

WAIT = 60.0  # generous: only for waiting on threads, never asserted on


def wait_until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.01)


def pg(url: str, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(sql, args)
        return [tuple(r) for r in cur.fetchall()] if cur.description is not None else []


def waiting(url: str) -> int:
    """Advisory lock requests of this database that wait in PostgreSQL's lock queue."""
    return int(
        pg(
            url,
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        )[0][0]
    )


def backend_of(url: str, owner: str) -> int:
    """The backend pid of the connection whose holder is `owner` (its application_name)."""
    rows = pg(
        url,
        "SELECT pid FROM pg_stat_activity WHERE application_name = %s AND datname = current_database()",
        (owner,),
    )
    assert len(rows) == 1, rows
    return int(rows[0][0])


# -- both stores -------------------------------------------------------------------------------------


@pytest.mark.usefixtures("backend")
def test_one_holder_at_a_time_across_threads(store: Store) -> None:
    lock = SessionLock(store)
    events: list[str] = []
    errors: list[BaseException] = []

    def turn_loop(name: str) -> None:
        try:
            for _ in range(15):
                with lock.take("u", "s", name, timeout=WAIT):
                    events.append(f"enter {name}")
                    time.sleep(0.001)  # widen the window in which a broken lock would let the other in
                    events.append(f"exit {name}")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=turn_loop, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(events) == 60
    for enter, leave in zip(events[::2], events[1::2], strict=True):
        assert enter.startswith("enter") and leave == enter.replace("enter", "exit")


@pytest.mark.usefixtures("backend")
def test_a_busy_session_times_out_with_the_busy_error(store: Store) -> None:
    lock = SessionLock(store)
    held = lock.take("u", "s", "a", timeout=0)
    assert lock.holder("u", "s") == "a"
    for timeout in (0, 0.2):
        with pytest.raises(StoreError, match=r"session u/s is busy: another turn held its lock for over"):
            lock.take("u", "s", "b", timeout=timeout)
    with pytest.raises(StoreError, match="busy"):  # not re-entrant, even for its own owner
        lock.take("u", "s", "a", timeout=0)
    with lock.take("u", "other", "b", timeout=0):  # other sessions are independent
        assert lock.holder("u", "other") == "b"
    with lock.take("v", "s", "b", timeout=0):  # and other users' sessions of the same name
        pass
    assert lock.holder("u", "s") == "a"  # the failed tries changed nothing
    assert held.renew(30) is True
    assert held.release() is True
    assert held.release() is False and held.renew(30) is False
    assert lock.holder("u", "s") is None
    with lock.take("u", "s", "b", timeout=0):
        assert lock.holder("u", "s") == "b"


@pytest.mark.usefixtures("backend")
def test_held_context_renews_and_releases(store: Store) -> None:
    """The heartbeat renews the lease while the block runs. The lease runs on a fake clock, so a
    loaded machine that delays the heartbeat thread cannot let it lapse: the test waits for a renewal
    to show in the store instead of racing the heartbeat with a sleep."""
    clock = FakeClock()
    lock = SessionLock(store, clock=clock)
    with lock.held("u", "s", lease_seconds=0.06) as owner:
        first = store.lock_holder("u", "s")
        assert first is not None and first[0] == owner
        clock.advance(0.03)  # half the lease: a renewal from now on ends later than the first lease
        deadline = time.monotonic() + WAIT
        renewed = first
        while renewed[1] <= first[1] and not math.isinf(first[1]) and time.monotonic() < deadline:
            time.sleep(0.01)
            found = store.lock_holder("u", "s")
            assert found is not None and found[0] == owner
            renewed = found
        # SQLite: the lease moved on; PostgreSQL: an advisory lock has no lease to run out (inf).
        assert renewed[1] > first[1] or math.isinf(first[1])
        clock.advance(0.05)  # past the first lease: only the renewal keeps it
        assert lock.holder("u", "s") == owner
        with pytest.raises(StoreError, match="busy"), lock.held("u", "s", timeout=0):
            pass
    assert lock.holder("u", "s") is None


def test_a_dead_holders_lock_goes_to_the_next_taker(store: Store, backend: str) -> None:
    clock = FakeClock()
    lock = SessionLock(store, clock=clock)
    dead = lock.take("u", "s", "dead", lease_seconds=3600, timeout=0)
    if backend == "postgres":
        # Its process died, so its connection closed: the lock goes at once, however long a lease
        # would have had to run.
        url = store.url  # type: ignore[attr-defined]
        pg(url, "SELECT pg_terminate_backend(%s)", (backend_of(url, "dead"),))
    else:
        clock.advance(3601)  # it stopped renewing, and the lease ran out
    with lock.take("u", "s", "next", timeout=WAIT):
        assert lock.holder("u", "s") == "next"
        assert dead.renew(3600) is False  # the dead holder cannot take it back...
        assert dead.release() is False  # ...nor release someone else's
        assert lock.holder("u", "s") == "next"
    assert lock.holder("u", "s") is None


# -- PostgreSQL: advisory locks ----------------------------------------------------------------------


@pytest.fixture
def pg_store(pg_url: str) -> Iterator[Store]:
    s = open_store(pg_url)
    yield s
    s.close()


def test_waiters_are_granted_in_the_order_they_queued(pg_store: Store, pg_url: str) -> None:
    """Three waiters (each on its own connection) queue behind a holder in a known order: PostgreSQL's
    lock queue grants them in that order, where polling would grant whoever polls first."""
    lock = SessionLock(pg_store)
    holder = lock.take("u", "s", "holder", timeout=0)
    granted: list[str] = []
    errors: list[BaseException] = []

    def wait_then_hold(name: str) -> None:
        try:
            with lock.take("u", "s", name, timeout=WAIT):
                granted.append(name)
                time.sleep(0.02)  # a later waiter that jumped the queue would get in meanwhile
        except BaseException as exc:
            errors.append(exc)

    threads = []
    for i, name in enumerate(["first", "second", "third"], start=1):
        t = threading.Thread(target=wait_then_hold, args=(name,))
        t.start()
        threads.append(t)
        wait_until(lambda i=i: waiting(pg_url) == i, f"{name} to queue")  # type: ignore[misc]
    holder.release()
    for t in threads:
        t.join(timeout=WAIT)
    assert errors == []
    assert granted == ["first", "second", "third"]


def test_a_waiter_gets_the_lock_when_the_holders_connection_dies(pg_store: Store, pg_url: str) -> None:
    lock = SessionLock(pg_store)
    dead = lock.take("u", "s", "dead", lease_seconds=3600, timeout=0)
    got: list[SessionLease] = []
    errors: list[BaseException] = []

    def wait() -> None:
        try:
            got.append(lock.take("u", "s", "next", timeout=WAIT))
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=wait)
    t.start()
    wait_until(lambda: waiting(pg_url) == 1, "the waiter to queue")
    assert lock.holder("u", "s") == "dead"
    pg(pg_url, "SELECT pg_terminate_backend(%s)", (backend_of(pg_url, "dead"),))
    t.join(timeout=WAIT)
    assert errors == [] and len(got) == 1
    assert lock.holder("u", "s") == "next"
    assert dead.release() is False
    assert got[0].release() is True
    assert lock.holder("u", "s") is None


def test_the_holder_is_named_from_another_process(pg_store: Store, pg_url: str) -> None:
    other = open_store(pg_url)  # another process's store: it knows the holder only from PostgreSQL
    try:
        with SessionLock(pg_store).take("u", "s", "turn-host:123:abcd", timeout=0):
            assert SessionLock(other).holder("u", "s") == "turn-host:123:abcd"
            with pytest.raises(StoreError, match="busy"):
                SessionLock(other).take("u", "s", timeout=0)
        assert SessionLock(other).holder("u", "s") is None
    finally:
        other.close()


def test_a_pooled_lock_connection_that_died_is_replaced(pg_store: Store, pg_url: str) -> None:
    lock = SessionLock(pg_store)
    lock.take("u", "s", "a", timeout=0).release()  # its connection goes back to the pool, idle
    idle = pg(
        pg_url,
        "SELECT pid FROM pg_stat_activity WHERE application_name = 'memsched-locks'"
        " AND datname = current_database()",
    )
    assert len(idle) == 1
    pg(pg_url, "SELECT pg_terminate_backend(%s)", (idle[0][0],))
    with lock.take("u", "s", "b", timeout=WAIT):
        assert lock.holder("u", "s") == "b"


def test_every_lock_connection_pinned_is_a_clear_error(pg_url: str, tmp_path: Path) -> None:
    store = open_store(Config.load(home=tmp_path, database_url=pg_url, pg_lock_connections=1))
    try:
        lock = SessionLock(store)
        with (
            lock.take("u", "s1", timeout=0),
            pytest.raises(StoreError, match="raise MEMSCHED_PG_LOCK_CONNECTIONS"),
        ):
            lock.take("u", "s2", timeout=0.2)
        with lock.take("u", "s2", timeout=0):  # the connection is free again
            pass
    finally:
        store.close()


def test_an_unreachable_database_is_a_clear_error(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from memsched.store import postgres_locks
    from memsched.testing.postgres import with_database

    monkeypatch.setattr(postgres_locks, "_CONNECT_WAIT", 0.5)
    store = open_store(pg_url)  # its lock pool has opened no connection yet
    name = pg(pg_url, "SELECT current_database()")[0][0]
    admin = with_database(pg_url, "postgres")
    pg(admin, f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
    try:
        with pytest.raises(StoreError, match="no new connection to the database could be opened"):
            SessionLock(store).take("u", "s", timeout=0)
    finally:
        pg(admin, f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS true')
        store.close()
    again = open_store(pg_url)  # nothing was left behind
    try:
        with SessionLock(again).take("u", "s", timeout=0):
            pass
    finally:
        again.close()
