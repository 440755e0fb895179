"""PostgreSQL part of the durable job queue (the SQLite twin is `sqlite_jobs.py`).

Many workers in many processes claim jobs at once: the claim is `SELECT … FOR UPDATE SKIP LOCKED`
in priority order, so two workers never take the same row and neither waits for the other. An
`ordered` job is claimable only when no earlier job of its (user, session) chain is unfinished, which
keeps a session's jobs in order across workers. Enqueueing sends `NOTIFY memsched_jobs` (delivered at
commit); idle workers wait for it on one listening connection per process instead of polling.
Session locks are advisory locks, not rows (`postgres_locks.py`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from memsched.store.base import JOB_COLUMNS, Tx
from memsched.store.postgres_base import PgMixin, PgTx, dumps, pg_tx

log = logging.getLogger("memsched.store")

CHANNEL = "memsched_jobs"
_SELECT = ", ".join(JOB_COLUMNS)
_UNFINISHED = "status IN ('queued', 'running')"
# An idle worker re-checks at least this often even without a notification (jobs whose backoff or
# run_after has passed announce nothing).
_MAX_IDLE_WAIT = 1.0


def _row(desc: Any, row: Sequence[Any] | None) -> dict[str, Any] | None:
    if row is None:
        return None
    out = dict(zip((d.name for d in desc), row, strict=True))
    out["payload"] = dict(out["payload"] or {})
    out["ordered"] = bool(out["ordered"])
    return out


class PgJobsMixin(PgMixin):
    """Queue and lease methods of PostgresStore. Rows go in and out as dicts keyed by `JOB_COLUMNS`."""

    _listener: Any
    _jobs_cond: threading.Condition

    # -- jobs: writing -------------------------------------------------------------------------------

    def jobs_enqueue(self, tx: Tx, rows: Sequence[dict[str, Any]]) -> list[int]:
        tx = pg_tx(tx)
        ids: list[int] = []
        for r in rows:
            if r.get("dedupe_key") is not None:
                found = tx.execute(
                    "SELECT id FROM jobs WHERE kind = %s AND user_id = %s AND dedupe_key = %s"
                    " AND status = 'queued' ORDER BY id LIMIT 1",
                    (r["kind"], r["user_id"], r["dedupe_key"]),
                ).fetchone()
                if found is not None:
                    ids.append(int(found[0]))
                    continue
            (jid,) = tx.execute(
                "INSERT INTO jobs (kind, user_id, session_id, payload, priority, status, attempts,"
                " max_attempts, run_after, ordered, created_at, dedupe_key)"
                " VALUES (%s, %s, %s, %s::jsonb, %s, 'queued', 0, %s, %s, %s, %s, %s) RETURNING id",
                (
                    r["kind"],
                    r["user_id"],
                    r["session_id"],
                    dumps(r["payload"]),
                    int(r["priority"]),
                    int(r["max_attempts"]),
                    float(r["run_after"]),
                    bool(r["ordered"]),
                    float(r["created_at"]),
                    r.get("dedupe_key"),
                ),
            ).fetchone()
            ids.append(int(jid))
        if rows:
            tx.execute("SELECT pg_notify(%s, '')", (CHANNEL,))
        self._wake_local()
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
        """Take the next runnable job for `owner` (see `sqlite_jobs.JobsMixin.jobs_claim`)."""
        if kinds is not None and not list(kinds):
            return None
        with self.transaction() as tx:
            self._jobs_reap(tx, now)
            sql = (
                "SELECT j.id FROM jobs j WHERE j.status = 'queued' AND j.run_after <= %s"
                " AND (NOT j.ordered OR NOT EXISTS (SELECT 1 FROM jobs b WHERE b.ordered"
                f" AND b.{_UNFINISHED} AND b.user_id = j.user_id"
                " AND b.session_id IS NOT DISTINCT FROM j.session_id AND b.id < j.id))"
            )
            args: list[Any] = [now]
            if kinds is not None:
                sql += " AND j.kind = ANY(%s)"
                args.append(list(kinds))
            if max_priority is not None:
                sql += " AND (j.priority <= %s OR j.ordered)"
                args.append(max_priority)
            sql += " ORDER BY j.priority, j.id LIMIT 1 FOR UPDATE OF j SKIP LOCKED"
            found = tx.execute(sql, args).fetchone()
            if found is None:
                return None
            cur = tx.execute(
                f"UPDATE jobs SET status = 'running', lease_owner = %s, lease_until = %s WHERE id = %s"
                f" RETURNING {_SELECT}",
                (owner, lease_until, found[0]),
            )
            return _row(cur.description, cur.fetchone())

    def _jobs_reap(self, tx: PgTx, now: float) -> int:
        cur = tx.execute(
            "UPDATE jobs SET"
            " status = CASE WHEN attempts + 1 >= max_attempts THEN 'dead' ELSE 'queued' END,"
            " finished_at = CASE WHEN attempts + 1 >= max_attempts THEN %s ELSE NULL END,"
            " attempts = attempts + 1,"
            " last_error = 'lease of ' || coalesce(lease_owner, '?') || ' expired: the worker died or stalled',"
            " lease_owner = NULL, lease_until = NULL, run_after = %s"
            " WHERE id IN (SELECT id FROM jobs WHERE status = 'running' AND lease_until < %s"
            " FOR UPDATE SKIP LOCKED)",
            (now, now, now),
        )
        return int(cur.rowcount)

    def jobs_renew(self, job_id: int, owner: str, lease_until: float) -> bool:
        with self.transaction() as tx:
            cur = tx.execute(
                "UPDATE jobs SET lease_until = %s WHERE id = %s AND status = 'running' AND lease_owner = %s",
                (lease_until, job_id, owner),
            )
            return cur.rowcount == 1

    def jobs_complete(self, job_id: int, *, now: float) -> dict[str, Any] | None:
        with self.transaction() as tx:
            cur = tx.execute(
                "UPDATE jobs SET status = 'done', finished_at = %s, lease_owner = NULL, lease_until = NULL"
                f" WHERE id = %s AND status != 'done' RETURNING {_SELECT}",
                (now, job_id),
            )
            row = _row(cur.description, cur.fetchone())
            if row is not None and row["ordered"]:
                # The next job of the chain may be runnable now.
                tx.execute("SELECT pg_notify(%s, '')", (CHANNEL,))
            return row

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
        with self.transaction() as tx:
            row = tx.execute(
                "SELECT attempts, max_attempts, status, lease_owner FROM jobs WHERE id = %s FOR UPDATE",
                (job_id,),
            ).fetchone()
            if row is None:
                return None
            attempts, max_attempts, status, lease_owner = row
            if status != "running" or (owner is not None and lease_owner != owner):
                return None
            attempts += 1
            dead = permanent or attempts >= max_attempts
            cur = tx.execute(
                "UPDATE jobs SET status = %s, attempts = %s, last_error = %s, run_after = %s, finished_at = %s,"
                f" lease_owner = NULL, lease_until = NULL WHERE id = %s RETURNING {_SELECT}",
                (
                    "dead" if dead else "queued",
                    attempts,
                    error.replace("\x00", ""),
                    now if dead else now + backoff(attempts),
                    now if dead else None,
                    job_id,
                ),
            )
            return _row(cur.description, cur.fetchone())

    def jobs_retry(self, job_id: int, *, now: float) -> bool:
        with self.transaction() as tx:
            cur = tx.execute(
                "UPDATE jobs SET status = 'queued', attempts = 0, run_after = %s, finished_at = NULL"
                " WHERE id = %s AND status = 'dead'",
                (now, job_id),
            )
            if cur.rowcount == 1:
                tx.execute("SELECT pg_notify(%s, '')", (CHANNEL,))
            return cur.rowcount == 1

    def jobs_purge(self, *, before: float, statuses: Sequence[str] = ("done",)) -> int:
        statuses = [s for s in statuses if s in ("done", "dead")]
        if not statuses:
            return 0
        with self.transaction() as tx:
            cur = tx.execute(
                "DELETE FROM jobs WHERE status = ANY(%s) AND finished_at < %s", (list(statuses), before)
            )
            return int(cur.rowcount)

    def jobs_delete_user(self, tx: Tx, user_id: str) -> int:
        tx = pg_tx(tx)
        return int(tx.execute("DELETE FROM jobs WHERE user_id = %s", (user_id,)).rowcount)

    # -- jobs: reading -------------------------------------------------------------------------------

    def jobs_get(self, job_id: int) -> dict[str, Any] | None:
        with self._read() as conn:
            cur = conn.execute(f"SELECT {_SELECT} FROM jobs WHERE id = %s", (job_id,))
            return _row(cur.description, cur.fetchone())

    def jobs_list(
        self, *, status: str | None = None, user_id: str | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        sql = f"SELECT {_SELECT} FROM jobs"
        where: list[str] = []
        args: list[Any] = []
        if status is not None:
            where.append("status = %s")
            args.append(status)
        if user_id is not None:
            where.append("user_id = %s")
            args.append(user_id)
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC LIMIT %s"
        args.append(limit)
        with self._read() as conn:
            cur = conn.execute(sql, args)
            return [r for r in (_row(cur.description, t) for t in cur.fetchall()) if r is not None]

    def jobs_pending(self, user_id: str, session_id: str | None = None, max_priority: int = 1) -> int:
        sql = "SELECT count(*) FROM jobs WHERE user_id = %s AND status IN ('queued', 'running') AND priority <= %s"
        args: list[Any] = [user_id, max_priority]
        if session_id is not None:
            sql += " AND (session_id = %s OR session_id IS NULL)"
            args.append(session_id)
        row = self._one(sql, args)
        return int(row[0]) if row else 0

    def jobs_depth(self) -> dict[int, int]:
        rows = self._all("SELECT priority, count(*) FROM jobs WHERE status = 'queued' GROUP BY priority")
        return {int(p): int(n) for p, n in rows}

    def jobs_counts(self) -> dict[str, int]:
        return {str(s): int(n) for s, n in self._all("SELECT status, count(*) FROM jobs GROUP BY status")}

    def jobs_oldest_queued(self) -> float | None:
        row = self._one("SELECT min(created_at) FROM jobs WHERE status = 'queued'")
        return None if row is None or row[0] is None else float(row[0])

    def lease_owners(self) -> list[str]:
        """Every owner holding a running job's lease (operator view, all users). Session locks are not
        leases here: a dead process's went with its connections."""
        rows = self._all(
            "SELECT DISTINCT lease_owner FROM jobs WHERE status = 'running' AND lease_owner IS NOT NULL"
        )
        return sorted({str(r[0]) for r in rows})

    def release_owner(self, owner: str, *, now: float) -> int:
        """Give back the running jobs of a dead `owner` (see the SQLite twin)."""
        with self.transaction() as tx:
            n = tx.execute(
                "UPDATE jobs SET"
                " status = CASE WHEN attempts + 1 >= max_attempts THEN 'dead' ELSE 'queued' END,"
                " finished_at = CASE WHEN attempts + 1 >= max_attempts THEN %s ELSE NULL END,"
                " attempts = attempts + 1,"
                " last_error = 'the process of ' || lease_owner || ' died (found at restart)',"
                " lease_owner = NULL, lease_until = NULL, run_after = %s"
                " WHERE status = 'running' AND lease_owner = %s",
                (now, now, owner),
            ).rowcount
            if n:
                tx.execute("SELECT pg_notify(%s, '')", (CHANNEL,))
            return int(n)

    # -- waking idle workers -----------------------------------------------------------------------------

    def jobs_wait(self, timeout: float) -> bool:
        """Block until a job is announced (by any process, through LISTEN) or about a second passes.

        `timeout` is the caller's polling interval; with notifications an idle worker need not poll
        that often, so it waits up to `_MAX_IDLE_WAIT` instead (never less than `timeout`)."""
        self._start_listener()
        with self._jobs_cond:
            return self._jobs_cond.wait(max(timeout, _MAX_IDLE_WAIT))

    def jobs_wake(self) -> None:
        """Wake this process's idle workers (e.g. to let them see a stop request)."""
        self._wake_local()

    def _wake_local(self) -> None:
        with self._jobs_cond:
            self._jobs_cond.notify_all()

    def _start_listener(self) -> None:
        with self._jobs_cond:
            if self._listener is not None:
                return
            self._listener = _Listener(self.url, self._wake_local)
            self._listener.start()

    def _stop_listener(self) -> None:
        with self._jobs_cond:
            listener, self._listener = self._listener, None
        if listener is not None:
            listener.stop()


class _Listener:
    """One connection per process that LISTENs on the jobs channel and wakes local waiters."""

    def __init__(self, url: str, wake: Callable[[], None]) -> None:
        self.url = url
        self.wake = wake
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memsched-pg-listen", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        import psycopg

        while not self._stop.is_set():
            try:
                with psycopg.connect(self.url, autocommit=True) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self.wake()  # anything queued while we were not listening
                    while not self._stop.is_set():
                        for _ in conn.notifies(timeout=0.1, stop_after=1):
                            self.wake()
            except psycopg.Error as exc:
                if self._stop.is_set():
                    return
                log.warning("job notifications lost (%s); reconnecting", exc)
                self._stop.wait(1.0)
