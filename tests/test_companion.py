"""The companion scenarios through the HTTP service, asserting on what reaches the (fake) upstream LLM:
mood carried across sessions, its decay and repair, the learned bedtime, nudges (topic switches:
test_topic_switch.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from memsched import Memory
from memsched.config import Config
from memsched.nudges import due_nudges
from memsched.scheduler import Scheduler
from memsched.server.app import TRACE_HEADER, create_app
from memsched.testing import FakeOpenAI, LiveServer

SH = ZoneInfo("Asia/Shanghai")
DAY = datetime(2024, 10, 14, tzinfo=SH)


@pytest.fixture
def server(tmp_path: Path, fake: FakeOpenAI) -> Iterator[str]:
    cfg = Config.load(
        home=tmp_path / "srv",
        embedders="hash",
        upstream_base_url=fake.base_url,
        upstream_model="fake-model",
        llm_timeout=5.0,
    )
    with LiveServer(create_app(cfg)) as base:
        yield base


def chat(base: str, user: str, session: str, text: str, at: datetime) -> dict[str, Any]:
    """One proxied turn at local time `at`; returns its stored trace."""
    body = {
        "model": "m",
        "user": user,
        "metadata": {"session_id": session, "timestamp": at.isoformat(), "timezone": "Asia/Shanghai"},
        "messages": [{"role": "system", "content": "You are Xiaoyu."}, {"role": "user", "content": text}],
    }
    r = httpx.post(f"{base}/v1/chat/completions", json=body, timeout=30)
    assert r.status_code == 200, r.text
    trace = httpx.get(f"{base}/v1/traces/{r.headers[TRACE_HEADER]}", timeout=10).json()
    assert isinstance(trace, dict)
    return trace


def system_of(fake: FakeOpenAI) -> str:
    # The last reply request: background jobs (bookmarks, profile extraction) also call the fake
    # LLM, with a single user message, and may come after the reply.
    return str(reply_request(fake)["messages"][0]["content"])


def reply_request(fake: FakeOpenAI) -> dict[str, Any]:
    """The last request whose system message starts with the client's persona: summary and bookmark
    jobs send system messages too, and may come after the reply."""
    return next(
        b
        for b in reversed(fake.chat_requests)
        if b["messages"][0].get("role") == "system"
        and str(b["messages"][0]["content"]).startswith("You are Xiaoyu")
    )


def state(base: str, user: str, at: datetime | None = None) -> dict[str, Any]:
    params = {"at": at.isoformat()} if at else {}
    r = httpx.get(f"{base}/v1/users/{user}/state", params=params, timeout=10)
    assert r.status_code == 200, r.text
    data = r.json()
    assert isinstance(data, dict)
    return data


ARGUMENTS = {
    "zh": (["你根本不在乎我！", "我真的很生气"], "早安。"),
    "en": (["You never care about me!", "I'm really angry at you."], "Good morning."),
}


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_morning_after_an_argument_is_cool(server: str, fake: FakeOpenAI, lang: str) -> None:
    fight, morning = ARGUMENTS[lang]
    night = DAY.replace(hour=22, minute=30)
    traces = [
        chat(server, "li", "evening", text, night + timedelta(minutes=i)) for i, text in enumerate(fight)
    ]
    for t in traces:
        assert t["route"]["mode"] == "conflict" and t["route"]["cues"]["conflict"]
        assert t["mood"]["after"]["label"] == "upset"
    cause_ids = [t["turn_ids"][0] for t in traces]

    s = state(server, "li", DAY.replace(hour=22, minute=40))
    assert s["mood"]["label"] == "upset" and s["mood"]["cause_turn_ids"] == cause_ids
    assert s["last_active"] is not None
    # Without `at`: the state as the user left it, on their messages' clock (2024 here), not decayed to
    # the server's today (it read neutral: two years of decay).
    left = state(server, "li")
    assert left["mood"]["label"] == "upset" and left["mood"]["intensity"] > 0.5
    assert datetime.fromisoformat(left["as_of"]) == datetime.fromisoformat(left["last_active"])
    assert state(server, "li", datetime.now(UTC))["mood"]["label"] == "neutral"  # decayed to now

    next_day = (DAY + timedelta(days=1)).replace(hour=8, minute=0)
    trace = chat(server, "li", "morning", morning, next_day)
    assert trace["route"]["mode"] == "conflict"
    assert "carried" in trace["route"]["mode_reason"]  # the message itself carries no conflict cue
    assert not trace["route"]["cues"].get("conflict")
    assert trace["strategy"]["name"] == "conflict_cold"
    assert "mood=upset" in trace["strategy"]["reason"]
    assert trace["mood"]["carried"]["label"] == "upset"
    assert 0.25 <= trace["mood"]["carried"]["intensity"] < traces[-1]["mood"]["after"]["intensity"]
    system = system_of(fake)
    assert "Conversation strategy: conflict_cold" in system and "……早。" in system
    assert "current mood" in system and fight[0] in system  # what caused it is quoted
    # "早安" is routed as conflict because of the carried mood, but expresses no anger of its own: it
    # neither strengthens the mood nor becomes one of its causes (it would, read by the final mode).
    assert trace["mood"]["event"] == "kept"
    assert trace["mood"]["after"]["cause_turn_ids"] == cause_ids
    again = chat(server, "li", "morning", morning, next_day + timedelta(minutes=5))
    assert again["mood"]["after"]["intensity"] <= trace["mood"]["after"]["intensity"]
    # The timezone comes with every turn; its profile fact keeps the turn that first said it.
    facts = httpx.get(f"{server}/v1/users/li/profile", timeout=10).json()["facts"]
    (tz,) = [f for f in facts if f["key"] == "timezone"]
    assert tz["value"] == "Asia/Shanghai" and tz["source_turn_ids"] == cause_ids[:1]


@pytest.mark.parametrize(
    ("lang", "apology"),
    [
        ("zh", "对不起，昨晚是我不好，我太累了"),
        ("en", "I'm sorry I snapped at you last night, I was exhausted."),
    ],
)
def test_a_reply_to_an_apology_repairs_the_mood_in_its_own_words(
    server: str, fake: FakeOpenAI, lang: str, apology: str
) -> None:
    """The apology's strategy (`accept_apology`) tells the model to accept it. A reply that did so in
    its own words, with none of the acceptance cues ("It's okay", 没关系), left the mood softened: the
    user's later messages that day were still told "current mood: upset" with the fight quoted."""
    fight, _ = ARGUMENTS[lang]
    night = DAY.replace(hour=22, minute=30)
    for i, text in enumerate(fight):
        chat(server, "rui", "evening", text, night + timedelta(minutes=i))
    morning = (DAY + timedelta(days=1)).replace(hour=8)
    fake.script_for(apology, "Thank you for telling me. Get some rest today.")
    trace = chat(server, "rui", "morning", apology, morning)
    assert trace["strategy"]["name"] == "accept_apology" and trace["mood"]["event"] == "softened"
    assert state(server, "rui", morning + timedelta(minutes=1))["mood"]["label"] == "neutral"
    later = {"zh": "午休了，食堂今天有红烧肉", "en": "Lunch break, the canteen has lasagne today"}[lang]
    after = chat(server, "rui", "noon", later, morning + timedelta(hours=5))
    assert after["strategy"]["name"] not in ("conflict_cold", "accept_apology")
    assert "current mood" not in system_of(fake) and fight[0] not in system_of(fake).split("Memories")[0]


