"""A lead's walk through the service in session 23: a user correcting their name ("my name isn't Tom,
it's Tim"), asking to forget a topic in other words than the first tests used ("erase all memories of
my ex", "忘掉我前任的事吧"), and asking about the past with "…again?" / "…来着". Each case failed on
the code before it; the cases that must NOT trigger sit beside them. The HTTP tests drive `memsched
serve`'s app on loopback against the fake upstream and assert on what reaches it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memsched.commands import detect
from memsched.config import Config
from memsched.profile_extract import extract
from memsched.server.app import TRACE_HEADER, create_app
from memsched.testing import FakeOpenAI, LiveServer

# -- name corrections -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "new", "old"),
    [
        ("my name is not Tom, it is Tim", "Tim", "Tom"),
        ("My name isn't Tom, it's Tim", "Tim", "Tom"),
        ("My name isn't Tom \u2014 it's Tim!", "Tim", "Tom"),
        ("You got my name wrong, it's Tim", "Tim", None),
        ("that's not my name, it's Tim.", "Tim", None),
        ("wrong name, I'm Tim", "Tim", None),
    ],
)
def test_a_name_correction_renames_and_names_the_user(text: str, new: str, old: str | None) -> None:
    assert [(c.kind, c.value, c.old) for c in detect(text)] == [("rename", new, old)]
    assert [(o.key, o.value) for o in extract(text)] == [("name", new)]


@pytest.mark.parametrize(
    "text",
    [
        "my name is not important",
        "my name isn't Tom, it's fine",
        "you got my name wrong, it's okay",
        "Why is my name not Tom? it is weird",
    ],
)
def test_what_only_looks_like_a_name_correction(text: str) -> None:
    assert [c for c in detect(text) if c.kind == "rename"] == []


# -- forgetting a topic in other words ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "topic"),
    [
        ("忘掉我前任的事吧", "前任"),
        ("把我说过的前任的事都忘了", "前任"),
        ("删掉我说过的演唱会的事", "演唱会"),
        ("删掉前任的聊天记录", "前任"),
        ("erase all memories of my ex", "ex"),
        ("delete every message about the wedding.", "wedding"),
        ("wipe your memory of Jake", "Jake"),
        ("please delete all my messages about work", "work"),
        # An opening word before the request ("actually", "so", "also") still leaves it a request.
        ("Remember what I said about my ex? Actually, please delete everything about my ex.", "ex"),
    ],
)
def test_a_topic_forget_in_other_words(text: str, topic: str) -> None:
    assert [(c.kind, c.value) for c in detect(text)] == [("forget_topic", topic)]


@pytest.mark.parametrize(
    "text",
    [
        "不要忘掉明天开会的事",  # asks to remember
        "忘记交作业的事了",  # tells that the user forgot
        "我忘记带伞的事了",
        "忘掉那些不开心的事吧",  # consolation, no topic
        "忘掉不开心的事吧",
        "I forget all the messages about work",
        "I wish I could delete my memories of him",
    ],
)
def test_what_only_looks_like_a_topic_forget(text: str) -> None:
    assert [c for c in detect(text) if c.kind.startswith("forget")] == []


# -- through the HTTP service ---------------------------------------------------------------------


@pytest.fixture
def server(tmp_path: Path, fake: FakeOpenAI) -> Iterator[str]:
    cfg = Config.load(
        home=tmp_path / "srv", embedders="hash", upstream_base_url=fake.base_url, upstream_model="fake-model"
    )
    with LiveServer(create_app(cfg)) as base:
        yield base


def _chat(
    base: str, user: str, text: str, at: str, session: str = "s1", trace: bool = True
) -> dict[str, Any]:
    r = httpx.post(
        f"{base}/v1/chat/completions",
        json={
            "model": "fake-model",
            "user": user,
            "metadata": {"session_id": session, "timestamp": at},
            "messages": [{"role": "system", "content": "You are Xiaoyu."}, {"role": "user", "content": text}],
        },
        timeout=60,
    )
    assert r.status_code == 200, r.text
    if not trace:
        return {}
    out = httpx.get(f"{base}/v1/traces/{r.headers[TRACE_HEADER]}", timeout=10).json()
    assert isinstance(out, dict)
    return out


def test_http_a_corrected_name_holds_on_the_next_turn(server: str, fake: FakeOpenAI) -> None:
    _chat(server, "u", "Hi, my name is Tom", "2024-10-22T10:00:00+00:00")
    _chat(server, "u", "My name isn't Tom, it's Tim", "2024-10-22T10:01:00+00:00")
    _chat(server, "u", "morning", "2024-10-23T08:00:00+00:00", session="s2")
    system = fake.chat_requests[-1]["messages"][0]["content"]
    assert "preferred name (call the user this): Tim" in system
    assert "- name: Tim" in system  # the profile's name is corrected too (Tom is kept as history)
    facts = httpx.get(f"{server}/v1/users/u/profile", params={"current": "true"}, timeout=10).json()["facts"]
    assert {(f["key"], f["value"]) for f in facts} >= {("name", "Tim"), ("preferred_name", "Tim")}


@pytest.mark.parametrize(
    ("said", "forget", "name"),
    [
        ("我前任叫张小北，我们三年前分手了", "忘掉我前任的事吧", "张小北"),
        ("My ex Jake cheated on me last year.", "Please erase all memories of my ex.", "Jake"),
    ],
)
def test_http_a_topic_forget_in_other_words_deletes_it(
    server: str, fake: FakeOpenAI, said: str, forget: str, name: str
) -> None:
    _chat(server, "u", said, "2024-10-22T10:00:00+00:00")
    _chat(server, "u", "今天天气不错 / nice weather today", "2024-10-22T10:01:00+00:00")
    assert any(
        name in h["content"] for h in httpx.get(f"{server}/v1/users/u/search", params={"q": name}).json()
    )
    _chat(server, "u", forget, "2024-10-22T10:02:00+00:00", trace=False)  # a forget keeps no trace
    assert "have been permanently deleted" in fake.chat_requests[-1]["messages"][0]["content"]
    hits = httpx.get(f"{server}/v1/users/u/search", params={"q": name}).json()
    assert all(name not in h["content"] for h in hits)
    _chat(server, "u", "你还记得我前任吗？ / Do you remember my ex?", "2024-10-22T10:03:00+00:00")
    assert name not in str(fake.chat_requests[-1]["messages"][1:-1])


@pytest.mark.parametrize(
    "question", ["Where did we go on our first date again?", "我们上回吃的那家店叫什么来着"]
)
def test_http_a_question_about_the_past_gets_the_recall_signal(server: str, question: str) -> None:
    trace = _chat(server, "u", question, "2024-10-22T10:00:00+00:00")
    assert trace["route"]["signals"]["recall"]


# -- follow-ups brought up when the user comes back -----------------------------------------------

FOLLOW_UP = "Since the user last wrote, something they said was coming has happened:"


def _system(fake: FakeOpenAI) -> str:
    return str(
        next(
            b["messages"][0]["content"]
            for b in reversed(fake.chat_requests)
            if str(b["messages"][0].get("content", "")).startswith("You are Xiaoyu.")
        )
    )


@pytest.mark.parametrize(
    ("said", "said_at", "back_at", "event_day"),
    [
        (
            "I have a job interview at Google next Wednesday, so nervous!",
            "2025-05-01T01:00:00+00:00",
            "2025-05-08T12:00:00+00:00",
            "2025-05-07",
        ),
        ("明天下午要面试了，好紧张", "2025-05-01T13:00:00+00:00", "2025-05-03T01:00:00+00:00", "2025-05-02"),
    ],
)
def test_http_an_event_that_has_happened_is_brought_up_once_when_the_user_comes_back(
    server: str, fake: FakeOpenAI, said: str, said_at: str, back_at: str, event_day: str
) -> None:
    def chat(text: str, at: str, session: str) -> dict[str, Any]:
        r = httpx.post(
            f"{server}/v1/chat/completions",
            json={
                "model": "fake-model",
                "user": "u",
                "metadata": {"session_id": session, "timestamp": at, "timezone": "Asia/Shanghai"},
                "messages": [
                    {"role": "system", "content": "You are Xiaoyu."},
                    {"role": "user", "content": text},
                ],
            },
            timeout=60,
        )
        assert r.status_code == 200, r.text
        out = httpx.get(f"{server}/v1/traces/{r.headers[TRACE_HEADER]}", timeout=10).json()
        assert isinstance(out, dict)
        return out

    first = chat(said, said_at, "s1")
    assert first["follow_ups"] == [] and FOLLOW_UP not in _system(fake)
    back = chat("hey / 早", back_at, "s2")
    system = _system(fake)
    assert FOLLOW_UP in system and said in system and event_day in system
    assert [f["event_date"] for f in back["follow_ups"]] == [event_day]
    # Asked once: the next message, a minute later, does not bring it up again.
    again = chat("not much", back_at.replace(":00:00+", ":01:00+"), "s2")
    assert again["follow_ups"] == [] and FOLLOW_UP not in _system(fake)


def test_http_a_strategy_with_no_follow_up_share_leaves_it_out(server: str, fake: FakeOpenAI) -> None:
    """After an argument the cold strategy (follow_ups = 0 in strategies.toml) does not ask about the
    interview: the follow-up is in the trace, not in the prompt."""

    def chat(text: str, at: str) -> dict[str, Any]:
        r = httpx.post(
            f"{server}/v1/chat/completions",
            json={
                "model": "fake-model",
                "user": "u",
                "metadata": {"session_id": at[:10], "timestamp": at, "timezone": "Asia/Shanghai"},
                "messages": [
                    {"role": "system", "content": "You are Xiaoyu."},
                    {"role": "user", "content": text},
                ],
            },
            timeout=60,
        )
        assert r.status_code == 200, r.text
        out = httpx.get(f"{server}/v1/traces/{r.headers[TRACE_HEADER]}", timeout=10).json()
        assert isinstance(out, dict)
        return out

    chat("明天下午要面试了", "2025-05-01T01:00:00+00:00")
    chat("你根本不在乎我！我真的很生气", "2025-05-02T14:30:00+00:00")  # 22:30 on the interview's day
    morning = chat("早。", "2025-05-03T00:10:00+00:00")
    assert morning["strategy"]["name"] == "conflict_cold"
    assert [f["event_date"] for f in morning["follow_ups"]] == ["2025-05-02"]
    assert FOLLOW_UP not in _system(fake)
