"""The storage seam: small protocols, one per concern, composed into `Store`.

Everything the rest of memsched asks of storage is named here; nothing outside `memsched.store`
knows which backend it runs on (build one with `memsched.store.open_store(config)`).

- Every method is scoped by user; there is no unscoped query of user data (the job queue's
  operator views - counts, depth, listing - are the exception, and say so).
- Writes that must commit together go through a unit of work: `with store.transaction() as tx:`
  yields an opaque `Tx`, which only the store that made it accepts (methods taking `tx` write
  inside it; the others open and commit their own). A `Tx` is not a driver connection: callers
  never execute anything on it.
- Rows the store does not interpret (jobs, facts, summaries, traces) go in and out as plain dicts;
  the domain values it does (turns, pages, bookmarks, hits) are the dataclasses of `memsched.model`.

Adding storage for a feature: append a small `Protocol` at the end of this file, add it to `Store`'s
bases, implement it in `sqlite_<feature>.py` (a mixin of `SQLiteStore`) and `postgres_<feature>.py`
(a mixin of `PostgresStore`), with a named migration for each backend.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from memsched.errors import InputError, StoreError
from memsched.model import ROLES, Bookmark, Forgotten, Hit, Page, Session, Turn, unstorable

# The keys of a job row, as `JobStore` methods take and return it.
# Full-text search ranks, for each query term, only its newest this many matches among the user's
# rows (all of them when it has fewer): a word the user wrote in thousands of turns no longer makes
# every one of them a candidate. LoCoMo's users (~600 turns) never reach it; a 100k-turn user's
# common words do (BENCHMARKS.md, "One user on PostgreSQL", session 15, and "session 16").
BM25_CANDIDATES_PER_TERM = 1000

JOB_COLUMNS = (
    "id",
    "kind",
    "user_id",
    "session_id",
    "payload",
    "priority",
    "status",
    "attempts",
    "max_attempts",
    "run_after",
    "last_error",
    "ordered",
    "lease_owner",
    "lease_until",
    "created_at",
    "finished_at",
    "dedupe_key",
)


# A row id of either store is a signed 64-bit integer (SQLite INTEGER, PostgreSQL bigint).
ROW_ID_RANGE = range(-(2**63), 2**63)


def row_ids(ids: Iterable[int]) -> list[int]:
    """The ids that can name a row: one outside the 64-bit range names none (handed to the driver it
    raised OverflowError, a 500 for `DELETE /v1/users/u/turns/99999999999999999999999`)."""
    return [i for i in (int(x) for x in ids) if i in ROW_ID_RANGE]


def validate_turn(turn: Turn) -> None:
    """Refuse a turn no backend can store faithfully, naming the problem (every backend calls this
    before writing, so bad input fails the same way on all of them and nothing is half-stored)."""
    if not turn.user_id or not isinstance(turn.user_id, str):
        raise InputError("turn has no user_id")
    if not turn.session_id or not isinstance(turn.session_id, str):
        raise InputError("turn has no session_id")
    if turn.role not in ROLES:
        raise InputError(f"role must be one of {', '.join(ROLES)}, got {turn.role!r}")
    if not isinstance(turn.content, str):
        raise InputError("turn content must be a string")
    for name in ("content", "user_id", "session_id", "speaker", "external_id"):
        value = getattr(turn, name)
        problem = unstorable(value) if isinstance(value, str) else None
        if problem is not None:
            raise InputError(f"turn {name}: {problem}")


class Tx:
    """An open unit of work, made by `Store.transaction()`.

    Opaque on purpose: pass it to the same store's methods that take `tx`; nothing else may read it.
    Each backend subclasses it privately.
    """

    __slots__ = ()


class TransactionStore(Protocol):
    def transaction(self) -> AbstractContextManager[Tx]:
        """Begin a unit of work: commits when the block ends, rolls back on any exception.
        Not re-entrant; do not call this store's self-committing methods inside the block."""
        ...