@pytest.mark.parametrize(
    ("lang", "apology", "acceptance"),
    [
        ("zh", "对不起，昨天是我不好", "好啦，原谅你了"),
        ("en", "I'm sorry, I was wrong yesterday", "It's okay, I forgive you."),
    ],
)
def test_mood_decays_and_resets_on_repair(
    server: str, fake: FakeOpenAI, lang: str, apology: str, acceptance: str
) -> None:
    fight, morning = ARGUMENTS[lang]
    night = DAY.replace(hour=22, minute=30)
    for i, text in enumerate(fight):
        chat(server, "mei", "evening", text, night + timedelta(minutes=i))
    # Decay: strong the same night, weaker the next morning, gone after three days.
    late = state(server, "mei", night + timedelta(minutes=5))["mood"]
    next_morning = state(server, "mei", night + timedelta(hours=10))["mood"]
    later = state(server, "mei", night + timedelta(days=3))["mood"]
    assert late["label"] == next_morning["label"] == "upset"
    assert late["intensity"] > next_morning["intensity"] > 0
    assert later["label"] == "neutral" and later["intensity"] == 0

    # Repair: the user apologises, the reply accepts: the mood resets before the next morning.
    fake.script_for(apology, acceptance)
    trace = chat(server, "mei", "evening", apology, night + timedelta(minutes=20))
    assert trace["route"]["apology"]
    assert trace["mood"]["event"] == "softened"  # an apology alone halves it ...
    # ... and the reply is asked to accept it, not to stay cool (the mood is still upset here).
    assert trace["route"]["signals"]["repair"] and trace["mood"]["after"]["label"] == "upset"
    assert trace["strategy"]["name"] == "accept_apology"
    apology_system = next(
        str(b["messages"][0]["content"])
        for b in reversed(fake.chat_requests)
        if apology in str(b["messages"])
    )
    assert "Conversation strategy: accept_apology" in apology_system and "conflict_cold" not in apology_system
    repaired = state(server, "mei", night + timedelta(minutes=25))["mood"]
    assert repaired["label"] == "neutral"  # ... and the reply that accepts it resets it
    assert repaired["cause_turn_ids"] == trace["turn_ids"]  # the apology and the reply
    after = chat(server, "mei", "morning", morning, (DAY + timedelta(days=1)).replace(hour=8))
    assert after["route"]["mode"] == "casual" and after["strategy"]["name"] != "conflict_cold"
    assert "conflict_cold" not in system_of(fake)


