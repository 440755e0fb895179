"""SQLite part of the durable job queue and session leases (issue: scheduler runtime).

All queue SQL lives here; `memsched.jobs.queue` decides policy (backoff, deferral, what a row means).
Every write that must be atomic with a read (claim, fail, lock takeover) runs under BEGIN IMMEDIATE,
which in SQLite serialises writers across threads and processes: that is the whole concurrency story.
Times are passed in as epoch seconds so the caller's clock (a fake one in tests) is the only clock.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from memsched.store.base import JOB_COLUMNS, SessionLease, Tx, session_busy
from memsched.store.sqlite_base import SQLiteMixin, SQLiteTx, run_script, sqlite_tx

_SELECT = ", ".join(JOB_COLUMNS)
_LOCK_POLL = 0.01  # seconds between tries of a busy session lease

# The jobs that hold up later `ordered` jobs of their (user, session): those not yet finished. A dead
# job does not block its chain (it would stall the session forever); `jobs retry` re-queues it.
_UNFINISHED = "status IN ('queued', 'running')"


def m002_jobs(db: sqlite3.Connection) -> None:
    run_script(
        db,
        """
        CREATE TABLE jobs (
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL,
            user_id TEXT NOT NULL,
            session_id TEXT,
            payload TEXT NOT NULL DEFAULT '{}',
            priority INTEGER NOT NULL DEFAULT 2,
            status TEXT NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'done', 'dead')),
            attempts INTEGER NOT NULL DEFAULT 0,
            max_attempts INTEGER NOT NULL DEFAULT 5,
            run_after REAL NOT NULL,
            last_error TEXT,
            ordered INTEGER NOT NULL DEFAULT 0,
            lease_owner TEXT,
            lease_until REAL,
            created_at REAL NOT NULL,
            finished_at REAL,
            dedupe_key TEXT
        );
        -- Claim order (highest priority, i.e. lowest value, first, then oldest); also finds the few
        -- running jobs whose lease ran out, and counts per status.
        CREATE INDEX jobs_claim ON jobs(status, priority, id);
        -- "Is an earlier job of this session's ordered chain unfinished?"
        CREATE INDEX jobs_chain ON jobs(user_id, session_id, id)
            WHERE ordered = 1 AND status IN ('queued', 'running');
        -- The P1 barrier (pending work of a user/session) and forgetting a user.
        CREATE INDEX jobs_user ON jobs(user_id, session_id, status, priority);
        CREATE INDEX jobs_dedupe ON jobs(kind, user_id, dedupe_key)
            WHERE dedupe_key IS NOT NULL AND status = 'queued';
        CREATE TABLE session_locks (
            user_id TEXT NOT NULL,
            session_id TEXT NOT NULL,
            owner TEXT NOT NULL,
            lease_until REAL NOT NULL,
            PRIMARY KEY (user_id, session_id)
        );
        """,
    )


def _row(cur: sqlite3.Cursor, row: tuple[Any, ...] | None) -> dict[str, Any] | None:
    if row is None:
        return None
    out = dict(zip((d[0] for d in cur.description), row, strict=True))
    out["payload"] = json.loads(out["payload"]) if out["payload"] else {}
    out["ordered"] = bool(out["ordered"])
    return out


class JobsMixin(SQLiteMixin):
    """Queue and lease methods of SQLiteStore. Rows go in and out as plain dicts keyed by `JOB_COLUMNS`."""

    _jobs_cond: threading.Condition

    # -- jobs: writing -------------------------------------------------------------------------------

    def jobs_enqueue(self, tx: Tx, rows: Sequence[dict[str, Any]]) -> list[int]:
        """Insert job rows inside the open transaction `tx`; returns one id per row, in order.

        A row with a `dedupe_key` is not inserted when a *queued* job with the same (kind, user_id,
        dedupe_key) exists; that job's id is returned instead. A running job does not count: it may
        already have read the state the new job is meant to see.
        """
        tx = sqlite_tx(tx)
        ids: list[int] = []
        for r in rows:
            if r.get("dedupe_key") is not None:
                found = tx.execute(
                    "SELECT id FROM jobs WHERE kind = ? AND user_id = ? AND dedupe_key = ?"
                    " AND status = 'queued' ORDER BY id LIMIT 1",
                    (r["kind"], r["user_id"], r["dedupe_key"]),
                ).fetchone()
                if found is not None:
                    ids.append(int(found[0]))
                    continue
            cur = tx.execute(
                "INSERT INTO jobs (kind, user_id, session_id, payload, priority, status, attempts,"
                " max_attempts, run_after, ordered, created_at, dedupe_key)"
                " VALUES (?, ?, ?, ?, ?, 'queued', 0, ?, ?, ?, ?, ?)",
                (
                    r["kind"],
                    r["user_id"],
                    r["session_id"],
                    json.dumps(r["payload"], ensure_ascii=False, sort_keys=True),
                    int(r["priority"]),
                    int(r["max_attempts"]),
                    float(r["run_after"]),
                    1 if r["ordered"] else 0,
                    float(r["created_at"]),
                    r.get("dedupe_key"),
                ),
            )
            ids.append(int(cur.lastrowid or 0))
        self.jobs_wake()
        return ids

    def jobs_claim(
        self,
        owner: str,
        *,
        now: float,
        lease_until: float,
        kinds: Sequence[str] | None = None,
        max_priority: int | None = None,
    ) -> dict[str, Any] | None:
        """Atomically take the next runnable job for `owner`, or None when nothing is runnable.

        First, running jobs whose lease ran out go back to the queue (their worker died or stalled);
        that counts as a failed attempt, so a job that kills its worker every time ends up dead rather
        than looping. Then the next queued job is leased: lowest priority value, then lowest id; not
        before its `run_after`; an `ordered` job only when no earlier job of its (user, session) chain
        is unfinished. `max_priority` skips unordered jobs of a larger priority value (ordered ones may
        hold up their session's chain, so they are never deferred).
        """
        with self.transaction() as tx:
            self._jobs_reap(tx, now)
            sql = (
                f"SELECT j.id FROM jobs j WHERE j.status = 'queued' AND j.run_after <= ?"
                f" AND (j.ordered = 0 OR NOT EXISTS (SELECT 1 FROM jobs b WHERE b.ordered = 1"
                f" AND b.{_UNFINISHED} AND b.user_id = j.user_id AND b.session_id IS j.session_id"
                f" AND b.id < j.id))"
            )
            args: list[Any] = [now]
            if kinds is not None:
                kinds = list(kinds)
                if not kinds:
                    return None
                sql += f" AND j.kind IN ({','.join('?' * len(kinds))})"
                args.extend(kinds)
            if max_priority is not None:
                sql += " AND (j.priority <= ? OR j.ordered = 1)"
                args.append(max_priority)
            sql += " ORDER BY j.priority, j.id LIMIT 1"
            found = tx.execute(sql, args).fetchone()
            if found is None:
                return None
            cur = tx.execute(
                f"UPDATE jobs SET status = 'running', lease_owner = ?, lease_until = ? WHERE id = ?"
                f" RETURNING {_SELECT}",
                (owner, lease_until, found[0]),
            )
            return _row(cur, cur.fetchone())

    def _jobs_reap(self, tx: SQLiteTx, now: float) -> int:
        cur = tx.execute(
            "UPDATE jobs SET"
            " status = CASE WHEN attempts + 1 >= max_attempts THEN 'dead' ELSE 'queued' END,"
            " finished_at = CASE WHEN attempts + 1 >= max_attempts THEN ? ELSE NULL END,"
            " attempts = attempts + 1,"
            " last_error = 'lease of ' || coalesce(lease_owner, '?')"
            " || ' expired: the worker died or stalled',"
            " lease_owner = NULL, lease_until = NULL, run_after = ?"
            " WHERE status = 'running' AND lease_until < ?",
            (now, now, now),
        )
        return cur.rowcount

    def lease_owners(self) -> list[str]:
        """Every owner holding a running job's lease or a session lock (operator view, all users)."""
        rows = self.db.execute(
            "SELECT lease_owner FROM jobs WHERE status = 'running' AND lease_owner IS NOT NULL"
            " UNION SELECT owner FROM session_locks"
        )
        return sorted({str(r[0]) for r in rows})

    def release_owner(self, owner: str, *, now: float) -> int:
        """Give back what a dead `owner` held: its running jobs are queued again (as an expired lease
        would), its session locks are released. Returns how many rows changed."""
        with self.transaction() as tx:
            n = tx.execute(
                "UPDATE jobs SET"
                " status = CASE WHEN attempts + 1 >= max_attempts THEN 'dead' ELSE 'queued' END,"
                " finished_at = CASE WHEN attempts + 1 >= max_attempts THEN ? ELSE NULL END,"
                " attempts = attempts + 1,"
                " last_error = 'the process of ' || lease_owner || ' died (found at restart)',"
                " lease_owner = NULL, lease_until = NULL, run_after = ?"
                " WHERE status = 'running' AND lease_owner = ?",
                (now, now, owner),
            ).rowcount
            n += tx.execute("DELETE FROM session_locks WHERE owner = ?", (owner,)).rowcount
            return n

    def jobs_renew(self, job_id: int, owner: str, lease_until: float) -> bool:
        """Extend the lease of a job `owner` is running. False when the lease was lost."""
        with self.transaction() as tx:
            cur = tx.execute(
                "UPDATE jobs SET lease_until = ? WHERE id = ? AND status = 'running' AND lease_owner = ?",
                (lease_until, job_id, owner),
            )
            return cur.rowcount == 1

    def jobs_complete(self, job_id: int, *, now: float) -> dict[str, Any] | None:
        """Mark a job done, whoever holds it now: its work has been done (jobs are at-least-once)."""
        with self.transaction() as tx:
            cur = tx.execute(
                f"UPDATE jobs SET status = 'done', finished_at = ?, lease_owner = NULL, lease_until = NULL"
                f" WHERE id = ? AND status != 'done' RETURNING {_SELECT}",
                (now, job_id),
            )
            return _row(cur, cur.fetchone())

    def jobs_fail(
        self,
        job_id: int,
        owner: str | None,
        *,
        now: float,
        error: str,
        backoff: Callable[[int], float],
        permanent: bool = False,
    ) -> dict[str, Any] | None:
        """Record a failed attempt of a job `owner` holds: re-queue it `backoff(attempts)` seconds later,
        or mark it dead after its last attempt (or at once when `permanent`).

        Returns the updated row, or None when `owner` no longer holds the job (its lease expired and
        the reaper already counted the attempt). `owner=None` fails the job whoever holds it.
        """
        with self.transaction() as tx:
            row = tx.execute(
                "SELECT attempts, max_attempts, status, lease_owner FROM jobs WHERE id = ?", (job_id,)
            ).fetchone()
            if row is None:
                return None
            attempts, max_attempts, status, lease_owner = row
            if status != "running" or (owner is not None and lease_owner != owner):
                return None
            attempts += 1
            dead = permanent or attempts >= max_attempts
            cur = tx.execute(
                f"UPDATE jobs SET status = ?, attempts = ?, last_error = ?, run_after = ?, finished_at = ?,"
                f" lease_owner = NULL, lease_until = NULL WHERE id = ? RETURNING {_SELECT}",
                (
                    "dead" if dead else "queued",
                    attempts,
                    error,
                    now if dead else now + backoff(attempts),
                    now if dead else None,
                    job_id,
                ),
            )
            return _row(cur, cur.fetchone())

    def jobs_retry(self, job_id: int, *, now: float) -> bool:
        """Put a dead job back in the queue with its attempts reset; False unless it was dead."""
        with self.transaction() as tx:
            cur = tx.execute(
                "UPDATE jobs SET status = 'queued', attempts = 0, run_after = ?, finished_at = NULL"
                " WHERE id = ? AND status = 'dead'",
                (now, job_id),
            )
            return cur.rowcount == 1

    def jobs_purge(self, *, before: float, statuses: Sequence[str] = ("done",)) -> int:
        """Delete finished jobs (by default only done ones) that finished before `before`."""
        statuses = [s for s in statuses if s in ("done", "dead")]
        if not statuses:
            return 0
        with self.transaction() as tx:
            cur = tx.execute(
                f"DELETE FROM jobs WHERE status IN ({','.join('?' * len(statuses))}) AND finished_at < ?",
                (*statuses, before),
            )
            return cur.rowcount

    def jobs_delete_user(self, tx: Tx, user_id: str) -> int:
        """Delete every job and session lock of a user inside `tx` (payloads may quote their words)."""
        tx = sqlite_tx(tx)
        tx.execute("DELETE FROM session_locks WHERE user_id = ?", (user_id,))
        return tx.execute("DELETE FROM jobs WHERE user_id = ?", (user_id,)).rowcount

    # -- jobs: reading -------------------------------------------------------------------------------

    def jobs_get(self, job_id: int) -> dict[str, Any] | None:
        cur = self.db.execute(f"SELECT {_SELECT} FROM jobs WHERE id = ?", (job_id,))
        return _row(cur, cur.fetchone())

    def jobs_list(
        self, *, status: str | None = None, user_id: str | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        """Jobs newest first, optionally of one status and/or user."""
        sql = f"SELECT {_SELECT} FROM jobs"
        where: list[str] = []
        args: list[Any] = []
        if status is not None:
            where.append("status = ?")
            args.append(status)
        if user_id is not None:
            where.append("user_id = ?")
            args.append(user_id)
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC LIMIT ?"
        args.append(limit)
        cur = self.db.execute(sql, args)
        return [r for r in (_row(cur, t) for t in cur.fetchall()) if r is not None]

    def jobs_pending(self, user_id: str, session_id: str | None = None, max_priority: int = 1) -> int:
        """Queued or running jobs of the user at priority <= `max_priority`.

        With a session, the session's jobs and the user-wide ones (no session) count: a user-wide
        change (a new name) must land before the next turn of any session.
        """
        sql = (
            "SELECT count(*) FROM jobs WHERE user_id = ? AND status IN ('queued', 'running')"
            " AND priority <= ?"
        )
        args: list[Any] = [user_id, max_priority]
        if session_id is not None:
            sql += " AND (session_id = ? OR session_id IS NULL)"
            args.append(session_id)
        return int(self.db.execute(sql, args).fetchone()[0])

    def jobs_depth(self) -> dict[int, int]:
        """Queued jobs per priority."""
        rows = self.db.execute(
            "SELECT priority, count(*) FROM jobs WHERE status = 'queued' GROUP BY priority"
        )
        return {int(p): int(n) for p, n in rows}

    def jobs_counts(self) -> dict[str, int]:
        """Jobs per status."""
        return {
            str(s): int(n) for s, n in self.db.execute("SELECT status, count(*) FROM jobs GROUP BY status")
        }

    def jobs_oldest_queued(self) -> float | None:
        """`created_at` of the oldest queued job (for a queue-lag gauge), or None when none is queued."""
        row = self.db.execute("SELECT min(created_at) FROM jobs WHERE status = 'queued'").fetchone()
        return None if row is None or row[0] is None else float(row[0])

    # -- waking idle workers -----------------------------------------------------------------------------

    def jobs_wait(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds, or until a job is queued in this process (other processes'
        jobs are seen at the next poll: SQLite has no notifications)."""
        with self._jobs_cond:
            return self._jobs_cond.wait(timeout)

    def jobs_wake(self) -> None:
        with self._jobs_cond:
            self._jobs_cond.notify_all()

    # -- session locks -------------------------------------------------------------------------------

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
        """Take the session's lease row for `owner`, polling every 10 ms for up to `timeout` seconds.

        A lease row, not a lock held by a connection: SQLite has no lock a waiter could queue on, and
        a server's threads share one file, so a row that a live holder renews and a dead one's runs out
        (or `release_owner` takes back at restart) is what survives a killed process. Waiters are not
        ordered here; the scheduler orders a process's own turns before they get this far.
        """
        deadline = time.monotonic() + timeout
        while True:
            now = clock()
            if self._lock_take(user_id, session_id, owner, now=now, lease_until=now + lease_seconds):
                return _LeaseRow(self, user_id, session_id, owner, clock)
            left = deadline - time.monotonic()
            if left <= 0:
                raise session_busy(user_id, session_id, timeout)
            time.sleep(min(_LOCK_POLL, left))

    def _lock_take(
        self, user_id: str, session_id: str, owner: str, *, now: float, lease_until: float
    ) -> bool:
        """Take the (user, session) lease row for `owner` if there is none or it has expired."""
        with self.transaction() as tx:
            row = tx.execute(
                "INSERT INTO session_locks (user_id, session_id, owner, lease_until) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (user_id, session_id) DO UPDATE SET owner = excluded.owner,"
                " lease_until = excluded.lease_until"
                " WHERE session_locks.lease_until < ?"
                " RETURNING owner",
                (user_id, session_id, owner, lease_until, now),
            ).fetchone()
            return row is not None

    def _lock_renew(self, user_id: str, session_id: str, owner: str, *, lease_until: float) -> bool:
        """Extend `owner`'s lease; False when `owner` does not hold the lock (any more)."""
        with self.transaction() as tx:
            cur = tx.execute(
                "UPDATE session_locks SET lease_until = ? WHERE user_id = ? AND session_id = ? AND owner = ?",
                (lease_until, user_id, session_id, owner),
            )
            return cur.rowcount == 1

    def _lock_release(self, user_id: str, session_id: str, owner: str) -> bool:
        """Release `owner`'s lock; False when it was not `owner`'s (expired and taken over)."""
        with self.transaction() as tx:
            cur = tx.execute(
                "DELETE FROM session_locks WHERE user_id = ? AND session_id = ? AND owner = ?",
                (user_id, session_id, owner),
            )
            return cur.rowcount == 1

    def lock_holder(self, user_id: str, session_id: str) -> tuple[str, float] | None:
        """(owner, lease_until) of the lock row, expired or not, or None when there is none."""
        row = self.db.execute(
            "SELECT owner, lease_until FROM session_locks WHERE user_id = ? AND session_id = ?",
            (user_id, session_id),
        ).fetchone()
        return None if row is None else (str(row[0]), float(row[1]))


class _LeaseRow(SessionLease):
    """A held `session_locks` row: `renew` moves its expiry, `release` deletes it."""

    __slots__ = ("_clock", "_released", "_store")

    def __init__(
        self, store: JobsMixin, user_id: str, session_id: str, owner: str, clock: Callable[[], float]
    ) -> None:
        super().__init__(user_id, session_id, owner)
        self._store = store
        self._clock = clock
        self._released = False

    def renew(self, lease_seconds: float) -> bool:
        if self._released:
            return False
        return self._store._lock_renew(
            self.user_id, self.session_id, self.owner, lease_until=self._clock() + lease_seconds
        )

    def release(self) -> bool:
        if self._released:
            return False
        self._released = True
        return self._store._lock_release(self.user_id, self.session_id, self.owner)
