"""The durable job queue: jobs live in the store, so they survive crashes and are shared by processes.

A turn and the jobs derived from it are written in one transaction (`enqueue(jobs, tx=tx)`), so there
is no moment where the turn is stored and its jobs are not. Workers lease jobs (`claim`); a lease that
runs out puts the job back, so a worker that dies loses nothing. Execution is therefore at-least-once:
a job killed after doing its work but before `complete` runs again, and tasks must be idempotent.
"""

from __future__ import annotations

import builtins
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import IntEnum
from typing import Any, Protocol

from memsched.errors import InputError
from memsched.store import base
from memsched.store.base import LockStore, SessionLease, TransactionStore

STATUSES = ("queued", "running", "done", "dead")
DEFAULT_MAX_ATTEMPTS = 5
DEFAULT_BACKOFF_BASE = 2.0  # seconds before the first retry; doubles per attempt
DEFAULT_BACKOFF_CAP = 600.0


class Priority(IntEnum):
    """Job priorities; a lower value runs first.

    P0: the real-time path (the reply itself). P1: state the next turn must see ("call me 大王"),
    waited for by `JobQueue.wait_for`. P2: summaries, mood, archiving; may be deferred to a window.
    """

    P0 = 0
    P1 = 1
    P2 = 2


@dataclass(slots=True)
class Job:
    """One unit of background work. Build it with kind, user_id and whatever else differs from the
    defaults; the queue fills in id, status, attempts and the timestamps.

    `ordered` jobs of one (user_id, session_id) run one at a time in enqueue order; `dedupe_key` keeps a
    second queued job with the same (kind, user_id, dedupe_key) out (e.g. one bookmark job per page).
    """

    kind: str
    user_id: str
    session_id: str | None = None
    payload: dict[str, Any] = field(default_factory=dict)
    priority: int = Priority.P2
    ordered: bool = False
    dedupe_key: str | None = None
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    run_after: datetime | None = None
    id: int | None = None
    status: str = "queued"
    attempts: int = 0
    last_error: str | None = None
    lease_owner: str | None = None
    lease_until: datetime | None = None
    created_at: datetime | None = None
    finished_at: datetime | None = None

    @property
    def priority_name(self) -> str:
        return f"P{self.priority}"


class JobStore(TransactionStore, base.JobStore, LockStore, Protocol):
    """What the queue and session locks need from a store: jobs, leases and units of work."""


