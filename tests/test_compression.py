"""Context-overflow compression (blocking) and topic-switch summaries (P2), and the summarisers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from memsched import Config, Memory
from memsched.embed.hashing import HashEmbedder
from memsched.jobs.worker import Worker
from memsched.llm.client import OpenAIChatClient
from memsched.model import Turn
from memsched.scheduler import Scheduler
from memsched.summarize import extractive_summary, summarize_turns
from memsched.testing import Fail, FakeOpenAI
from memsched.text.timeexpr import clock_line
from memsched.text.tokens import get_counter

# Runs on SQLite and on PostgreSQL (conftest.py, `backend`).
pytestmark = pytest.mark.usefixtures("backend")

WORDS = [
    *("apple", "banana", "cherry", "dragonfruit", "eggplant", "fennel", "grape", "hazelnut", "iris"),
    *("jasmine", "kale", "lemon", "mango", "nectarine", "olive", "papaya", "quince", "radish"),
    *("spinach", "tomato", "ugli", "vanilla", "walnut", "xigua", "yam", "zucchini"),
]


Factory = Callable[..., tuple[Memory, Scheduler]]


@pytest.fixture
def make(tmp_path: Path, fake: FakeOpenAI) -> Iterator[Factory]:
    opened: list[tuple[Memory, Scheduler, OpenAIChatClient]] = []

    def factory(*, config: dict[str, Any] | None = None, **kwargs: Any) -> tuple[Memory, Scheduler]:
        memory = Memory(Config.load(home=tmp_path, **(config or {})), embedders={"hash": HashEmbedder()})
        llm = OpenAIChatClient(fake.base_url, "key", "fake-model", retries=0)
        kwargs.setdefault("summary_llm", None)
        scheduler = Scheduler(memory, llm=llm, **kwargs)
        opened.append((memory, scheduler, llm))
        return memory, scheduler

    yield factory
    for memory, scheduler, llm in opened:
        scheduler.close()
        llm.close()
        memory.close()


def _chat_turns(request: dict[str, Any]) -> list[str]:
    """The recent-window messages of a request (everything between the system message and the new one)."""
    return [str(m["content"]) for m in request["messages"][1:-1]]


# -- overflow ------------------------------------------------------------------------------------------------


def test_overflow_compresses_and_keeps_raw_turns_searchable(make: Factory, fake: FakeOpenAI) -> None:
    limit_config = {"model_context": 700, "overflow_threshold": 0.8, "budget": 600, "recent_max_turns": 40}
    memory, sched = make(config=limit_config)
    limit = int(0.8 * 700)
    fake.responder = lambda body: "noted."
    traces = []
    for i, word in enumerate(WORDS):
        text = (
            f"fact {i}: my favourite {word} story is about {word} fields, {word} pies and a {word} festival"
        )
        traces.append(sched.turn("u", "s", text).trace)

    overflows = [e for t in traces for e in t["blocking"] if e["kind"] == "overflow"]
    assert overflows, "the live window never overflowed: the test does not test anything"
    for trace in traces:
        live = trace["overflow"].get("live_tokens_after", trace["overflow"]["live_tokens"])
        assert live <= limit
        assert trace["route"]["signals"]["overflow"] == any(
            e["kind"] == "overflow" for e in trace["blocking"]
        )
    for event in overflows:
        assert event["live_tokens_before"] > limit >= event["live_tokens_after"]
        assert event["live_tokens_after"] <= 0.6 * limit  # compressed to about half, not just under
        assert event["summarised_turns"] > 0 and isinstance(event["ms"], float)

    # The incremental live count agrees with a recount from the store (last turn without overflow).
    i = max(i for i, t in enumerate(traces) if not t["blocking"])
    trace = traces[i]
    user_seq = next(t.seq for t in memory.store.get_turns("u", trace["turn_ids"]) if t.role == "user")
    covered = max((s["last_seq"] for s in trace["summaries"]), default=-1)
    counter = memory.counter
    raw = [t for t in memory.store.session_turns("u", "s") if covered < (t.seq or 0) < user_seq]
    expected = (
        sum(counter.message_tokens({"role": t.role, "content": t.content}) for t in raw)
        + sum(s["tokens"] for s in trace["summaries"])
        + counter.messages_tokens(
            [
                {
                    "role": "system",
                    # the persona plus the clock line every turn's system prompt carries
                    "content": memory.config.system_prompt
                    + "\n\n"
                    + clock_line(datetime.fromisoformat(trace["at"]), None),
                },
                {"role": "user", "content": memory.store.get_turns("u", trace["turn_ids"])[0].content},
            ]
        )
    )
    assert trace["overflow"]["live_tokens"] == expected

    summaries = sched.summaries("u", "s")
    assert summaries and all(s["method"] == "extractive" and s["source_turn_ids"] for s in summaries)
    # Raw turns are all still there and still searchable.
    assert memory.store.turn_count("u") == 2 * len(WORDS)
    hits = memory.search("u", "apple festival")
    assert any("favourite apple story" in h.turn.content for h in hits)

    last = fake.chat_requests[-1]
    assert "Earlier in this conversation (turns 0-" in last["messages"][0]["content"]
    covered = max(s["last_seq"] for s in summaries)
    covered_texts = {
        t.content
        for t in memory.store.session_turns("u", "s")
        if (t.seq or 0) <= covered and t.role == "user"
    }
    assert not covered_texts & set(_chat_turns(last))  # the recent window starts after the summaries
    assert traces[-1]["tokens"]["saved_by_summaries"] > 0


def test_overflow_summary_uses_the_llm_when_configured(make: Factory, fake: FakeOpenAI) -> None:
    memory, sched = make(config={"model_context": 500, "overflow_threshold": 0.8, "budget": 400})
    sched.summary_llm = sched.llm
    fake.script_for("You summarise part of a conversation", "SUMMARY: the user listed many fruits.")
    fake.responder = lambda body: "noted."
    for i, word in enumerate(WORDS[:14]):
        sched.turn(
            "u", "s", f"fact {i}: I keep thinking about {word} and {word} recipes for the weekend party"
        )
    summaries = sched.summaries("u", "s")
    assert summaries and summaries[0]["method"] == "llm"
    assert summaries[0]["content"] == "SUMMARY: the user listed many fruits."
    assert "SUMMARY: the user listed many fruits." in fake.chat_requests[-1]["messages"][0]["content"]
    assert memory.store.turn_count("u") == 28


# -- topic switch ---------------------------------------------------------------------------------------------

SANTI = [
    "我最近在看三体，黑暗森林那部分太震撼了",
    "罗辑的面壁计划你觉得合理吗",
    "三体人的智子封锁也很可怕",
]


def test_topic_switch_is_summarised_at_once_and_the_next_turn_uses_it(
    make: Factory, fake: FakeOpenAI
) -> None:
    memory, sched = make(start_workers=False)
    for text in SANTI:
        assert "summary" not in [j["kind"] for j in sched.turn("u", "s", text).trace["jobs"]]
    switch = sched.turn("u", "s", "换个话题，今晚我想做个番茄炒蛋，你怎么看？")
    assert switch.trace["route"]["signals"]["topic_shift"]
    jobs = [j for j in switch.trace["jobs"] if j["kind"] == "summary"]
    assert len(jobs) == 1 and jobs[0]["priority"] == 2
    assert jobs[0]["payload"]["first_seq"] == 0 and jobs[0]["payload"]["last_seq"] == 5
    # The finished segment was summarised extractively before the turn returned.
    summaries = sched.summaries("u", "s")
    assert len(summaries) == 1 and summaries[0]["kind"] == "topic" and summaries[0]["method"] == "extractive"
    assert (summaries[0]["first_seq"], summaries[0]["last_seq"]) == (0, 5)
    assert len(summaries[0]["source_turn_ids"]) == 6
    assert switch.trace["topic_summary"]["id"] == summaries[0]["id"]

    after = sched.turn("u", "s", "要不要放点葱花")
    last = fake.chat_requests[-1]
    assert "Earlier in this conversation (turns 0-5" in last["messages"][0]["content"]
    assert not set(SANTI) & set(_chat_turns(last))
    assert "换个话题，今晚我想做个番茄炒蛋，你怎么看？" in _chat_turns(last)
    assert after.trace["tokens"]["saved_by_summaries"] > 0

    # With a helper LLM, the P2 job replaces the extractive summary by the LLM's.
    fake.script_for("You summarise part of a conversation", "用户在聊《三体》：黑暗森林、面壁计划、智子。")
    Worker(memory, llm=sched.llm).drain(timeout=30)
    summaries = sched.summaries("u", "s")
    assert len(summaries) == 1 and summaries[0]["method"] == "llm"
    assert summaries[0]["content"] == "用户在聊《三体》：黑暗森林、面壁计划、智子。"
    assert len(summaries[0]["source_turn_ids"]) == 6


def test_topic_switch_from_similarity_alone(make: Factory) -> None:
    # With whatever embedder is configured (here the hash one), two messages far from the segment
    # and close to each other confirm a shift that starts at the first of them.
    _, sched = make(start_workers=False)
    for text in (
        "tell me about jupiter moons europa",
        "europa ocean under jupiter ice",
        "jupiter storms and europa",
    ):
        sched.turn("u", "s", text)
    same = sched.turn("u", "s", "could europa ocean host life near jupiter")
    assert not same.trace["route"]["signals"]["topic_shift"]
    other = sched.turn("u", "s", "recommend sourdough bread baking flour hydration")
    assert not other.trace["route"]["signals"]["topic_shift"] and other.trace["route"]["topic"]["candidate"]
    again = sched.turn("u", "s", "sourdough bread flour hydration and baking time")
    assert again.trace["route"]["signals"]["topic_shift"] and again.trace["route"]["topic"]["late"]
    jobs = [j for j in again.trace["jobs"] if j["kind"] == "summary"]
    # The finished segment ends before the first bread message (seq 8), summarised before the context.
    assert [(j["payload"]["first_seq"], j["payload"]["last_seq"]) for j in jobs] == [(0, 7)]
    assert again.trace["topic_summary"]["last_seq"] == 7
    window = [str(m["content"]) for m in again.messages[1:-1] if m["role"] == "user"]
    assert window == ["recommend sourdough bread baking flour hydration"]


# -- the summarisers ---------------------------------------------------------------------------------------------


def _turns(lines: list[tuple[str, str]]) -> list[Turn]:
    return [Turn(user_id="u", session_id="s", role=role, content=text) for role, text in lines]  # type: ignore[arg-type]


def test_extractive_summary_picks_central_sentences_in_order() -> None:
    counter = get_counter("o200k_base")
    turns = _turns(
        [
            ("user", "我养了一只猫，猫叫芝麻。芝麻是一只橘猫。"),
            ("assistant", "哈哈。"),
            ("user", "芝麻每天早上六点叫我起床，芝麻很粘人。"),
            ("assistant", "The weather is nice today."),
            ("user", "明天我要带芝麻去看兽医，芝麻有点咳嗽。"),
        ]
    )
    text = extractive_summary(turns, counter, max_tokens=60)
    assert "芝麻" in text
    assert "哈哈" not in text
    assert counter.count(text) <= 60
    lines = text.splitlines()
    order = [next(i for i, t in enumerate(turns) if line.split(": ", 1)[1] in t.content) for line in lines]
    assert order == sorted(order)


def test_extractive_summary_in_english() -> None:
    counter = get_counter("o200k_base")
    turns = _turns(
        [
            ("user", "My sister Mia lives in Portland. Mia works as a nurse in Portland."),
            ("assistant", "ok"),
            ("user", "Mia is visiting me from Portland next week."),
        ]
    )
    text = extractive_summary(turns, counter, max_tokens=40)
    assert "Mia" in text and "ok" not in text.split()


def test_llm_failure_falls_back_to_extractive(fake: FakeOpenAI) -> None:
    counter = get_counter("o200k_base")
    fake.script(Fail(500))
    with OpenAIChatClient(fake.base_url, "k", "m", retries=0) as llm:
        made = summarize_turns(
            _turns([("user", "I adopted a dog named Rex.")]), counter=counter, max_tokens=50, llm=llm
        )
    assert made.method == "extractive" and made.error is not None and "Rex" in made.text


def test_fold_merges_summaries_with_their_lineage(tmp_path: Path) -> None:
    from memsched.summarize import create_summary, fold_summaries

    memory = Memory(Config.load(home=tmp_path), embedders={"hash": HashEmbedder()})
    try:
        memory.add_many(
            [
                Turn(
                    user_id="u",
                    session_id="s",
                    role="user",
                    content=f"I planted {w} seeds in the {w} garden today",
                )
                for w in WORDS[:9]
            ],
            index=False,
        )
        for first in (0, 3, 6):
            assert create_summary(
                memory, "u", "s", first, first + 2, kind="overflow", llm=None, max_tokens=40
            )
        # Already covered: a second job for the same range does nothing.
        assert create_summary(memory, "u", "s", 0, 2, kind="topic", llm=None, max_tokens=40) is None
        merged = fold_summaries(memory, "u", "s", llm=None, max_tokens=60)
        assert merged is not None
        rows = memory.store.session_summaries("u", "s")
        assert len(rows) == 1 and (rows[0]["first_seq"], rows[0]["last_seq"]) == (0, 8)
        assert rows[0]["source_turn_ids"] == [t.id for t in memory.store.session_turns("u", "s")]
        # Lines keep their own speaker labels, with no "summary: " or "system: " stacked on top.
        assert all(line.startswith("user: ") for line in rows[0]["content"].splitlines())
        assert memory.counter.count(rows[0]["content"]) <= 60
    finally:
        memory.close()
