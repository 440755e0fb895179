"""Profile facts: bilingual rule extraction, supersession with history, the compact prompt section
under its own budget, the LLM extraction (P2) and GET /v1/users/{user}/profile."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from memsched.commands import detect
from memsched.config import Config
from memsched.errors import LLMError
from memsched.llm.client import OpenAIChatClient
from memsched.model import Turn
from memsched.profile import DISLIKES, LIKES, LOCATION, PREFERRED_NAME, SECTION_HEADER, Profile
from memsched.profile_extract import apply, extract, llm_extract
from memsched.scheduler import page_jobs
from memsched.server.app import create_app
from memsched.store.sqlite import SQLiteStore
from memsched.testing import FakeOpenAI, LiveServer

T0 = datetime(2024, 10, 1, 12, tzinfo=UTC)

CASES = [
    ("我叫李伟", "name", "李伟"),
    ("my name is Li Wei", "name", "Li Wei"),
    ("我的生日是3月5日", "birthday", "March 5"),
    ("My birthday is March 5th.", "birthday", "March 5"),
    ("I was born on May 3, 1990", "birthday", "May 3, 1990"),
    ("我住在杭州", "location", "杭州"),
    ("我搬到了上海", "location", "上海"),
    ("I moved to Tokyo last month", "location", "Tokyo"),
    ("I live in Berlin", "location", "Berlin"),
    ("我是一名护士", "occupation", "护士"),
    ("我是做设计的", "occupation", "设计"),
    ("I work as a nurse", "occupation", "nurse"),
    ("我男朋友叫阿杰", "partner_name", "阿杰"),
    ("my wife is called Anna", "partner_name", "Anna"),
    ("I went to a concert with my girlfriend Emma.", "partner_name", "Emma"),
    ("Our cat Miso knocked over my coffee", "pets", "cat Miso"),
    ("我的猫叫芝麻", "pets", "猫 芝麻"),
    ("my cat is named Sesame", "pets", "cat Sesame"),
    ("我养了一只狗", "pets", "狗"),
    ("I have a dog", "pets", "dog"),
    ("I have a cat called Mochi.", "pets", "cat Mochi"),
    ("We adopted a puppy named Rex last week", "pets", "puppy Rex"),
    ("我家猫叫团子", "pets", "猫 团子"),
    ("我家的狗叫旺财", "pets", "狗 旺财"),
    ("My birthday's on the 3rd of March", "birthday", "March 3"),
    ("I'm married to Tom.", "partner_name", "Tom"),
    ("我很喜欢爵士乐", "likes", "爵士乐"),
    ("我不喜欢香菜", "dislikes", "香菜"),
    ("I hate cilantro", "dislikes", "cilantro"),
    ("我对花生过敏", "allergies", "花生"),
    ("我花粉过敏", "allergies", "花粉"),
    ("I'm allergic to peanuts", "allergies", "peanuts"),
    # A relative time word or an adverb between the subject and the verb ("上个月", "刚", "also", "just").
    ("我前阵子刚搬到了厦门", "location", "厦门"),
    ("我们去年就搬到大理了", "location", "大理"),
    ("We finally moved to Lisbon two weeks ago!", "location", "Lisbon"),
    ("我从小就对海鲜过敏", "allergies", "海鲜"),
    ("Oh and I'm also allergic to latex.", "allergies", "latex"),
    ("我一般11点睡", "sleep_time", "23:00"),
    ("我平时晚上十一点半睡觉", "sleep_time", "23:30"),
    ("I usually go to bed at 11pm", "sleep_time", "23:00"),
]


@pytest.mark.parametrize(("text", "key", "value"), CASES)
def test_rules_find_each_key_in_both_languages(text: str, key: str, value: str) -> None:
    assert [(o.key, o.value) for o in extract(text)] == [(key, value)]


# A value ends where its clause does: at a conjunction, a relative clause, a companion, place or
# time phrase, not only at punctuation.
CLAUSE_CASES = [
    ("I'm allergic to peanuts and my sister is too", "allergies", "peanuts"),
    ("I live in Berlin with my wife", "location", "Berlin"),
    ("I live in Lisbon which is lovely", "location", "Lisbon"),
    ("I work as a nurse at the city hospital", "occupation", "nurse"),
    ("I work as a software engineer, mostly backend", "occupation", "software engineer"),
    ("I love Paris in the spring", "likes", "Paris"),
    ("I hate mornings but coffee helps", "dislikes", "mornings"),
    ("我对花生过敏，我妹妹也是", "allergies", "花生"),
    ("我住在杭州跟我爸妈一起", "location", "杭州"),
    ("我喜欢爬山而且喜欢游泳", "likes", "爬山"),
    ("我讨厌下雨天还有堵车", "dislikes", "下雨天"),
    ("我养了一只橘猫叫胖虎", "pets", "橘猫 胖虎"),  # a word before the kind, then its name
    ("我养了一只布偶猫", "pets", "布偶猫"),
    # A breed: 养了 with an animal's measure word names an animal, whatever its kind.
    ("我养了一只柯基叫豆包", "pets", "柯基 豆包"),
    ("我养了一只柯基，超可爱", "pets", "柯基"),
    # A job named by its function is one when a workplace comes with it.
    ("我在一家游戏公司做策划", "occupation", "策划"),
    ("我在公司做测试", "occupation", "测试"),
    # "I'm a X": only when X ends in an occupation.
    ("I'm a nurse at the city hospital", "occupation", "nurse"),
    ("I'm a software engineer at Google.", "occupation", "software engineer"),
    ("I'm a teacher", "occupation", "teacher"),
    ("在上海做设计师。", "occupation", "设计师"),
    ("我在腾讯当产品经理", "occupation", "产品经理"),
    # Discourse fillers are not part of the value (a walk-through stored "mushrooms by the way").
    ("I hate mushrooms by the way.", "dislikes", "mushrooms"),
    ("I love jazz btw", "likes", "jazz"),
]


# A list after the verb of a several-valued key is one fact per item; a clause after "and" is not an item.
LIST_CASES = [
    ("I'm allergic to penicillin and peanuts.", "allergies", ["penicillin", "peanuts"]),
    ("I'm allergic to cats, dogs and dust!", "allergies", ["cats", "dogs", "dust"]),
    ("I love pizza, sushi, and tacos.", "likes", ["pizza", "sushi", "tacos"]),
    ("I love jazz and hiking", "likes", ["jazz", "hiking"]),
    ("I love hiking and my sister does too", "likes", ["hiking"]),
    ("I hate Mondays, especially mornings", "dislikes", ["Mondays"]),
    ("I love jazz, though.", "likes", ["jazz"]),
    # A sentence adverb after a comma is no item (a walk-through stored "sadly" as an allergy).
    ("I'm allergic to cats, sadly.", "allergies", ["cats"]),
    ("I'm allergic to cats, unfortunately, and dogs", "allergies", ["cats"]),
    # A hedge after a comma says how much, not what else.
    ("I'm allergic to peanuts, like EpiPen-level allergic.", "allergies", ["peanuts"]),
    ("I love jazz, as in the old stuff", "likes", ["jazz"]),
    ("我对芒果和花生过敏", "allergies", ["芒果", "花生"]),
    ("我对芒果、花生和虾过敏", "allergies", ["芒果", "花生", "虾"]),
    ("我喜欢猫和狗", "likes", ["猫", "狗"]),
    ("我讨厌下雨、刮风和堵车", "dislikes", ["下雨", "刮风", "堵车"]),
    ("我喜欢和朋友聊天", "likes", ["和朋友聊天"]),  # 和 before the only thing: not a list
]


@pytest.mark.parametrize(("text", "key", "values"), LIST_CASES)
def test_a_list_is_one_fact_per_item(text: str, key: str, values: list[str]) -> None:
    assert [(o.key, o.value) for o in extract(text)] == [(key, v) for v in values]


def test_a_list_taken_back_retracts_each_item() -> None:
    got = [(o.key, o.value, o.op) for o in extract("我对芒果、花生不过敏")]
    assert got == [("allergies", "芒果", "retract"), ("allergies", "花生", "retract")]
    got = [(o.key, o.value, o.op) for o in extract("I'm not allergic to walnuts or kiwi after all")]
    assert got == [("allergies", "walnuts", "retract"), ("allergies", "kiwi", "retract")]


def test_a_greeting_introduces_a_name() -> None:
    """The commonest English introduction: a capitalised name right after a greeting."""
    got = [(o.key, o.value) for o in extract("Hi! I'm Sarah, I work as a nurse at the hospital in Leeds.")]
    assert got == [("name", "Sarah"), ("occupation", "nurse"), ("location", "Leeds")]
    assert [(o.key, o.value) for o in extract("Hey there, this is Tom Baker.")] == [("name", "Tom Baker")]


@pytest.mark.parametrize(("text", "key", "value"), CLAUSE_CASES)
def test_values_are_cut_at_the_clause_boundary(text: str, key: str, value: str) -> None:
    # (A workplace named with the job also gives a location: "在上海做设计师" lives in 上海.)
    assert [(o.key, o.value) for o in extract(text) if o.key == key] == [(key, value)]


@pytest.mark.parametrize(
    ("text", "value"),
    [("call me Dan, please", "Dan"), ("Call me Dan please", "Dan"), ("叫我小王就行了", "小王")],
)
def test_a_rename_is_cut_at_the_clause_boundary(text: str, value: str) -> None:
    from memsched.commands import detect

    assert [(c.kind, c.value) for c in detect(text)] == [("rename", value)]


@pytest.mark.parametrize(
    "text",
    [
        "你对花生过敏吗？",
        "Do you like jazz?",
        "我爱你",
        "I love you",
        "I like that",
        "我是一个很懒的人",
        "今天好累",
        "call me Dave",
        "my girlfriend loves jazz",
        "my husband Sunday morning was grumpy",
        "I'm married to a doctor",
        "I like tea or coffee?",
        "hi, I'm tired",
        "我想做设计师",
        "我在家做饭",
        "今天在公司做了一天报表",
        "Hello! I'm Chinese, by the way",
        "Hey, I'm Back",
        "I'm a bit tired",
        "I'm a mess",
        "I'm a big deal",
        "I'm a fan of yours",
        "I'm living in fear",
        "I became a mess",
        "my wife is Chinese",
        "我最喜欢的是你",
        "我搬来一个柜子",
        "考试前两天我很紧张",
        "I'm a bit of a designer at heart",
        "I'm a beginner at chess",
        "I'm a night owl",
        "我在公司做项目",
        "我做测试",
        "我养了一盆花",
        "我去过那家店，但我不喜欢",  # 但 before 我 is no thing disliked
    ],
)
def test_questions_pronouns_and_chit_chat_state_no_fact(text: str) -> None:
    assert extract(text) == []


def test_a_new_value_supersedes_the_old_one_and_history_stays(store: SQLiteStore) -> None:
    p = Profile(store)
    berlin = p.set("u", LOCATION, "Berlin", at=T0, source_turn_ids=[1])
    tokyo = p.set("u", LOCATION, "Tokyo", at=T0 + timedelta(days=30), source_turn_ids=[9])
    history = p.history("u", LOCATION)
    assert [(f.value, f.current, f.superseded_by) for f in history] == [
        ("Berlin", False, tokyo),
        ("Tokyo", True, None),
    ]
    assert history[0].id == berlin and history[0].superseded_at == T0 + timedelta(days=30)
    # Observing an old statement again (a P2 job re-reading turn 1) changes nothing but its sources.
    assert p.set("u", LOCATION, "Berlin", at=T0, source_turn_ids=[1]) == berlin
    assert p.get("u", LOCATION).value == "Tokyo"  # type: ignore[union-attr]
    # An older observation never replaces a newer fact: it is filed as history.
    paris = p.set("u", LOCATION, "Paris", at=T0 + timedelta(days=10), source_turn_ids=[5])
    assert p.get("u", LOCATION).value == "Tokyo"  # type: ignore[union-attr]
    old = next(f for f in p.history("u", LOCATION) if f.id == paris)
    assert not old.current and old.superseded_by == tokyo


def test_since_dates_are_on_the_user_clock(store: SQLiteStore) -> None:
    p = Profile(store)
    p.set("u", LOCATION, "Boston", at=datetime(2024, 3, 1, tzinfo=UTC))
    p.set("u", LOCATION, "Chicago", at=datetime(2024, 3, 9, 1, 30, tzinfo=UTC))  # 8 March, 20:30 in New York
    assert "- location: Chicago (since 2024-03-09;" in p.section("u")
    p.set("u", "timezone", "America/New_York", at=datetime(2024, 3, 9, 1, 30, tzinfo=UTC))
    assert "- location: Chicago (since 2024-03-08;" in p.section("u")


def test_likes_are_a_set_and_a_dislike_retracts_the_like(store: SQLiteStore) -> None:
    p = Profile(store)
    apply(p, "u", extract("I love jazz"), at=T0, source_turn_ids=[1])
    apply(p, "u", extract("我很喜欢爬山"), at=T0 + timedelta(hours=1), source_turn_ids=[2])
    assert p.values("u", LIKES) == ["jazz", "爬山"]
    apply(p, "u", extract("I don't like jazz anymore"), at=T0 + timedelta(days=3), source_turn_ids=[3])
    assert p.values("u", LIKES) == ["爬山"] and p.values("u", DISLIKES) == ["jazz"]
    jazz = [f for f in p.history("u", LIKES) if f.value == "jazz"]
    assert len(jazz) == 1 and not jazz[0].current and jazz[0].source_turn_ids == (1,)
    # Re-running the rules over the same turns (the P2 job) does not bring the old like back.
    apply(p, "u", extract("I love jazz"), at=T0, source_turn_ids=[1])
    assert p.values("u", LIKES) == ["爬山"]


def test_section_is_compact_ordered_and_within_its_budget(store: SQLiteStore) -> None:
    p = Profile(store)
    p.set("u", PREFERRED_NAME, "小王", at=T0)
    p.set("u", PREFERRED_NAME, "大王", at=T0 + timedelta(days=1))
    for i, like in enumerate(["jazz", "hiking", "火锅", "《三体》"]):
        p.set("u", LIKES, like, at=T0 + timedelta(minutes=i))
    p.set("u", "allergies", "花生", at=T0)
    full = p.section("u")
    lines = full.splitlines()
    assert lines[0] == SECTION_HEADER
    assert lines[1].startswith("- preferred name") and "大王" in lines[1] and "formerly 小王" in lines[1]
    assert lines[2] == "- allergies (never suggest these): 花生"
    assert lines[3] == "- likes: jazz, hiking, 火锅, 《三体》"
    short = p.section("u", max_tokens=len(SECTION_HEADER) + len(lines[1]) + len(lines[2]) + 2)
    assert short.splitlines() == lines[:3]  # the least important key goes first


def test_a_full_profile_fits_the_default_share(store: SQLiteStore) -> None:
    """Twelve facts fit the smallest share a shipped strategy gives the profile (5 % of 2,000 tokens):
    a line carries its date only when the value replaced another, and the timezone (already on the
    prompt's clock line) is the first to go."""
    from memsched.config import DEFAULT_TOKENIZER
    from memsched.text.tokens import get_counter

    p = Profile(store)
    facts = [
        ("name", "Thomas"), (PREFERRED_NAME, "Tom"), ("occupation", "nurse"), ("location", "Boston"),
        ("allergies", "peanuts"), ("birthday", "March 3rd"), ("partner_name", "Emma"), ("pets", "cat Miso"),
        (LIKES, "jazz"), (LIKES, "hiking"), ("dislikes", "cilantro"), ("timezone", "America/New_York"),
    ]  # fmt: skip
    for i, (key, value) in enumerate(facts):
        p.set("u", key, value, at=T0 + timedelta(minutes=i))
    p.set("u", "location", "Chicago", at=T0 + timedelta(days=30))
    count = get_counter(DEFAULT_TOKENIZER).count
    section = p.section("u", max_tokens=100, count=count)
    assert count(section) <= 100
    for value in ("Tom", "Thomas", "nurse", "peanuts", "March 3rd", "Emma", "cat Miso", "jazz", "cilantro"):
        assert value in section, value
    assert "- location: Chicago (since " in section and "formerly Boston" in section
    assert "- name: Thomas\n" in section  # no date on a value that replaced nothing


def test_llm_extraction_is_validated_and_dated_by_its_turn(fake: FakeOpenAI, store: SQLiteStore) -> None:
    turns = [
        Turn("u", "s", "user", "周末去了趟海边，我现在在深圳上班", created_at=T0),
        Turn("u", "s", "assistant", "深圳的海很美", created_at=T0),
        Turn(
            "u",
            "s",
            "user",
            "by the way the ferret I adopted is called Bean",
            created_at=T0 + timedelta(minutes=5),
        ),
    ]
    store.add_turns(turns)
    fake.script_for(
        "lasting facts",
        '{"facts": [{"turn": 1, "key": "location", "value": "深圳"},'
        ' {"turn": 2, "key": "pets", "value": "ferret Bean"},'
        ' {"turn": 2, "key": "favourite_colour", "value": "blue"},'
        ' {"turn": 9, "key": "likes", "value": "nothing"}]}',
    )
    with OpenAIChatClient(fake.base_url, "k", "m", retries=0) as llm:
        found = llm_extract(llm, turns)
    assert [(t.id, o.key, o.value) for t, o in found] == [
        (turns[0].id, "location", "深圳"),
        (turns[2].id, "pets", "ferret Bean"),
    ]
    p = Profile(store)
    for turn, ob in found:
        apply(p, "u", [ob], at=turn.created_at, source_turn_ids=[turn.id or 0])
    assert p.get("u", "pets").source_turn_ids == (turns[2].id,)  # type: ignore[union-attr]
    assert p.get("u", "pets").valid_from == T0 + timedelta(minutes=5)  # type: ignore[union-attr]
    fake.script_for("lasting facts", "not json at all")
    with OpenAIChatClient(fake.base_url, "k", "m", retries=0) as llm, pytest.raises(LLMError):
        llm_extract(llm, turns)


def test_a_full_page_queues_the_p2_extraction() -> None:
    turn = Turn("u", "s", "user", "x")
    turn.seq, turn.page_id = 3, 7
    kinds = {j.kind: j for j in page_jobs([turn], 4)}
    assert kinds["profile_extract"].payload == {"page_id": 7}
    assert int(kinds["profile_extract"].priority) == 2


# -- through the HTTP service -------------------------------------------------------------------------


@pytest.fixture
def server(tmp_path: Path, fake: FakeOpenAI) -> Iterator[str]:
    cfg = Config.load(
        home=tmp_path / "srv", embedders="hash", upstream_base_url=fake.base_url, upstream_model="fake-model"
    )
    with LiveServer(create_app(cfg)) as base:
        yield base


def _chat(base: str, text: str, at: str, session: str = "s1") -> httpx.Response:
    r = httpx.post(
        f"{base}/v1/chat/completions",
        json={
            "model": "fake-model",
            "user": "li",
            "metadata": {"session_id": session, "timestamp": at},
            "messages": [{"role": "system", "content": "You are Xiaoyu."}, {"role": "user", "content": text}],
        },
        timeout=60,
    )
    assert r.status_code == 200, r.text
    return r


@pytest.mark.parametrize(
    ("first", "second", "old", "new", "rename", "name"),
    [
        ("我住在北京", "我搬到了上海", "北京", "上海", "别叫我小王了，叫我大王", "大王"),
        ("I live in Berlin", "I moved to Tokyo", "Berlin", "Tokyo", "Call me Da Wang from now on", "Da Wang"),
    ],
)
def test_http_facts_are_superseded_and_renames_hold_on_the_next_turn(
    server: str, fake: FakeOpenAI, first: str, second: str, old: str, new: str, rename: str, name: str
) -> None:
    _chat(server, first, "2024-10-01T10:00:00+00:00")
    _chat(server, second, "2024-11-01T10:00:00+00:00")
    facts = httpx.get(f"{server}/v1/users/li/profile", params={"key": "location"}).json()["facts"]
    assert [(f["value"], f["current"]) for f in facts] == [(old, False), (new, True)]
    assert facts[0]["superseded_by"] == facts[1]["id"] and facts[1]["valid_from"].startswith("2024-11-01")
    assert facts[0]["source_turn_ids"] and facts[0]["source_turn_ids"] != facts[1]["source_turn_ids"]
    fake.clear()
    _chat(server, rename, "2024-11-02T10:00:00+00:00")
    _chat(server, "早", "2024-11-03T08:00:00+00:00", session="s2")
    system = fake.chat_requests[-1]["messages"][0]["content"]
    assert f"preferred name (call the user this): {name}" in system
    assert f"location: {new}" in system and f"formerly {old}" in system
    current = httpx.get(f"{server}/v1/users/li/profile", params={"current": "true"}).json()["facts"]
    assert {f["key"]: f["value"] for f in current}["preferred_name"] == name
    assert all(f["current"] for f in current)
    assert httpx.get(f"{server}/v1/users/nobody/profile").status_code == 404


@pytest.mark.parametrize(
    ("intro", "nickname", "rejection", "then", "name"),
    [
        # The rejection gives a reason in a clause of its own before the new name ("还是叫我…").
        ("我叫周可可", "以后叫我可乐吧", "别再叫我可乐了，像个饮料，还是叫我可可", None, "可可"),
        # No new name: the nickname ends and the user's name is what the model sees again.
        ("我叫周可可", "以后叫我可乐吧", "不要再叫我可乐了。", None, "周可可"),
        (
            "My name is Theodore Hale.",
            "Call me Teddy.",
            "Please stop calling me Teddy, I prefer Theo.",
            None,
            "Theo",
        ),
        (
            "My name is Theodore Hale.",
            "Call me Teddy.",
            "Don't call me Teddy anymore.",
            None,
            "Theodore Hale",
        ),
        # Through POST /v1/turns (the record path: a P1 job the next turn waits for).
        (
            "My name is Theodore Hale.",
            "Call me Teddy.",
            None,
            "Stop calling me Teddy, it's embarrassing.",
            "Theodore Hale",
        ),
    ],
)
def test_http_a_rejected_nickname_is_not_used_on_the_next_turn(
    server: str,
    fake: FakeOpenAI,
    intro: str,
    nickname: str,
    rejection: str | None,
    then: str | None,
    name: str,
) -> None:
    _chat(server, intro, "2024-10-01T10:00:00+00:00")
    _chat(server, nickname, "2024-10-01T10:01:00+00:00")
    if rejection is not None:
        _chat(server, rejection, "2024-10-02T10:00:00+00:00")
    else:
        r = httpx.post(
            f"{server}/v1/turns",
            json={
                "user": "li",
                "session_id": "s1",
                "role": "user",
                "content": then,
                "timestamp": "2024-10-02T10:00:00+00:00",
            },
        )
        assert r.status_code == 201, r.text
    fake.clear()
    _chat(server, "早", "2024-10-03T08:00:00+00:00", session="s2")
    system = fake.chat_requests[-1]["messages"][0]["content"]
    old = (
        nickname.removeprefix("以后叫我").removesuffix("吧")
        if nickname.startswith("以后")
        else nickname.removeprefix("Call me ").rstrip(".")
    )
    current = httpx.get(f"{server}/v1/users/li/profile", params={"current": "true"}).json()["facts"]
    values = {f["key"]: f["value"] for f in current}
    assert values.get("preferred_name", values.get("name")) == name
    assert values.get("preferred_name") != old
    assert f": {old}\n" not in system and f": {old} (" not in system  # never offered as the name in force
    assert name in system


@pytest.mark.parametrize(
    ("lived", "moved", "old", "new", "allergy", "also", "allergens"),
    [
        (
            "我住在西安",
            "我们上周刚搬到青岛了",
            "西安",
            "青岛",
            "我对芒果和花生过敏",
            "我也对虾过敏",
            ("芒果", "花生", "虾"),
        ),
        (
            "I live in Denver",
            "We just moved to Portland last month!",
            "Denver",
            "Portland",
            "I'm allergic to penicillin and latex",
            "Oh, I'm also allergic to kiwi.",
            ("penicillin", "latex", "kiwi"),
        ),
    ],
)
def test_http_a_move_said_with_a_time_word_and_a_second_allergy_reach_the_prompt(
    server: str,
    fake: FakeOpenAI,
    lived: str,
    moved: str,
    old: str,
    new: str,
    allergy: str,
    also: str,
    allergens: tuple[str, ...],
) -> None:
    """A relative time word or an adverb between the subject and the verb ("上周刚", "just … last month",
    "also"): before, the move and the second allergy were not learned and the prompt kept the old city.
    A list of allergens is one fact each (before, only the first item was kept)."""
    _chat(server, lived, "2024-10-01T10:00:00+00:00")
    _chat(server, allergy, "2024-10-01T10:01:00+00:00")
    _chat(server, moved, "2024-11-01T10:00:00+00:00")
    _chat(server, also, "2024-11-01T10:01:00+00:00")
    fake.clear()
    _chat(server, "晚饭吃什么好？", "2024-11-02T18:00:00+00:00", session="s2")
    system = fake.chat_requests[-1]["messages"][0]["content"]
    assert f"location: {new}" in system and f"location: {old}" not in system
    allergies = next(line for line in system.splitlines() if line.startswith("- allergies"))
    assert all(a in allergies for a in allergens)


@pytest.mark.parametrize(
    ("stated", "taken_back", "allergen"),
    [
        ("我对芒果过敏", "后来去医院查了，我其实对芒果不过敏", "芒果"),
        ("I'm allergic to walnuts", "Good news: I'm not allergic to walnuts after all!", "walnuts"),
    ],
)
def test_http_an_allergy_taken_back_leaves_the_prompt(
    server: str, fake: FakeOpenAI, stated: str, taken_back: str, allergen: str
) -> None:
    """A negated statement retracts the fact (only where it is the one in force). Before, "我对芒果不过敏"
    even stored "芒果不" as a second allergy, and the English retraction did nothing."""
    _chat(server, stated, "2024-10-01T10:00:00+00:00")
    _chat(server, taken_back, "2024-10-20T10:00:00+00:00")
    fake.clear()
    _chat(server, "晚饭吃什么好？", "2024-10-21T18:00:00+00:00", session="s2")
    system = fake.chat_requests[-1]["messages"][0]["content"]
    assert "- allergies" not in system
    facts = httpx.get(f"{server}/v1/users/li/profile", params={"key": "allergies"}).json()["facts"]
    assert [(f["value"], f["current"]) for f in facts] == [(allergen, False)]


@pytest.mark.parametrize(
    ("job", "pet", "occupation", "pets"),
    [
        ("我在一家游戏公司做策划", "我养了一只柯基叫豆包", "策划", "柯基 豆包"),
        (
            "I'm a nurse at the city hospital.",
            "We adopted a puppy. My puppy is called Biscuit.",
            "nurse",
            "puppy Biscuit",
        ),
    ],
)
def test_http_a_job_by_its_function_a_breed_and_im_a_nurse_reach_the_prompt(
    server: str, fake: FakeOpenAI, job: str, pet: str, occupation: str, pets: str
) -> None:
    """A walk-through's misses: 策划 does not end like an occupation, 柯基 is no pet kind in the list,
    and "I'm a nurse at …" had no rule; none of them reached the profile."""
    _chat(server, job, "2024-10-01T10:00:00+00:00")
    _chat(server, pet, "2024-10-01T10:01:00+00:00")
    fake.clear()
    _chat(server, "晚饭吃什么好？", "2024-10-02T18:00:00+00:00", session="s2")
    system = fake.chat_requests[-1]["messages"][0]["content"]
    assert f"- occupation: {occupation}" in system
    assert f"- pets: {pets}" in system


# Diet: what a companion suggesting dinner must know. One value per diet whatever form said it, what
# the user does not eat as "no X" / "不吃X", one fact per item; one-offs and questions state nothing.
DIET_CASES = [
    ("I'm vegetarian", ["vegetarian"]),
    ("I'm a vegetarian, by the way", ["vegetarian"]),
    ("I've been vegan for two years", ["vegan"]),
    ("I went pescetarian last year", ["pescatarian"]),
    ("I'm on a keto diet", ["keto diet"]),
    ("I keep kosher", ["kosher"]),
    ("I don't eat pork or beef", ["no pork", "no beef"]),
    ("I can't eat gluten", ["no gluten"]),
    ("我吃素", ["吃素"]),
    ("我是素食主义者", ["吃素"]),  # not an occupation
    ("我一直吃全素", ["吃全素"]),
    ("我不吃猪肉和牛肉", ["不吃猪肉", "不吃牛肉"]),
    ("我从来不吃辣", ["不吃辣"]),
    ("I don't eat out much", []),
    ("我今天不吃了", []),
    ("Do you eat pork?", []),
    ("你吃素吗？", []),
]


@pytest.mark.parametrize(("text", "values"), DIET_CASES)
def test_diet_facts_in_both_languages(text: str, values: list[str]) -> None:
    assert [(o.key, o.value, o.op) for o in extract(text)] == [("diet", v, "set") for v in values]


@pytest.mark.parametrize(
    ("text", "value"),
    [("I'm not vegetarian anymore", "vegetarian"), ("我不吃素了", "吃素"), ("我不再是素食者了", "吃素")],
)
def test_a_diet_given_up_is_retracted(text: str, value: str) -> None:
    assert [(o.key, o.value, o.op) for o in extract(text)] == [("diet", value, "retract")]


@pytest.mark.parametrize(
    ("said", "given_up", "diet", "asked"),
    [
        ("我是素食主义者，我也不吃辣", "我现在不吃素了", "吃素", "今晚做什么菜好？"),
        (
            "I'm vegetarian and I don't eat mushrooms.",
            "I'm not vegetarian anymore!",
            "vegetarian",
            "What should I cook?",
        ),
    ],
)
def test_http_a_diet_reaches_the_dinner_question_until_it_is_given_up(
    server: str, fake: FakeOpenAI, said: str, given_up: str, diet: str, asked: str
) -> None:
    """Before, "I'm vegetarian" was no fact: a dinner question weeks later, in a new session, could
    get a steak recipe."""
    _chat(server, said, "2024-10-01T10:00:00+00:00")
    fake.clear()
    _chat(server, asked, "2024-10-21T18:00:00+00:00", session="s2")
    system = fake.chat_requests[-1]["messages"][0]["content"]
    line = next(x for x in system.splitlines() if x.startswith("- diet"))
    assert diet in line and ("不吃辣" in line or "no mushrooms" in line)
    _chat(server, given_up, "2024-11-01T10:00:00+00:00", session="s3")
    fake.clear()
    _chat(server, asked, "2024-11-02T18:00:00+00:00", session="s4")
    system = fake.chat_requests[-1]["messages"][0]["content"]
    line = next(x for x in system.splitlines() if x.startswith("- diet"))
    assert diet not in line.replace("no mushrooms", "")
    facts = httpx.get(f"{server}/v1/users/li/profile", params={"key": "diet"}).json()["facts"]
    assert (diet, False) in [(f["value"], f["current"]) for f in facts]


@pytest.mark.parametrize(
    ("before", "now", "old", "new"),
    [
        ("I'm vegetarian, and I don't eat mushrooms.", "I've started eating fish again, so I'm pescatarian now.",
         "vegetarian", "pescatarian"),
        ("我是素食主义者，也不吃辣", "I'm vegan now.", "吃素", "vegan"),
    ],
)  # fmt: skip
def test_http_a_new_kind_of_diet_ends_the_one_before(
    server: str, fake: FakeOpenAI, before: str, now: str, old: str, new: str
) -> None:
    """A user who was vegetarian and now eats fish: the prompt said "diet: vegetarian, pescatarian",
    the old kind first. One kind of diet ends the one before; what the user does not eat stays."""
    _chat(server, before, "2024-10-01T10:00:00+00:00")
    _chat(server, now, "2024-10-10T10:00:00+00:00")
    fake.clear()
    _chat(server, "What should I cook tonight?", "2024-10-11T18:00:00+00:00", session="s2")
    system = fake.chat_requests[-1]["messages"][0]["content"]
    line = next(x for x in system.splitlines() if x.startswith("- diet"))
    assert new in line and old not in line.replace("不吃辣", "") and ("mushrooms" in line or "不吃辣" in line)
    facts = httpx.get(f"{server}/v1/users/li/profile", params={"key": "diet"}).json()["facts"]
    assert (old, False) in [(f["value"], f["current"]) for f in facts]


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("我对海鲜过敏，而且不吃香菜", [("diet", "不吃香菜"), ("allergies", "海鲜")]),
        ("我喜欢猫，也喜欢狗", [("likes", "猫"), ("likes", "狗")]),
        ("我是素食主义者，也不吃辣", [("diet", "吃素"), ("diet", "不吃辣")]),
        ("我妈吃素，也不吃辣", []),  # the clause before is about someone else
        ("他喜欢猫，也喜欢狗", []),
    ],
)
def test_a_chinese_clause_without_its_subject_goes_on_from_wo(
    text: str, found: list[tuple[str, str]]
) -> None:
    """A walk-through's "我对海鲜过敏，而且不吃香菜" kept the allergy and lost the second clause, whose 我 is
    dropped as Chinese does."""
    assert [(o.key, o.value) for o in extract(text)] == found