def _history(base: str, user: str, times: list[tuple[int, int]], texts: list[str]) -> None:
    """A week of messages at the given local (hour, minute)s, each night's late ones after midnight."""
    for day in range(7):
        d = DAY - timedelta(days=8 - day)
        for i, (h, m) in enumerate(times):
            at = (d + timedelta(days=1 if h < 6 else 0)).replace(hour=h, minute=m)
            r = httpx.post(
                f"{base}/v1/turns",
                json={
                    "user": user,
                    "session_id": f"d{day}",
                    "role": "user",
                    "content": texts[i % len(texts)],
                    "timestamp": at.isoformat(),
                },
                timeout=30,
            )
            assert r.status_code == 201, r.text


def _learn(base: str, user: str, text: str) -> dict[str, Any]:
    chat(base, user, "evening", text, DAY.replace(hour=20))  # queues the routine-learning P2 job
    for _ in range(200):
        routine = state(base, user)["routine"]
        if routine["confidence"] > 0:
            return dict(routine)
        time.sleep(0.05)
    raise AssertionError(f"the routine of {user} was not learned: {state(base, user)}")


@pytest.mark.parametrize(
    ("lang", "texts", "late"),
    [
        ("zh", ["下班了", "吃饭了", "在看剧"], "还不想睡"),
        ("en", ["home now", "dinner", "watching a show"], "not sleepy yet"),
    ],
)
def test_one_am_is_late_for_an_early_sleeper_not_for_a_night_owl(
    server: str, fake: FakeOpenAI, lang: str, texts: list[str], late: str
) -> None:
    _history(server, "early", [(7, 30), (20, 0), (21, 30), (22, 55)], texts)
    _history(server, "owl", [(10, 30), (22, 0), (1, 0), (2, 25)], texts)
    early = _learn(server, "early", texts[0])
    owl = _learn(server, "owl", texts[0])
    assert early["sleep_time"] == "22:55" and owl["sleep_time"] == "02:25"

    one_am = (DAY + timedelta(days=1)).replace(hour=1)
    t_early = chat(server, "early", "night", late, one_am)
    assert t_early["route"]["signals"]["late_night"]
    assert t_early["route"]["late_window"].endswith("(learned)")
    assert t_early["strategy"]["name"] == "caretaker"
    system = system_of(fake)
    assert "Conversation strategy: caretaker" in system and "usually goes to sleep around 22:55" in system

    t_owl = chat(server, "owl", "night", late, one_am)
    assert not t_owl["route"]["signals"]["late_night"]
    assert t_owl["strategy"]["name"] != "caretaker"
    assert "caretaker" not in system_of(fake)

    # The early sleeper is still up: a late-night nudge is due now, with the turn it comes from.
    nudges = httpx.get(
        f"{server}/v1/users/early/nudges", params={"at": (one_am + timedelta(minutes=5)).isoformat()}
    ).json()
    assert [n["kind"] for n in nudges] == ["late_night"]
    assert nudges[0]["source_turn_ids"] == [t_early["turn_ids"][0]]
    assert (
        httpx.get(
            f"{server}/v1/users/owl/nudges", params={"at": (one_am + timedelta(minutes=5)).isoformat()}
        ).json()
        == []
    )


