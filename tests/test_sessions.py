"""`SessionLine`: each session's FIFO line in the process, and the store's lock across processes."""

from __future__ import annotations

import threading

import pytest

from memsched.errors import StoreError
from memsched.jobs.queue import SessionLock
from memsched.sessions import SessionLine
from memsched.store import Store


def test_tickets_are_served_in_the_order_taken_and_sessions_do_not_wait_for_each_other() -> None:
    line = SessionLine(None, lease_seconds=60, lock_timeout=5)
    tickets = [line.take("u", "s") for _ in range(5)]
    other = line.acquire(line.take("u", "other"))  # another session: not behind the five
    served: list[int] = []

    def run(i: int) -> None:
        hold = line.acquire(tickets[i])
        served.append(i)
        line.release(hold)

    # Started last first: each thread waits for its place, not for the order threads happened to run.
    threads = [threading.Thread(target=run, args=(i,)) for i in reversed(range(5))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert served == [0, 1, 2, 3, 4]
    assert line.queued("u", "s") == 0 and line.queued("u", "other") == 1
    line.release(other)
    line.release(other)  # idempotent: the next ticket is not served twice
    assert line.queued("u", "other") == 0


def test_a_store_lock_that_times_out_gives_the_place_back(store: Store) -> None:
    locks = SessionLock(store)
    mine = SessionLine(locks, lease_seconds=60, lock_timeout=5)
    theirs = SessionLine(locks, lease_seconds=60, lock_timeout=0.2)  # another process
    hold = mine.acquire(mine.take("u", "s"))
    assert hold.owner is not None and locks.holder("u", "s") is not None
    with pytest.raises(StoreError, match="busy"):
        theirs.acquire(theirs.take("u", "s"))
    assert theirs.queued("u", "s") == 0  # the failed taker is out of its line
    mine.release(hold)
    assert locks.holder("u", "s") is None
    again = theirs.acquire(theirs.take("u", "s"))
    assert again.user_id == "u" and again.session_id == "s"
    theirs.release(again)


class _CountingLease:
    """A session lease that counts its renewals (and passes everything on)."""

    def __init__(self, lease: object) -> None:
        self.lease = lease
        self.renewals = 0
        self.owner = getattr(lease, "owner", None)

    def renew(self, lease_seconds: float) -> bool:
        self.renewals += 1
        return bool(self.lease.renew(lease_seconds))  # type: ignore[attr-defined]

    def release(self) -> bool:
        return bool(self.lease.release())  # type: ignore[attr-defined]


def test_a_lease_is_renewed_after_a_reply_call_only_once_a_third_of_it_went_by(store: Store) -> None:
    line = SessionLine(SessionLock(store), lease_seconds=60, lock_timeout=5)
    hold = line.acquire(line.take("u", "s"))
    counting = _CountingLease(hold.lease)
    hold.lease = counting  # type: ignore[assignment]
    line.renew(hold)  # a fast reply call: the lease taken moments ago has ~60 s left
    assert counting.renewals == 0
    hold.leased_at -= 21  # a reply call of 21 s: more than a third of the lease went by
    line.renew(hold)
    assert counting.renewals == 1
    line.renew(hold)  # renewed just now
    assert counting.renewals == 1
    line.release(hold)
    assert SessionLock(store).holder("u", "s") is None