# -- what others call the user, said alone ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("大家叫我小明", "小明"),
        ("朋友们都叫我小明", "小明"),
        ("我朋友都叫我阿杰", "阿杰"),
        ("身边的人都叫我芳芳。", "芳芳"),
        ("my friends call me Bobby", "Bobby"),
        ("Everyone calls me Bobby for short.", "Bobby"),
        ('everybody calls me "Liz"', "Liz"),
    ],
)
def test_what_others_call_the_user_said_alone_is_the_preferred_name(text: str, name: str) -> None:
    assert detect(text) == []  # no request: a fact, applied only while the user asked for no name
    assert [(o.key, o.value) for o in extract(text)] == [(PREFERRED_NAME, name)]


@pytest.mark.parametrize(
    "text",
    [
        "我妈叫我小明",  # one person's pet name
        "大家都叫我去",
        "大家都叫我加油",  # 叫我 as "tell me to": no nickname's shape
        "大家都叫我小心点",
        "大家都叫我老师",  # a title
        "以前大家都叫我小胖",  # the past
        "如果大家都叫我小明",
        "大家都叫我小明吗？",
        "大家都叫我小明，但我不喜欢",  # set against
        "my mom calls me every day",
        "my friends call me crazy",
        "my friends call me when they need help",
        "my friends used to call me Bobby",
        "Nobody calls me Bobby anymore",
        "my boss calls me Bobby but I hate it",
        "everyone calls me Bobby but I hate it",
        "my friends call me Bobby?",
        "everyone calls me Mom",
        "They call me Dave at work",
    ],
)
def test_what_others_call_the_user_states_no_name_otherwise(text: str) -> None:
    assert [o for o in extract(text) if o.key == PREFERRED_NAME] == []
    assert [c for c in detect(text) if c.kind == "rename"] == []