class TurnStore(Protocol):
    """Users, sessions, turns and pages, and full-text search over turns."""

    page_size: int

    def has_user(self, user_id: str) -> bool: ...
    def users(self) -> list[str]: ...
    def sessions(self, user_id: str) -> list[Session]: ...

    def add_turns(self, turns: Sequence[Turn], skip_duplicates: bool = False) -> list[Turn]:
        """Store turns in one transaction, in order; assigns id, seq and page. Returns them."""
        ...

    def insert_turns(self, tx: Tx, turns: Sequence[Turn], skip_duplicates: bool = False) -> list[Turn]:
        """`add_turns` inside `tx`, so derived rows (jobs, state) commit with the turns.

        With `skip_duplicates`, a turn whose session already holds the same speaker, text and time
        is not stored again; it is left out of the result."""
        ...

    def get_turns(self, user_id: str, ids: Sequence[int]) -> list[Turn]:
        """The user's turns with these ids, in id order (unknown or foreign ids are left out)."""
        ...

    def session_turns(self, user_id: str, session_id: str, last: int | None = None) -> list[Turn]: ...
    def session_turns_after(self, user_id: str, session_id: str, after_seq: int) -> list[Turn]: ...
    def session_turns_between(
        self, user_id: str, session_id: str, first_seq: int, last_seq: int
    ) -> list[Turn]: ...
    def recent_turns(self, user_id: str, limit: int) -> list[Turn]: ...
    def turn_ids_between(self, user_id: str, start: datetime, end: datetime, limit: int) -> list[int]:
        """Ids of the user's turns said in [`start`, `end`), oldest first, at most `limit`."""
        ...

    def iter_turns(self, user_id: str, after_id: int = 0) -> Iterator[Turn]:
        """The user's turns (those with id > `after_id`), oldest first."""
        ...

    def turns_by_id(self, user_id: str, after_id: int, limit: int) -> list[Turn]:
        """At most `limit` of the user's turns with id > `after_id`, in id order (the order they were
        stored in: page through a history with the last id, as an export does)."""
        ...

    def turn_count(self, user_id: str) -> int: ...
    def max_turn_id(self, user_id: str) -> int: ...
    def neighbours(
        self, user_id: str, turn_ids: Sequence[int], radius: int = 1
    ) -> dict[int, list[tuple[int, int]]]:
        """For each turn, (id, distance) of the turns up to `radius` positions away in its session."""
        ...

    def turn_meta(self, user_id: str, turn_ids: Sequence[int]) -> dict[int, tuple[int, str, int, str]]:
        """turn id -> (page id, session id, seq, speaker label) for the given turns of the user."""
        ...

    def turn_meta_update(self, tx: Tx, user_id: str, turn_id: int, meta: dict[str, Any]) -> None: ...
    def speakers(self, user_id: str) -> list[str]:
        """The labels of the user's named speakers (roles are not names), sorted. Costs one index
        seek per speaker, not a scan of the user's turns."""
        ...

    def delete_turns(self, user_id: str, ids: Sequence[int]) -> int:
        """Physically delete turns, their index rows and vectors no other turn of the user uses."""
        ...

    def delete_user(self, user_id: str) -> int:
        """Physically delete a user and everything stored for them. Returns the turns removed."""
        ...

    # pages
    def pages(self, user_id: str, session_id: str | None = None) -> list[Page]: ...
    def page_turns(self, user_id: str, page_id: int) -> list[Turn]: ...
    def page_turn_ids(self, user_id: str, page_ids: Sequence[int]) -> dict[int, list[int]]: ...
    def turn_pages(self, user_id: str) -> dict[int, int]: ...

    # full-text search
    def search_bm25(self, user_id: str, query: str, limit: int = 50, after_id: int = 0) -> list[Hit]:
        """The user's turns matching `query` (segmented like the index), best first; score grows
        with relevance. With `after_id`, only turns with a higher id (the ones added since a search
        whose hits the caller keeps: scored with the statistics of now, all of their matches)."""
        ...


