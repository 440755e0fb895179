"""Sample data for looking at the debug UI: the shipped bilingual companion chat plus live turns.

`seed(scheduler)` imports `memsched demo`'s 6-week conversation for user `li-wei`, writes its keyword
bookmarks, then runs the demo questions (and a rename command) as real turns of a new session through
the scheduler (now, as the user comes back after a while), so every stage of a trace has something in it. The browser test and
`scripts/ui-screenshots` use it; the scheduler needs a reply LLM (the tests use FakeOpenAI).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from memsched.bookmarks import generate_bookmarks
from memsched.importers import read_jsonl

if TYPE_CHECKING:
    from memsched.scheduler import Scheduler, TurnResult

DEMO_USER = "li-wei"
DEMO_SESSION = "today"
# The questions of `memsched demo`, then a rename: a consistency command with a profile fact.
LIVE_TURNS = (
    "想给阿悦一个惊喜，带她回我们头一回约会的那家店。店名叫啥来着？那天我们点了什么？",
    "What's my cat called again, and what breed is she?",
    "以后别叫我小伟了，叫我大伟",
    "Do you remember what I said about my job interview?",
)


def seed(
    scheduler: Scheduler, *, user_id: str = DEMO_USER, session_id: str = DEMO_SESSION
) -> list[TurnResult]:
    """Import the sample conversation for `user_id` and run `LIVE_TURNS` in `session_id`; returns the
    results of the live turns (their traces are stored)."""
    memory = scheduler.memory
    conversation = Path(str(resources.files("memsched").joinpath("data", "demo_conversation.jsonl")))
    for batch in read_jsonl(conversation, user_id):
        memory.add_many(batch, index=False)
    memory.index(user_id)
    generate_bookmarks(memory, user_id)
    memory.retriever.embed_query("warm up", only_weighted=False)  # load the models before the turns
    return [scheduler.turn(user_id, session_id, text, timezone="Asia/Shanghai") for text in LIVE_TURNS]
