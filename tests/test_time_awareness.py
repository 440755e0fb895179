"""Time awareness end to end: relative time is stored as absolute dates with the turn, is searchable,
is shown wherever the turn is shown, and the system prompt carries the user's local date and time."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from memsched.config import Config
from memsched.memory import Memory
from memsched.scheduler import Scheduler
from memsched.server.app import TRACE_HEADER, create_app
from memsched.testing import FakeOpenAI, LiveServer

# 2024-10-22 (a Tuesday) 15:00 in Shanghai.
SAID_AT = datetime(2024, 10, 22, 7, 0, tzinfo=UTC)


def test_library_stores_searches_and_shows_the_absolute_date(mem: Memory) -> None:
    zh = mem.add("li", "s1", "user", "上周我去杭州出差了", created_at=SAID_AT, timezone="Asia/Shanghai")
    en = mem.add(
        "li", "s1", "user", "I adopted a cat two days ago", created_at=SAID_AT, timezone="Asia/Shanghai"
    )
    mem.add("li", "s1", "user", "今天天气不错", created_at=SAID_AT)
    assert zh.meta["dates"] == ["上周 = 2024-10-15"]
    assert en.meta["dates"] == ["two days ago = 2024-10-20"]
    # Stored with the turn: a fresh read has it.
    (again,) = mem.store.get_turns("li", [zh.id])
    assert again.meta["dates"] == ["上周 = 2024-10-15"]
    # Searchable by full text in ISO, Chinese and English date forms.
    for query in ("2024-10-15", "2024年10月15日", "15 October 2024"):
        assert zh.id in [h.turn_id for h in mem.store.search_bm25("li", query)], query
    assert en.id in [h.turn_id for h in mem.store.search_bm25("li", "October 20")]
    # Shown with the turn when it is recalled, weeks later.
    ctx = mem.context("li", "我上次出差去的哪里？", session_id="s9", now=datetime(2024, 12, 1, tzinfo=UTC))
    assert "上周我去杭州出差了 (上周 = 2024-10-15)" in ctx.messages[0]["content"]


def test_the_user_timezone_decides_the_date(mem: Memory) -> None:
    late = datetime(2024, 10, 21, 20, 0, tzinfo=UTC)  # already the 22nd in Shanghai
    assert mem.add("a", "s", "user", "昨天", created_at=late, timezone="Asia/Shanghai").meta["dates"] == [
        "昨天 = 2024-10-21"
    ]
    assert mem.add("b", "s", "user", "yesterday", created_at=late).meta["dates"] == ["yesterday = 2024-10-20"]


def test_turn_prompt_carries_local_date_weekday_time_and_remembers_the_timezone(tmp_path: Path) -> None:
    with Scheduler(Memory(home=tmp_path, embedders="hash"), start_workers=False) as sched:
        first = sched.prepare("li", "s1", "下周五我要面试", now=SAID_AT, timezone="Asia/Shanghai")
        system = first.messages[0]["content"]
        assert "Now (user's local time): 2024-10-22 Tuesday 15:00 (Asia/Shanghai)" in system
        # A later turn that sends no timezone is still read in the user's timezone.
        later = sched.prepare("li", "s2", "and yesterday?", now=datetime(2024, 10, 23, 17, 30, tzinfo=UTC))
        assert "2024-10-24 Thursday 01:30 (Asia/Shanghai)" in later.messages[0]["content"]
        (turn,) = sched.store.session_turns("li", "s2")
        assert turn.meta["dates"] == ["yesterday = 2024-10-23"]
        (interview,) = sched.store.session_turns("li", "s1")
        assert interview.meta["dates"] == ["下周五 = 2024-11-01"]


def test_recalled_memories_are_dated_on_the_user_clock(tmp_path: Path) -> None:
    """19:00 on 1 March in New York is already 2 March in UTC: the model must read 1 March."""
    ny = "America/New_York"
    with Scheduler(Memory(home=tmp_path, embedders="hash"), start_workers=False) as sched:
        sched.prepare(
            "ella",
            "s1",
            "I cooked mushroom risotto tonight",
            now=datetime(2024, 3, 2, tzinfo=UTC),
            timezone=ny,
        )
        sched.record("ella", "s1", "assistant", "Sounds lovely!")
        later = sched.prepare(
            "ella",
            "s2",
            "what did I cook with mushroom?",
            now=datetime(2024, 3, 9, 18, tzinfo=UTC),
            timezone=ny,
        )
        system = later.messages[0]["content"]
        assert "I cooked mushroom risotto tonight" in system
        assert "[2024-03-01]" in system and "2024-03-02" not in system
    # Without a timezone the stored (UTC) date is shown, as before.
    mem = Memory(home=tmp_path / "utc", embedders="hash")
    mem.add(
        "bo", "s1", "user", "I cooked mushroom risotto tonight", created_at=datetime(2024, 3, 2, tzinfo=UTC)
    )
    ctx = mem.context(
        "bo", "what did I cook with mushroom?", session_id="s2", now=datetime(2024, 3, 9, tzinfo=UTC)
    )
    assert "[2024-03-02]" in ctx.messages[0]["content"]


@pytest.fixture
def server(tmp_path: Path, fake: FakeOpenAI) -> Iterator[str]:
    cfg = Config.load(
        home=tmp_path / "srv", embedders="hash", upstream_base_url=fake.base_url, upstream_model="fake-model"
    )
    with LiveServer(create_app(cfg)) as base:
        yield base


def _chat(base: str, text: str, at: str, session: str, tz: str = "Asia/Shanghai") -> httpx.Response:
    return httpx.post(
        f"{base}/v1/chat/completions",
        json={
            "model": "fake-model",
            "user": "li",
            "metadata": {"session_id": session, "timestamp": at, "timezone": tz},
            "messages": [{"role": "user", "content": text}],
        },
        timeout=60,
    )


@pytest.mark.parametrize(
    ("said", "asked", "note"),
    [
        ("上周我去杭州出差了", "我去杭州出差是什么时候？", "上周 = 2024-10-15"),
        (
            "Last Tuesday I went to Hangzhou on business",
            "When was my Hangzhou business trip?",
            "Last Tuesday = 2024-10-15",
        ),
    ],
)
def test_http_last_week_is_stored_as_a_date_and_reaches_the_llm(
    server: str, fake: FakeOpenAI, said: str, asked: str, note: str
) -> None:
    assert _chat(server, said, "2024-10-22T15:00:00+08:00", "s1").status_code == 200
    hits = httpx.get(f"{server}/v1/users/li/memories", params={"q": "2024-10-15"}).json()
    assert hits[0]["content"] == said and hits[0]["dates"] == [note]
    fake.clear()
    assert _chat(server, asked, "2024-11-20T09:00:00+08:00", "s2").status_code == 200
    system = fake.chat_requests[-1]["messages"][0]["content"]
    assert f"{said} ({note})" in system
    assert "2024-11-20 Wednesday 09:00 (Asia/Shanghai)" in system


@pytest.mark.parametrize(
    ("story", "ask", "name"),
    [
        (
            ["我们第一次约会是在 Blue Note，那家爵士乐餐厅", "那晚的萨克斯太好听了"],
            "亲爱的，我们这周末去吃那家我们第一次约会时的餐厅吧？",
            "Blue Note",
        ),
        (
            ["Our first date was at Luigi's Trattoria last Friday", "The tiramisu there was amazing"],
            "Honey, shall we go back to the restaurant of our first date this weekend?",
            "Luigi's Trattoria",
        ),
    ],
)
def test_http_first_date_restaurant_recalled_weeks_later(
    server: str, fake: FakeOpenAI, story: list[str], ask: str, name: str
) -> None:
    for i, line in enumerate(story):
        assert _chat(server, line, f"2024-09-0{i + 1}T20:00:00+08:00", "date-night").status_code == 200
    for day in range(10, 20):  # weeks of other chat in between
        _chat(
            server,
            f"今天上班好忙 {day}" if "Blue" in name else f"busy day at work {day}",
            f"2024-10-{day}T12:00:00+08:00",
            f"d{day}",
        )
    fake.clear()
    assert _chat(server, ask, "2024-10-26T10:00:00+08:00", "weekend").status_code == 200
    system = fake.chat_requests[-1]["messages"][0]["content"]
    assert name in system and "[2024-09-01" in system  # recalled, under the date it was said
    if "last Friday" in story[0]:
        assert "last Friday = 2024-08-30" in system  # and the relative time resolved


def test_http_a_new_timezone_is_the_profile_timezone_on_its_own_turn(server: str, fake: FakeOpenAI) -> None:
    """A user who flew from Shanghai to New York: the first turn from New York says so in the clock line
    and must not list the old zone as the user's timezone ("current facts; they override anything said
    earlier"). Before, the fact was written after the context was built, so that turn's prompt
    contradicted itself."""
    _chat(server, "明天飞纽约", "2024-05-01T10:00:00+08:00", "a")
    _chat(server, "Just landed at JFK", "2024-05-02T09:00:00-04:00", "b", tz="America/New_York")
    system = fake.chat_requests[-1]["messages"][0]["content"]
    assert "(America/New_York)" in system
    assert "- timezone: America/New_York" in system and "Asia/Shanghai" not in system
    facts = httpx.get(f"{server}/v1/users/li/profile", params={"key": "timezone", "current": "true"}).json()
    assert [f["value"] for f in facts["facts"]] == ["America/New_York"]


@pytest.mark.parametrize(
    ("said", "tz", "asked", "note"),
    [
        # Said on Friday 2026-11-27: a bare weekday in the past tense is the Tuesday gone by.
        ("周二我去看牙了，拔了一颗智齿", "Asia/Shanghai", "我上次看牙是哪天？", "周二 = 2026-11-24"),
        (
            "On Tuesday I went to the dentist",
            "America/Los_Angeles",
            "When did I see the dentist?",
            "Tuesday = 2026-11-24",
        ),
        # Next week's Thursday, as 下周四; a vague time of the month keeps its approximation.
        (
            "My sister's wedding is Thursday after next",
            "America/Los_Angeles",
            "When is the wedding?",
            "Thursday after next = 2026-12-10",
        ),
        ("月底要交房租", "Asia/Shanghai", "房租什么时候交？", "月底 = late 2026-11"),
    ],
)
def test_http_second_walk_forms_reach_the_recalled_memory(
    server: str, fake: FakeOpenAI, said: str, tz: str, asked: str, note: str
) -> None:
    friday = "2026-11-27T10:00:00+08:00" if tz == "Asia/Shanghai" else "2026-11-27T10:00:00-08:00"
    assert _chat(server, said, friday, "s1", tz=tz).status_code == 200
    fake.clear()
    assert _chat(server, asked, "2026-12-01T09:00:00+08:00", "s2", tz=tz).status_code == 200
    system = fake.chat_requests[-1]["messages"][0]["content"]
    assert f"{said} ({note})" in system


@pytest.mark.parametrize(
    ("at", "tz", "local"),
    [
        ("2024-10-22T22:30:00", "Asia/Shanghai", "2024-10-22 Tuesday 22:30 (Asia/Shanghai)"),
        ("2024-10-22T22:30:00", "America/New_York", "2024-10-22 Tuesday 22:30 (America/New_York)"),
    ],
)
def test_http_a_timestamp_without_offset_is_local_time_in_the_request_timezone(
    server: str, fake: FakeOpenAI, at: str, tz: str, local: str
) -> None:
    """A chat app that sends the user's wall-clock time and their zone beside it: the time is read in
    that zone (it was refused with a 400 before, as it still is without a zone)."""
    assert _chat(server, "上周我去杭州出差了", at, "s1", tz=tz).status_code == 200
    assert local in fake.chat_requests[-1]["messages"][0]["content"]
    hit = httpx.get(f"{server}/v1/users/li/memories", params={"q": "杭州"}).json()[0]
    assert hit["dates"] == ["上周 = 2024-10-15"]
    offset = "+08:00" if tz == "Asia/Shanghai" else "-04:00"
    assert datetime.fromisoformat(hit["created_at"]) == datetime.fromisoformat(at + offset)
    bare = httpx.post(
        f"{server}/v1/chat/completions",
        json={
            "model": "m",
            "user": "li",
            "metadata": {"timestamp": at},
            "messages": [{"role": "user", "content": "hi"}],
        },
        timeout=30,
    )
    assert bare.status_code == 400 and "no UTC offset" in bare.text


def _chat_no_zone(base: str, user: str, text: str, at: str) -> dict[str, Any]:
    """A client that stamps each message with the user's clock and its UTC offset, and names no zone."""
    r = httpx.post(
        f"{base}/v1/chat/completions",
        json={
            "model": "fake-model",
            "user": user,
            "metadata": {"session_id": "s", "timestamp": at},
            "messages": [{"role": "user", "content": text}],
        },
        timeout=60,
    )
    assert r.status_code == 200, r.text
    trace = httpx.get(f"{base}/v1/traces/{r.headers[TRACE_HEADER]}", timeout=10).json()
    assert isinstance(trace, dict)
    return trace


