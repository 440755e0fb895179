"""The durable job queue, on SQLite and PostgreSQL, with a fake clock (no sleeping). Session locks:
test_session_locks.py."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memsched.errors import InputError
from memsched.jobs.queue import Job, JobQueue, Priority, SessionLock
from memsched.model import Turn
from memsched.store import Store
from memsched.testing.clock import FakeClock
from tests.conftest import raw_sql

# Runs on SQLite and on PostgreSQL (conftest.py, `backend`).
pytestmark = pytest.mark.usefixtures("backend")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def queue(store: Store, clock: FakeClock) -> JobQueue:
    return JobQueue(store, backoff_base=2.0, backoff_cap=30.0, clock=clock)


def job(kind: str = "k", user: str = "u", session: str | None = "s", **kw) -> Job:
    return Job(kind=kind, user_id=user, session_id=session, **kw)


# -- priority and order ------------------------------------------------------------------------------


def test_higher_priority_is_claimed_first_regardless_of_insert_order(queue: JobQueue) -> None:
    p2a, p1, p2b, p0 = queue.enqueue(
        [
            job(payload={"n": 1}, priority=Priority.P2),
            job(payload={"n": 2}, priority=Priority.P1),
            job(payload={"n": 3}, priority=Priority.P2),
            job(payload={"n": 4}, priority=Priority.P0),
        ]
    )
    claimed = [queue.claim("w") for _ in range(5)]
    assert [j.id if j else None for j in claimed] == [p0, p1, p2a, p2b, None]
    first = claimed[0]
    assert first is not None
    assert first.status == "running" and first.lease_owner == "w" and first.payload == {"n": 4}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(priorities=st.lists(st.sampled_from([0, 1, 2]), min_size=1, max_size=25))
def test_claim_order_is_priority_then_age(store: Store, priorities: list[int]) -> None:
    q = JobQueue(store)
    while q.claim("w") is not None:  # jobs of earlier examples: out of the way
        pass
    ids = q.enqueue([job(priority=p) for p in priorities])
    order = []
    while (j := q.claim("w")) is not None:
        order.append(j.id)
    assert order == [i for _, i in sorted(zip(priorities, ids, strict=True))]


def test_jobs_whose_run_after_is_in_the_future_wait(queue: JobQueue, clock: FakeClock) -> None:
    later = datetime.fromtimestamp(clock.now + 60, UTC)
    (jid,) = queue.enqueue([job(run_after=later, priority=Priority.P0)])
    (now_id,) = queue.enqueue([job(priority=Priority.P2)])
    first = queue.claim("w")
    assert first is not None and first.id == now_id
    assert queue.claim("w") is None
    clock.advance(61)
    again = queue.claim("w")
    assert again is not None and again.id == jid


def test_ordered_jobs_run_in_sequence_while_other_sessions_interleave(queue: JobQueue) -> None:
    a1, a2, a3 = queue.enqueue([job(session="a", ordered=True, payload={"n": i}) for i in range(3)])
    b1, b2 = queue.enqueue([job(session="b", ordered=True, payload={"n": i}) for i in range(2)])
    (free,) = queue.enqueue([job(session="a")])  # unordered: not part of a's chain

    x = queue.claim("w1")
    y = queue.claim("w2")
    z = queue.claim("w3")
    assert (x and x.id, y and y.id, z and z.id) == (a1, b1, free)
    assert queue.claim("w4") is None  # a2 waits for a1, b2 for b1
    assert x is not None and y is not None
    queue.complete(y)
    nxt = queue.claim("w4")
    assert nxt is not None and nxt.id == b2  # session b moves on while a1 is still running
    queue.complete(x)
    nxt = queue.claim("w5")
    assert nxt is not None and nxt.id == a2
    assert queue.claim("w6") is None  # a3 waits for a2
    queue.complete(nxt)
    last = queue.claim("w6")
    assert last is not None and last.id == a3


def test_a_dead_job_does_not_block_its_session_chain(queue: JobQueue) -> None:
    first, second = queue.enqueue([job(ordered=True, max_attempts=1), job(ordered=True)])
    j = queue.claim("w")
    assert j is not None and j.id == first
    failed = queue.fail(j, "boom")
    assert failed is not None and failed.status == "dead"
    nxt = queue.claim("w")
    assert nxt is not None and nxt.id == second


def test_kinds_filter_and_max_priority(queue: JobQueue) -> None:
    p2, p1, ordered_p2 = queue.enqueue(
        [
            job(kind="a", priority=2),
            job(kind="b", priority=1),
            job(kind="a", session="o", priority=2, ordered=True),
        ]
    )
    assert queue.claim("w", kinds=[]) is None
    only_a = queue.claim("w", kinds=["a"])
    assert only_a is not None and only_a.id == p2
    # Unordered P2 jobs are deferred by max_priority; ordered ones are not (they gate their session).
    deferred = [queue.claim("w", max_priority=1) for _ in range(3)]
    assert [d.id if d else None for d in deferred] == [p1, ordered_p2, None]


# -- failures ----------------------------------------------------------------------------------------


def test_fail_backs_off_exponentially_then_goes_dead(queue: JobQueue, clock: FakeClock) -> None:
    (jid,) = queue.enqueue([job(max_attempts=3)])
    waits = []
    for attempt in (1, 2):
        j = queue.claim("w")
        assert j is not None and j.id == jid
        t0 = clock.now
        failed = queue.fail(j, f"error {attempt}")
        assert failed is not None
        assert failed.status == "queued" and failed.attempts == attempt
        assert failed.last_error == f"error {attempt}"
        assert failed.run_after is not None
        waits.append(failed.run_after.timestamp() - t0)
        assert queue.claim("w") is None  # backing off
        clock.advance(waits[-1])
    assert waits == [2.0, 4.0]
    j = queue.claim("w")
    assert j is not None
    dead = queue.fail(j, "error 3")
    assert dead is not None and dead.status == "dead" and dead.attempts == 3
    stored = queue.get(jid)
    assert stored is not None
    assert stored.status == "dead" and stored.last_error == "error 3" and stored.finished_at is not None
    clock.advance(3600)
    assert queue.claim("w") is None


def test_backoff_is_capped(queue: JobQueue) -> None:
    assert [queue.backoff(n) for n in (1, 2, 3, 4, 5, 10)] == [2.0, 4.0, 8.0, 16.0, 30.0, 30.0]


def test_permanent_failure_is_dead_at_once(queue: JobQueue) -> None:
    queue.enqueue([job()])
    j = queue.claim("w")
    assert j is not None
    failed = queue.fail(j, "bad payload", permanent=True)
    assert failed is not None and failed.status == "dead" and failed.attempts == 1


def test_retry_resurrects_a_dead_job(queue: JobQueue) -> None:
    (jid,) = queue.enqueue([job(max_attempts=1)])
    j = queue.claim("w")
    assert j is not None
    queue.fail(j, "boom")
    assert queue.retry(jid) is True
    back = queue.get(jid)
    assert back is not None
    assert back.status == "queued" and back.attempts == 0 and back.last_error == "boom"
    again = queue.claim("w")
    assert again is not None and again.id == jid
    assert queue.retry(jid) is False  # running, not dead
    assert queue.retry(99999) is False


# -- dedupe and atomicity ----------------------------------------------------------------------------


def test_dedupe_key_keeps_one_queued_job(queue: JobQueue, store: Store) -> None:
    first = queue.enqueue([job(kind="bookmark", dedupe_key="page:7")])
    second = queue.enqueue(
        [job(kind="bookmark", dedupe_key="page:7"), job(kind="bookmark", dedupe_key="page:8")]
    )
    assert second[0] == first[0] and second[1] != first[0]
    other_user = queue.enqueue([job(kind="bookmark", user="v", dedupe_key="page:7")])
    other_kind = queue.enqueue([job(kind="summary", dedupe_key="page:7")])
    assert len({first[0], second[1], other_user[0], other_kind[0]}) == 4
    assert len(queue.list()) == 4
    # Once the job runs, a new one for the same key is queued: the running one may have read stale state.
    running = queue.claim("w", kinds=["bookmark"])
    assert running is not None and running.id == first[0]
    third = queue.enqueue([job(kind="bookmark", dedupe_key="page:7")])
    assert third[0] not in (first[0], second[1])


def test_a_turn_and_its_jobs_commit_together_or_not_at_all(queue: JobQueue, store: Store) -> None:
    turn = Turn(user_id="u", session_id="s", role="user", content="叫我大王")
    with pytest.raises(RuntimeError), store.transaction() as tx:
        store.insert_turns(tx, [turn])
        queue.enqueue([job(kind="fact", priority=Priority.P1)], tx=tx)
        raise RuntimeError("crash between the turn and the reply")
    assert store.turn_count("u") == 0
    assert queue.list() == []

    with store.transaction() as tx:
        (stored,) = store.insert_turns(
            tx, [Turn(user_id="u", session_id="s", role="user", content="叫我大王")]
        )
        (jid,) = queue.enqueue(
            [job(kind="fact", priority=Priority.P1, payload={"turn_id": stored.id})], tx=tx
        )
    assert store.turn_count("u") == 1
    saved = queue.get(jid)
    assert saved is not None and saved.payload == {"turn_id": stored.id} and saved.status == "queued"


def test_enqueue_rejects_bad_jobs(queue: JobQueue) -> None:
    with pytest.raises(InputError, match="user_id"):
        queue.enqueue([Job(kind="k", user_id="")])
    with pytest.raises(InputError, match="priority"):
        queue.enqueue([job(priority=7)])
    with pytest.raises(InputError, match="JSON"):
        queue.enqueue([job(payload={"x": object()})])
    with pytest.raises(InputError, match="kind"):
        queue.enqueue([job(kind="")])
    assert queue.list() == []


# -- leases ------------------------------------------------------------------------------------------


def test_an_expired_lease_is_reclaimed_and_counts_as_an_attempt(queue: JobQueue, clock: FakeClock) -> None:
    (jid,) = queue.enqueue([job()])
    lost = queue.claim("dead-worker", lease_seconds=10)
    assert lost is not None
    assert queue.claim("w2") is None  # leased
    clock.advance(11)
    back = queue.claim("w2", lease_seconds=10)
    assert back is not None and back.id == jid and back.lease_owner == "w2"
    assert back.attempts == 1 and back.last_error is not None and "dead-worker" in back.last_error
    assert queue.fail(lost, "late error") is None  # the old holder lost its lease; no second count
    assert queue.renew(lost) is False
    assert queue.renew(back) is True
    queue.complete(back)
    done = queue.get(jid)
    assert done is not None and done.status == "done" and done.attempts == 1


def test_a_job_that_keeps_losing_its_lease_ends_dead(queue: JobQueue, clock: FakeClock) -> None:
    (jid,) = queue.enqueue([job(max_attempts=2)])
    for _ in range(2):
        assert queue.claim("w", lease_seconds=1) is not None
        clock.advance(2)
    assert queue.claim("w") is None
    dead = queue.get(jid)
    assert dead is not None and dead.status == "dead" and dead.attempts == 2


def test_renew_keeps_a_long_job(queue: JobQueue, clock: FakeClock) -> None:
    queue.enqueue([job()])
    j = queue.claim("w", lease_seconds=10)
    assert j is not None
    for _ in range(5):
        clock.advance(8)
        assert queue.renew(j, 10)
        assert queue.claim("other") is None


# -- the P1 barrier ----------------------------------------------------------------------------------


def test_pending_counts_p1_of_the_session_and_user_wide_jobs(queue: JobQueue) -> None:
    queue.enqueue(
        [
            job(session="s", priority=Priority.P1),
            job(session=None, priority=Priority.P1),  # user-wide: blocks every session
            job(session="other", priority=Priority.P1),
            job(session="s", priority=Priority.P2),
            job(user="v", session="s", priority=Priority.P0),
        ]
    )
    assert queue.pending("u", "s") == 2
    assert queue.pending("u") == 3
    assert queue.pending("u", "s", max_priority=2) == 3
    assert queue.pending("v", "s") == 1
    assert queue.wait_for("u", "s", timeout=0.05) is False


def test_pending_ignores_done_and_dead_jobs(queue: JobQueue) -> None:
    queue.enqueue([job(priority=1, max_attempts=1), job(priority=1)])
    a = queue.claim("w")
    b = queue.claim("w")
    assert a is not None and b is not None
    assert queue.pending("u", "s") == 2  # running still counts
    queue.fail(a, "boom")
    queue.complete(b)
    assert queue.pending("u", "s") == 0
    assert queue.wait_for("u", "s", timeout=0) is True


# -- looking -----------------------------------------------------------------------------------------


def test_depth_stats_and_list(queue: JobQueue, clock: FakeClock) -> None:
    queue.enqueue([job(priority=1), job(priority=2), job(priority=2), job(priority=2, max_attempts=1)])
    assert queue.depth() == {0: 0, 1: 1, 2: 3}
    j = queue.claim("w")
    assert j is not None
    queue.complete(j)
    j = queue.claim("w")
    assert j is not None
    clock.advance(5)
    stats = queue.stats()
    assert stats["status"] == {"queued": 2, "running": 1, "done": 1, "dead": 0}
    assert stats["depth"] == {"P0": 0, "P1": 0, "P2": 2}
    assert stats["oldest_queued_seconds"] == pytest.approx(5.0)
    assert [x.status for x in queue.list(status="done")] == ["done"]
    assert len(queue.list(limit=2)) == 2
    assert queue.list(user_id="nobody") == []
    with pytest.raises(InputError, match="status"):
        queue.list(status="bogus")


def test_purge_deletes_old_done_jobs_only(queue: JobQueue, clock: FakeClock) -> None:
    queue.enqueue([job(), job(max_attempts=1), job()])
    done = queue.claim("w")
    dead = queue.claim("w")
    assert done is not None and dead is not None
    queue.complete(done)
    queue.fail(dead, "x")
    clock.advance(100)
    assert queue.purge(older_than=50) == 1
    assert sorted(j.status for j in queue.list()) == ["dead", "queued"]


def test_forgetting_a_user_deletes_their_jobs_and_locks(queue: JobQueue, store: Store, backend: str) -> None:
    queue.enqueue([job(user="u"), job(user="v")])
    lease = SessionLock(store).take("u", "s", "owner", timeout=0)
    with store.transaction() as tx:
        assert store.jobs_delete_user(tx, "u") == 1
    assert [j.user_id for j in queue.list()] == ["v"]
    if backend == "sqlite":  # the lease row named the user; PostgreSQL's advisory lock stores nothing
        assert raw_sql(store, "SELECT count(*) FROM session_locks WHERE user_id = ?", ("u",)) == [(0,)]
    lease.release()
    assert store.lock_holder("u", "s") is None