@pytest.mark.parametrize(
    ("text", "name", "called"),
    [
        ("我叫李伟，大家都叫我小李", "李伟", "小李"),
        ("My name is Robert, my friends call me Bobby.", "Robert", "Bobby"),
        ("My name is Robert and everyone calls me Bobby", "Robert", "Bobby"),
    ],
)
def test_a_name_then_what_others_call_the_user_renames_without_a_but(
    text: str, name: str, called: str
) -> None:
    assert [(c.kind, c.value) for c in detect(text)] == [("rename", called)]
    assert [(o.key, o.value) for o in extract(text)] == [("name", name)]


@pytest.mark.parametrize(
    ("text", "rule", "name"),
    [
        ("我叫李伟，大家都叫我加油", "zh_my_name_is", "李伟"),
        ("my name is Robert and people call me lazy", "en_my_name_is", "Robert"),
    ],
)
def test_a_name_then_no_nickname_keeps_the_name(text: str, rule: str, name: str) -> None:
    assert [(c.rule, c.value) for c in detect(text)] == [(rule, name)]


def test_what_others_call_the_user_never_replaces_a_name_the_user_asked_for(store: SQLiteStore) -> None:
    p = Profile(store)
    at = [T0 + timedelta(days=d) for d in range(6)]
    # A name statement is no request: what others call the user replaces it as the name to use.
    rename = detect("我叫李伟")[0]
    p.set("u", PREFERRED_NAME, str(rename.value), at=at[0], source_turn_ids=[1])
    apply(p, "u", extract("我叫李伟"), at=at[0], source_turn_ids=[1])
    apply(p, "u", extract("朋友们都叫我小李"), at=at[1], source_turn_ids=[2])
    assert p.get("u", PREFERRED_NAME).value == "小李"  # type: ignore[union-attr]
    apply(p, "u", extract("大家都叫我阿伟"), at=at[2], source_turn_ids=[3])
    assert p.get("u", PREFERRED_NAME).value == "阿伟"  # type: ignore[union-attr]
    # A name the user asked for ("叫我大王") holds against what others call them, later or replayed.
    p.set("u", PREFERRED_NAME, "大王", at=at[3], source_turn_ids=[4])
    apply(p, "u", extract("my friends call me Bobby"), at=at[4], source_turn_ids=[5])
    apply(p, "u", extract("大家都叫我阿伟"), at=at[2], source_turn_ids=[3])  # the P2 job re-reading turn 3
    assert p.get("u", PREFERRED_NAME).value == "大王"  # type: ignore[union-attr]
    assert "Bobby" not in [f.value for f in p.history("u", PREFERRED_NAME)]