def test_http_the_timestamp_offset_is_the_user_clock_when_no_zone_is_sent(
    server: str, fake: FakeOpenAI
) -> None:
    """07:50 at +08:00 is a morning message (23:50 in UTC was read as late night before), "昨天" said
    then is the day before in Shanghai (not two days before), and the prompt's clock reads 07:50. The
    offset is not remembered as the user's zone: it says nothing of next month's clock."""
    trace = _chat_no_zone(server, "wang", "昨天我去杭州出差了，刚起床", "2024-11-06T07:50:00+08:00")
    assert not trace["route"]["signals"]["late_night"]
    assert trace["route"]["local_time"] == "2024-11-06T07:50+08:00"
    assert "2024-11-06 Wednesday 07:50 (UTC+08:00)" in fake.chat_requests[-1]["messages"][0]["content"]
    hit = httpx.get(f"{server}/v1/users/wang/memories", params={"q": "杭州"}).json()[0]
    assert hit["dates"] == ["昨天 = 2024-11-05"]
    facts = httpx.get(f"{server}/v1/users/wang/profile", params={"key": "timezone"}).json()["facts"]
    assert facts == []
    # Late at night by the same clock: 23:40 at -05:00 (04:40 UTC, a morning hour in UTC).
    night = _chat_no_zone(server, "ella", "still up, can't sleep", "2024-11-05T23:40:00-05:00")
    assert night["route"]["signals"]["late_night"]


