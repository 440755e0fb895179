"""The companion's scenarios said in other words than the other tests use, in Chinese and English:
renames, profile facts, relative dates, follow-up nudges and forgetting, each also in the phrasing
that must NOT trigger it. The HTTP tests drive `memsched serve`'s app on loopback against the fake
upstream and assert on what reaches it, the profile, search hits and the nudges."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from memsched.commands import detect, stated_name
from memsched.config import Config
from memsched.nudges import event_cue
from memsched.profile_extract import extract
from memsched.server.app import create_app
from memsched.testing import FakeOpenAI, LiveServer
from memsched.text.timeexpr import resolve

# -- renames --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("你可以叫我小雨", "小雨"),
        ("你就叫我小李", "小李"),
        ("我叫李伟，你可以叫我小李", "小李"),
        ("你可以叫我小李吗？", "小李"),  # a polite request, as "Can you call me Dave?" is
        ("大家都叫我阿杰，你也可以这么叫", "阿杰"),
        ("my friends call me Dave, you can too", "Dave"),
        ("Everyone calls me Dave, so you can too", "Dave"),
        ("They call me Dave, you can call me that too", "Dave"),
        # The name, then what people call the user set against it: the latter is the one to use.
        ("My name's Elizabeth but everyone calls me Liz", "Liz"),
        ("my name is Robert, but my friends call me Bob.", "Bob"),
        ("我叫李伟，不过大家都叫我小李", "小李"),
        ("我的名字是王芳，但朋友们都叫我芳芳。", "芳芳"),
        # The name said with "I'm" / 我是; a short form of it is a nickname without a "but".
        ("Hey Mia. I'm Joanna Whitfield, though most people just call me Jo.", "Jo"),
        ("I'm Sarah and my friends call me Sally", "Sally"),
        ("嗨，我是周明杰，朋友们一般叫我明杰。", "明杰"),
        ("我叫周明杰，朋友们一般叫我明杰", "明杰"),
    ],
)
def test_a_rename_said_as_a_permission_or_as_what_others_say(text: str, name: str) -> None:
    assert [(c.kind, c.value) for c in detect(text)] == [("rename", name)]


@pytest.mark.parametrize(
    "text",
    [
        "那你就叫我吧",  # no name: 吧 is a particle
        "叫我小李吗",  # a question's particle is no part of a name
        "你可以叫我妈来接我",  # 叫我妈: "call my mother"
        "你可以叫我起床吗",
        "你直接叫我一声",
        "他们叫我别去，你也可以这么叫吗",
        "They call me Dave at work",
        "people call me lazy, you can too",
        "you can call me at 5",
        "call me when you're free",
        "叫我怎么办",
        # 我是 / "I'm" before what others call the user names the user only with a name.
        "I'm Chinese, but everyone calls me Lily.",
        "I'm tired, though most people call me Jo",
        "我是医生，大家都叫我王医生",
        "我是杭州人，大家都叫我小杭",
    ],
)
def test_calls_that_are_no_rename(text: str) -> None:
    assert [c for c in detect(text) if c.kind == "rename"] == []
    assert stated_name(text) is None
    assert not [o for o in extract(text) if o.key == "name"]


# -- forgetting the last message ------------------------------------------------------------------


@pytest.mark.parametrize("text", ["把刚刚那句删了", "把我刚发的删了", "删掉我刚说的", "把刚才那句忘了吧"])
def test_forget_the_last_message_in_other_words(text: str) -> None:
    assert [c.kind for c in detect(text)] == ["forget_last"]


@pytest.mark.parametrize("text", ["我把刚才那句删了", "我刚说的话你听懂了吗"])
def test_saying_what_one_did_is_no_forget(text: str) -> None:
    assert detect(text) == []


# -- profile facts --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("I was born on 1990-03-03", "birthday", "March 3, 1990"),
        ("I was born on 3/3/1990", "birthday", "3/3/1990"),
        ("我是三月三号出生的", "birthday", "March 3"),
        ("We just relocated to Berlin", "location", "Berlin"),
        ("I'm living in Berlin", "location", "Berlin"),
        ("我刚搬来上海", "location", "上海"),
        ("我们搬家到上海了", "location", "上海"),
        ("我又搬家了，现在住在深圳", "location", "深圳"),
        ("I just started a new job as a data scientist", "occupation", "data scientist"),
        ("I got a job as a waiter at a cafe", "occupation", "waiter"),
        ("I became a nurse last year", "occupation", "nurse"),
        ("我跳槽了，现在是设计师", "occupation", "设计师"),
        ("my wife is Anna", "partner_name", "Anna"),
        ("Our dog's name is Rex", "pets", "dog Rex"),
        ("my favorite food is sushi", "likes", "sushi"),
        ("I'm a big fan of jazz", "likes", "jazz"),
        ("我最喜欢的食物是火锅", "likes", "火锅"),
        ("我最爱的歌手是周杰伦", "likes", "周杰伦"),
    ],
)
def test_facts_in_other_words(text: str, key: str, value: str) -> None:
    assert [(o.key, o.value) for o in extract(text)] == [(key, value)]


# -- relative dates -------------------------------------------------------------------------------

SAID = datetime(2024, 10, 22, 12, tzinfo=UTC)  # a Tuesday


@pytest.mark.parametrize(
    ("text", "label", "granularity"),
    [
        ("a couple of days ago I went to Hangzhou", "about 2024-10-20", "week"),
        ("couple days ago", "about 2024-10-20", "week"),
        ("a couple of weeks ago", "about 2024-10-08", "week"),
        ("in a couple of days", "about 2024-10-24", "week"),
        ("我前两天去了杭州", "about 2024-10-20", "week"),
        ("前两天我去了杭州", "about 2024-10-20", "week"),
        ("半年前", "2024-04", "month"),
        ("half a year ago", "2024-04", "month"),
    ],
)
def test_approximate_relative_dates_resolve(text: str, label: str, granularity: str) -> None:
    assert [(r.label, r.granularity) for r in resolve(text, SAID)] == [(label, granularity)]


@pytest.mark.parametrize("text", ["考试前两天我很紧张", "两个半月前", "a couple of friends"])
def test_what_only_looks_like_an_approximate_date(text: str) -> None:
    assert resolve(text, SAID) == []


# -- nudge cues -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "cue"),
    [
        ("后天要考驾照", "考驾照"),
        ("明天考科目二", "考科目二"),
        ("明天要去看牙", "看牙"),
        ("下周一开学", "开学"),
    ],
)
def test_an_exam_by_its_name_and_chinese_cues_of_english_ones(text: str, cue: str) -> None:
    assert event_cue(text) == cue


@pytest.mark.parametrize("text", ["明天考虑一下", "我思考了很久", "这是对我的考验", "明天参考一下"])
def test_words_with_kao_that_are_no_exam(text: str) -> None:
    assert event_cue(text) is None


# -- through the HTTP service ---------------------------------------------------------------------


@pytest.fixture
def server(tmp_path: Path, fake: FakeOpenAI) -> Iterator[str]:
    cfg = Config.load(
        home=tmp_path / "srv", embedders="hash", upstream_base_url=fake.base_url, upstream_model="fake-model"
    )
    with LiveServer(create_app(cfg)) as base:
        yield base


def _chat(base: str, user: str, text: str, at: str, session: str = "s1") -> None:
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


@pytest.mark.parametrize(
    ("rename", "name"),
    [("你可以叫我小雨", "小雨"), ("My friends call me Dave, you can too.", "Dave")],
)
def test_http_a_rename_in_other_words_holds_on_the_next_turn(
    server: str, fake: FakeOpenAI, rename: str, name: str
) -> None:
    _chat(server, "u", rename, "2024-10-22T10:00:00+00:00")
    _chat(server, "u", "早", "2024-10-23T08:00:00+00:00", session="s2")
    system = fake.chat_requests[-1]["messages"][0]["content"]
    assert f"preferred name (call the user this): {name}" in system


@pytest.mark.parametrize(
    ("said", "name", "called"),
    [
        ("My name's Elizabeth but everyone calls me Liz", "Elizabeth", "Liz"),
        ("我叫李伟，不过大家都叫我小李", "李伟", "小李"),
        # A request after the name: it made Robert the preferred name, and Bob was lost.
        ("My name is Robert but please call me Bob", "Robert", "Bob"),
        ("My name is Robert, but you can call me Bob.", "Robert", "Bob"),
        # An introduction with "I'm" / 我是: neither the name nor what people call the user was kept.
        ("Hey Mia. I'm Joanna Whitfield, though most people just call me Jo.", "Joanna Whitfield", "Jo"),
        ("嗨，我是周明杰，朋友们一般叫我明杰。", "周明杰", "明杰"),
    ],
)
def test_http_the_name_and_what_everyone_calls_the_user(
    server: str, fake: FakeOpenAI, said: str, name: str, called: str
) -> None:
    _chat(server, "liz", said, "2024-10-22T10:00:00+00:00")
    _chat(server, "liz", "hi", "2024-10-23T08:00:00+00:00", session="s2")
    system = fake.chat_requests[-1]["messages"][0]["content"]
    assert f"preferred name (call the user this): {called}" in system
    facts = httpx.get(f"{server}/v1/users/liz/profile", params={"current": "true"}, timeout=10).json()[
        "facts"
    ]
    assert {(f["key"], f["value"]) for f in facts} >= {("name", name), ("preferred_name", called)}


@pytest.mark.parametrize(
    ("nickname", "revoke", "name"),
    [
        (
            "from now on just call me Jojo",
            "Okay, stop calling me Jojo, it's getting old. Use my real name, Joanna.",
            "Joanna",
        ),
        ("以后叫我阿杰就行", "别叫我阿杰了，还是叫我全名周明杰吧。", "周明杰"),
    ],
)
def test_http_a_nickname_revoked_for_the_real_name(
    server: str, fake: FakeOpenAI, nickname: str, revoke: str, name: str
) -> None:
    """ "Use my real name, Joanna" after "stop calling me Jojo" retired Jojo and set nothing; "还是叫我全名
    周明杰" set the preferred name "全名周明杰"."""
    _chat(server, "jo", nickname, "2024-10-22T10:00:00+00:00")
    _chat(server, "jo", revoke, "2024-10-23T08:00:00+00:00")
    _chat(server, "jo", "hi", "2024-10-24T08:00:00+00:00", session="s2")
    system = fake.chat_requests[-1]["messages"][0]["content"]
    assert re.search(rf"preferred name \(call the user this\): {name}(?:$| \()", system, re.M), system


