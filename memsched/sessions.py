"""The order in which a session's turns run: one line per (user, session).

Within a process, a FIFO line: tickets are served in the order they were taken (a plain Lock would
not do: threads blocked on it wake in no particular order, and the second of two messages sent 10 ms
apart could be answered first). Across processes, the store's session lock (`SessionLock`, a lease):
a turn holds both from taking its place until its reply's vectors are stored. A session held across
calls (the proxy holds it from preparing the context until the reply is recorded) has its lease
renewed by a thread, so a long reply does not lose it; if the process dies, the session is free again
(at once on PostgreSQL, when the lease runs out on SQLite). See docs/design.md, "What a turn promises".
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import dataclass

from memsched.jobs.queue import SessionLock, default_owner
from memsched.store.base import SessionLease

log = logging.getLogger("memsched.sessions")


class _Line:
    __slots__ = ("cond", "next", "refs", "serving")

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.next = 0
        self.serving = 0
        self.refs = 0


@dataclass(slots=True, eq=False)
class Ticket:
    """A place in a session's line, taken when the message arrives (`SessionLine.take`)."""

    user_id: str
    session_id: str
    line: _Line
    number: int
    released: bool = False


@dataclass(slots=True, eq=False)
class SessionHold:
    """A session held by one turn (or by `Scheduler.hold_session` across calls): its place in this
    process's line and its lock in the store (`lease`; None without the cross-process lock)."""

    ticket: Ticket
    lease: SessionLease | None
    wait_ms: float
    handed_off: bool = False  # a post-reply thread releases it once the new turns' vectors are stored
    leased_at: float = 0.0  # time.monotonic() when the store lock was taken or last renewed by `renew`

    @property
    def user_id(self) -> str:
        return self.ticket.user_id

    @property
    def session_id(self) -> str:
        return self.ticket.session_id

    @property
    def owner(self) -> str | None:
        """The store lock's owner id (diagnostics), or None without the cross-process lock."""
        return self.lease.owner if self.lease is not None else None


class SessionLine:
    """Every session's line in this process, and the store locks that extend them across processes.

    `take` a ticket when a message arrives, `acquire` the session with it (waits for the turns ahead,
    then for the store lock), `release` the hold when done. `keep(hold)` renews the hold's lease until
    `release` (for a hold that spans calls); `renew(hold)` renews it once (after a long reply call).
    """

    def __init__(
        self,
        locks: SessionLock | None,
        *,
        lease_seconds: float,
        lock_timeout: float,
        owner: str | None = None,
    ) -> None:
        self.locks = locks  # None: this process's line only (no other process writes the store)
        self.lease_seconds = lease_seconds
        self.lock_timeout = lock_timeout
        self._owner = owner or default_owner("turn")
        self._lock = threading.Lock()
        self._lines: dict[tuple[str, str], _Line] = {}
        # Holds whose store locks the renewer thread keeps alive.
        self._renewing: dict[int, SessionHold] = {}
        self._renew_lock = threading.Lock()
        self._renew_stop = threading.Event()
        self._renewer: threading.Thread | None = None

    def take(self, user_id: str, session_id: str) -> Ticket:
        """The next place in the session's line."""
        key = (user_id, session_id)
        with self._lock:
            line = self._lines.get(key)
            if line is None:
                line = self._lines[key] = _Line()
            line.refs += 1
        with line.cond:
            number = line.next
            line.next += 1
        return Ticket(user_id, session_id, line, number)

    def give_back(self, ticket: Ticket) -> None:
        """Leave the line (idempotent): the next ticket is served."""
        if ticket.released:
            return
        ticket.released = True
        line = ticket.line
        with line.cond:
            line.serving += 1
            line.cond.notify_all()
        with self._lock:
            line.refs -= 1
            key = (ticket.user_id, ticket.session_id)
            if line.refs == 0 and self._lines.get(key) is line:
                del self._lines[key]

    def queued(self, user_id: str, session_id: str) -> int:
        """Tickets of the session not given back yet (the one being served included)."""
        with self._lock:
            line = self._lines.get((user_id, session_id))
            return line.refs if line is not None else 0

    def acquire(self, ticket: Ticket) -> SessionHold:
        """Wait for the turns ahead of `ticket`, then take the store lock. On failure (the store
        lock's timeout) the place is given back."""
        t0 = time.perf_counter()
        try:
            # No timeout: every holder releases in a finally block, and the reply LLM call it may be
            # waiting on is itself bounded by the client's timeout.
            with ticket.line.cond:
                ticket.line.cond.wait_for(lambda: ticket.line.serving == ticket.number)
            lease: SessionLease | None = None
            if self.locks is not None:
                lease = self.locks.take(
                    ticket.user_id,
                    ticket.session_id,
                    f"{self._owner}:{uuid.uuid4().hex[:8]}",
                    lease_seconds=self.lease_seconds,
                    timeout=self.lock_timeout,
                )
        except BaseException:
            self.give_back(ticket)
            raise
        return SessionHold(ticket, lease, (time.perf_counter() - t0) * 1000.0, leased_at=time.monotonic())

    def release(self, hold: SessionHold) -> None:
        """Give the session back (idempotent): the store lock, then the place in line."""
        with self._renew_lock:
            self._renewing.pop(id(hold), None)
        if hold.ticket.released:
            return
        try:
            if hold.lease is not None:
                hold.lease.release()
        except Exception:
            log.exception("releasing the lock of %s/%s failed", hold.user_id, hold.session_id)
        finally:
            self.give_back(hold.ticket)

    def keep(self, hold: SessionHold) -> SessionHold:
        """Renew the hold's store lock every third of a lease until `release(hold)`."""
        if hold.lease is None:
            return hold
        with self._renew_lock:
            self._renewing[id(hold)] = hold
            if self._renewer is None:
                self._renewer = threading.Thread(
                    target=self._renew_leases, name="memsched-session-leases", daemon=True
                )
                self._renewer.start()
        return hold

    def renew(self, hold: SessionHold) -> None:
        """Renew the hold's store lock once (after a long reply call) if a third of a lease or more
        went by since it was taken or last renewed here (the renewer thread's cadence for kept
        holds): a lease taken moments ago has most of its time left, and a renewal is a write
        transaction (it waited behind the background's commits now and then: a turn's P0 tail)."""
        if hold.lease is not None and time.monotonic() - hold.leased_at >= self.lease_seconds / 3:
            hold.lease.renew(self.lease_seconds)
            hold.leased_at = time.monotonic()

    def close(self) -> None:
        """Stop renewing leases (holds still out expire with their leases)."""
        self._renew_stop.set()

    def _renew_leases(self) -> None:
        while not self._renew_stop.wait(self.lease_seconds / 3):
            with self._renew_lock:
                holds = list(self._renewing.values())
            for hold in holds:
                try:
                    assert hold.lease is not None
                    if not hold.lease.renew(self.lease_seconds):
                        log.warning("the lock of session %s/%s was lost", hold.user_id, hold.session_id)
                except Exception:
                    log.exception("renewing the lock of %s/%s failed", hold.user_id, hold.session_id)
