"""Cooperative paging through tools: the model pages bookmarked history in by itself.

The context carries a compact index of the pages that are NOT already in it, one line per page
(`[p12 2023-05-08: OT algorithm, central server, Yjs]`), under its own token share, and the model
gets a `recall(page_id)` tool. `resolve_recall` answers a call with the page's turns, labelled with
their dates, and counts the use (LFU and recency, stored in the `page_use` table), which also
decides which pages the index keeps when it has to leave some out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from memsched.errors import InputError

if TYPE_CHECKING:
    from memsched.model import Bookmark, Turn
    from memsched.store import Store
    from memsched.text.tokens import TokenCounter


class Memory(Protocol):
    """What the tools use of a `memsched.Memory` (named here so this module does not import it)."""

    store: Store

    @property
    def counter(self) -> TokenCounter: ...


INDEX_HEADER = "Earlier pages not shown (recall(page_id) reads one):"
DEFAULT_INDEX_SHARE = 0.1  # of the context budget, when paging_mode is "tools" or "both"

RECALL_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "recall",
        "description": (
            "Read a page of the earlier conversation, listed in the bookmark index as [p<id> date: keywords]."
            " Use it when the answer depends on something said before that is not in the context."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "page_id": {"type": "integer", "description": "The number after 'p', e.g. 12 for [p12 ...]"}
            },
            "required": ["page_id"],
        },
    },
}


def recall_tool() -> dict[str, Any]:
    """The OpenAI-format schema of the `recall(page_id)` tool (a fresh copy)."""
    copy: dict[str, Any] = json.loads(json.dumps(RECALL_TOOL))
    return copy


def index_lines(
    memory: Memory, user_id: str, *, exclude_pages: Iterable[int] = (), keywords: int = 4
) -> list[tuple[int, str, float]]:
    """(page id, index line, priority) for every bookmarked page not in `exclude_pages`, oldest first.

    Priority: the page's best bookmark importance, raised by past use (LFU) and recent use.
    """
    excluded = set(exclude_pages)
    by_page: dict[int, list[Bookmark]] = {}
    for b in memory.store.bookmarks(user_id):
        for p in b.page_ids:
            if p not in excluded:
                by_page.setdefault(p, []).append(b)
    use = memory.store.page_use(user_id)
    now = max((u[1] for u in use.values()), default=None)
    out: list[tuple[int, str, float, datetime]] = []
    for p, marks in by_page.items():
        names = list(dict.fromkeys(k for b in sorted(marks, key=lambda b: -b.importance) for k in b.keywords))
        when = min(b.first_at for b in marks)
        priority = max(b.importance for b in marks)
        if p in use:
            uses, last = use[p]
            recency = 1.0 if now is None else 1.0 / (1.0 + (now - last).total_seconds() / 86_400.0)
            priority += 0.1 * min(uses, 10) ** 0.5 + 0.2 * recency
        line = f"[p{p} {when.strftime('%Y-%m-%d')}: {', '.join(names[:keywords])}]"
        out.append((p, line, priority, when))
    out.sort(key=lambda x: (x[3], x[0]))
    return [(p, line, prio) for p, line, prio, _ in out]


def render_index(
    memory: Memory,
    user_id: str,
    *,
    exclude_pages: Iterable[int] = (),
    max_tokens: int | None = None,
    counter: TokenCounter | None = None,
    prefer: Sequence[int] = (),
) -> str:
    """The bookmark index of pages not in the context, within `max_tokens` ("" when nothing fits).

    When not every page fits, the pages in `prefer` stay first, in its order (the pages of the
    message's retrieval candidates that did not fit the context: the likeliest to be worth a
    recall), then the highest-priority ones (importance, then use); all shown in time order.
    """
    lines = index_lines(memory, user_id, exclude_pages=exclude_pages)
    if not lines:
        return ""
    counter = counter or memory.counter
    if max_tokens is None:
        return "\n".join([INDEX_HEADER, *(line for _, line, _ in lines)])
    room = max_tokens - counter.count(INDEX_HEADER) - 1
    keep: set[int] = set()
    rank: dict[int, int] = {}
    for p in prefer:
        rank.setdefault(p, len(rank))
    for p, line, _ in sorted(lines, key=lambda x: (x[0] not in rank, rank.get(x[0], 0), -x[2], x[0])):
        cost = counter.count(line) + 1
        if cost <= room:
            keep.add(p)
            room -= cost
    if not keep:
        return ""
    return "\n".join([INDEX_HEADER, *(line for p, line, _ in lines if p in keep)])


def resolve_recall(memory: Memory, user_id: str, page_id: int, *, at: datetime | None = None) -> str:
    """The text of a page for a `recall` call: its turns, each with its date, and counts the use.

    Raises `InputError` for a page the user does not have.
    """
    turns = memory.store.page_turns(user_id, int(page_id))
    if not turns:
        raise InputError(f"no page p{page_id} for this user; use a page id from the bookmark index")
    memory.store.touch_pages(user_id, [int(page_id)], at=at)
    lines = [f"[p{page_id}, {turns[0].session_id}]"]
    lines.extend(f"({t.created_at.strftime('%Y-%m-%d %H:%M')}) {t.label}: {t.content}" for t in turns)
    return "\n".join(lines)


def handle_tool_call(memory: Memory, user_id: str, call: dict[str, Any]) -> dict[str, Any]:
    """Answer one OpenAI tool call to `recall` with a `tool` message (errors become its content)."""
    function = call.get("function") or {}
    content: str
    try:
        if function.get("name") != "recall":
            raise InputError(f"unknown tool {function.get('name')!r}")
        args = function.get("arguments") or "{}"
        parsed = json.loads(args) if isinstance(args, str) else dict(args)
        page = parsed.get("page_id")
        if isinstance(page, str):
            page = page.lstrip("pP")
        if page is None:
            raise InputError("recall needs a page_id")
        content = resolve_recall(memory, user_id, int(page))
    except (InputError, ValueError, TypeError) as exc:
        content = f"error: {exc}"
    return {"role": "tool", "tool_call_id": call.get("id", ""), "content": content}


def attach_index(
    memory: Memory,
    user_id: str,
    messages: list[dict[str, Any]],
    *,
    budget: int,
    room: int,
    in_context: Sequence[Turn],
    prefer: Sequence[int] = (),
) -> dict[str, Any]:
    """Append the index of the pages not in the context to the system message, within `room` tokens
    and without taking the whole message list over `budget`. Returns a trace.

    A page counts as in the context when at least half of its turns are among `in_context`: a page
    with one stray turn shown is still worth paging in whole.
    """
    counter = memory.counter
    shown: dict[int, int] = {}
    for t in in_context:
        if t.page_id is not None:
            shown[t.page_id] = shown.get(t.page_id, 0) + 1
    sizes = memory.store.page_turn_ids(user_id, sorted(shown))
    covered = [p for p, n in shown.items() if n * 2 >= max(1, len(sizes.get(p, [])))]
    text = render_index(
        memory, user_id, exclude_pages=covered, max_tokens=room, counter=counter, prefer=prefer
    )
    trace: dict[str, Any] = {"tools": ["recall"], "index_pages": 0, "index_tokens": 0}
    if not text or not messages:
        return trace
    system = messages[0]
    original = str(system.get("content") or "")
    lines = text.split("\n")
    while len(lines) > 1:
        system["content"] = original + "\n\n" + "\n".join(lines)
        if counter.messages_tokens(messages) <= budget:
            trace["index_pages"] = len(lines) - 1
            trace["index_tokens"] = counter.count("\n".join(lines))
            return trace
        lines.pop()
    system["content"] = original
    return trace