def test_http_what_friends_call_the_user_reaches_the_prompt_until_a_name_is_asked_for(
    server: str, fake: FakeOpenAI
) -> None:
    _chat(server, "朋友们都叫我小明", "2024-10-01T10:00:00+00:00")
    fake.clear()
    _chat(server, "早", "2024-10-02T08:00:00+00:00", session="s2")
    assert "preferred name (call the user this): 小明" in fake.chat_requests[-1]["messages"][0]["content"]
    _chat(server, "以后叫我大王吧", "2024-10-03T08:00:00+00:00", session="s2")
    _chat(server, "my friends call me Bobby", "2024-10-04T08:00:00+00:00", session="s2")
    current = httpx.get(f"{server}/v1/users/li/profile", params={"current": "true"}).json()["facts"]
    assert {f["key"]: f["value"] for f in current}["preferred_name"] == "大王"
    fake.clear()
    _chat(server, "早", "2024-10-05T08:00:00+00:00", session="s3")
    system = fake.chat_requests[-1]["messages"][0]["content"]
    assert "preferred name (call the user this): 大王" in system


# -- several pets, each by its name ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "pets"),
    [
        ("我养了两只猫，一只叫汤圆一只叫饺子", ["猫 汤圆", "猫 饺子"]),
        ("我养了两只猫，一只叫汤圆，另一只叫饺子", ["猫 汤圆", "猫 饺子"]),
        ("我养了两只猫，分别叫汤圆和饺子", ["猫 汤圆", "猫 饺子"]),
        ("我养了两只猫，叫汤圆和饺子", ["猫 汤圆", "猫 饺子"]),  # was one pet named "汤圆和饺子"
        ("我家的猫叫汤圆和饺子", ["猫 汤圆", "猫 饺子"]),
        ("我有两只狗，分别叫大黄和小黑", ["狗 大黄", "狗 小黑"]),
        ("我养了两只柯基，分别叫豆包和馒头", ["柯基 豆包", "柯基 馒头"]),
        ("我养了两只猫，一只叫汤圆，一只叫饺子，还有一只狗叫旺财", ["猫 汤圆", "猫 饺子", "狗 旺财"]),
        ("我养了一只猫和一只狗", ["猫", "狗"]),
        ("I have two cats, Mochi and Tofu", ["cat Mochi", "cat Tofu"]),
        ("we have two dogs named Max and Rex", ["dog Max", "dog Rex"]),
        ("We've got two cats, Mochi and Tofu.", ["cat Mochi", "cat Tofu"]),
        ("my dog Max and my cat Luna", ["dog Max", "cat Luna"]),
        ("I have a dog and a cat, Max and Luna", ["dog Max", "cat Luna"]),  # was dog, cat, Max, Luna
        ("I have a cat and a dog named Max", ["cat", "dog Max"]),
        ("I have two cats, Mochi and Tofu, and a dog named Rex", ["cat Mochi", "cat Tofu", "dog Rex"]),
        ("I have two cats and a dog", ["cats", "dog"]),
        ("My cats are called Mochi and Tofu", ["cat Mochi", "cat Tofu"]),
        ("My dogs' names are Max and Rex", ["dog Max", "dog Rex"]),
        ("I have a dog named Max and a cat named Luna", ["dog Max", "cat Luna"]),  # was "dog Max"
    ],
)
def test_several_pets_are_one_fact_each_with_its_name(text: str, pets: list[str]) -> None:
    assert [o.value for o in extract(text) if o.key == "pets"] == pets