@pytest.mark.parametrize(
    ("first", "moved", "old", "new", "favourite", "liked"),
    [
        ("我住在北京", "我又搬家了，现在住在深圳", "北京", "深圳", "我最喜欢的食物是火锅", "火锅"),
        (
            "I live in Paris",
            "We just relocated to Berlin",
            "Paris",
            "Berlin",
            "My favorite food is sushi",
            "sushi",
        ),
    ],
)
def test_http_a_move_and_a_favourite_in_other_words_reach_the_profile(
    server: str, first: str, moved: str, old: str, new: str, favourite: str, liked: str
) -> None:
    _chat(server, "u", first, "2024-10-01T10:00:00+00:00")
    _chat(server, "u", moved, "2024-11-01T10:00:00+00:00")
    _chat(server, "u", favourite, "2024-11-01T10:05:00+00:00")
    facts = httpx.get(f"{server}/v1/users/u/profile").json()["facts"]
    assert [(f["value"], f["current"]) for f in facts if f["key"] == "location"] == [
        (old, False),
        (new, True),
    ]
    assert [f["value"] for f in facts if f["key"] == "likes"] == [liked]


@pytest.mark.parametrize(
    ("text", "event_date", "cue"),
    [
        ("后天要考驾照", "2024-10-24", "考驾照"),
        ("My driving test is the day after tomorrow", "2024-10-24", "test"),
    ],
)
def test_http_an_exam_named_in_other_words_gets_its_follow_up(
    server: str, text: str, event_date: str, cue: str
) -> None:
    _chat(server, "u", text, "2024-10-22T10:00:00+00:00")
    upcoming = httpx.get(
        f"{server}/v1/users/u/nudges", params={"at": "2024-10-22T12:00:00+00:00", "upcoming": "true"}
    ).json()
    assert [(n["kind"], n["event_date"], n["due"]) for n in upcoming] == [("follow_up", event_date, False)]
    assert cue in upcoming[0]["reason"]
    due = httpx.get(f"{server}/v1/users/u/nudges", params={"at": "2024-10-25T11:00:00+00:00"}).json()
    assert [n["event_date"] for n in due] == [event_date]


