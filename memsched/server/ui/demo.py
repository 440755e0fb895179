"""Sample data for looking at the debug UI: the shipped bilingual companion chat plus live turns.

`seed_history(memory)` imports `memsched demo`'s 6-week conversation for user `li-wei` and writes its
keyword bookmarks. `run_live(client)` then sends the demo questions (and a rename command) through a
running service's OpenAI-compatible proxy, as a chat app would, so every stage of a trace has
something in it. With `demo_responder` as the fake upstream (and paging mode `both`), the model pages
the first-date story in through the `recall` tool before it answers the first question. The browser
test and `scripts/ui_screenshots.py` use these.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memsched.bookmarks import generate_bookmarks
from memsched.importers import read_jsonl

if TYPE_CHECKING:
    from memsched.client import Client
    from memsched.memory import Memory
    from memsched.scheduler import TurnResult

DEMO_USER = "li-wei"
DEMO_SESSION = "today"
# The questions of `memsched demo`, then a rename: a consistency command with a profile fact.
LIVE_TURNS = (
    "想给阿悦一个惊喜，带她回我们头一回约会的那家店。店名叫啥来着？那天我们点了什么？",
    "What's my cat called again, and what breed is she?",
    "以后别叫我小伟了，叫我大伟",
    "Do you remember what I said about my job interview?",
)
# The words the fake model looks for in the bookmark index to pick the page it recalls.
# (The first-date page itself is usually in the context already, so not in the index.)
RECALL_CUES = ("约会", "Blue Heron", "酒吧", "海鲜饭", "阿悦")


def seed_history(memory: Memory, user_id: str = DEMO_USER) -> int:
    """Import the sample conversation for `user_id`, embed it, write its bookmarks; returns the turns."""
    conversation = Path(str(resources.files("memsched").joinpath("data", "demo_conversation.jsonl")))
    n = 0
    for batch in read_jsonl(conversation, user_id):
        n += len(memory.add_many(batch, index=False))
    memory.index(user_id)
    generate_bookmarks(memory, user_id)
    return n


def run_live(client: Client, user_id: str = DEMO_USER, session_id: str = DEMO_SESSION) -> list[TurnResult]:
    """Send `LIVE_TURNS` through the service's proxy; returns the turns (their traces are stored)."""
    return [client.turn(user_id, session_id, text, timezone="Asia/Shanghai") for text in LIVE_TURNS]


def demo_responder(replies: Mapping[str, str]) -> Any:
    """A FakeOpenAI responder: the reply for each live question from `replies`; for the first question,
    when memsched offers `recall`, it first recalls the index page that mentions the first date."""

    def respond(body: dict[str, Any]) -> Any:
        messages = body.get("messages") or []
        users = [m for m in messages if m.get("role") == "user"]
        last = str(users[-1].get("content")) if users else ""
        offered = {(t.get("function") or {}).get("name") for t in body.get("tools") or []}
        answered = any(m.get("role") == "tool" for m in messages)
        if last == LIVE_TURNS[0] and "recall" in offered and not answered:
            page = _index_page(str(messages[0].get("content", "")) if messages else "")
            if page is not None:
                call = {"name": "recall", "arguments": json.dumps({"page_id": page})}
                return {
                    "content": None,
                    "tool_calls": [{"id": "call_demo", "type": "function", "function": call}],
                }
        return replies.get(last, f"ok: {last[:40]}")

    return respond


def _index_page(system: str) -> int | None:
    pages = [(int(m.group(1)), line) for line in system.splitlines() if (m := re.match(r"\[p(\d+)\b", line))]
    for page, line in pages:
        if any(cue in line for cue in RECALL_CUES):
            return page
    return pages[0][0] if pages else None