@pytest.mark.parametrize(
    ("text", "event_date"),
    [("明天面试，好紧张", "2024-10-15"), ("I have a job interview next Friday", "2024-10-25")],
)
def test_follow_up_nudges_come_the_day_after_with_their_dates(
    server: str, fake: FakeOpenAI, text: str, event_date: str
) -> None:
    said = DAY.replace(hour=21)  # Monday 2024-10-14
    trace = chat(server, "fang", "s", text, said)
    chat(server, "fang", "s", "明天见" if "明天" in text else "see you tomorrow", said + timedelta(minutes=1))
    event = datetime.fromisoformat(event_date).replace(tzinfo=SH)

    def nudges(at: datetime, upcoming: bool = False) -> list[dict[str, Any]]:
        r = httpx.get(
            f"{server}/v1/users/fang/nudges",
            params={"at": at.isoformat(), "upcoming": str(upcoming).lower(), "timezone": "Asia/Shanghai"},
        )
        assert r.status_code == 200, r.text
        return [n for n in r.json() if n["kind"] == "follow_up"]

    assert nudges(event.replace(hour=12)) == []  # the day of the event itself: not yet
    upcoming = nudges(event.replace(hour=12), upcoming=True)
    assert len(upcoming) == 1 and not upcoming[0]["due"]
    due = nudges((event + timedelta(days=1)).replace(hour=11))
    assert len(due) == 1 and due[0]["due"]  # "明天见" has no event: no second follow-up
    assert due[0]["event_date"] == event_date
    assert due[0]["due_at"].startswith((event + timedelta(days=1)).date().isoformat())
    assert due[0]["source_turn_ids"] == [trace["turn_ids"][0]]
    assert nudges(event + timedelta(days=6)) == []  # too late to ask
    # `now` is accepted for `at`; both at once must agree.
    at = (event + timedelta(days=1)).replace(hour=11).isoformat()
    r = httpx.get(f"{server}/v1/users/fang/nudges", params={"now": at, "timezone": "Asia/Shanghai"})
    assert [n["event_date"] for n in r.json() if n["kind"] == "follow_up"] == [event_date]
    r = httpx.get(f"{server}/v1/users/fang/nudges", params={"now": at, "at": event.isoformat()})
    assert r.status_code == 400 and "either at or now" in r.text


def test_a_time_without_offset_asks_for_nudges_on_the_user_clock(
    server: str, fake: FakeOpenAI, tmp_path: Path
) -> None:
    """ "As of 09:30" is the user's 09:30 (their zone from their turns, or `timezone`): the follow-up on
    yesterday's interview is asked from their wake-up time (10:00 by default), not at 09:30 UTC."""
    chat(server, "fang", "s", "明天面试，好紧张", DAY.replace(hour=21))  # Monday 2024-10-14, Shanghai

    def due(at: str, **extra: str) -> list[str]:
        r = httpx.get(f"{server}/v1/users/fang/nudges", params={"at": at, **extra})
        assert r.status_code == 200, r.text
        return [n["event_date"] for n in r.json() if n["kind"] == "follow_up"]

    assert due("2024-10-16T09:30:00") == []  # 09:30 in Shanghai (01:30 UTC): not yet
    assert due("2024-10-16T10:30:00") == ["2024-10-15"]
    assert due("2024-10-16T09:30:00+00:00") == ["2024-10-15"]  # an explicit offset is kept: 17:30 there
    assert due("2024-10-16T19:30:00", timezone="America/New_York") == ["2024-10-15"]
    r = httpx.get(
        f"{server}/v1/users/fang/nudges", params={"at": "2024-10-16T09:30:00", "timezone": "Mars/Base"}
    )
    assert r.status_code == 400 and "time zone" in r.text
    state = httpx.get(f"{server}/v1/users/fang/state", params={"at": "2024-10-15T08:00:00"}).json()
    assert state["last_active"] is not None