def test_http_a_couple_of_days_ago_is_stored_as_a_date_in_both_languages(server: str) -> None:
    _chat(server, "u", "前两天我去了杭州出差", "2024-10-22T10:00:00+00:00")
    _chat(server, "u", "A couple of days ago I was in Hangzhou", "2024-10-22T10:01:00+00:00")
    hits = httpx.get(f"{server}/v1/users/u/search", params={"q": "2024-10-20"}).json()
    dated = {h["content"]: h["dates"] for h in hits if h["role"] == "user"}
    assert dated == {
        "前两天我去了杭州出差": ["前两天 = about 2024-10-20"],
        "A couple of days ago I was in Hangzhou": ["A couple of days ago = about 2024-10-20"],
    }


def test_http_ba_the_last_message_deleted_leaves_search_and_context(server: str, fake: FakeOpenAI) -> None:
    _chat(server, "u", "我前任叫张小北，我们三年前分手了", "2024-10-22T10:00:00+00:00")
    assert any(
        "张小北" in h["content"]
        for h in httpx.get(f"{server}/v1/users/u/search", params={"q": "张小北"}).json()
    )
    _chat(server, "u", "把刚刚那句删了", "2024-10-22T10:01:00+00:00")
    _chat(server, "u", "我们聊点别的吧", "2024-10-22T10:02:00+00:00")
    hits = httpx.get(f"{server}/v1/users/u/search", params={"q": "张小北"}).json()
    assert hits and all("张小北" not in h["content"] for h in hits)  # the rest is still searched
    assert "张小北" not in str(fake.chat_requests[-1]["messages"])