def test_http_a_remembered_zone_is_kept_when_the_offset_agrees_and_yields_when_it_does_not(
    server: str, fake: FakeOpenAI
) -> None:
    """A zone sent once is remembered; later turns that send only an offset keep it while it gives that
    offset (its daylight-saving rules hold: -04:00 in May, -05:00 in December), and a trip abroad
    (an offset the zone does not give then) is read on the clock of the trip."""
    _chat(server, "hi", "2024-05-01T09:00:00-04:00", "a", tz="America/New_York")
    _chat_no_zone(server, "li", "morning!", "2024-12-02T08:00:00-05:00")
    assert "2024-12-02 Monday 08:00 (America/New_York)" in fake.chat_requests[-1]["messages"][0]["content"]
    trip = _chat_no_zone(server, "li", "早上好，东京好冷", "2024-12-05T07:30:00+09:00")
    assert trip["route"]["local_time"] == "2024-12-05T07:30+09:00"
    assert not trip["route"]["signals"]["late_night"]
    assert "2024-12-05 Thursday 07:30 (UTC+09:00)" in fake.chat_requests[-1]["messages"][0]["content"]
    facts = httpx.get(f"{server}/v1/users/li/profile", params={"key": "timezone", "current": "true"}).json()
    assert [f["value"] for f in facts["facts"]] == ["America/New_York"]


