from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memsched.embed.hashing import HashEmbedder
from memsched.memory import Memory
from memsched.model import Turn
from memsched.store import Store

# Runs on SQLite and on PostgreSQL (conftest.py, `backend`).
pytestmark = pytest.mark.usefixtures("backend")


def test_context_pages_in_old_fact_and_traces(mem: Memory) -> None:
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    mem.add("u", "day1", "user", "My name is Wang and my cat is called Sesame", created_at=t0)
    for i in range(40):
        mem.add(
            "u",
            "day2",
            "user",
            f"filler message number {i} about the weather",
            created_at=t0 + timedelta(days=1, minutes=i),
        )
    result = mem.context("u", "what is my cat called?", session_id="day2", budget=400)
    system = result.messages[0]["content"]
    assert "Sesame" in system
    assert "[2024-01-01]" in system
    trace = result.trace
    assert trace["tokens"]["total"] <= 400
    assert any(s["session_id"] == "day1" for s in trace["selected"])
    assert set(trace["timings_ms"]) >= {"bm25", "fuse", "assemble", "total"}
    cand = trace["retrieval"]["candidates"][0]
    assert "bm25" in cand["scores"] and cand["ranks"]["bm25"] >= 1


def test_context_is_read_only_unless_record(mem: Memory) -> None:
    mem.add("u", "s", "user", "hello there")
    mem.context("u", "new message", session_id="s")
    assert mem.store.turn_count("u") == 1
    mem.context("u", "recorded message", session_id="s", record=True)
    assert [t.content for t in mem.store.session_turns("u", "s")] == ["hello there", "recorded message"]
    # the recorded turn is searchable at once (its vector came from the query embedding)
    assert mem.search("u", "recorded")[0].turn.content == "recorded message"


def test_recent_window_not_duplicated_in_recall(mem: Memory) -> None:
    for i in range(6):
        mem.add("u", "s", "user", f"sesame cat story part {i}")
    result = mem.context("u", "sesame cat", session_id="s", budget=2000)
    system = result.messages[0]["content"]
    for m in result.messages[1:-1]:
        assert m["content"] not in system


def test_delete_forgets_everywhere(mem: Memory, tmp_path: Path) -> None:
    t = mem.add("u", "s", "user", "my secret password is swordfish")
    mem.add("u", "s", "user", "unrelated line")
    assert mem.search("u", "swordfish")[0].turn.id == t.id
    mem.delete_turns("u", [t.id])
    assert all(h.turn.id != t.id for h in mem.search("u", "swordfish"))
    assert "swordfish" not in mem.context("u", "password?").messages[0]["content"]


def test_a_retrieval_run_on_another_thread_gives_the_same_context(store: Store) -> None:
    """The scheduler starts `Memory.retrieval` beside routing and hands it to `context`: the context
    is the one `context` builds by itself (same candidates, same selection, same messages)."""
    from concurrent.futures import ThreadPoolExecutor

    mem = Memory(store=store, embedders={"hash": HashEmbedder()}, page_size=4)
    t0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
    old = [
        "I adopted a cat named Pepper.",
        "Pepper hates the vacuum.",
        "We moved to Lyon in May.",
        "Lyon is rainy.",
    ]
    new = ["Work was long today.", "What was my cat called again?", "Pepper, I think!", "Right, Pepper."]
    mem.add_many(
        [Turn("u", "s1", "user", text, created_at=t0 + timedelta(minutes=i)) for i, text in enumerate(old)]
        + [
            Turn("u", "s2", "user", text, created_at=t0 + timedelta(days=1, minutes=i))
            for i, text in enumerate(new)
        ]
    )
    query = "what is my cat's name and where did we move?"
    with ThreadPoolExecutor(1) as pool:
        started = pool.submit(mem.retrieval, "u", query, session_id="s2", recent_after_seq=1)
        handed = mem.context("u", query, session_id="s2", recent_after_seq=1, budget=300, retrieval=started)
    alone = mem.context("u", query, session_id="s2", recent_after_seq=1, budget=300)
    assert handed.trace["selected"] and handed.trace["selected"] == alone.trace["selected"]
    assert handed.trace["recent"] == alone.trace["recent"]  # turns after seq 1 of s2 only
    assert handed.messages == alone.messages
    assert "retrieval_wait" in handed.trace["timings_ms"]
