"""Forgetting for real: one entry point behind the CLI, the HTTP API and the conversation commands.

`forget(memory, user, ...)` hard-deletes a turn, the last N turns, a session or a whole user from
everything that holds the content or was made from it (the store's lineage cascade, then the byte
purge: see `store/sqlite_forget.py`), drops it from every in-memory index and cache, and rebuilds
what was derived from it without it: a summary that covered a forgotten turn is rewritten from the
turns that remain (extractively, at once, so no reply ever sees the old text), a page that lost its
bookmarks is bookmarked again by a P2 job, and the session's token counts are recounted.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memsched.errors import InputError
from memsched.model import Forgotten, utcnow

if TYPE_CHECKING:
    from memsched.jobs.queue import JobQueue
    from memsched.memory import Memory

log = logging.getLogger("memsched.forget")

# Zeroed token counters with seq 0 make the scheduler recount a session from its turns.
COUNTS_RESET: dict[str, int] = {"history_tokens": 0, "history_seq": 0, "live_tokens": 0, "live_seq": 0}

MAX_LAST = 100_000  # --last N beyond this is a mistake, not a request


def forget(
    memory: Memory,
    user_id: str,
    *,
    session_id: str | None = None,
    turn_ids: Sequence[int] = (),
    last: int | None = None,
    everything: bool = False,
    queue: JobQueue | None = None,
) -> Forgotten:
    """Hard-delete what is named, with everything derived from it, and purge its bytes.

    Exactly one of: `everything` (the whole user), `turn_ids`, `last` (the user's — or with
    `session_id` the session's — last N turns), or `session_id` alone (the whole session).
    Raises `InputError` when the request is ambiguous or names nothing of this user.
    """
    if not user_id:
        raise InputError("name the user whose data to forget")
    chosen = sum([everything, bool(turn_ids), last is not None])
    if chosen > 1:
        raise InputError("forget one thing at a time: everything, some turns, or the last N turns")
    if chosen == 0 and session_id is None:
        raise InputError("say what to forget: everything (--all), a session, turn ids, or the last N turns")
    store = memory.store
    if everything:
        if session_id is not None:
            raise InputError("everything means the whole user; leave out the session, or forget only it")
        out = store.forget_user(user_id)
    elif last is not None:
        if not 1 <= last <= MAX_LAST:
            raise InputError(f"last must be between 1 and {MAX_LAST}, got {last}")
        if session_id is not None:
            turns = store.session_turns(user_id, session_id, last=last)
        else:
            turns = store.recent_turns(user_id, last)
        out = store.forget_turns(user_id, [t.id for t in turns if t.id is not None])
    elif turn_ids:
        ids = [int(i) for i in turn_ids]
        if session_id is not None:
            ids = [t.id for t in store.get_turns(user_id, ids) if t.session_id == session_id and t.id]
        out = store.forget_turns(user_id, ids)
    else:
        assert session_id is not None
        out = store.forget_session(user_id, session_id)
    after_forget(memory, out, whole_user=everything, queue=queue)
    log.info(
        "forgot user=%s turns=%d sessions=%d rows=%s purge=%s",
        user_id,
        len(out.turn_ids),
        len(out.sessions),
        sum(out.rows.values()),
        {k: v for k, v in out.purge.items() if k != "fts_optimized"},
    )
    return out


def after_forget(
    memory: Memory, out: Forgotten, *, whole_user: bool = False, queue: JobQueue | None = None
) -> None:
    """Drop the forgotten turns from memory's caches and rebuild what was derived from them."""
    from memsched import bookmarks

    user_id = out.user_id
    memory.retriever.forget(user_id, None if whole_user else out.turn_ids)
    memory.forget_caches(user_id)
    bookmarks.forget_stats(memory.store, user_id)
    if whole_user:
        return
    store = memory.store
    alive = {s.id for s in store.sessions(user_id)}
    with store.transaction() as tx:
        for session_id in out.sessions:
            if session_id in alive:
                # A forgotten line must not corroborate the next one's reading (router.py).
                values: dict[str, Any] = {**COUNTS_RESET, "last_reading": None, "last_reading_turn": None}
                store.session_state_update(tx, user_id, session_id, values, now=utcnow().timestamp())
    rewrite_summaries(memory, user_id, out.summaries)
    if out.pages:
        _rebookmark(memory, user_id, out.pages, queue)


def rewrite_summaries(memory: Memory, user_id: str, deleted: Sequence[dict[str, Any]]) -> int:
    """Rewrite deleted summaries from the turns of their range that remain (extractive: no LLM on
    a blocking path, and no chance for a model to recall what was forgotten). Returns how many."""
    from memsched.summarize import render, summarize_turns

    store = memory.store
    written = 0
    for old in deleted:
        session_id, first, last = str(old["session_id"]), int(old["first_seq"]), int(old["last_seq"])
        turns = store.session_turns_between(user_id, session_id, first, last)
        if not turns:
            continue
        counter = memory.counter
        source_tokens = sum(counter.message_tokens({"role": t.role, "content": t.content}) for t in turns)
        made = summarize_turns(turns, counter=counter, max_tokens=max(24, int(old.get("tokens") or 0)))
        if not made.text:
            continue
        row = {
            "user_id": user_id,
            "session_id": session_id,
            "first_seq": first,
            "last_seq": last,
            "kind": str(old.get("kind") or "topic"),
            "method": made.method,
            "content": made.text,
            "tokens": 0,
            "source_tokens": source_tokens,
            "source_turn_ids": [t.id for t in turns if t.id is not None],
            "created_at": utcnow().timestamp(),
        }
        row["tokens"] = counter.count(render(row))
        with store.transaction() as tx:
            store.summary_add(tx, row)
        written += 1
    return written


def _rebookmark(memory: Memory, user_id: str, pages: Sequence[int], queue: JobQueue | None) -> None:
    from memsched.jobs.queue import Job, JobQueue, Priority

    jobs = [
        Job(
            kind="bookmark",
            user_id=user_id,
            session_id=None,
            payload={"page_id": int(p)},
            priority=Priority.P2,
            dedupe_key=f"page:{int(p)}",
        )
        for p in pages
    ]
    (queue or JobQueue(memory.store)).enqueue(jobs)