@pytest.mark.parametrize(
    ("text", "pets"),
    [
        ("I have a cat and she's adorable", ["cat"]),  # was also a pet "she's adorable"
        ("My cats are Siamese", []),
        ("My dogs are Huskies", []),
        ("我养了一只猫，叫声很大", ["猫"]),  # 叫 is its voice: was a cat named 声很大
        ("我家的狗叫得很凶", ["狗"]),
        ("我朋友养了两只猫，一只叫汤圆一只叫饺子", []),
        ("如果我养了两只猫，一只叫汤圆一只叫饺子", []),
        ("my sister has two cats, Mochi and Tofu", []),
        ("do you have two cats, Mochi and Tofu?", []),
    ],
)
def test_what_is_no_pet_name_names_no_pet(text: str, pets: list[str]) -> None:
    assert [o.value for o in extract(text) if o.key == "pets"] == pets


# -- what ends, what is planned, quoted or asked ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        ("我不住在北京了，现在在广州", [("location", "广州", "set"), ("location", "北京", "retract")]),
        ("I don't live in London anymore", [("location", "London", "retract")]),
        ("I used to live in Paris", [("location", "Paris", "retract")]),
        ("我以前住在北京", [("location", "北京", "retract")]),
        ("我在杭州住过一段时间", []),  # once lived there: was the location 杭州
        ("我在上海生活过三年", []),
        ("我上个月从北京搬到了上海", [("location", "上海", "set")]),  # 从X: where from, not where now
        ("其实我住在成都，不是重庆", [("location", "成都", "set")]),
        (
            "actually I live in Chengdu not Chongqing",
            [("location", "Chengdu", "set")],
        ),  # was "Chengdu not Chongqing"
        ("我不是老师了", [("occupation", "老师", "retract")]),
        ("我已经不当老师了", [("occupation", "老师", "retract")]),
        ("I'm not a teacher anymore", [("occupation", "teacher", "retract")]),
        ("I'm no longer a nurse", [("occupation", "nurse", "retract")]),
        ("I used to be a teacher", [("occupation", "teacher", "retract")]),
        # Whatever the job was: it ends before the new one the message gives.
        ("我辞职了", [("occupation", "", "retract")]),
        ("I got laid off", [("occupation", "", "retract")]),
        (
            "I quit my job, now I'm a barista",
            [("occupation", "", "retract"), ("occupation", "barista", "set")],
        ),
        ("我辞职了，现在是自由职业者", [("occupation", "", "retract"), ("occupation", "自由职业者", "set")]),
        ("我和男朋友分手了", [("partner_name", "", "retract")]),
        ("My girlfriend and I broke up", [("partner_name", "", "retract")]),
        ("I broke up with Jake", [("partner_name", "Jake", "retract")]),
    ],
)
def test_what_no_longer_holds_ends(text: str, facts: list[tuple[str, str, str]]) -> None:
    assert [(o.key, o.value, o.op) for o in extract(text)] == facts