class VectorStore(Protocol):
    """Dense vectors, keyed by (user, model, content hash of the embedded text)."""

    def vectors(self, user_id: str, model_id: str, after_id: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """(turn ids, float32 matrix) of the user's turns with a stored vector for `model_id`."""
        ...

    def turns_missing_vectors(
        self, user_id: str, model_id: str, limit: int = 1000, after_id: int = 0, han_only: bool = False
    ) -> list[tuple[int, str]]:
        """(turn id, text to embed) of turns after `after_id` with no vector for `model_id` yet;
        with `han_only`, only turns whose content holds a Chinese (Han) character (an embedder
        that serves Chinese only, `embed.gloss`, stores nothing for the others)."""
        ...

    def vector_version(self, user_id: str, model_id: str) -> tuple[int, int]:
        """A pair that changes whenever the user gains turns or vectors for `model_id`."""
        ...

    def vector_versions(self, user_id: str, model_ids: Sequence[str]) -> list[tuple[int, int]]:
        """`vector_version` of each of `model_ids`, in one statement."""
        ...

    def vectors_checked(self, user_id: str, model_id: str) -> int:
        """The turn id up to which every turn of the user was found to have its `model_id` vector
        (`set_vectors_checked`), so a process that starts does not look through the whole history
        again; 0 when nothing is recorded (or the store cannot promise it: PostgreSQL)."""
        ...

    def set_vectors_checked(self, user_id: str, model_id: str, turn_id: int) -> None:
        """Record that every turn of the user up to `turn_id` has its vector (never moves back).
        Only sound where turn ids become visible in order (SQLite's single writer); a store whose
        writers can commit a lower id after a higher one (PostgreSQL) keeps nothing."""
        ...

    def vectors_since(
        self, user_id: str, model_id: str, after_vector: int, after_turn: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Vectors added since a `vector_version`; may repeat some the caller already has."""
        ...

    def put_vectors(self, user_id: str, model_id: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        """Store vectors keyed by (content hash of the embedded text, model id)."""
        ...

    def put_vectors_tx(
        self, tx: Tx, user_id: str, model_id: str, items: Sequence[tuple[str, np.ndarray]]
    ) -> None: ...
    def put_vector_batches(
        self,
        user_id: str,
        batches: Sequence[tuple[str, Sequence[tuple[str, np.ndarray]]]],
        checked: Sequence[tuple[str, int]] = (),
    ) -> None:
        """`put_vectors` for several models (`(model id, items)` pairs) in ONE transaction: a turn's
        vectors under each embedder commit together, at the cost of one commit. Only the vectors of
        texts some turn of the user still has are written, checked in that transaction: an embedding
        pass that read a turn before it was forgotten leaves no vector of it behind. `checked`:
        `(model id, turn id)` watermarks (`set_vectors_checked`) written in the same transaction,
        so they move only if the vectors commit, without a commit of their own."""
        ...

    def vector_count(self, user_id: str, model_id: str) -> int: ...
    def load_vectors(self, user_id: str, model_id: str) -> tuple[np.ndarray, np.ndarray, tuple[int, int]]:
        """(turn ids, float32 matrix, the `vector_version` they are complete up to) of all the user's
        turn vectors for `model_id`, read as cheaply as the store can (ids may repeat)."""
        ...

    # True when `search_vectors` is served by the database's own index (the retriever then keeps no
    # matrices in memory); False when it would only load the vectors and search them in Python.
    serves_vector_search: bool

    def vector_graph_path(self, user_id: str, model_id: str) -> Path | None:
        """Where the worker keeps the user's HNSW graph of one model's vectors for the retriever's
        in-memory search (`memsched.vectors`); None when the store serves vector search itself or
        has no file. Whenever the store forgets any of a user's turns it writes a new value to
        `generation` in the graphs' directory, then unlinks that user's graphs."""
        ...

    def search_vectors(
        self, user_id: str, model_id: str, query: np.ndarray, k: int, *, exact: bool = False
    ) -> list[Hit]:
        """The user's k nearest turns to the unit vector `query` by cosine similarity, best first;
        `exact` skips any approximate index."""
        ...

    def turn_vectors(self, user_id: str, model_id: str, turn_ids: Sequence[int]) -> dict[int, np.ndarray]:
        """Stored vectors of the given turns for `model_id` (turns without one are left out)."""
        ...


class BookmarkStore(Protocol):
    """Keyword bookmarks of pages (with lineage to their turns) and page-use bookkeeping."""

    def add_bookmarks(
        self, user_id: str, bookmarks: Sequence[Bookmark], *, replace_pages: bool = False
    ) -> None: ...
    def replace_bookmarks(self, user_id: str, old_ids: Sequence[int], new: Sequence[Bookmark]) -> None: ...
    def update_bookmark(self, user_id: str, bookmark: Bookmark) -> None: ...
    def delete_bookmarks(self, user_id: str, ids: Sequence[int] | None = None) -> int: ...
    def bookmarks(
        self, user_id: str, *, ids: Sequence[int] | None = None, page_id: int | None = None
    ) -> list[Bookmark]: ...
    def iter_bookmarks(self, user_id: str) -> Iterator[Bookmark]: ...
    def bookmark_count(self, user_id: str) -> int: ...
    def bookmark_signature(self, user_id: str) -> tuple[int, float, int]: ...
    def bookmarked_page_ids(self, user_id: str) -> set[int]: ...
    def search_bookmarks_bm25(self, user_id: str, query: str, limit: int = 20) -> list[Hit]:
        """Full-text search over keywords, aliases and summaries. `Hit.turn_id` holds the bookmark id."""
        ...

    def bookmark_vectors(self, user_id: str, model_id: str) -> tuple[np.ndarray, np.ndarray]: ...
    def bookmarks_missing_vectors(self, user_id: str, model_id: str) -> list[Bookmark]: ...
    def touch_pages(self, user_id: str, page_ids: Sequence[int], at: datetime | None = None) -> None: ...
    def page_use(self, user_id: str) -> dict[int, tuple[int, datetime]]: ...


class StateStore(Protocol):
    """Profile facts with history, session summaries, per-session scheduler state, traces, and the
    lineage deletes that keep them in step with forgotten turns."""

    def facts_current(self, user_id: str) -> list[dict[str, Any]]: ...
    def facts_history(self, user_id: str, key: str | None = None) -> list[dict[str, Any]]: ...
    def fact_set(
        self,
        tx: Tx,
        user_id: str,
        key: str,
        value: str,
        *,
        valid_from: float,
        source_turn_ids: Sequence[int] = (),
        meta: dict[str, Any] | None = None,
        now: float,
    ) -> int: ...
    def fact_add_sources(self, tx: Tx, fact_id: int, turn_ids: Iterable[int]) -> None: ...
    def summary_add(self, tx: Tx, row: dict[str, Any]) -> int: ...
    def summaries_delete(self, tx: Tx, user_id: str, ids: Sequence[int]) -> int: ...
    def session_summaries(self, user_id: str, session_id: str) -> list[dict[str, Any]]: ...
    def session_state(self, user_id: str, session_id: str) -> dict[str, Any]: ...
    def session_state_update(
        self, tx: Tx, user_id: str, session_id: str, values: dict[str, Any], *, now: float
    ) -> dict[str, Any]: ...
    def trace_put(
        self,
        tx: Tx,
        trace_id: str,
        user_id: str,
        session_id: str | None,
        *,
        created_at: float,
        turn_ids: Sequence[int],
        data: dict[str, Any],
    ) -> None: ...
    def trace_get(self, trace_id: str, user_id: str | None = None) -> dict[str, Any] | None: ...
    def traces_list(
        self, user_id: str, session_id: str | None = None, limit: int = 50
    ) -> list[dict[str, Any]]: ...
    def state_forget_turns(self, tx: Tx, user_id: str, turn_ids: Sequence[int]) -> dict[str, int]: ...
    def state_delete_user(self, tx: Tx, user_id: str) -> int: ...
    def state_delete_session(self, tx: Tx, user_id: str, session_id: str) -> int: ...


class JobStore(Protocol):
    """The durable job queue. Rows are dicts keyed by the job columns; times are epoch seconds."""

    def jobs_enqueue(self, tx: Tx, rows: Sequence[dict[str, Any]]) -> list[int]: ...
    def jobs_claim(
        self,
        owner: str,
        *,
        now: float,
        lease_until: float,
        kinds: Sequence[str] | None = None,
        max_priority: int | None = None,
    ) -> dict[str, Any] | None: ...
    def jobs_renew(self, job_id: int, owner: str, lease_until: float) -> bool: ...
    def jobs_complete(self, job_id: int, *, now: float) -> dict[str, Any] | None: ...
    def jobs_fail(
        self,
        job_id: int,
        owner: str | None,
        *,
        now: float,
        error: str,
        backoff: Callable[[int], float],
        permanent: bool = False,
    ) -> dict[str, Any] | None: ...
    def jobs_retry(self, job_id: int, *, now: float) -> bool: ...
    def jobs_purge(self, *, before: float, statuses: Sequence[str] = ("done",)) -> int: ...
    def jobs_delete_user(self, tx: Tx, user_id: str) -> int: ...
    def jobs_get(self, job_id: int) -> dict[str, Any] | None: ...
    # Operator views over every user's jobs (the CLI, metrics): not scoped by user on purpose.
    def jobs_list(
        self, *, status: str | None = None, user_id: str | None = None, limit: int = 100
    ) -> list[dict[str, Any]]: ...
    def jobs_pending(self, user_id: str, session_id: str | None = None, max_priority: int = 1) -> int: ...
    def jobs_depth(self) -> dict[int, int]: ...
    def jobs_counts(self) -> dict[str, int]: ...
    def jobs_oldest_queued(self) -> float | None: ...
    def jobs_wait(self, timeout: float) -> bool:
        """Block until a job may have been queued or `timeout` passes; True when woken early.

        SQLite hears only about jobs queued in this process; PostgreSQL about every process's
        (LISTEN/NOTIFY), so there an idle worker waits longer between polls."""
        ...

    def jobs_wake(self) -> None:
        """Wake this process's waiters (a stop request)."""
        ...


class SessionLease:
    """A (user, session) lock held by `owner` until `release()`; as a context manager it releases
    when the block ends. Made by `LockStore.session_hold`; each backend subclasses it.

    Thread-safe: one thread may take it and another release it (the scheduler's post-reply thread
    releases what the turn's thread took). Releasing twice is harmless.
    """

    __slots__ = ("owner", "session_id", "user_id")

    def __init__(self, user_id: str, session_id: str, owner: str) -> None:
        self.user_id = user_id
        self.session_id = session_id
        self.owner = owner

    def renew(self, lease_seconds: float) -> bool:
        """Keep holding for at least `lease_seconds` more; False when the lock was lost meanwhile."""
        raise NotImplementedError

    def release(self) -> bool:
        """Give the lock back; False when it was no longer held (lost, or released before)."""
        raise NotImplementedError

    def __enter__(self) -> SessionLease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def session_busy(user_id: str, session_id: str, timeout: float) -> StoreError:
    """The error of a `session_hold` that waited `timeout` seconds in vain (one message, every backend)."""
    return StoreError(
        f"session {user_id}/{session_id} is busy: another turn held its lock for over {timeout:g}s;"
        " retry later"
    )


class LockStore(Protocol):
    """Per-(user, session) locks: one turn of a session at a time, across threads and processes.

    How a dead holder lets go, and in what order waiters get the lock, is the backend's: SQLite keeps
    a lease row that a live holder renews (a dead one's runs out; waiters poll, in no set order);
    PostgreSQL takes an advisory lock on a connection pinned for the hold (a dead holder's connection
    closes and the lock goes with it at once; waiters queue in PostgreSQL's lock queue, first come,
    first served)."""

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
        """Take the session's lock for `owner`, waiting up to `timeout` seconds (0: one try).

        Raises the `session_busy` StoreError when it is still held by then. Not re-entrant: a second
        hold of the same session waits for the first, whoever takes it. `lease_seconds` and `clock`
        matter only where the lock is a lease (a holder that stops renewing loses it after that).
        """
        ...

    def lock_holder(self, user_id: str, session_id: str) -> tuple[str, float] | None:
        """(owner, held until) of the session's lock, or None when nobody holds it. For diagnostics;
        a lease may have run out already (compare with the clock); `inf` where there is no lease."""
        ...


# -- feature protocols: append yours here, above `Store`, and add it to `Store`'s bases -------------------


class ForgetStore(Protocol):
    """Hard deletes with lineage (issue 9). Each deletes, in one transaction, what holds the content
    and every artifact derived from it (an artifact records its `source_turn_ids`), then purges the
    bytes (`purge_deleted`) unless `purge=False`. The result says what the caller must rebuild."""

    def forget_turns(self, user_id: str, turn_ids: Sequence[int], *, purge: bool = True) -> Forgotten: ...
    def forget_session(self, user_id: str, session_id: str, *, purge: bool = True) -> Forgotten: ...
    def forget_user(self, user_id: str, *, purge: bool = True) -> Forgotten: ...
    def purge_deleted(self) -> dict[str, object]:
        """Make deletions physical: no deleted text or index token left in the database files."""
        ...


class LeaseRecoveryStore(Protocol):
    """Taking back at start-up what a killed process of this host held, without waiting for its leases."""

    def lease_owners(self) -> list[str]: ...
    def release_owner(self, owner: str, *, now: float) -> int: ...


class KeyStore(Protocol):
    """API keys of the HTTP service, by tenant. Only a salted hash of each secret is stored."""

    def key_add(self, key_id: str, tenant: str, salt: bytes, digest: bytes, *, now: float) -> None: ...
    def key_get(self, key_id: str) -> dict[str, Any] | None: ...
    def keys_list(self, tenant: str | None = None) -> list[dict[str, Any]]: ...
    def key_revoke(self, key_id: str, *, now: float) -> bool: ...
    def keys_active(self) -> int:
        """How many keys are not revoked (0: the service runs without keys, on loopback only)."""
        ...


class ProfileStore(Protocol):
    """Profile facts with supersession (issue 7): a key may hold several current values (likes, pets);
    a value is superseded by a newer one (`superseded_by` names it) or retracted (`by` None). Rows are
    dicts: id, user_id, key, value, valid_from, superseded_at, superseded_by, source_turn_ids, meta."""

    def facts(self, user_id: str, key: str | None = None, *, current: bool = False) -> list[dict[str, Any]]:
        """The user's facts (of `key`; only those in force with `current`), oldest first."""
        ...

    def fact_insert(
        self,
        tx: Tx,
        user_id: str,
        key: str,
        value: str,
        *,
        valid_from: float,
        source_turn_ids: Sequence[int] = (),
        meta: dict[str, Any] | None = None,
        now: float,
        superseded_at: float | None = None,
        superseded_by: int | None = None,
    ) -> int:
        """Add one fact row as given (history rows come with `superseded_at`). Returns its id."""
        ...

    def fact_supersede(
        self, tx: Tx, user_id: str, fact_ids: Sequence[int], *, at: float, by: int | None = None
    ) -> int:
        """End the facts still in force among `fact_ids` at `at`, replaced by fact `by` (None: retracted)."""
        ...


class CompanionStore(Protocol):
    """Per-user companion state: the carried mood and the learned daily routine (one row each), plus the
    timestamps the routine is learned from. Writers take the caller's transaction."""

    def mood_get(self, user_id: str) -> dict[str, Any] | None: ...
    def mood_put(self, tx: Tx, user_id: str, row: dict[str, Any]) -> None: ...
    def routine_get(self, user_id: str) -> dict[str, Any] | None: ...
    def routine_put(self, tx: Tx, user_id: str, row: dict[str, Any]) -> None: ...
    def user_turn_times(self, user_id: str, since: float = 0.0) -> list[tuple[int, float]]: ...
    def last_active(self, user_id: str) -> float | None: ...


class TermVectorStore(Protocol):
    """The embedded vocabulary (`memsched.vocab`): one vector per distinct term of a user's turns.
    A row names the turn its term was found in (`turn_id`) and is forgotten with that turn."""

    def put_term_vectors(
        self, user_id: str, model_id: str, items: Sequence[tuple[str, int, np.ndarray]]
    ) -> None:
        """Store (term, source turn id, vector) rows, replacing the term's previous row."""
        ...

    def term_vectors(self, user_id: str, model_id: str) -> tuple[list[str], np.ndarray]:
        """(terms, float32 matrix) of the user's embedded terms for `model_id`."""
        ...

    def term_vector_version(self, user_id: str, model_id: str) -> tuple[int, int]:
        """A pair that changes whenever the user's term vectors for `model_id` are added or deleted."""
        ...

    def turn_contents(self, user_id: str, turn_ids: Sequence[int]) -> dict[int, str]:
        """turn id -> content of the user's given turns (the soft-term layer reads only the text)."""
        ...


class ExportStore(Protocol):
    """What an export reads of a user besides turns (`memsched.export`, data portability): every row of
    the per-user tables, in a stable order. Times are epoch seconds, lineage is store turn ids."""

    def claim_user(self, tx: Tx, user_id: str, created_at: float) -> bool:
        """Create the user's row in `tx`; False when the user exists already, made by a transaction
        that committed before or commits while this one waits (an import's claim on an empty user:
        of two imports at once, one claims it and the other is refused)."""
        ...

    def export_facts(self, user_id: str) -> list[dict[str, Any]]:
        """Every profile fact of the user, superseded ones included, in id order: id, key, value,
        valid_from, superseded_at, superseded_by, source_turn_ids, meta, created_at."""
        ...

    def export_summaries(self, user_id: str) -> list[dict[str, Any]]:
        """Every session summary of the user, in id order (the rows of `session_summaries`, no ids)."""
        ...

    def export_session_states(self, user_id: str) -> list[dict[str, Any]]:
        """Each session's scheduler state: session_id, data, updated_at; by session id."""
        ...

    def export_traces(
        self, user_id: str, after: tuple[float, str] | None, limit: int
    ) -> list[dict[str, Any]]:
        """At most `limit` of the user's traces after (created_at, id) `after`, oldest first: id,
        session_id, created_at, turn_ids, data (page on with the last row's created_at and id)."""
        ...


@runtime_checkable
class Store(
    TransactionStore,
    TurnStore,
    VectorStore,
    BookmarkStore,
    StateStore,
    JobStore,
    LockStore,
    # feature protocols, one per line
    ForgetStore,
    KeyStore,
    LeaseRecoveryStore,
    ProfileStore,
    CompanionStore,
    TermVectorStore,
    ExportStore,
    Protocol,
):
    """Everything memsched asks of storage. Feature protocols join its bases."""

    @property
    def location(self) -> str:
        """Where the data lives, for logs and `memsched info` (no password)."""
        ...

    def migrations(self) -> list[str]:
        """Names of the migrations applied to this database."""
        ...

    def close(self) -> None: ...
