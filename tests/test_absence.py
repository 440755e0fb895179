"""A user who comes back after weeks: "Hey, I'm back! Sorry I vanished on you." was answered as if
they had written yesterday (the prompt held today's date and nothing of when they last wrote). From
`companion.ABSENCE_DAYS` calendar days on (the user's clock), the system prompt says how long it has
been and since which day; an ordinary next-day message gets no such line. Through the scheduler, the
reply LLM a FakeOpenAI."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from memsched import Config, Memory
from memsched.companion import ABSENCE_DAYS, absence_line
from memsched.embed.hashing import HashEmbedder
from memsched.llm.client import OpenAIChatClient
from memsched.scheduler import Scheduler
from memsched.testing import FakeOpenAI

TZ = "America/Los_Angeles"
T0 = datetime(2026, 1, 28, 20, 0, tzinfo=ZoneInfo(TZ))


@pytest.fixture
def sched(tmp_path: Path, fake: FakeOpenAI) -> Iterator[Scheduler]:
    memory = Memory(Config.load(home=tmp_path), embedders={"hash": HashEmbedder()})
    llm = OpenAIChatClient(fake.base_url, "key", "fake-model", timeout=10.0, retries=0)
    s = Scheduler(memory, llm=llm, summary_llm=None, start_workers=False)
    yield s
    s.close()
    llm.close()
    memory.close()


def system_of(fake: FakeOpenAI) -> str:
    return str(fake.chat_requests[-1]["messages"][0]["content"])


def test_a_return_after_three_weeks_is_stated(sched: Scheduler, fake: FakeOpenAI) -> None:
    sched.turn("u", "a", "Heading to my cousin's wedding tomorrow, talk soon!", now=T0, timezone=TZ)
    sched.turn("u", "b", "Hey, I'm back! Sorry I vanished.", now=T0 + timedelta(days=22), timezone=TZ)
    system = system_of(fake)
    assert "22 days ago" in system and "2026-01-28" in system, system
    sched.turn("u", "b", "It was a lovely wedding.", now=T0 + timedelta(days=22, minutes=5), timezone=TZ)
    assert "days ago" not in system_of(fake)  # only the first message back


def test_the_next_day_is_no_absence(sched: Scheduler, fake: FakeOpenAI) -> None:
    sched.turn("u", "a", "Good night!", now=T0, timezone=TZ)
    sched.turn("u", "b", "Morning!", now=T0 + timedelta(hours=12), timezone=TZ)
    assert "previous message was" not in system_of(fake)


def test_absence_counts_calendar_days_on_the_users_clock() -> None:
    late = datetime(2026, 1, 28, 23, 30, tzinfo=ZoneInfo(TZ))
    back = late + timedelta(days=ABSENCE_DAYS - 1, hours=1)  # three dates on, under three full days
    assert f"{ABSENCE_DAYS} days ago" in absence_line(late.timestamp(), back, TZ)
    assert absence_line(late.timestamp(), late + timedelta(days=ABSENCE_DAYS - 1), TZ) == ""
    assert absence_line(None, back, TZ) == ""