@pytest.mark.parametrize(
    "text",
    [
        # plans: a Chinese verb has no tense, the time word says it is to come
        "我下个月搬到上海",
        "我明年去北京当老师",
        "我明天就辞职了",
        "我想辞职了",
        "I want to quit my job",
        "I'm going to quit my job",
        "Should I quit my job?",
        # questions, without a question mark too
        "我对花生过敏吗",  # was an allergy to 花生
        "我住在上海吗",  # was the location "上海吗"
        "我们分手了吗",
        # someone else's
        "我妈辞职了",
        "我姐离婚了",
        "my sister got fired",
        "我朋友和她男朋友分手了",
        "My sister moved to Boston",
        "My friend's wife is Anna",
        "我前男友叫阿杰",
        "My ex-boyfriend is called Jake",
        "我老公是医生",  # was the partner "医生"
        "我老婆是四川的",
        # quoted: someone's words
        'My friend said "my name is Bob"',  # was the name Bob, and a rename
        'She told me "I\'m allergic to peanuts"',  # was an allergy
        '他说"我辞职了"',
        "He said my name is Bob",  # reported: someone else's words
        "我们分手了，又和好了",  # undone in the same message
        # suppositions and wishes
        "If I were a doctor I'd help people",
        "如果我是医生就好了",
        "my mom said I should be a lawyer",
        "我爸说我应该当律师",
    ],
)
def test_plans_questions_quotes_and_others_state_nothing(text: str) -> None:
    assert extract(text) == []
    assert detect(text) == []


