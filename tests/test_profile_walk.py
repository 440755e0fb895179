"""Profile facts in the words a companion's user says them (issue 7, part 4), each also in the phrasing
that must NOT store it: where the user comes from (`hometown`, kept apart from `location`), where
they are now for a known place only, the timezone said in words (and used by the prompt's clock and
relative dates), pets named after "my cat is", a preferred name said as a preference, and
hypotheticals or other people's facts that state nothing. The HTTP tests drive `memsched serve`'s
app on loopback against the fake upstream and read `GET /v1/users/{user}/profile` and what reached
the LLM."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memsched.commands import detect
from memsched.config import Config
from memsched.profile_extract import extract
from memsched.server.app import create_app
from memsched.testing import FakeOpenAI, LiveServer
from memsched.text.places import is_place_en, is_place_zh
from memsched.text.timeexpr import clock_line


def _facts(text: str) -> list[tuple[str, str]]:
    return [(o.key, o.value) for o in extract(text) if o.op == "set"]


# -- where the user comes from, and where they are --------------------------------------------------


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("I'm from Berlin", [("hometown", "Berlin")]),
        ("I'm originally from New York", [("hometown", "New York")]),
        ("I grew up in Lisbon", [("hometown", "Lisbon")]),
        ("我是成都人", [("hometown", "成都")]),
        ("我老家是湖南的", [("hometown", "湖南")]),
        ("我来自成都", [("hometown", "成都")]),
        ("我是在成都长大的", [("hometown", "成都")]),
        # where one comes from is not where one lives
        ("I'm from Berlin but I live in Paris", [("hometown", "Berlin"), ("location", "Paris")]),
        ("我是成都人，现在住在上海", [("hometown", "成都"), ("location", "上海")]),
    ],
)
def test_where_the_user_comes_from_is_the_hometown(text: str, found: list[tuple[str, str]]) -> None:
    assert _facts(text) == found


@pytest.mark.parametrize(
    "text",
    [
        "I'm from the future",
        "I'm from work, just got home",
        "I'm from HR",
        "I'm from Google's team",
        "这是我从网上看的",
        "我是好人",
        "我是外地人",
        "我妈是成都人",  # someone else's
        "我猜我是成都人吧？",
        "I was born in March",
    ],
)
def test_what_only_looks_like_a_hometown(text: str) -> None:
    assert [f for f in _facts(text) if f[0] in ("hometown", "location")] == []


@pytest.mark.parametrize(
    ("text", "place"),
    [
        ("我现在在上海", "上海"),
        ("我现在住上海", "上海"),
        ("我在深圳工作", "深圳"),
        ("I'm in Shanghai now", "Shanghai"),
        ("I'm now in Lisbon", "Lisbon"),
        ("I live in Lisbon these days", "Lisbon"),
    ],
)
def test_a_known_place_one_is_now_in_is_the_location(text: str, place: str) -> None:
    assert _facts(text) == [("location", place)]


@pytest.mark.parametrize(
    "text",
    [
        "我现在在公司",
        "我在地铁上",
        "我现在住院了",
        "我在公司上班",
        "I'm in the kitchen now",
        "I'm in Starbucks now",
        "I'm in Paris",  # no time word: a visit as much as a home
        "如果我住在北京就好了",
        "my sister lives in Paris",
    ],
)
def test_where_one_happens_to_be_is_no_location(text: str) -> None:
    assert [f for f in _facts(text) if f[0] == "location"] == []


def test_the_known_place_test_uses_the_shipped_dictionaries() -> None:
    # jieba tags 柏林 and 大连 as a name and an adverb; CC-CEDICT knows them as places
    assert all(is_place_zh(w) for w in ("成都", "湖南长沙", "柏林", "大连", "里斯本"))
    assert not any(is_place_zh(w) for w in ("公司", "地铁", "厨房", "好", "外地", "上海出差"))
    assert all(is_place_en(w) for w in ("Lisbon", "Shanghai", "New York", "Los Angeles", "Germany"))
    assert not any(is_place_en(w) for w in ("Starbucks", "HR", "Coke", "Liz", "Kitchen"))


# -- the timezone in words ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "zone"),
    [
        ("我在东八区", "Etc/GMT-8"),
        ("我这边是北京时间", "Asia/Shanghai"),
        ("我在西五区", "Etc/GMT+5"),
        ("我这边是CST", "Asia/Shanghai"),  # China Standard Time in a Chinese message
        ("I'm on Pacific time", "America/Los_Angeles"),
        ("my timezone is PST", "America/Los_Angeles"),
        ("we're on CST", "America/Chicago"),  # US Central in English
        ("I'm in UTC+8", "Etc/GMT-8"),
        ("I'm in the Eastern time zone", "America/New_York"),
        ("my time zone is Europe/Berlin", "Europe/Berlin"),
    ],
)
def test_a_timezone_said_in_words(text: str, zone: str) -> None:
    assert _facts(text) == [("timezone", zone)]


@pytest.mark.parametrize(
    "text", ["I'm in central London", "I'm in PT now", "I'm in India", "我是东八区吗", "I'm in UTC+5:30"]
)
def test_what_names_no_timezone(text: str) -> None:
    assert [f for f in _facts(text) if f[0] == "timezone"] == []


def test_a_fixed_offset_reads_with_its_sign_in_the_prompt() -> None:
    from datetime import UTC, datetime

    line = clock_line(datetime(2024, 10, 22, 16, 30, tzinfo=UTC), "Etc/GMT-8")
    assert line == "Now (user's local time): 2024-10-23 Wednesday 00:30 (UTC+08:00)"


# -- pets, names ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("my cat is Miso", [("pets", "cat Miso")]),
        ("my dog's Rex", [("pets", "dog Rex")]),
        ("Miso is my cat", [("pets", "cat Miso")]),
        ("I have two cats, Mochi and Tofu", [("pets", "cat Mochi"), ("pets", "cat Tofu")]),
        ("我有一只猫叫咪咪", [("pets", "猫 咪咪")]),
        ("我有只狗", [("pets", "狗")]),
        ("my cat is Siamese", []),  # a breed
        ("my dog is a Labrador", []),
        ("She is my cat", []),
        ("I wish I had a dog", []),
        # a breed or a word before the kind, with the name
        ("I have a golden retriever named Max", [("pets", "golden retriever Max")]),
        ("We adopted a border collie called Bella", [("pets", "border collie Bella")]),
        ("my husky Luna sheds everywhere", [("pets", "husky Luna")]),
        ("I have a big dog named Rex", [("pets", "dog Rex")]),
        ("I have a friend named Max", []),
        ("my best friend Max", []),
    ],
)
def test_pets_in_other_words(text: str, found: list[tuple[str, str]]) -> None:
    assert [f for f in _facts(text) if f[0] == "pets"] == found


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("I'm Sarah, by the way", [("name", "Sarah")]),
        ("Name's Jack", [("name", "Jack")]),
        ("我叫小雨哦", [("name", "小雨")]),  # a particle is no part of the name
        ("I'm Fine.", []),
        ("I'm Chinese.", []),
    ],
)
def test_names_in_other_words(text: str, found: list[tuple[str, str]]) -> None:
    assert [f for f in _facts(text) if f[0] == "name"] == found


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("I usually go to bed around midnight", [("sleep_time", "00:00")]),
        ("我通常凌晨一点才睡", [("sleep_time", "01:00")]),
        ("I work at Google as a designer", [("occupation", "designer")]),
        # hypotheticals and other people state nothing
        ("如果我叫小王的话", []),
        ("if I'm allergic to shellfish, what should I avoid?", []),
        ("要是我对花生过敏怎么办", []),
        ("I'm not allergic to anything", []),
        ("my friend is allergic to nuts", []),
        ("I don't have any pets", []),
        ("我没有养宠物", []),
        ("我不是程序员", []),
        # tastes said as preferences; jobs said by what one does or for how long; intolerances
        ("I prefer tea", [("likes", "tea")]),
        ("I prefer cats to dogs", [("likes", "cats")]),
        ("I prefer Coke over Pepsi", [("likes", "Coke")]),
        ("I prefer Liz", []),  # a name, when one is known (commands.py), never a taste
        ("I prefer going by Liz", []),
        ("I'd prefer if you didn't", []),
        ("I prefer not to talk about it", []),
        ("I prefer to stay in tonight", []),
        ("我特别喜欢吃火锅", [("likes", "火锅")]),  # as 我最爱吃火锅: the dish, not the eating
        ("我喜欢喝奶茶", [("likes", "奶茶")]),
        ("我喜欢跑步", [("likes", "跑步")]),
        ("I teach high school math", [("occupation", "high school math teacher")]),
        ("I teach at a primary school", [("occupation", "teacher")]),
        ("I teach yoga on weekends", [("occupation", "yoga teacher")]),
        ("I teach my son to swim", []),
        ("I teach myself Spanish", []),
        ("I've been a nurse for ten years", [("occupation", "nurse")]),
        ("I've been a mess lately", []),
        ("I'm lactose intolerant", [("allergies", "lactose intolerance")]),
        ("I'm gluten-intolerant", [("allergies", "gluten intolerance")]),
        ("我乳糖不耐受", [("allergies", "乳糖不耐受")]),
        ("我有点不耐烦了", []),
        ("我对这个不耐烦", []),
    ],
)
def test_more_facts_and_non_facts(text: str, found: list[tuple[str, str]]) -> None:
    assert _facts(text) == found


# -- a preferred name said as a preference --------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("I'd rather you call me Liz", "Liz"),
        ("I'd prefer to be called Liz", "Liz"),
        ("I prefer going by Liz", "Liz"),
        ("我更喜欢别人叫我小李", "小李"),
        ("我更喜欢被叫做小李", "小李"),
        ("我希望你叫我阿杰", "阿杰"),
    ],
)
def test_a_preferred_name_said_as_a_wish(text: str, name: str) -> None:
    assert [(c.kind, c.value) for c in detect(text)] == [("rename", name)]


def test_a_bare_i_prefer_names_only_a_user_whose_name_is_known() -> None:
    assert [c.value for c in detect("I prefer Liz", named=True)] == ["Liz"]
    assert [c.value for c in detect("Actually, I'd prefer Liz.", named=True)] == ["Liz"]
    assert detect("I prefer Liz") == []  # no name known: it may be a taste
    for taste in ("I prefer tea", "I prefer Coke", "I prefer Paris", "I prefer Monday"):
        assert detect(taste, named=True) == []
    assert detect("I prefer Liz when we talk about work", named=True) == []


# -- through the HTTP service ---------------------------------------------------------------------


@pytest.fixture
def server(tmp_path: Path, fake: FakeOpenAI) -> Iterator[str]:
    cfg = Config.load(
        home=tmp_path / "srv", embedders="hash", upstream_base_url=fake.base_url, upstream_model="fake-model"
    )
    with LiveServer(create_app(cfg)) as base:
        yield base


def _chat(base: str, user: str, text: str, at: str) -> None:
    r = httpx.post(
        f"{base}/v1/chat/completions",
        json={
            "model": "fake-model",
            "user": user,
            "metadata": {"session_id": "s1", "timestamp": at},
            "messages": [{"role": "user", "content": text}],
        },
        timeout=60,
    )
    assert r.status_code == 200, r.text


def _profile(base: str, user: str) -> list[dict[str, object]]:
    facts: list[dict[str, object]] = httpx.get(f"{base}/v1/users/{user}/profile", timeout=10).json()["facts"]
    return facts


@pytest.mark.parametrize(
    ("first", "origin", "now", "transient", "home", "old", "new"),
    [
        (
            "I live in Paris",
            "I'm from Berlin",
            "I'm in Shanghai now",
            "I'm in the kitchen now",
            "Berlin",
            "Paris",
            "Shanghai",
        ),
        ("我住在北京", "我老家是湖南的", "我现在在上海", "我现在在公司", "湖南", "北京", "上海"),
    ],
)
def test_http_hometown_stays_apart_and_a_new_place_supersedes_the_location(
    server: str, first: str, origin: str, now: str, transient: str, home: str, old: str, new: str
) -> None:
    _chat(server, "u", first, "2024-10-01T10:00:00+00:00")
    _chat(server, "u", origin, "2024-10-02T10:00:00+00:00")
    _chat(server, "u", now, "2024-11-01T10:00:00+00:00")
    _chat(server, "u", transient, "2024-11-01T10:05:00+00:00")
    facts = _profile(server, "u")
    assert [(f["value"], f["current"]) for f in facts if f["key"] == "location"] == [
        (old, False),
        (new, True),
    ]
    assert [(f["value"], f["current"]) for f in facts if f["key"] == "hometown"] == [(home, True)]


@pytest.mark.parametrize(
    ("said", "zone", "clock", "yesterday"),
    [
        # 16:30 UTC on the 22nd is 00:30 on the 23rd at UTC+8: "昨天" is then the 22nd
        (
            "我在东八区",
            "Etc/GMT-8",
            "2024-10-23 Wednesday 00:30 (UTC+08:00)",
            ("昨天去了杭州", "昨天 = 2024-10-22"),
        ),
        (
            "I'm on Pacific time",
            "America/Los_Angeles",
            "2024-10-22 Tuesday 09:30 (America/Los_Angeles)",
            ("I went hiking yesterday", "yesterday = 2024-10-21"),
        ),
    ],
)
def test_http_a_timezone_said_in_words_sets_the_clock_and_relative_dates(
    server: str, fake: FakeOpenAI, said: str, zone: str, clock: str, yesterday: tuple[str, str]
) -> None:
    _chat(server, "tz", "hi", "2024-10-22T16:29:00+00:00")
    assert (
        "Now (user's local time): 2024-10-22 Tuesday 16:29 (UTC)"
        in fake.chat_requests[-1]["messages"][0]["content"]
    )
    _chat(server, "tz", said, "2024-10-22T16:29:30+00:00")
    assert [f["value"] for f in _profile(server, "tz") if f["key"] == "timezone"] == [zone]
    _chat(server, "tz", yesterday[0], "2024-10-22T16:30:00+00:00")
    assert f"Now (user's local time): {clock}" in fake.chat_requests[-1]["messages"][0]["content"]
    hits = httpx.get(f"{server}/v1/users/tz/search", params={"q": yesterday[0]}, timeout=10).json()
    assert [h["dates"] for h in hits if h["content"] == yesterday[0]] == [[yesterday[1]]]


@pytest.mark.parametrize(
    ("name", "prefer", "called"),
    [
        ("My name is Elizabeth", "I prefer Liz", "Liz"),
        ("My name is Elizabeth", "I'd rather you call me Liz", "Liz"),
        ("我叫李伟", "我更喜欢别人叫我小李", "小李"),
    ],
)
def test_http_a_preferred_name_holds_on_the_very_next_turn(
    server: str, fake: FakeOpenAI, name: str, prefer: str, called: str
) -> None:
    _chat(server, "p", name, "2024-10-22T10:00:00+00:00")
    _chat(server, "p", prefer, "2024-10-22T10:01:00+00:00")
    _chat(server, "p", "hi", "2024-10-22T10:02:00+00:00")
    assert (
        f"preferred name (call the user this): {called}" in fake.chat_requests[-1]["messages"][0]["content"]
    )


def test_http_a_taste_after_prefer_renames_nobody(server: str, fake: FakeOpenAI) -> None:
    _chat(server, "t", "My name is Tom", "2024-10-22T10:00:00+00:00")
    _chat(server, "t", "I prefer tea", "2024-10-22T10:01:00+00:00")
    assert [f["value"] for f in _profile(server, "t") if f["key"] == "preferred_name" and f["current"]] == [
        "Tom"
    ]


@pytest.mark.parametrize(
    ("said", "pets"),
    [
        ("my cat is Miso", ["cat Miso"]),
        ("I have two cats, Mochi and Tofu", ["cat Mochi", "cat Tofu"]),
        ("my dog is a Labrador", []),
        ("my cat is Siamese", []),
    ],
)
def test_http_pets_reach_the_profile_and_breeds_do_not(server: str, said: str, pets: list[str]) -> None:
    _chat(server, "c", said, "2024-10-22T10:00:00+00:00")
    assert [f["value"] for f in _profile(server, "c") if f["key"] == "pets"] == pets


# -- the lead's walk (session 23): a second fact in one statement, bedtimes at twelve -------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The second half of a statement whose first half another rule read.
        (
            "Hi! I'm Tom, I work as a nurse in Leeds.",
            [("name", "Tom"), ("occupation", "nurse"), ("location", "Leeds")],
        ),
        ("I work at a hospital in Austin", [("location", "Austin")]),
        (
            "I work as a software engineer in Seattle",
            [("occupation", "software engineer"), ("location", "Seattle")],
        ),
        (
            "By the way I'm vegetarian and allergic to shellfish.",
            [("diet", "vegetarian"), ("allergies", "shellfish")],
        ),
        (
            "I'm vegetarian and allergic to shellfish and peanuts",
            [("diet", "vegetarian"), ("allergies", "shellfish"), ("allergies", "peanuts")],
        ),
        # A bedtime at twelve is midnight, in either language.
        ("我一般十二点睡", [("sleep_time", "00:00")]),
        ("我晚上十二点睡觉", [("sleep_time", "00:00")]),
        ("I usually go to bed at 12", [("sleep_time", "00:00")]),
        # Not a place, not the user's, not a statement.
        ("I work in Marketing", []),
        ("Do I work in London?", []),
        ("I'm not vegetarian and allergic to nothing", []),
        ("I live in York but I work in Leeds", [("location", "York")]),
    ],
)
def test_a_second_fact_in_one_statement_and_bedtimes_at_twelve(
    text: str, expected: list[tuple[str, str]]
) -> None:
    assert [(o.key, o.value) for o in extract(text)] == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The second clause's subject is the first's, the user: both facts.
        ("我是个程序员，在深圳工作", [("location", "深圳"), ("occupation", "程序员")]),
        ("我叫小李，在北京上班", [("name", "小李"), ("location", "北京")]),
        (
            "I'm from Chicago originally but live in Denver now.",
            [("hometown", "Chicago"), ("location", "Denver")],
        ),
        ("I grew up in Ohio and now live in Austin.", [("hometown", "Ohio"), ("location", "Austin")]),
        ("I'm a nurse and live in Boston.", [("location", "Boston"), ("occupation", "nurse")]),
        # "live" is no second thing the user loves, and loving one's job is no taste.
        ("I love my job and live in Seattle with my wife.", [("location", "Seattle")]),
        ("我是个学生", [("occupation", "学生")]),  # 个 is no part of the occupation
        # Someone else's clause, or a wish: nothing.
        ("我妈是医生，在深圳工作", []),
        ("My sister is a teacher and lives in Boston.", []),
        ("I'd love to visit Japan and live in Tokyo someday.", []),
        ("I want to save money and live in Tokyo.", []),
        ("我是个好人", []),
    ],
)
def test_a_clause_whose_subject_is_the_clause_before(text: str, expected: list[tuple[str, str]]) -> None:
    assert [(o.key, o.value) for o in extract(text)] == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Starting Monday as a UX designer at Figma", [("occupation", "UX designer")]),
        ("I'm starting next week as a nurse at Mercy Hospital.", [("occupation", "nurse")]),
        ("I start tomorrow as a barista!", [("occupation", "barista")]),
        ("I'm starting as a beginner in the pottery class", []),  # no occupation
        # Where one works as something is where one lives, for a known place.
        ("我今年三十岁了，在杭州做老师", [("occupation", "老师"), ("location", "杭州")]),
        ("我在公司做策划", [("occupation", "策划")]),
    ],
)
def test_a_job_about_to_start_and_the_place_one_works_in(text: str, expected: list[tuple[str, str]]) -> None:
    assert [(o.key, o.value) for o in extract(text)] == expected
