"""Bookmark generation (rule fallback and LLM, with every failure falling back), storage, lineage,
topic segments, merging and alias maintenance — on real SQLite, LLM via the fake server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memsched.bookmarks import (
    Bookmark,
    generate_bookmarks,
    maintain_bookmarks,
    merge_bookmarks,
    topic_segments,
    update_aliases,
)
from memsched.embed.hashing import HashEmbedder
from memsched.llm import OpenAIChatClient, llm_calls, reset_llm_calls
from memsched.memory import Memory
from memsched.model import Turn
from memsched.testing import Delay, Fail, FakeOpenAI, Malformed

# Runs on SQLite and on PostgreSQL (conftest.py, `backend`).
pytestmark = pytest.mark.usefixtures("backend")

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)

TOPICS = {
    "ot": [
        "我们决定采用OT算法来解决实时协同编辑的冲突。",
        "OT算法需要一个中央服务器来排序操作。",
        "前端考虑使用Yjs库，和OT算法配合。",
        "那中央服务器的部署就交给小王。",
    ],
    "food": [
        "晚上我做了番茄炒蛋，番茄炒蛋是我最爱吃的菜。",
        "番茄炒蛋要先炒鸡蛋再放番茄。",
        "周末想学红烧肉的做法。",
        "红烧肉需要冰糖上色。",
    ],
    "museum": [
        "Yesterday I took the kids to the Natural History Museum in Boston.",
        "The dinosaur skeletons at the Natural History Museum were huge!",
        "Did they like the T-Rex exhibit?",
        "They loved it, we bought a dinosaur book at the museum shop.",
    ],
}


def make_memory(tmp_path: Path, page_size: int = 4) -> Memory:
    return Memory(home=tmp_path / "m", embedders={"hash": HashEmbedder()}, page_size=page_size)


def add_topic(mem: Memory, user: str, session: str, topic: str, start: datetime) -> list[Turn]:
    turns = [
        Turn(
            user,
            session,
            "user" if i % 2 == 0 else "assistant",
            text,
            created_at=start + timedelta(minutes=i),
        )
        for i, text in enumerate(TOPICS[topic])
    ]
    return mem.add_many(turns)


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    m = make_memory(tmp_path)
    add_topic(m, "u", "s1", "ot", T0)
    add_topic(m, "u", "s1", "food", T0 + timedelta(hours=1))
    add_topic(m, "u", "s2", "museum", T0 + timedelta(days=1))
    yield m
    m.close()


def client(fake: FakeOpenAI, timeout: float = 5.0) -> OpenAIChatClient:
    return OpenAIChatClient(fake.base_url, None, "m", timeout=timeout, retries=0, backoff=0.01)


# -- rule fallback ---------------------------------------------------------------------------------------


def test_rule_bookmarks_for_every_page_stored_indexed_and_embedded(mem: Memory) -> None:
    run = generate_bookmarks(mem, "u")
    pages = mem.store.pages("u")
    assert len(run.bookmarks) == len(pages) == 3
    assert run.trace["fallback"] == 3 and run.trace["fallback_reason"] == "no LLM configured"
    stored = mem.store.bookmarks("u")
    assert {b.page_ids[0] for b in stored} == {p.id for p in pages}
    by_page = {b.page_ids[0]: b for b in stored}
    ot = by_page[pages[0].id]
    assert "OT算法" in ot.keywords and ot.kind == "decision" and ot.source == "rule"
    assert ot.turn_ids == [t.id for t in mem.store.page_turns("u", pages[0].id)]
    assert 3 <= len(ot.keywords) <= 8 and ot.summary and 0 < ot.importance <= 1
    assert "番茄炒蛋" in by_page[pages[1].id].keywords
    assert any("Museum" in k for k in by_page[pages[2].id].keywords)
    # BM25 over keywords/summary finds the page; vectors exist for every bookmark.
    hits = mem.store.search_bookmarks_bm25("u", "番茄炒蛋怎么做")
    assert hits and hits[0].turn_id == by_page[pages[1].id].id
    ids, matrix = mem.store.bookmark_vectors("u", "hash-256")
    assert sorted(ids.tolist()) == sorted(b.id for b in stored) and matrix.shape[1] == 256
    assert mem.store.bookmarks("other-user") == []


def test_generation_is_idempotent_and_replaces_a_page(mem: Memory) -> None:
    generate_bookmarks(mem, "u")
    assert generate_bookmarks(mem, "u").bookmarks == []  # nothing left unbookmarked
    page = mem.store.pages("u")[0]
    again = generate_bookmarks(mem, "u", [page.id])
    assert len(again.bookmarks) == 1
    assert mem.store.bookmark_count("u") == 3  # replaced, not added


def test_deleting_a_source_turn_deletes_its_bookmark_and_index_row(mem: Memory) -> None:
    generate_bookmarks(mem, "u")
    food = mem.store.bookmarks("u", page_id=mem.store.pages("u")[1].id)[0]
    mem.delete_turns("u", [food.turn_ids[0]])
    assert food.id not in {b.id for b in mem.store.bookmarks("u")}
    assert all(h.turn_id != food.id for h in mem.store.search_bookmarks_bm25("u", "番茄炒蛋"))
    # Its page is bookmarked again by the next run (maintenance).
    assert len(generate_bookmarks(mem, "u").bookmarks) == 1
    mem.delete_user("u")
    assert mem.store.bookmark_count("u") == 0
    assert mem.store.bookmark_vectors("u", "hash-256")[0].size == 0


def test_topic_shift_inside_a_page_gives_one_bookmark_per_segment(tmp_path: Path) -> None:
    m = make_memory(tmp_path, page_size=20)
    try:
        turns = []
        for topic, start in (("ot", T0), ("museum", T0 + timedelta(minutes=30))):
            for rep in range(2):  # 8 turns per topic: two shifts would need segments of >= 5
                turns += [
                    Turn("u", "s", "user", text, created_at=start + timedelta(minutes=rep * 5 + i))
                    for i, text in enumerate(TOPICS[topic])
                ]
        m.add_many(turns)
        segments = topic_segments(m.store.page_turns("u", m.store.pages("u")[0].id))
        assert len(segments) == 2
        # The shift sits at turn 8; lexical windows may place it one turn early.
        assert len(segments[0]) in (7, 8)
        assert all(t.content in TOPICS["museum"] for t in segments[1][-8:])
        run = generate_bookmarks(m, "u")
        assert run.trace["units"] == 2 and len(run.bookmarks) == 2
        assert all(b.page_ids == run.bookmarks[0].page_ids for b in run.bookmarks)
        assert len(set(run.bookmarks[0].turn_ids) & set(run.bookmarks[1].turn_ids)) == 0
    finally:
        m.close()


# -- LLM path ----------------------------------------------------------------------------------------------


def test_llm_bookmarks_are_batched_one_call_for_several_pages(mem: Memory, fake: FakeOpenAI) -> None:
    pages = mem.store.pages("u")
    reply = {
        "bookmarks": [
            {
                "id": f"p{p.id}",
                "keywords": ["OT算法", "中央服务器", "Yjs", "OT算法"],
                "aliases": {"OT算法": ["Operational Transformation"], "Yjs": "Y.js"},
                "summary": "决定用OT算法和中央服务器",
                "kind": "decision",
            }
            for p in pages[:2]
        ]
    }
    fake.script(json.dumps(reply, ensure_ascii=False))
    reset_llm_calls()
    run = generate_bookmarks(mem, "u", llm=client(fake))
    assert llm_calls() == {"bookmark": 1}  # three pages, one call
    assert run.trace["llm_calls"] == 1
    sources = sorted(b.source for b in run.bookmarks)
    assert sources == ["llm", "llm", "rule"]  # the page the LLM left out fell back
    assert run.trace["fallback_reason"] == "LLM left some pages out"
    llm_mark = next(b for b in run.bookmarks if b.source == "llm")
    assert llm_mark.keywords == ["OT算法", "中央服务器", "Yjs"]  # de-duplicated
    assert llm_mark.aliases == {"OT算法": ["Operational Transformation"], "Yjs": ["Y.js"]}
    prompt = fake.chat_requests[0]["messages"][0]["content"]
    assert all(f"[p{p.id}]" in prompt for p in pages)
    assert fake.chat_requests[0]["response_format"] == {"type": "json_object"}


def test_single_page_flat_reply_is_accepted(mem: Memory, fake: FakeOpenAI) -> None:
    page = mem.store.pages("u")[2]
    fake.script(
        '```json\n{"keywords": ["Natural History Museum", "Boston"], "aliases": {}, "summary": "Took the kids to the museum"}\n```'
    )
    run = generate_bookmarks(mem, "u", [page.id], llm=client(fake))
    assert [b.source for b in run.bookmarks] == ["llm"]
    assert run.bookmarks[0].keywords == ["Natural History Museum", "Boston"]


@pytest.mark.parametrize(
    ("reply", "expect"),
    [
        ("sorry, I cannot do that", "invalid JSON"),
        ('{"bookmarks": [{"id": "p1", "keywords": [], "summary": ""}]}', "invalid JSON"),
        (Malformed(), "invalid response"),
        (Fail(500), "HTTP 500"),
        (Delay(2.0, then="{}"), "timed out"),
    ],
    ids=["prose", "invalid-schema", "malformed-body", "http-500", "timeout"],
)
def test_llm_failures_fall_back_to_rules_and_say_so(
    mem: Memory, fake: FakeOpenAI, reply: object, expect: str
) -> None:
    fake.script(reply)  # type: ignore[arg-type]
    run = generate_bookmarks(mem, "u", llm=client(fake, timeout=0.3))
    assert [b.source for b in run.bookmarks] == ["rule"] * 3
    assert run.trace["fallback"] == 3 and run.trace["fallback_reason"] == "LLM call failed"
    assert len(run.trace["llm_errors"]) == 1 and expect in run.trace["llm_errors"][0]
    assert mem.store.bookmark_count("u") == 3


# -- maintenance -------------------------------------------------------------------------------------------


def test_near_duplicate_bookmarks_merge_into_one_pointing_to_all_pages(tmp_path: Path) -> None:
    m = make_memory(tmp_path)
    try:
        add_topic(m, "u", "s1", "food", T0)
        add_topic(m, "u", "s2", "food", T0 + timedelta(days=3))  # the same talk again, another day
        add_topic(m, "u", "s3", "museum", T0 + timedelta(days=5))
        generate_bookmarks(m, "u")
        assert m.store.bookmark_count("u") == 3
        merges = merge_bookmarks(m, "u")
        assert len(merges) == 1 and len(merges[0]["merged"]) == 2
        marks = m.store.bookmarks("u")
        assert len(marks) == 2
        merged = next(b for b in marks if b.source == "merged")
        pages = m.store.pages("u")
        assert merged.page_ids == sorted([pages[0].id, pages[1].id])
        assert len(merged.turn_ids) == 8 and "番茄炒蛋" in merged.keywords
        assert merge_bookmarks(m, "u") == []  # nothing left to merge
    finally:
        m.close()


def test_rename_in_a_later_turn_becomes_an_alias_of_the_old_bookmark(tmp_path: Path) -> None:
    m = make_memory(tmp_path)
    try:
        old = [
            "Alpha模块负责权限校验和审计日志。",
            "Alpha模块的接口下周定下来。",
            "Alpha模块由小王负责开发。",
            "好的，Alpha模块先做权限校验。",
        ]
        m.add_many(
            [Turn("u", "s1", "user", t, created_at=T0 + timedelta(minutes=i)) for i, t in enumerate(old)]
        )
        add_topic(m, "u", "s2", "food", T0 + timedelta(days=1))
        later = ["对了，我们把Alpha模块改名为Nova了。", "好的，记住了。", "周五发布。", "没问题。"]
        m.add_many(
            [
                Turn("u", "s3", "user", t, created_at=T0 + timedelta(days=2, minutes=i))
                for i, t in enumerate(later)
            ]
        )
        report = maintain_bookmarks(m, "u")
        assert report["generated"] == 3
        first = m.store.bookmarks("u", page_id=m.store.pages("u")[0].id)[0]
        assert "Nova" in first.names and "Alpha" in first.names
        assert any(c["alias"] == "Nova" and c["bookmark_id"] == first.id for c in report["aliases"])
        # The alias is indexed: BM25 over bookmarks finds the old page by the new name.
        assert first.id in {h.turn_id for h in m.store.search_bookmarks_bm25("u", "Nova")}
        assert update_aliases(m, "u") == []  # idempotent
    finally:
        m.close()


def test_bookmark_text_includes_aliases() -> None:
    b = Bookmark(
        user_id="u",
        session_id="s",
        keywords=["Alpha模块"],
        aliases={"Alpha模块": ["Alpha", "Nova"]},
        summary="决定Alpha模块由小王负责",
        page_ids=[1],
        turn_ids=[1, 2],
        first_at=T0,
        last_at=T0,
    )
    assert b.text == "Alpha模块 (Alpha, Nova) — 决定Alpha模块由小王负责"
    assert b.names == ["Alpha模块", "Alpha", "Nova"]


def test_job_kinds_are_registered() -> None:
    from memsched.jobs.tasks import load_task_modules, registered

    load_task_modules()
    assert {"bookmark", "bookmark_maintenance"} <= set(registered())