def test_a_job_quit_and_a_breakup_end_the_fact_in_force(store: SQLiteStore) -> None:
    p = Profile(store)
    said = ["我是一名护士", "我男朋友叫阿杰", "我辞职了", "我和男朋友分手了", "我现在是设计师"]
    for i, text in enumerate(said):
        apply(p, "u", extract(text), at=T0 + timedelta(days=i), source_turn_ids=[i + 1])
        if i == 1:
            assert p.values("u", "occupation") == ["护士"] and p.values("u", "partner_name") == ["阿杰"]
    assert p.values("u", "occupation") == ["设计师"] and p.values("u", "partner_name") == []
    assert [f.value for f in p.history("u", "occupation")] == ["护士", "设计师"]
    # Re-reading the old turns (the P2 job) ends nothing that came after them.
    apply(p, "u", extract("我辞职了"), at=T0 + timedelta(days=2), source_turn_ids=[3])
    assert p.values("u", "occupation") == ["设计师"]


def test_http_a_move_away_and_a_quit_job_leave_the_prompt(server: str, fake: FakeOpenAI) -> None:
    _chat(server, "我是一名老师，住在北京", "2024-10-01T10:00:00+00:00")
    current = httpx.get(f"{server}/v1/users/li/profile", params={"current": "true"}).json()["facts"]
    assert {f["key"]: f["value"] for f in current} == {"occupation": "老师", "location": "北京"}
    _chat(server, "I quit my job", "2024-10-05T10:00:00+00:00")
    _chat(server, "我不住在北京了，现在在广州", "2024-10-09T10:00:00+00:00")
    current = httpx.get(f"{server}/v1/users/li/profile", params={"current": "true"}).json()["facts"]
    values = {f["key"]: f["value"] for f in current}
    assert values.get("location") == "广州" and "occupation" not in values
    fake.clear()
    _chat(server, "早", "2024-10-10T08:00:00+00:00", session="s2")
    system = fake.chat_requests[-1]["messages"][0]["content"]
    assert "location: 广州" in system and "occupation:" not in system