def _dt(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def _job(row: dict[str, Any]) -> Job:
    return Job(
        id=row["id"],
        kind=row["kind"],
        user_id=row["user_id"],
        session_id=row["session_id"],
        payload=row["payload"],
        priority=row["priority"],
        status=row["status"],
        attempts=row["attempts"],
        max_attempts=row["max_attempts"],
        run_after=_dt(row["run_after"]),
        last_error=row["last_error"],
        ordered=row["ordered"],
        lease_owner=row["lease_owner"],
        lease_until=_dt(row["lease_until"]),
        created_at=_dt(row["created_at"]),
        finished_at=_dt(row["finished_at"]),
        dedupe_key=row["dedupe_key"],
    )


def default_owner(prefix: str = "w") -> str:
    """A lease owner id unique across processes and hosts (host:pid:random)."""
    return f"{prefix}-{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def owner_is_dead(owner: str) -> bool:
    """True when `owner` (as `default_owner` makes them) is a process of this host that no longer runs.

    Owners of other hosts, and owners whose process still runs, are not dead: their leases expire
    on their own. (A pid reused by an unrelated process only delays the take-over to the lease's end.)
    """
    _, _, rest = owner.partition("-")
    parts = rest.split(":")
    if len(parts) < 3 or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return False
    pid = int(parts[1])
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def recover_dead_owners(store: Any, now: float | None = None) -> int:
    """Re-queue the running jobs and release the session leases of this host's dead processes (a
    server or worker killed with SIGKILL), so a restart does not wait for their leases to expire.
    (Where session locks are not leases, a dead holder's were released when it died.)"""
    n = 0
    for owner in store.lease_owners():
        if owner_is_dead(owner):
            n += store.release_owner(owner, now=time.time() if now is None else now)
    return n


class JobQueue:
    """The job queue of one store. Thread-safe: the store gives each thread its own connection.

    `clock` returns epoch seconds; tests pass a fake one to move time without sleeping.
    """

    def __init__(
        self,
        store: JobStore,
        *,
        backoff_base: float = DEFAULT_BACKOFF_BASE,
        backoff_cap: float = DEFAULT_BACKOFF_CAP,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.clock = clock

    def backoff(self, attempts: int) -> float:
        """Seconds to wait before the next try after `attempts` failed ones: base * 2^(attempts-1), capped."""
        return float(min(self.backoff_cap, self.backoff_base * 2 ** max(0, attempts - 1)))

    # -- producing -----------------------------------------------------------------------------------

    def enqueue(self, jobs: Sequence[Job], tx: Any = None) -> list[int]:
        """Store `jobs`; returns their ids in order (for a deduplicated job, the id of the queued twin).

        With `tx` (a transaction opened by `store.transaction()`), the jobs are written inside it and
        commit or roll back with whatever else the caller wrote there, e.g. the turn they derive from.
        The `Job` objects get their id, status and timestamps set.
        """
        now = self.clock()
        rows = [self._row(job, now) for job in jobs]
        if not rows:
            return []
        if tx is None:
            with self.store.transaction() as own:
                ids = self.store.jobs_enqueue(own, rows)
        else:
            ids = self.store.jobs_enqueue(tx, rows)
        for job, jid, row in zip(jobs, ids, rows, strict=True):
            job.id = jid
            job.status = "queued"
            job.created_at = _dt(row["created_at"])
            job.run_after = _dt(row["run_after"])
        return ids

    @staticmethod
    def _row(job: Job, now: float) -> dict[str, Any]:
        if not job.kind or not isinstance(job.kind, str):
            raise InputError("a job needs a kind (the name of its task)")
        if not job.user_id or not isinstance(job.user_id, str):
            raise InputError(f"job {job.kind!r} has no user_id: every job is scoped by user")
        if int(job.priority) not in tuple(Priority):
            raise InputError(f"job priority must be 0, 1 or 2 (P0-P2), got {job.priority!r}")
        if job.max_attempts < 1:
            raise InputError(f"max_attempts must be >= 1, got {job.max_attempts}")
        try:
            json.dumps(job.payload)
        except (TypeError, ValueError) as exc:
            raise InputError(f"job {job.kind!r} payload is not JSON-serialisable: {exc}") from None
        run_after = max(now, job.run_after.timestamp()) if job.run_after is not None else now
        return {
            "kind": job.kind,
            "user_id": job.user_id,
            "session_id": job.session_id,
            "payload": job.payload,
            "priority": int(job.priority),
            "max_attempts": job.max_attempts,
            "run_after": run_after,
            "ordered": job.ordered,
            "created_at": now,
            "dedupe_key": job.dedupe_key,
        }

    # -- consuming -----------------------------------------------------------------------------------

    def claim(
        self,
        worker_id: str,
        *,
        lease_seconds: float = 60,
        kinds: Sequence[str] | None = None,
        max_priority: int | None = None,
    ) -> Job | None:
        """Lease the next runnable job to `worker_id` for `lease_seconds`, or return None.

        Order: highest priority (lowest value) first, then oldest. Skipped: jobs whose `run_after` is in
        the future; `ordered` jobs while an earlier job of their (user, session) is queued or running;
        kinds not in `kinds`; unordered jobs above `max_priority`. Running jobs whose lease expired are
        first put back (a dead worker's jobs come back), counting as a failed attempt.
        """
        now = self.clock()
        row = self.store.jobs_claim(
            worker_id, now=now, lease_until=now + lease_seconds, kinds=kinds, max_priority=max_priority
        )
        return None if row is None else _job(row)

    def renew(self, job: Job, lease_seconds: float = 60) -> bool:
        """Extend the lease of a job this worker is running; False when the lease was lost."""
        if job.id is None or job.lease_owner is None:
            return False
        until = self.clock() + lease_seconds
        if self.store.jobs_renew(job.id, job.lease_owner, until):
            job.lease_until = _dt(until)
            return True
        return False

    def complete(self, job: Job) -> None:
        """Mark `job` done (even if its lease had expired meanwhile: the work was done)."""
        if job.id is None:
            raise InputError("cannot complete a job that was never enqueued")
        row = self.store.jobs_complete(job.id, now=self.clock())
        if row is not None:
            job.status, job.finished_at = row["status"], _dt(row["finished_at"])
            job.lease_owner = job.lease_until = None

    def fail(self, job: Job, error: str, *, permanent: bool = False) -> Job | None:
        """Record a failed attempt: attempts + 1, `last_error` = `error`, and either back to the queue
        after `backoff(attempts)` seconds or dead once `max_attempts` is reached (at once if `permanent`).

        Returns the updated job, or None when this worker's lease had been lost (the attempt was
        already counted when the lease expired and someone else may be running it).
        """
        if job.id is None:
            raise InputError("cannot fail a job that was never enqueued")
        row = self.store.jobs_fail(
            job.id, job.lease_owner, now=self.clock(), error=error, backoff=self.backoff, permanent=permanent
        )
        if row is None:
            return None
        updated = _job(row)
        job.status, job.attempts, job.last_error = updated.status, updated.attempts, updated.last_error
        job.run_after, job.finished_at = updated.run_after, updated.finished_at
        job.lease_owner = job.lease_until = None
        return updated

    def retry(self, job_id: int) -> bool:
        """Put a dead job back in the queue, attempts reset (its last_error is kept). False unless dead."""
        return self.store.jobs_retry(job_id, now=self.clock())

    def purge(self, older_than: float, statuses: Sequence[str] = ("done",)) -> int:
        """Delete jobs of `statuses` (done, dead) that finished more than `older_than` seconds ago."""
        return self.store.jobs_purge(before=self.clock() - older_than, statuses=statuses)

    # -- the P1 barrier ------------------------------------------------------------------------------

    def pending(self, user_id: str, session_id: str | None = None, max_priority: int = Priority.P1) -> int:
        """Queued or running jobs of the user at priority <= `max_priority` (dead ones do not count).

        With `session_id`, that session's jobs and the user's session-less jobs count.
        """
        return self.store.jobs_pending(user_id, session_id, int(max_priority))

    def wait_for(
        self,
        user_id: str,
        session_id: str | None,
        max_priority: int = Priority.P1,
        timeout: float = 10.0,
        poll: float = 0.01,
    ) -> bool:
        """Block until `pending(user_id, session_id, max_priority)` is 0: True then, False on timeout.

        This is the consistency barrier: a P1 update ("forget that", "call me 大王") lands before the
        next turn is answered. It waits on the database, so it sees workers in any process.
        """
        deadline = time.monotonic() + timeout
        while True:
            if self.pending(user_id, session_id, max_priority) == 0:
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(poll, left))

    # -- looking -------------------------------------------------------------------------------------

    def get(self, job_id: int) -> Job | None:
        row = self.store.jobs_get(job_id)
        return None if row is None else _job(row)

    def list(
        self, status: str | None = None, limit: int = 100, *, user_id: str | None = None
    ) -> builtins.list[Job]:
        """Jobs newest first, optionally only those of one status and/or user."""
        if status is not None and status not in STATUSES:
            raise InputError(f"status must be one of {', '.join(STATUSES)}, got {status!r}")
        return [_job(r) for r in self.store.jobs_list(status=status, user_id=user_id, limit=limit)]

    def depth(self) -> dict[int, int]:
        """Queued jobs per priority, every priority present (0 when none)."""
        found = self.store.jobs_depth()
        return {int(p): found.get(int(p), 0) for p in Priority} | found

    def stats(self) -> dict[str, Any]:
        """Counts per status, queued depth per priority and the age in seconds of the oldest queued job."""
        counts = self.store.jobs_counts()
        oldest = self.store.jobs_oldest_queued()
        return {
            "status": {s: counts.get(s, 0) for s in STATUSES},
            "depth": {f"P{p}": n for p, n in self.depth().items()},
            "oldest_queued_seconds": None if oldest is None else max(0.0, self.clock() - oldest),
        }


class SessionLock:
    """A per-(user, session) lock, so turns of one session are handled one at a time across threads
    and processes: the store's session lock (`LockStore.session_hold`). How a dead holder lets go and
    in what order waiters are served depends on the store (docs/design.md, "What a turn promises").
    """

    def __init__(self, store: JobStore, *, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock

    def take(
        self,
        user_id: str,
        session_id: str,
        owner: str | None = None,
        *,
        lease_seconds: float = 30,
        timeout: float = 10.0,
    ) -> SessionLease:
        """Hold the lock until the returned lease's `release()` (or the end of a `with` block on it),
        waiting up to `timeout` seconds (0: one try). Raises StoreError when the session stays busy.

        Where the lock is a lease, a holder that stops calling `renew` loses it after `lease_seconds`.
        """
        return self.store.session_hold(
            user_id,
            session_id,
            owner or default_owner("lock"),
            timeout=timeout,
            lease_seconds=lease_seconds,
            clock=self.clock,
        )

    def holder(self, user_id: str, session_id: str) -> str | None:
        """The owner holding the lock (an unexpired lease), or None."""
        found = self.store.lock_holder(user_id, session_id)
        if found is None or found[1] < self.clock():
            return None
        return found[0]

    @contextmanager
    def held(
        self,
        user_id: str,
        session_id: str,
        owner: str | None = None,
        *,
        lease_seconds: float = 30,
        timeout: float = 10.0,
    ) -> Iterator[str]:
        """Hold the lock for the `with` block; yields the owner id. Raises StoreError on timeout.

        A background thread renews the lock every third of `lease_seconds`, so a live holder keeps
        it however long it works, and only a dead one loses it.
        """
        lease = self.take(user_id, session_id, owner, lease_seconds=lease_seconds, timeout=timeout)
        stop = threading.Event()

        def heartbeat() -> None:
            while not stop.wait(lease_seconds / 3):
                if not lease.renew(lease_seconds):
                    return

        beat = threading.Thread(target=heartbeat, name=f"memsched-lock-{lease.owner}", daemon=True)
        beat.start()
        try:
            yield lease.owner
        finally:
            stop.set()
            beat.join()
            lease.release()
