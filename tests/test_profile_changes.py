"""What the companion remembers about a person when it changes: a pet that died or was given away,
affection that is no taste ("I love my job"), nicknames, and a place the user moved from. Each in
both languages, with the phrasing that must NOT change anything; the HTTP tests drive `memsched
serve`'s app on loopback against the fake upstream and read the profile and what reached the LLM."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from memsched.config import Config
from memsched.profile import Profile
from memsched.profile_extract import apply, extract
from memsched.server.app import create_app
from memsched.store.sqlite import SQLiteStore
from memsched.testing import FakeOpenAI, LiveServer

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)


def _said(text: str) -> list[tuple[str, str, str]]:
    return [(o.key, o.value, o.op) for o in extract(text)]


def _walk(store: SQLiteStore, said: list[str]) -> Profile:
    p = Profile(store)
    for i, text in enumerate(said):
        apply(p, "u", extract(text), at=T0 + timedelta(days=i), source_turn_ids=[i + 1])
    return p


# -- a pet that is gone -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("had", "gone", "left"),
    [
        (["My cat Luna sleeps on my bed"], "My cat Luna died last week", []),
        (["My cat Luna sleeps on my bed"], "Luna passed away last night", []),
        (["I have a cat called Luna"], "Luna, my cat, died yesterday", []),
        (["I have a dog and a cat, Max and Luna"], "We had to put our dog Max down", ["cat Luna"]),
        (["I have a golden retriever named Max"], "My dog Max passed away in March", []),
        (["I have a kitten called Mochi"], "my cat ran away :(", []),
        (["I have two cats, Mochi and Tofu"], "Tofu died last year", ["cat Mochi"]),
        (["I have a dog"], "I lost my dog last month", []),
        (["我养了一只猫咪"], "我的猫咪走了", []),
        (["我家的狗叫旺财"], "我家狗狗去世了", []),
        (["我家的猫叫豆豆", "我养了一只狗"], "我家的猫豆豆去年死了", ["狗"]),
        (["我养了一只橘猫叫胖虎"], "我的猫昨天去了喵星", []),
        (["我有一只小狗叫旺财"], "我们把狗送人了", []),
    ],
)
def test_a_pet_that_died_or_was_given_away_is_no_current_pet(
    store: SQLiteStore, had: list[str], gone: str, left: list[str]
) -> None:
    p = _walk(store, [*had, gone])
    assert p.values("u", "pets") == left
    assert [f.value for f in p.history("u", "pets") if not f.current]  # the pet stays in the history


@pytest.mark.parametrize(
    ("had", "said"),
    [
        # two of the kind: the kind alone does not say which
        (["I have two cats, Mochi and Tofu"], "My cat died"),
        (["我养了两只猫，一只叫汤圆一只叫饺子"], "我的猫走了"),
        # not gone, or not the user's pet
        (["My cat Luna sleeps on my bed"], "My cat almost died last week"),
        (["My cat Luna sleeps on my bed"], "My cat Luna is dying"),
        (["My cat Luna sleeps on my bed"], "If my cat died I'd be devastated"),
        (["My cat Luna sleeps on my bed"], "Did your cat die?"),
        (["My cat Luna sleeps on my bed"], "My phone died"),
        (["My cat Luna sleeps on my bed"], "Grandpa died last year"),
        (["My dog Max sleeps a lot"], "My dog passed the vet check"),
        (["My dog Max sleeps a lot"], "My dog ran away from the vacuum"),
        (["My dog Max sleeps a lot"], "I lost my dog's leash"),
        (["我家的猫叫豆豆"], "我的猫走了过来"),
        (["我家的猫叫豆豆"], "我妈的猫死了"),
        (["我家的猫叫豆豆"], "我的猫死了吗"),
        (["我家的猫叫豆豆"], "如果我的猫死了我会很难过"),
    ],
)
def test_what_ends_no_pet(store: SQLiteStore, had: list[str], said: str) -> None:
    before = _walk(store, had).values("u", "pets")
    assert before
    assert _walk(store, [*had, said]).values("u", "pets") == before


def test_the_pet_a_death_names_is_not_set_again_by_the_same_words() -> None:
    assert _said("My cat Luna died last week") == [("pets", "cat Luna", "retract")]
    assert _said("我家的猫豆豆去年死了") == [("pets", "猫 豆豆", "retract")]


# -- affection is no taste --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "I love my job",
        "I love my wife so much",
        "I really love my kids",
        "I like my new apartment",
        "I enjoy my work",
        "I love our little garden",
        "I hate my job",
        "I don't like my neighbours",
        "I love the way you talk to me",
        "I love being a mom",
        "I love it here",
        "I love you",
        "我喜欢我的工作",
        "我爱我老婆",
        "我很喜欢这份工作",
    ],
)
def test_love_of_ones_own_is_no_like(text: str) -> None:
    assert [(k, v) for k, v, _ in _said(text) if k in ("likes", "dislikes")] == []


@pytest.mark.parametrize(
    ("text", "key", "values"),
    [
        ("I love the beach", "likes", ["beach"]),
        ("I love jazz and hiking", "likes", ["jazz", "hiking"]),
        ("I really like sushi", "likes", ["sushi"]),
        ("I don't like horror movies", "dislikes", ["horror movies"]),
        ("我喜欢爬山", "likes", ["爬山"]),
    ],
)
def test_a_taste_in_things_is_still_one(text: str, key: str, values: list[str]) -> None:
    assert [v for k, v, _ in _said(text) if k == key] == values


# -- nicknames ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("我小名叫豆豆", "豆豆"),
        ("我的小名是豆豆", "豆豆"),
        ("我的外号叫大熊", "大熊"),
        ("我小名叫铁柱", "铁柱"),  # said to be a nickname: no nickname's shape needed
        ("我的昵称是Lily", "Lily"),
        ("my nickname is Bee", "Bee"),
        ("My nickname's Bee lol", "Bee"),
        ("btw my pet name is Bunny", "Bunny"),
    ],
)
def test_a_nickname_the_user_has_is_what_others_call_them(text: str, name: str) -> None:
    assert _said(text) == [("preferred_name", name, "set")]


@pytest.mark.parametrize(
    "text",
    [
        # past: no name now
        "people used to call me Bunny",
        "my nickname was Bee",
        "My nickname at school was Bunny",
        "我以前的外号是胖子",
        "小时候我的小名叫豆豆",
        # set against, asked, someone else's, a title
        "My nickname is Bee but I hate it",
        "我小名叫豆豆，但我不喜欢别人这么叫",
        "What's my nickname?",
        "我的小名叫什么来着？",
        "My sister's nickname is Bee",
        "我妈的小名叫芳芳",
        "我的外号是老师",
    ],
)
def test_a_past_or_rejected_nickname_names_no_one(text: str) -> None:
    assert [f for f in _said(text) if f[0] in ("preferred_name", "name")] == []


def test_a_nickname_never_replaces_a_name_the_user_asked_for(store: SQLiteStore) -> None:
    from memsched.commands import apply_rename, detect

    p = Profile(store)
    apply(p, "u", extract("my nickname is Bee"), at=T0, source_turn_ids=[1])
    assert p.values("u", "preferred_name") == ["Bee"]
    apply_rename(p, "u", detect("call me Da Wang")[0], at=T0 + timedelta(days=1), source_turn_ids=[2])
    apply(p, "u", extract("我小名叫豆豆"), at=T0 + timedelta(days=2), source_turn_ids=[3])
    assert p.values("u", "preferred_name") == ["Da Wang"]


# -- a fact that changed: the newest is in the prompt when it is asked about ---------------------------


FULL = [
    "Hi, I'm Sarah. I'm allergic to peanuts and shellfish, I'm vegetarian, my boyfriend is called Tom",
    "I have a cat called Luna, my birthday is March 3rd, I'm a nurse at the city hospital",
    "I love jazz, hiking and sushi, I hate cilantro. I usually go to bed at 11pm.",
]


@pytest.mark.parametrize(
    ("first", "moved", "question", "line"),
    [
        ("I live in Beijing", "I moved to Shanghai", "Where do I live now?", "location: Shanghai"),
        ("I live in Beijing", "I moved to Shanghai", "Do I still live in Beijing?", "location: Shanghai"),
        ("我住在北京", "我搬到上海了", "我现在住哪？", "location: 上海"),
        (
            "I work as a teacher",
            "I quit my job, now I'm a barista",
            "What's my job again?",
            "occupation: barista",
        ),
    ],
)
def test_the_line_a_question_asks_about_is_the_last_the_budget_drops(
    store: SQLiteStore, first: str, moved: str, question: str, line: str
) -> None:
    p = _walk(store, [*FULL, first, moved])
    tight = p.section("u", max_tokens=60, count=lambda s: len(s.split()) + len(s) // 8)
    assert line not in tight  # the full profile does not fit: the location is not among the first
    asked = p.section("u", max_tokens=60, count=lambda s: len(s.split()) + len(s) // 8, message=question)
    assert line in asked and "formerly" in asked
    assert asked.splitlines()[0] == tight.splitlines()[0]  # the same header, keys in their order
    # a message about nothing in the profile drops what it always did
    assert p.section("u", max_tokens=60, count=lambda s: len(s.split()) + len(s) // 8, message="hi") == tight


@pytest.fixture
def server(tmp_path: Path, fake: FakeOpenAI) -> Iterator[str]:
    cfg = Config.load(
        home=tmp_path / "srv",
        embedders="hash",
        upstream_base_url=fake.base_url,
        upstream_model="fake-model",
        budget=600,
    )
    with LiveServer(create_app(cfg)) as base:
        yield base


def _chat(base: str, text: str, at: datetime) -> str:
    r = httpx.post(
        f"{base}/v1/chat/completions",
        json={
            "model": "fake-model",
            "user": "sarah",
            "metadata": {"session_id": at.date().isoformat(), "timestamp": at.isoformat()},
            "messages": [{"role": "user", "content": text}],
        },
        timeout=60,
    )
    assert r.status_code == 200, r.text
    return r.text


def test_http_a_move_a_pet_that_died_and_a_nickname_over_months(server: str, fake: FakeOpenAI) -> None:
    at = T0
    for text in [
        *FULL,
        "my nickname is Bee",
        "I live in Beijing, near the Temple of Heaven.",
        "Beijing traffic is awful in the mornings, I live in Beijing so I deal with it every day.",
        "Where I live in Beijing the hutongs are full of old men playing chess.",
    ]:
        _chat(server, text, at)
        at += timedelta(days=3)
    at = datetime(2026, 6, 1, 10, tzinfo=UTC)
    _chat(server, "I moved to Shanghai last week! The new flat is small but bright.", at)
    _chat(server, "My cat Luna died last week. I miss her so much.", at + timedelta(days=2))
    current = httpx.get(f"{server}/v1/users/sarah/profile", params={"current": "true"}).json()["facts"]
    values = {(f["key"], f["value"]) for f in current}
    assert ("location", "Shanghai") in values and ("preferred_name", "Bee") in values
    assert not [v for k, v in values if k == "pets"]
    fake.clear()
    _chat(server, "Where do I live now?", at + timedelta(days=9))
    system = fake.chat_requests[-1]["messages"][0]["content"]
    assert "location: Shanghai (since 2026-06-01; formerly Beijing)" in system
    assert "Luna" not in system.split("Memories from")[0]  # no pet in the profile lines


def test_http_a_loss_and_a_date_reach_the_prompt_near_the_day(server: str, fake: FakeOpenAI) -> None:
    _chat(server, "我奶奶叫王芳，她做的饺子最好吃", T0)
    _chat(server, "我们的结婚纪念日是六月三号", T0 + timedelta(days=1))
    _chat(server, "我奶奶去年去世了，我很想她", T0 + timedelta(days=2))
    r = httpx.post(
        f"{server}/v1/context",
        json={"user": "sarah", "message": "今天有点累", "timestamp": "2026-06-01T09:00:00Z", "budget": 4000},
        timeout=60,
    )
    assert r.status_code == 200, r.text
    system = r.json()["messages"][0]["content"]
    assert "结婚纪念日: June 3 (in 2 days)" in system
    assert "奶奶 王芳 (passed away 去年; told 2026-03-03)" in system
    assert "people in the user's life" not in system  # she is no one to ask after now
    far = httpx.post(
        f"{server}/v1/context",
        json={"user": "sarah", "message": "今天有点累", "timestamp": "2026-08-01T09:00:00Z", "budget": 4000},
        timeout=60,
    ).json()["messages"][0]["content"]
    assert re.search(r"结婚纪念日: June 3(\n|$)", far)  # not near: no note


# -- forgetting the ex ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("said", "forget", "ex", "now"),
    [
        (
            [
                "My boyfriend is called Tom, we met in college.",
                "Tom and I went hiking today, it was lovely.",
                "I broke up with Tom.",
                "My boyfriend's name is Mark, we've been dating a month.",
            ],
            "Forget everything about my ex.",
            "Tom",
            "Mark",
        ),
        (
            ["我男朋友叫阿杰", "今天阿杰带我去吃了火锅", "我和阿杰分手了", "我男朋友叫小林"],
            "忘掉关于我前任的一切",
            "阿杰",
            "小林",
        ),
    ],
)
def test_http_forgetting_the_ex_forgets_the_former_partner_by_name(
    server: str, fake: FakeOpenAI, said: list[str], forget: str, ex: str, now: str
) -> None:
    at = T0
    for text in said:
        _chat(server, text, at)
        at += timedelta(days=5)
    history = httpx.get(f"{server}/v1/users/sarah/profile").json()["facts"]
    assert ex in {f["value"] for f in history if f["key"] == "partner_name"}
    _chat(server, forget, at)
    history = httpx.get(f"{server}/v1/users/sarah/profile").json()["facts"]
    assert [f["value"] for f in history if f["key"] == "partner_name"] == [now]
    fake.clear()
    _chat(server, "hi, what do you remember about me?", at + timedelta(days=1))
    system = fake.chat_requests[-1]["messages"][0]["content"]
    assert f"partner: {now}" in system and ex not in system


# -- corrections --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("said", "correction", "key", "values"),
    [
        (["My cat is called Lola"], "No, I said Luna not Lola", "pets", ["cat Luna"]),
        (["My cat is called Lola"], "No, my cat's name is Luna, not Lola", "pets", ["cat Luna"]),
        (["I have a dog named Rex"], "not Rex, Max", "pets", ["dog Max"]),
        (
            ["I'm allergic to walnuts and latex"],
            "sorry, I meant peanuts, not walnuts",
            "allergies",
            ["latex", "peanuts"],
        ),
        (["我住在北京"], "不是北京，是南京", "location", ["南京"]),
        (["我家的猫叫逗逗"], "不对，我说的是豆豆，不是逗逗", "pets", ["猫 豆豆"]),
        (["My boyfriend is called Jon"], "it's John, not Jon", "partner_name", ["John"]),
        # The name said with 叫 / "called", then the one it replaces.
        (["我妹妹小玉在上海读大三"], "我说错了，我妹妹叫小雨不是小玉，打字太快了。", "people", ["妹妹 小雨"]),
        (["我妹妹小玉在上海读大三"], "她叫小雨，不叫小玉", "people", ["妹妹 小雨"]),
        (["My sister Lea is pregnant"], "sorry, she's called Leah, not Lea", "people", ["sister Leah"]),
        (["My sister Lea is pregnant"], "I mean Leah, not Lea", "people", ["sister Leah"]),
    ],
)
def test_a_value_the_user_corrects_is_replaced(
    store: SQLiteStore, said: list[str], correction: str, key: str, values: list[str]
) -> None:
    p = _walk(store, [*said, correction])
    assert p.values("u", key) == values


@pytest.mark.parametrize(
    "said",
    [
        "It's Monday, not Tuesday",  # no fact holds Tuesday
        "I said yes, not no",
        "Is it Luna, not Lola?",  # a question
        'She said "it\'s Luna, not Lola"',  # someone's words
        "不是我，是他",
        "Lola is not Luna",
        "我是医生不是护士",
        "他叫小明不是小红",
    ],
)
def test_what_corrects_nothing_in_force_changes_nothing(store: SQLiteStore, said: str) -> None:
    p = _walk(store, ["My cat is called Lola", "I live in Boston", "My wife is Anna", said])
    assert p.values("u", "pets") == ["cat Lola"]
    assert p.values("u", "location") == ["Boston"] and p.values("u", "partner_name") == ["Anna"]


# -- the people in the user's life --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "values"),
    [
        # jieba glues the name to the kinship word, or tags it a name: both read
        ("我姐小红今天来了", ["姐姐 小红"]),
        ("我哥大伟说他要结婚", ["哥哥 大伟"]),
        ("我妈李梅", ["妈妈 李梅"]),
        ("我儿子乐乐三岁了", ["儿子 乐乐"]),
        ("我妹妹叫小丽", ["妹妹 小丽"]),
        ("我妹妹叫小红", ["妹妹 小红"]),
        ("我姐姐的名字是王芳", ["姐姐 王芳"]),
        ("My sister Anna is visiting", ["sister Anna"]),
        ("My son is named Leo", ["son Leo"]),
        ("My mom's name is Linda", ["mom Linda"]),
        ("My sister's name is Lily", ["sister Lily"]),
        ("My daughter Mia turned 5", ["daughter Mia"]),
        ("My best friend Sarah's birthday is tomorrow", ["best friend Sarah"]),
    ],
)
def test_a_relative_or_friend_by_name(text: str, values: list[str]) -> None:
    assert [v for k, v, _ in _said(text) if k == "people"] == values


@pytest.mark.parametrize(
    "text",
    [
        "我姐今天来了",
        "我弟刚毕业",
        "我妈是医生",
        "我妈叫我回家吃饭",
        "我妈叫了外卖",
        "我哥们儿都来了",
        "我爸妈都很好",
        "我姐也来了",
        "我前男友叫阿杰",
        "my friend is a doctor",  # someone else's job, and no name
        "My sister is Chinese",
        "Is my sister Anna coming?",
        "If my son were named Leo",
    ],
)
def test_what_names_no_one_in_the_users_life(text: str) -> None:
    assert [v for k, v, _ in _said(text) if k in ("people", "occupation", "name", "partner_name")] == []


def test_a_question_about_someone_by_name_keeps_their_line(store: SQLiteStore) -> None:
    p = _walk(store, [*FULL, "我妹妹叫小丽"])
    count = lambda s: len(s.split()) + len(s) // 8  # noqa: E731
    assert "小丽" not in p.section("u", max_tokens=60, count=count)
    assert "people in the user's life: 妹妹 小丽" in p.section(
        "u", max_tokens=60, count=count, message="小丽最近怎么样？"
    )