def test_a_time_in_words_is_read_off_the_event_loop(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`at` that is not ISO 8601 goes through dateparser, whose first call loads its tables for
    seconds: read on the event loop, it held every other request of the server meanwhile."""
    import asyncio

    from memsched.server.routes import companion as routes

    on_loop: list[bool] = []
    parse = routes.parse_timestamp

    def spy(value: object, where: str, zone: str | None = None) -> datetime:
        try:
            asyncio.get_running_loop()
            on_loop.append(True)
        except RuntimeError:  # a worker thread: no loop runs here
            on_loop.append(False)
        return parse(value, where, zone)

    monkeypatch.setattr(routes, "parse_timestamp", spy)
    chat(server, "fang", "s", "我明天要面试，好紧张", datetime(2024, 10, 15, 21, 0))
    for path in ("state", "nudges"):
        r = httpx.get(f"{server}/v1/users/fang/{path}", params={"at": "Oct 16 2024 9:30am"}, timeout=30)
        assert r.status_code == 200, r.text
    assert on_loop == [False, False]


def test_state_and_nudges_of_an_unknown_user_are_404(server: str) -> None:
    for path in ("state", "nudges"):
        r = httpx.get(f"{server}/v1/users/nobody/{path}")
        assert r.status_code == 404 and "error" in r.json()
    r = httpx.get(f"{server}/v1/users/nobody/state", params={"at": "not a time"})
    assert r.status_code in (400, 404)


# The topic switch through the service, with the default embedders: test_topic_switch.py.


def test_forgetting_the_words_that_caused_a_mood_forgets_the_mood(server: str, fake: FakeOpenAI) -> None:
    night = DAY.replace(hour=22, minute=30)
    trace = chat(server, "lan", "evening", "我真的很生气，你根本不在乎我", night)
    assert state(server, "lan", night)["mood"]["label"] == "upset"
    from memsched.store import open_store

    # The lineage cascade reaches the mood through its cause_turn_ids.
    r = httpx.get(f"{server}/healthz").json()
    store = open_store(Config.load(db=Path(r["db"])))
    try:
        store.forget_turns("lan", trace["turn_ids"][:1])
    finally:
        store.close()
    assert state(server, "lan", night)["mood"]["label"] == "neutral"


@pytest.mark.parametrize("text", ["明天面试，好紧张", "my interview is tomorrow"])
def test_follow_up_dates_are_resolved_in_the_user_timezone(tmp_path: Path, text: str) -> None:
    """Said at 00:30 on Thursday in Shanghai (still Wednesday in UTC): "tomorrow" is Friday the 18th
    there, and the follow-up is due on Saturday morning Shanghai time, with no timezone passed to
    `due_nudges` (it is the one remembered from the turn)."""
    said = datetime(2024, 10, 17, 0, 30, tzinfo=SH)
    with Scheduler(Memory(home=tmp_path, embedders="hash"), start_workers=False) as sched:
        sched.prepare("kai", "s", text, now=said, timezone="Asia/Shanghai")
        (upcoming,) = [
            n for n in due_nudges(sched.memory, "kai", said, include_upcoming=True) if n.kind == "follow_up"
        ]
        assert upcoming.event_date == "2024-10-18" and not upcoming.due
        assert upcoming.due_at == datetime(2024, 10, 19, 10, 0, tzinfo=SH)
        assert due_nudges(sched.memory, "kai", datetime(2024, 10, 19, 9, 0, tzinfo=SH)) == []
        (due,) = due_nudges(sched.memory, "kai", datetime(2024, 10, 19, 10, 30, tzinfo=SH))
        assert due.kind == "follow_up" and due.due and due.event_date == "2024-10-18"


@pytest.mark.parametrize(
    ("text", "event_date"),
    [
        ("周五要去拔牙，好怕", "2024-10-18"),  # a bare weekday with an event: the coming one
        ("My exams start on Monday", "2024-10-21"),  # a plural cue; Monday said on Monday is next week's
        ("I have a big meeting tomorrow", "2024-10-15"),
        ("dentist appointment on Thursday, ugh", "2024-10-17"),
        ("I had my exam on Friday", None),  # the past: nothing to follow up
        ("周五去拔牙了", None),
        ("每周五开会", None),  # a habit, not an event
    ],
)
def test_follow_ups_read_bare_weekdays_and_more_events(
    tmp_path: Path, text: str, event_date: str | None
) -> None:
    said = datetime(2024, 10, 14, 21, 0, tzinfo=SH)  # a Monday
    with Scheduler(Memory(home=tmp_path, embedders="hash"), start_workers=False) as sched:
        sched.prepare("kai", "s", text, now=said, timezone="Asia/Shanghai")
        got = [n.event_date for n in due_nudges(sched.memory, "kai", said, include_upcoming=True)]
        assert got == ([event_date] if event_date else [])


@pytest.mark.parametrize(
    ("text", "event_date"),
    [
        ("My sister's wedding is on November 2, I'm a bridesmaid!", "2024-11-02"),
        ("11月15号要做个小手术，有点慌", "2024-11-15"),
    ],
)
def test_an_event_announced_weeks_ahead_is_followed_up(tmp_path: Path, text: str, event_date: str) -> None:
    """Said on 1 October, the event is weeks away: the day after it the follow-up is due (it was not:
    only the last 14 days of messages were read, so the announcement had dropped out of the scan),
    and the first message after the day brings it up in conversation."""
    from memsched.nudges import follow_ups_since

    said = datetime(2024, 10, 1, 20, 0, tzinfo=SH)
    day = datetime.fromisoformat(event_date).replace(tzinfo=SH)
    with Scheduler(Memory(home=tmp_path, embedders="hash"), start_workers=False) as sched:
        sched.prepare("kai", "s", text, now=said, timezone="Asia/Shanghai")
        after = day + timedelta(days=1, hours=11)
        due = [n.event_date for n in due_nudges(sched.memory, "kai", after) if n.kind == "follow_up"]
        assert due == [event_date]
        asked = follow_ups_since(sched.memory, "kai", day - timedelta(days=1), after)
        assert [n.event_date for n in asked] == [event_date]


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        # called off in a later message: by its cue, by a place it named, by its day
        (
            [
                "My job interview is on Thursday, wish me luck",
                "the interview got cancelled, they filled the role",
            ],
            [],
        ),
        (["下周五要去上海出差", "上海不去了，客户那边改主意了"], []),
        (["Big presentation on Friday!", "Friday's thing is scrapped, the client pulled out"], []),
        # said with the plan itself
        (["my dentist appointment on Thursday got cancelled lol"], []),
        # moved: the new day is followed up, not the old one
        (
            ["dentist appointment on Thursday, ugh", "had to reschedule the dentist to next Monday"],
            ["2024-10-21"],
        ),
        # not called off: hoped against, asked about, someone off to work, another event
        (["My job interview is on Thursday", "I hope the interview doesn't get cancelled"], ["2024-10-17"]),
        (["My job interview is on Thursday", "what if they cancel the interview?"], ["2024-10-17"]),
        (
            ["My job interview is on Thursday", "My roommate is off to work, finally some quiet"],
            ["2024-10-17"],
        ),
        (["My exam is on Friday", "the concert on Saturday got cancelled"], ["2024-10-18"]),
        (
            ["My job interview is on Thursday", "my friend just moved to Boston for an interview"],
            ["2024-10-17"],
        ),
    ],
)
def test_a_plan_called_off_is_not_followed_up(tmp_path: Path, said: list[str], expected: list[str]) -> None:
    """A plan the user calls off ("the interview got cancelled", "上海不去了") was still asked about
    the day after it: nothing read a cancellation. The event it is about (its cue, a place or name it
    said, its day) is no follow-up now; a moved one is followed up on its new day."""
    start = datetime(2024, 10, 14, 20, 0, tzinfo=SH)  # a Monday
    with Scheduler(Memory(home=tmp_path, embedders="hash"), start_workers=False) as sched:
        for i, text in enumerate(said):
            sched.prepare("kai", "s", text, now=start + timedelta(hours=i), timezone="Asia/Shanghai")
        got = sorted(
            n.event_date or ""
            for n in due_nudges(sched.memory, "kai", start + timedelta(hours=3), include_upcoming=True)
            if n.kind == "follow_up"
        )
        assert got == expected


@pytest.mark.parametrize(("sleep", "wake"), [("18:04", "08:10"), ("18:04", None), ("23:10", None)])
def test_the_hours_nearly_everyone_sleeps_stay_late_after_an_early_bedtime(
    sleep: str, wake: str | None
) -> None:
    """A user of the walk whose last message of the day was usually around 18:00 (and the first at
    08:10, a night too long to be one) got the late window 18:34-00:34: at 02:40, "can't sleep, I
    keep thinking about grandma" was no late night. A window that opens in the evening now runs
    through the night hours; a known wake-up time still ends it (an early riser's 05:00)."""
    from memsched.router import in_window
    from memsched.routine import Routine

    def minute(hhmm: str | None) -> int | None:
        return None if hhmm is None else int(hhmm[:2]) * 60 + int(hhmm[3:])

    routine = Routine(sleep_minute=minute(sleep), wake_minute=minute(wake), confidence=0.5)
    window, source = routine.late_window()
    assert source == "learned" and in_window(2 * 60 + 40, window) and in_window(5 * 60 + 50, window)
    assert not in_window(7 * 60, window)
    early_riser = Routine(sleep_minute=minute("22:00"), wake_minute=minute("05:00"), confidence=0.5)
    assert early_riser.late_window()[0] == (22 * 60 + 30, 5 * 60)
    owl = Routine(sleep_minute=minute("02:25"), confidence=0.5)
    assert owl.late_window()[0] == (2 * 60 + 55, 8 * 60 + 55)


@pytest.mark.parametrize("sleep", ["18:04", "19:00", "21:10"])
def test_an_evening_message_is_no_late_night_after_an_early_last_message(sleep: str) -> None:
    """A companion user who stops writing around 19:00 most days (and writes at 23:25 or 01:30 on
    others) got the learned window 19:30-06:00, so "just got back from the gym, what a day" at 20:15
    was answered as a late-night message. The last message of a day is when the user stops writing,
    not when they sleep: a learned window opens at 22:00 at the earliest."""
    from memsched.router import in_window
    from memsched.routine import Routine

    routine = Routine(sleep_minute=int(sleep[:2]) * 60 + int(sleep[3:]), confidence=0.5)
    window, source = routine.late_window()
    assert source == "learned" and window[0] == 22 * 60
    assert not in_window(20 * 60 + 15, window) and not in_window(21 * 60 + 30, window)
    assert in_window(23 * 60 + 30, window) and in_window(2 * 60 + 40, window)


def test_a_routine_from_one_message_a_day_has_a_bedtime_but_no_wake_up_time() -> None:
    """A user's walk-through showed sleep_time 21:30 and wake_time 21:30: every day held one message,
    which was taken as both the day's last and its first."""
    from memsched.routine import learn

    start = datetime(2024, 5, 1, 13, 30, tzinfo=UTC)  # 21:30 in Shanghai
    times = [(i + 1, (start + timedelta(days=i)).timestamp()) for i in range(10)]
    now = start + timedelta(days=11)
    lonely = learn(times, "Asia/Shanghai", now)
    assert lonely.as_dict()["sleep_time"] == "21:30" and lonely.wake_minute is None
    # With mornings in the days too, the wake-up time is learned.
    mornings = [(100 + i, (start - timedelta(hours=13) + timedelta(days=i)).timestamp()) for i in range(10)]
    both = learn(times + mornings, "Asia/Shanghai", now)
    assert both.as_dict()["sleep_time"] == "21:30" and both.as_dict()["wake_time"] == "08:30"


@pytest.mark.parametrize(
    ("apology", "next_text"),
    [
        ("I apologize for snapping at you earlier, that was unfair of me.", "Good morning."),
        ("昨天是我不好，跟你道歉，不该冲你发火", "早上好"),
    ],
)
def test_an_apology_with_no_argument_carried_starts_no_upset_mood(
    server: str, fake: FakeOpenAI, apology: str, next_text: str
) -> None:
    """An apology reads as conflict (it may even hold a conflict cue: "apologize", "道歉"), but the user
    who apologises is not angry: before, it set an upset mood and the next message got the cold
    strategy."""
    at = DAY.replace(hour=9)
    trace = chat(server, "rui", "s1", apology, at)
    assert trace["route"]["cues"]["apology"]
    assert trace["mood"]["after"]["label"] == "neutral"
    assert state(server, "rui", at + timedelta(minutes=1))["mood"]["label"] == "neutral"
    after = chat(server, "rui", "s1", next_text, at + timedelta(minutes=2))
    assert after["strategy"]["name"] != "conflict_cold"
    assert "current mood" not in system_of(fake)


@pytest.mark.parametrize(
    "question",
    ["Are you still mad at me about our fight last night?", "你还在为昨晚吵架的事生我气吗？"],
)
def test_asking_whether_the_companion_is_still_angry_is_no_anger(
    server: str, fake: FakeOpenAI, question: str
) -> None:
    """A user who asks whether the companion is still angry about a fight reaches out; the fight is
    what they ask about. Asked with no argument behind it (made up, or misremembered), it set an
    upset mood ("fight", 吵架 as conflict cue words) and got the cold strategy: "the user is still
    upset with you, the argument has not been repaired. Reply short and cool"."""
    trace = chat(server, "ana", "s1", question, DAY.replace(hour=8))
    assert not trace["route"]["cues"].get("conflict")
    assert trace["mood"]["after"]["label"] == "neutral"
    assert trace["strategy"]["name"] != "conflict_cold"
    assert "conflict_cold" not in system_of(fake) and "current mood" not in system_of(fake)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_asking_whether_the_companion_is_still_angry_after_a_real_fight_is_answered_as_a_repair(
    server: str, fake: FakeOpenAI, lang: str
) -> None:
    fight, _ = ARGUMENTS[lang]
    night = DAY.replace(hour=22, minute=30)
    for i, text in enumerate(fight):
        chat(server, "bo", "evening", text, night + timedelta(minutes=i))
    question = {"zh": "你还在生我的气吗？", "en": "Are you still angry with me?"}[lang]
    trace = chat(server, "bo", "morning", question, (DAY + timedelta(days=1)).replace(hour=8))
    assert trace["route"]["signals"]["repair"] and trace["mood"]["event"] == "softened"
    assert trace["strategy"]["name"] == "accept_apology"


def test_a_cue_word_inside_a_title_is_not_the_users_feeling(server: str, fake: FakeOpenAI) -> None:
    """ "我在追《孤独的美食家》" names a TV show: 孤独 (a comfort cue) in its title made the mood sad at
    0.65, with the title as its cause, and the following messages got the comfort strategy."""
    at = DAY.replace(hour=20)
    trace = chat(server, "wen", "s1", "最近在追《孤独的美食家》，看得好饿", at)
    assert not trace["route"]["cues"].get("comfort")
    assert trace["mood"]["after"]["intensity"] < 0.25  # at most an uncued reading, never a cued mood
    later = state(server, "wen", at + timedelta(minutes=5))["mood"]
    assert later["label"] == "neutral" or later["intensity"] < 0.25
    # The same word said of oneself is still a cue.
    own = chat(server, "wen2", "s1", "一个人在家，好孤独", at)
    assert own["route"]["cues"]["comfort"] == ["孤独"]


def test_the_mood_line_is_dated_on_the_users_clock(server: str, fake: FakeOpenAI) -> None:
    """The prompt's "Now" line is local time; the mood's "last changed" was UTC (22:30 in Shanghai read
    14:30), so the model saw the argument eight hours earlier than it was."""
    night = DAY.replace(hour=22, minute=30)
    chat(server, "hao", "s1", "你根本不在乎我！气死我了", night)
    chat(server, "hao", "s1", "早", night + timedelta(minutes=5))
    system = system_of(fake)
    assert "last changed 2024-10-14T22:30+08:00" in system