def test_library_add_reads_relative_time_on_the_offset_of_created_at(mem: Memory) -> None:
    said = datetime.fromisoformat("2024-11-06T07:50:00+08:00")  # 2024-11-05 23:50 in UTC
    assert mem.add("a", "s", "user", "昨天下雨了", created_at=said).meta["dates"] == ["昨天 = 2024-11-05"]
    assert mem.add("b", "s", "user", "昨天下雨了", created_at=said.astimezone(UTC)).meta["dates"] == [
        "昨天 = 2024-11-04"
    ]


def test_http_a_profile_date_is_on_the_clock_the_timestamp_states(server: str, fake: FakeOpenAI) -> None:
    """20:01 at -05:00 is 01:01 UTC the next day: the rename's "since" date is the user's 11-05."""
    _chat_no_zone(server, "rob", "call me Bob", "2024-11-05T20:00:00-05:00")
    _chat_no_zone(server, "rob", "actually, call me Rob", "2024-11-05T20:01:00-05:00")
    _chat_no_zone(server, "rob", "hey", "2024-11-05T20:02:00-05:00")
    system = fake.chat_requests[-1]["messages"][0]["content"]
    assert "Rob (since 2024-11-05; formerly Bob)" in system


def _turn(base: str, user: str, session: str, content: str, at: str, tz: str) -> int:
    body = {
        "user": user,
        "session_id": session,
        "role": "user",
        "content": content,
        "timestamp": at,
        "timezone": tz,
    }
    r = httpx.post(f"{base}/v1/turns", json=body, timeout=60)
    assert r.status_code == 201
    return int(r.json()["turn_id"])


