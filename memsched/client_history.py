"""History a client sends that memsched never recorded: shown to the model, never stored.

A chat app put in front of memsched mid-conversation sends its whole history with every request;
memsched owns the history from its first turn on, so without this the earlier messages, which
memsched never saw, would be dropped from the model's view. `unseen_prefix` returns them as
unsaved turns for the recent window:

* a session memsched has no record of: every earlier message the client sent;
* a session whose first recorded turn (seq 0, or the retry that replaced it when its reply failed or
  it waited for tool results) is still stored: the client's messages before that
  turn (found by role and text); none when the client no longer sends it (it trimmed its history);
* a session whose first recorded turns were forgotten: nothing. A forget must not be undone by the
  client resending what was forgotten, and a hole at the start of the session cannot tell the
  forgotten messages from the unseen ones.

They are never stored, embedded or searched (`memsched import` makes an existing conversation part
of the memory), and they are the oldest part of the recent window, so they leave it first. A forget
inside the session leaves them alone (they were never in memsched's memory), but once the first
recorded turns are gone, so are they.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from memsched.model import Turn
from memsched.store import Store

ROLES = ("user", "assistant")
META_KEY = "client_history"  # set on the unsaved turns: the trace and tests tell them apart
# The session state's key for the seq of its first recorded turn when it is not 0.
FIRST_SEQ = "first_seq"


def unseen_prefix(
    store: Store,
    user_id: str,
    session_id: str,
    history: Sequence[tuple[str, str]],
    tail: Sequence[Turn],
    at: datetime,
    first_seq: int = 0,
) -> list[Turn]:
    """The client's earlier messages (`history`: (role, text), oldest first, before the new message)
    that precede everything memsched recorded in this session, as unsaved turns dated just before
    `at`. `tail` is the session's last stored turns (read by the caller anyway). `first_seq` is the
    seq of the session's first recorded turn: 0, or past the attempts a retry replaced (the
    session state's `first_seq`, `Scheduler._take_failed_turn`)."""
    history = [(r, c) for r, c in history if r in ROLES and c.strip()]
    if not history:
        return []
    first = next((t for t in tail if t.seq == first_seq), None)
    if first is None and tail:
        found = store.session_turns_between(user_id, session_id, first_seq, first_seq)
        first = found[0] if found else None
        if first is None:
            return []  # the session's first turns were forgotten
    if first is None:
        session = next((s for s in store.sessions(user_id) if s.id == session_id), None)
        if session is not None and session.turn_count > first_seq:
            return []  # a session whose turns were all forgotten
        cut = len(history)  # nothing recorded yet (or only attempts a retry replaced)
    else:
        cut = next((i for i, (r, c) in enumerate(history) if r == first.role and c == first.content), 0)
    n = cut
    return [
        Turn(
            user_id=user_id,
            session_id=session_id,
            role=role,  # type: ignore[arg-type]
            content=content,
            created_at=at - timedelta(milliseconds=n - i),
            meta={META_KEY: True},
        )
        for i, (role, content) in enumerate(history[:cut])
    ]
