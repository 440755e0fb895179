"""A question about a day finds what was said that day ("what did we talk about yesterday?").

Before, only turns that *mention* the date were found (their resolved date notes): the turns said on
the 9th of October share no word with "What did we talk about on the 9th of October?", so none of
them reached the context. Now the pager's `when` layer holds the turns said in the time a question
asks about (`timeexpr.past_spans` on the user's clock).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from memsched.config import Config
from memsched.model import Turn
from memsched.server.app import create_app
from memsched.store.base import Store
from memsched.testing import FakeOpenAI, LiveServer
from memsched.text.timeexpr import past_spans

NOW = datetime(2025, 11, 5, 12, 0, tzinfo=UTC)  # a Wednesday; 20:00 in Shanghai


def _days(spans: list[tuple[datetime, datetime]], zone: str = "UTC") -> list[tuple[str, str]]:
    from zoneinfo import ZoneInfo

    tz = ZoneInfo(zone)
    return [(a.astimezone(tz).isoformat()[:16], b.astimezone(tz).isoformat()[:16]) for a, b in spans]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What did we talk about yesterday?", [("2025-11-04T00:00", "2025-11-05T00:00")]),
        ("What did we talk about on the 9th of October?", [("2025-10-09T00:00", "2025-10-10T00:00")]),
        ("10月10号发生了什么？", [("2025-10-10T00:00", "2025-10-11T00:00")]),
        ("上周五我干嘛了？", [("2025-10-31T00:00", "2025-11-01T00:00")]),
        ("What happened last weekend?", [("2025-11-01T00:00", "2025-11-03T00:00")]),
        ("How did the interview go last week?", [("2025-10-27T00:00", "2025-11-03T00:00")]),
        ("上个月我去哪儿了？", [("2025-10-01T00:00", "2025-11-01T00:00")]),
        ("What did I do last summer?", [("2025-06-01T00:00", "2025-09-01T00:00")]),
        # About a week around two days ago, cut at the moment of asking.
        ("前两天我跟你说了什么？", [("2025-10-31T00:00", "2025-11-05T12:00")]),
        # Time to come, today and tonight name nothing gone by.
        ("Shall we meet next Friday?", []),
        ("Any plans for this weekend?", []),
        ("What should I cook for dinner tonight?", []),
        ("What did I say today?", []),
    ],
)
def test_past_spans(question: str, expected: list[tuple[str, str]]) -> None:
    assert _days(past_spans(question, NOW, "UTC")) == expected


def test_past_spans_are_the_users_days() -> None:
    """Yesterday in Shanghai is 16:00 to 16:00 UTC, not the UTC day."""
    spans = past_spans("昨天我们聊了什么？", NOW, "Asia/Shanghai")
    assert spans == [(datetime(2025, 11, 3, 16, tzinfo=UTC), datetime(2025, 11, 4, 16, tzinfo=UTC))]
    assert _days(spans, "Asia/Shanghai") == [("2025-11-04T00:00", "2025-11-05T00:00")]


def test_turn_ids_between(store: Store) -> None:
    at = datetime(2025, 10, 9, 8, tzinfo=UTC)
    turns = [
        Turn(
            user_id="u",
            session_id="s",
            role="user",
            content=f"line {i}",
            created_at=at + timedelta(hours=6 * i),
        )
        for i in range(8)  # two days of four turns
    ]
    turns.append(Turn(user_id="other", session_id="s", role="user", content="not u's", created_at=at))
    ids = [t.id for t in store.add_turns(turns)]
    day = datetime(2025, 10, 9, tzinfo=UTC)
    assert store.turn_ids_between("u", day, day + timedelta(days=1), 100) == ids[:3]  # 08, 14, 20h
    assert store.turn_ids_between("u", day, day + timedelta(days=1), 2) == ids[:2]  # oldest first
    assert store.turn_ids_between("u", day + timedelta(days=5), day + timedelta(days=6), 100) == []


ZONE = "Asia/Shanghai"
DAY_LINES = [
    "The plumber finally came round and sorted out the kitchen sink.",
    "Mia got the lead role in the school play, she is over the moon.",
    "Booked the vet for Luna's vaccinations on Saturday morning.",
]


@pytest.fixture
def server(tmp_path: Path, fake: FakeOpenAI) -> Iterator[str]:
    cfg = Config.load(
        home=tmp_path / "srv", embedders="hash", upstream_base_url=fake.base_url, upstream_model="fake-model"
    )
    with LiveServer(create_app(cfg)) as base:
        yield base


def _turn(base: str, content: str, at: datetime, session: str) -> None:
    r = httpx.post(
        f"{base}/v1/turns",
        json={
            "user": "ana",
            "session_id": session,
            "role": "user",
            "content": content,
            "timestamp": at.isoformat(),
            "timezone": ZONE,
        },
        timeout=60,
    )
    assert r.status_code == 201, r.text


def _history(base: str) -> None:
    """Two months of chat about work, and on 9 October (Shanghai) three lines about other things."""
    start = datetime(2025, 9, 1, 10, tzinfo=UTC)
    for d in range(60):
        day = start + timedelta(days=d)
        if day.date() == datetime(2025, 10, 9).date():
            for i, line in enumerate(DAY_LINES):
                _turn(base, line, day + timedelta(minutes=i), f"d{d}")
            continue
        _turn(
            base,
            f"Another long day of spreadsheets and quarterly budget meetings at the office, {d}.",
            day,
            f"d{d}",
        )
        _turn(
            base,
            f"The commute home was slow again and the train was packed, {d}.",
            day + timedelta(hours=1),
            f"d{d}",
        )


def _context(base: str, message: str, at: str, budget: int) -> dict[str, Any]:
    r = httpx.post(
        f"{base}/v1/context",
        json={
            "user": "ana",
            "message": message,
            "session_id": "ask",
            "timestamp": at,
            "timezone": ZONE,
            "budget": budget,
        },
        timeout=60,
    )
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_http_a_question_about_a_day_gets_that_days_turns(server: str) -> None:
    _history(server)
    ctx = _context(server, "What did we talk about on the 9th of October?", "2025-11-20T09:00:00+08:00", 400)
    text = "\n".join(str(m["content"]) for m in ctx["messages"])
    assert all(line in text for line in DAY_LINES)
    when = ctx["trace"]["retrieval"]["paging"]["when"]
    assert when["turns"] == 3 and when["spans"] == [
        ["2025-10-08T16:00:00+00:00", "2025-10-09T16:00:00+00:00"]
    ]


def test_http_yesterday_through_the_proxy(server: str, fake: FakeOpenAI) -> None:
    """The chat completions path (the scheduler's turn) reads the message's time and zone too."""
    _history(server)
    fake.clear()
    r = httpx.post(
        f"{server}/v1/chat/completions",
        json={
            "model": "fake-model",
            "user": "ana",
            "metadata": {"session_id": "morning", "timestamp": "2025-10-10T08:30:00+08:00", "timezone": ZONE},
            "messages": [{"role": "user", "content": "昨天我们聊了什么？"}],
        },
        timeout=60,
    )
    assert r.status_code == 200, r.text
    system = fake.chat_requests[-1]["messages"][0]["content"]
    assert all(line in system for line in DAY_LINES)


def test_http_no_time_asked_about_no_layer(server: str) -> None:
    _history(server)
    ctx = _context(server, "What should I cook for dinner tonight?", "2025-11-20T18:00:00+08:00", 400)
    assert "when" not in ctx["trace"]["retrieval"]["paging"]


ZH_DAY = [
    "水管工终于来把厨房的水槽修好了。",
    "小米在学校话剧里拿到了主角，开心坏了。",
    "给露娜约了周六上午打疫苗。",
]


def test_http_a_chinese_day_outranks_turns_that_share_the_questions_words(server: str) -> None:
    """ "昨天我们聊了什么？" searches 聊: weeks of "聊" lines outranked the day's turns, whose only
    evidence was that they were said then. The time focus puts what was said then first."""
    start = datetime(2025, 9, 1, 2, tzinfo=UTC)
    for d in range(40):
        day = start + timedelta(days=d)
        if d == 38:
            for i, line in enumerate(ZH_DAY):
                _turn(server, line, day + timedelta(minutes=i), f"z{d}")
            continue
        _turn(server, f"今天和同事聊了很久第三季度的预算，聊得头都大了 {d}", day, f"z{d}")
        _turn(server, f"晚上跟老妈打电话聊了聊家里的事 {d}", day + timedelta(hours=1), f"z{d}")
    asked = (start + timedelta(days=39, hours=10)).astimezone().isoformat()
    ctx = _context(server, "昨天我们聊了什么？", asked, 160)
    text = "\n".join(str(m["content"]) for m in ctx["messages"])
    assert all(line in text for line in ZH_DAY)


def test_http_what_was_said_about_the_weekend_on_monday(server: str) -> None:
    """People tell of the weekend after it: "Spent Sunday afternoon repotting my plants", said on
    Monday, is about last weekend (its date note names the Sunday), though not said in it. Before,
    only the turns said on Saturday and Sunday were brought."""
    _history(server)
    monday = datetime(2025, 10, 13, 2, tzinfo=UTC)  # 10:00 in Shanghai, Monday 13 October
    line = "Spent Sunday afternoon repotting my plants, the monstera finally has new leaves."
    _turn(server, line, monday, "d42-monday")
    later = "Went to the dentist on Friday, two fillings."  # about the Friday before: not the weekend
    _turn(server, later, monday + timedelta(days=1), "d43-tuesday")
    ctx = _context(server, "What did we talk about last weekend?", "2025-10-15T09:00:00+08:00", 600)
    text = "\n".join(str(m["content"]) for m in ctx["messages"])
    assert line in text
    assert later not in text
    when = ctx["trace"]["retrieval"]["paging"]["when"]
    assert when["about"] == 1 and when["turns"] == 4  # Saturday's and Sunday's two lines each
