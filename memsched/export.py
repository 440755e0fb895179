"""A user's data out of memsched: their turns as memsched JSONL, the format `memsched import` reads.

One line per turn, in the order the turns were stored (id order), so importing the file into an empty
home gives the same sessions with the same turns in the same order, roles, speakers, text, timestamps
and external ids. A line also carries the turn's `meta` when it has any (the date notes and image
descriptions memsched keeps with it); import does not read it back (it dates the turns again).
Nothing but turns goes into the file, so it stays importable. Read page by page: a long history is
never held in memory at once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from memsched.model import Turn

if TYPE_CHECKING:
    from memsched.store import Store

PAGE = 500


def turn_record(turn: Turn) -> dict[str, Any]:
    """The JSONL object of one turn (without the user id: the importer names the user)."""
    out: dict[str, Any] = {
        "session_id": turn.session_id,
        "role": turn.role,
        "speaker": turn.speaker,
        "content": turn.content,
        "timestamp": turn.created_at.isoformat(),
        "external_id": turn.external_id,
    }
    if turn.meta:
        out["meta"] = turn.meta
    return out


def export_pages(store: Store, user_id: str, page: int = PAGE) -> Iterator[str]:
    """The user's turns as JSONL, one string of up to `page` lines (each ending in a newline) at a
    time, in id order: what a streamed HTTP response sends as one chunk."""
    after = 0
    while True:
        turns = store.turns_by_id(user_id, after, page)
        if turns:
            yield "".join(json.dumps(turn_record(t), ensure_ascii=False) + "\n" for t in turns)
        if len(turns) < page:
            return
        after = turns[-1].id or after