# -- second walk ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("还是叫我小王吧", [("rename", "小王")]),
        ("删掉我说过的关于前任的话", [("forget_topic", "前任")]),
    ],
)
def test_more_commands_in_other_words(text: str, expected: list[tuple[str, str]]) -> None:
    assert [(c.kind, c.value) for c in detect(text)] == expected


def test_the_name_before_what_everyone_calls_the_user_is_the_name() -> None:
    assert [(o.key, o.value) for o in extract("my name is Robert, but my friends call me Bob.")] == [
        ("name", "Robert")
    ]
    # What people call the user is no rename when it is no name ("call me lazy", "叫我别去").
    assert [c.value for c in detect("my name is Sam but people call me lazy")] == ["Sam"]
    assert [c.value for c in detect("我叫李伟，但是他们都叫我别去")] == ["李伟"]


@pytest.mark.parametrize(
    ("text", "items"),
    [
        ("I can't eat peanuts, I'm allergic", ["peanuts"]),
        ("I can't eat peanuts or cashews because I'm allergic to them.", ["peanuts", "cashews"]),
        ("我不能吃花生，我过敏", ["花生"]),
        ("我不能吃花生和芒果，会过敏", ["花生", "芒果"]),
    ],
)
def test_what_cannot_be_eaten_for_an_allergy_is_an_allergy_not_a_diet(text: str, items: list[str]) -> None:
    assert [(o.key, o.value) for o in extract(text)] == [("allergies", v) for v in items]


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("I can't eat pork", [("diet", "no pork")]),
        ("I can't eat peanuts, I'm not allergic, I just hate them", [("diet", "no peanuts")]),
        ("我不能吃辣", []),
    ],
)
def test_cannot_eat_without_an_allergy_is_no_allergy(text: str, found: list[tuple[str, str]]) -> None:
    assert [(o.key, o.value) for o in extract(text)] == found


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("香菜我受不了", [("dislikes", "香菜")]),
        ("猫我很喜欢，狗我受不了", [("dislikes", "狗"), ("likes", "猫")]),
        ("I'm really into hiking and climbing", [("likes", "hiking"), ("likes", "climbing")]),
        ("I'm not into horror films", [("dislikes", "horror films")]),
        # a time or an adverb before 我, a course's week, a pronoun: no taste
        ("今天我很喜欢", []),
        ("其实我不喜欢", []),
        ("这个我很喜欢", []),
        ("I'm into the second week of my course", []),
        ("I'm into it", []),
    ],
)
def test_tastes_said_thing_first_or_as_into(text: str, found: list[tuple[str, str]]) -> None:
    assert [(o.key, o.value) for o in extract(text)] == found


def test_a_birthday_said_by_a_relative_date_stores_no_verb() -> None:
    # "下周五" is taken out before the rules run: what was left ("我生日是") gave the birthday "是".
    assert [o for o in extract("我生日是下周五") if o.key == "birthday"] == []


@pytest.mark.parametrize(
    ("text", "value"),
    [("We've got a dog called Biscuit", "dog Biscuit"), ("I've got a cat named Luna", "cat Luna")],
)
def test_a_pet_with_a_contracted_have(text: str, value: str) -> None:
    assert [(o.key, o.value) for o in extract(text)] == [("pets", value)]


@pytest.mark.parametrize(
    ("text", "cue"),
    [
        ("下周二期末考", "期末"),  # as "final" in English
        ("明早要去面签", "面签"),
        ("下周四要拔智齿", "拔智齿"),
        ("明天出发去旅游", "旅游"),  # as "trip"
        ("I start my new job on Monday", "new job"),  # as 入职
    ],
)
def test_more_event_cues_in_both_languages(text: str, cue: str) -> None:
    assert event_cue(text) == cue