@pytest.mark.parametrize(
    ("tz", "others", "asked", "kept"),
    [
        (
            "Europe/London",
            ["My sister rang tonight", "Watched a film about octopuses tonight", "Tonight I'm staying in"],
            "What should I cook for dinner tonight?",
            ["cook", "dinner"],
        ),
        (
            "Asia/Shanghai",
            ["今晚加班到十点", "今晚看了一部纪录片", "周末在家睡到中午"],
            "今晚吃什么好呢？周末呢？",
            ["吃"],
        ),
    ],
)
def test_http_a_time_word_of_the_question_is_not_what_it_is_about(
    server: str, tz: str, others: list[str], asked: str, kept: list[str]
) -> None:
    """A question such as "What should I cook for dinner tonight?" asks about dinner: turns that only say "tonight" (or
    今晚, 周末) were BM25 hits and took the context's room; the time words are left out of its
    full-text search. A question that is nothing but time words still searches them."""
    food = _turn(
        server,
        "u",
        "s1",
        "I love to cook risotto" if "cook" in kept else "火锅是我最喜欢吃的",
        "2024-10-01T19:00:00",
        tz,
    )
    for day, text in enumerate(others, start=2):
        _turn(server, "u", f"s{day}", text, f"2024-10-0{day}T20:00:00", tz)
    ctx = httpx.post(
        f"{server}/v1/context",
        json={
            "user": "u",
            "message": asked,
            "session_id": "q",
            "timestamp": "2024-10-20T19:00:00",
            "timezone": tz,
        },
        timeout=60,
    ).json()
    bm25 = ctx["trace"]["retrieval"]["scores"]["bm25"]
    assert [tid for tid, _ in bm25] == [food]  # the food turn alone: no turn for "tonight" / 今晚 / 周末
    only_time = "What did I do tonight?" if "cook" in kept else "今晚呢？"
    ctx = httpx.post(
        f"{server}/v1/context",
        json={
            "user": "u",
            "message": only_time,
            "session_id": "q",
            "timestamp": "2024-10-20T19:00:00",
            "timezone": tz,
        },
        timeout=60,
    ).json()
    assert len(ctx["trace"]["retrieval"]["scores"]["bm25"]) >= 2
