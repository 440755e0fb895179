"""What the companion remembers when a person states several things at once or their life changes:
lists of pets and people, no allergies at all, a relative who died, birthdays and anniversaries (with
the date resolved and named in the prompt near the day). Each in both languages, with phrasing that
must NOT change anything; the HTTP test (in
`test_profile_changes.py`) drives `memsched serve`'s app on loopback."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memsched.memory import Memory, newer_first
from memsched.model import Candidate
from memsched.profile import Profile
from memsched.profile_extract import apply, extract, month_day
from memsched.store.sqlite import SQLiteStore

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)


def _values(text: str, key: str) -> list[str]:
    return [o.value for o in extract(text) if o.key == key and o.op == "set"]


def _walk(store: SQLiteStore, said: list[str], start: datetime = T0) -> Profile:
    p = Profile(store)
    for i, text in enumerate(said):
        apply(p, "u", extract(text), at=start + timedelta(days=i), source_turn_ids=[i + 1])
    return p


# -- lists -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "pets"),
    [
        ("I have a dog named Max and a cat called Luna.", ["dog Max", "cat Luna"]),
        ("We adopted a puppy named Rex and a kitten named Tig", ["puppy Rex", "kitten Tig"]),
        (
            "I have a dog named Max, a cat called Luna and a rabbit named Bun.",
            ["dog Max", "cat Luna", "rabbit Bun"],
        ),
        ("I have a cat called Luna and a dog", ["cat Luna", "dog"]),
        ("I have a cat called Luna and a cat Sadly died", ["cat Luna"]),  # no name: an adverb
        ("我有两只猫，咪咪和花花。", ["猫 咪咪", "猫 花花"]),
        ("我养了两只狗，豆豆和乐乐", ["狗 豆豆", "狗 乐乐"]),
        ("我有一只猫和一只狗，咪咪和豆豆", ["猫 咪咪", "狗 豆豆"]),
        ("我有两只猫，白天和晚上都睡觉", ["猫"]),  # times of day, no names
    ],
)
def test_every_pet_of_a_list_is_kept_with_its_name(text: str, pets: list[str]) -> None:
    assert _values(text, "pets") == pets


@pytest.mark.parametrize(
    ("text", "people"),
    [
        ("My sisters Anna and Mia are visiting.", ["sister Anna", "sister Mia"]),
        ("I have two brothers, Tom and Sam.", ["brother Tom", "brother Sam"]),
        ("my kids are called Leo, Max and Ava", ["child Leo", "child Max", "child Ava"]),
        ("我有两个姐姐，小红和小丽。", ["姐姐 小红", "姐姐 小丽"]),
        ("我的两个儿子叫大宝和二宝", ["儿子 大宝", "儿子 二宝"]),
    ],
)
def test_several_people_named_at_once_are_each_kept(text: str, people: list[str]) -> None:
    assert _values(text, "people") == people


@pytest.mark.parametrize(
    "text",
    ["Do my sisters Anna and Mia know?", "If my brothers Tom and Sam come, we'll cook", "我有两个姐姐"],
)
def test_what_names_no_list_of_people(text: str) -> None:
    assert _values(text, "people") == []


# -- no allergies ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "said",
    [
        "I don't have any allergies.",
        "I'm not allergic to anything anymore.",
        "I have no known allergies",
        "Good news, I outgrew my allergies",
        "我不过敏。",
        "我什么都不过敏",
        "我现在没有过敏的东西了",
        "我没有过敏史",
    ],
)
def test_no_allergies_at_all_clears_every_allergy(store: SQLiteStore, said: str) -> None:
    p = _walk(store, ["I'm allergic to peanuts and shellfish", "我对芒果过敏", said])
    assert p.values("u", "allergies") == []


@pytest.mark.parametrize(
    "said",
    [
        "I don't have any allergies except penicillin",
        "Do I have any allergies?",
        "If I don't have allergies, I can eat anything",
        "除了芒果我什么都不过敏",
        "我也过敏",  # agreeing with someone: no allergen, nothing cleared
        "I'm not allergic to peanuts",  # one allergy, not all
    ],
)
def test_what_clears_no_allergies(store: SQLiteStore, said: str) -> None:
    p = _walk(store, ["I'm allergic to shellfish", "我对芒果过敏", said])
    assert p.values("u", "allergies") == ["shellfish", "芒果"]


@pytest.mark.parametrize("said", ["我也过敏", "我不过敏", "我没有什么过敏的"])
def test_a_negation_or_an_adverb_is_no_allergen(said: str) -> None:
    assert _values(said, "allergies") == []  # was 也, 不, 没有什么


# -- a relative who died -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("had", "said", "lost", "when", "left"),
    [
        (
            ["My grandma Rose lives in Leeds"],
            "My grandma passed away last spring.",
            "grandma Rose",
            "last spring",
            [],
        ),
        (["My sister Anna is a nurse"], "my dad died in 2019", "dad", "in 2019", ["sister Anna"]),
        (["我奶奶叫王芳"], "我奶奶去年去世了。", "奶奶 王芳", "去年", []),
        (
            ["I have two brothers, Tom and Sam."],
            "I lost my brother Tom to cancer",
            "brother Tom",
            "",
            ["brother Sam"],
        ),
        (
            ["我有两个姐姐，小红和小丽。"],
            "我姐姐去世了",
            "姐姐",
            "",
            ["姐姐 小红", "姐姐 小丽"],
        ),  # which one?
    ],
)
def test_a_relative_who_died_is_remembered_as_lost_not_as_someone_to_ask_after(
    store: SQLiteStore, had: list[str], said: str, lost: str, when: str, left: list[str]
) -> None:
    p = _walk(store, [*had, said])
    assert p.values("u", "people") == left
    [fact] = p.facts("u", "losses", current=True)
    assert fact.value == lost and fact.meta.get("when", "") == when
    section = p.section("u", now=T0 + timedelta(days=5))
    assert f"{lost} (passed away{' ' + when if when else ''}; told 2026-03-0{len(had) + 1})" in section
    assert "never ask after them" in section


def test_a_partner_who_died_is_no_current_partner(store: SQLiteStore) -> None:
    p = _walk(store, ["My husband is called David", "My husband passed away in March"])
    assert p.values("u", "partner_name") == []
    assert p.values("u", "losses") == ["husband"]


@pytest.mark.parametrize(
    "said",
    [
        "my mom almost died in the accident",
        "My grandma is dying",
        "Did your grandma pass away?",
        "我妈走了，我终于可以打游戏了",  # she left the room
        "If my dad died I don't know what I'd do",
        "I lost my mom in the crowd",
    ],
)
def test_what_is_no_loss(said: str) -> None:
    assert _values(said, "losses") == []


# -- birthdays and anniversaries ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("我生日是十月五号", "birthday", "October 5"),
        ("my birthday is in May", "birthday", "May"),
        ("My birthday's on the 3rd of March", "birthday", "March 3"),
        ("our anniversary is June 3rd", "dates", "anniversary: June 3"),
        ("Our wedding anniversary is on the 14th of February", "dates", "wedding anniversary: February 14"),
        ("my mom's birthday is in May", "dates", "mom's birthday: May"),
        ("My sister Anna's birthday is August 9", "dates", "sister Anna's birthday: August 9"),
        ("我妈妈的生日是五月十二号", "dates", "妈妈的生日: May 12"),
        ("我们的结婚纪念日是六月三号", "dates", "结婚纪念日: June 3"),
        # Numeric day and month: read when only one order is a date; "4/5" stays as said.
        ("My birthday is 3/14, just so you know.", "birthday", "March 14"),
        ("my birthday is on 14/3", "birthday", "March 14"),
        ("我生日是3/14", "birthday", "March 14"),
        ("My birthday is 4/5.", "birthday", "4/5"),
        ("My dad's birthday is 11/23", "dates", "dad's birthday: November 23"),
    ],
)
def test_a_date_is_kept_resolved(text: str, key: str, value: str) -> None:
    assert _values(text, key) == [value]


@pytest.mark.parametrize(
    "said", ["When is my mom's birthday?", "我妈妈的生日是哪天？", "if our anniversary is June 3rd"]
)
def test_what_states_no_date(said: str) -> None:
    assert _values(said, "dates") == [] and _values(said, "birthday") == []


@pytest.mark.parametrize(
    ("said", "resolved"),
    [("三月三号", "March 3"), ("1990年3月5日", "March 5, 1990"), ("一九九〇年十二月二十五日", "December 25, 1990"),
     ("1990-03-03", "March 3, 1990"), ("3/3/1990", None), ("March 32", None), ("Smarch 3", None),
     ("3/14", "March 14"), ("14/3/1995", "March 14, 1995"), ("4/5", None), ("13/13", None), ("2/40", None), ("0/14", None)],
)  # fmt: skip
def test_month_day(said: str, resolved: str | None) -> None:
    assert month_day(said) == resolved


def test_a_date_said_again_replaces_the_one_before_and_is_named_near_the_day(store: SQLiteStore) -> None:
    p = _walk(
        store, ["my mom's birthday is in May", "our anniversary is June 3rd", "my mom's birthday is May 12"]
    )
    assert p.values("u", "dates") == ["anniversary: June 3", "mom's birthday: May 12"]
    p.set("u", "birthday", "June 10", at=T0)
    near = p.section("u", now=datetime(2026, 5, 30, 12, tzinfo=UTC))
    assert "- birthday: June 10 (in 11 days)" in near
    assert "anniversary: June 3 (in 4 days), mom's birthday: May 12\n" in near + "\n"
    assert "(today)" in p.section("u", now=datetime(2026, 5, 12, 9, tzinfo=UTC))
    far = p.section("u", now=datetime(2026, 9, 1, tzinfo=UTC))
    assert "(in " not in far and "(today)" not in far
    # A date after New Year is near from December
    p.set("u", "birthday", "January 2", at=T0 + timedelta(days=9))
    assert "- birthday: January 2 (in 4 days)" in p.section("u", now=datetime(2026, 12, 29, tzinfo=UTC))


def test_a_near_date_is_the_last_line_a_tight_budget_drops(store: SQLiteStore) -> None:
    p = _walk(store, ["I'm allergic to peanuts", "I have a cat called Luna", "our anniversary is June 3rd"])
    count = lambda s: len(s.split())  # noqa: E731 - a word count is budget enough here
    near = p.section("u", max_tokens=20, count=count, now=datetime(2026, 6, 1, tzinfo=UTC))
    assert "anniversary: June 3 (in 2 days)" in near and "peanuts" not in near
    far = p.section("u", max_tokens=20, count=count, now=datetime(2026, 9, 1, tzinfo=UTC))
    assert "anniversary" not in far and "peanuts" in far and "cat Luna" in far


# -- recall when a fact changed ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "question"),
    [
        (
            "I live in Paris, in a small flat near the canal.",
            "We moved to Berlin, the new place is bigger.",
            "Where do I live?",
        ),
        ("我住在成都，离春熙路不远。", "我们搬到上海了，新家比以前大。", "我现在住在哪里？"),
    ],
)
def test_recall_brings_the_newer_statement_of_a_changed_fact_first(
    tmp_path: Path, old: str, new: str, question: str
) -> None:
    mem = Memory(home=tmp_path / "home", embedders="hash")
    try:
        p = Profile(mem.store)
        chat = [
            "We saw a live band at the pub, the singer was amazing",
            "I'd love to live somewhere with a garden one day",
            "我想住在海边，每天看日出",
            "work was exhausting today",
        ] * 6
        turns = [
            mem.add("u", f"s{i}", "user", text, created_at=T0 + timedelta(days=i))
            for i, text in enumerate(chat)
        ]
        said = [
            mem.add("u", "a", "user", old, created_at=T0),
            mem.add("u", "b", "user", new, created_at=T0 + timedelta(days=60)),
        ]
        for turn in [*turns, *said]:
            assert turn.id is not None
            apply(p, "u", extract(turn.content), at=turn.created_at, source_turn_ids=[turn.id])
        assert p.newer_sources("u") == {said[0].id: [said[1].id]}
        result = mem.context("u", question, now=T0 + timedelta(days=61), budget=300)
        recalled = [t.content for t in result.assembly.recalled]
        assert new in recalled
        # the section says which is in force
        assert "formerly" in p.section("u")
    finally:
        mem.close()


def test_newer_first_moves_or_brings_the_newer_statement_before_the_older() -> None:
    top = [Candidate(1, fused=0.9), Candidate(2, fused=0.5), Candidate(3, fused=0.4)]
    assert [c.turn_id for c in newer_first(top, {1: [3]}, set())] == [3, 1, 2]
    assert [c.turn_id for c in newer_first(top, {2: [7]}, set())] == [1, 7, 2, 3]
    assert [c.turn_id for c in newer_first(top, {2: [7]}, {7})] == [1, 2, 3]  # 7 is in the recent window
    assert [c.turn_id for c in newer_first(top, {3: [1]}, set())] == [1, 2, 3]  # already first
    assert newer_first(top, {1: [3]}, set())[0].reason == "states what replaced turn 1"


# -- the walk: natural ways people state and change facts about themselves -----------------------


@pytest.mark.parametrize(
    ("said", "key", "now"),
    [
        # a job change
        (
            ["I work as a nurse.", "I got a new job as a software engineer at Google."],
            "occupation",
            ["software engineer"],
        ),
        (["I'm a teacher.", "I just started working as a barista."], "occupation", ["barista"]),
        (["I'm a teacher.", "I switched careers, I'm a nurse now."], "occupation", ["nurse"]),
        (["I'm a teacher.", "I'm retired now."], "occupation", ["retired"]),
        (["我是一名老师", "我退休了。"], "occupation", ["退休"]),
        (["我是一名护士", "我换工作了，现在是产品经理。"], "occupation", ["产品经理"]),
        # a breakup, then a new partner
        (
            [
                "My boyfriend is called Tom.",
                "My boyfriend and I broke up.",
                "I'm seeing someone new, his name is Jake.",
            ],
            "partner_name",
            ["Jake"],
        ),
        (["My girlfriend is called Anna.", "I have a new girlfriend, Emma."], "partner_name", ["Emma"]),
        (["My girlfriend is called Anna.", "My new girlfriend Emma is lovely."], "partner_name", ["Emma"]),
        (["我男朋友叫阿杰", "我和男朋友分手了", "我交了新女朋友，她叫小美。"], "partner_name", ["小美"]),
        (["我有男朋友了，他叫阿杰。"], "partner_name", ["阿杰"]),
        # a breakup with the partner named first
        (["My boyfriend is called Jake.", "Jake and I split up last week."], "partner_name", []),
        (["My girlfriend is called Mia.", "Mia dumped me, I'm a mess."], "partner_name", []),
        (["我女朋友叫小雅", "小雅和我分手了，好难受"], "partner_name", []),
        (["我男朋友叫阿杰", "阿杰把我甩了"], "partner_name", []),
        (["My boyfriend is called Jake.", "Sarah and I split up last week."], "partner_name", ["Jake"]),
        (["我结婚了，老公叫李明。"], "partner_name", ["李明"]),
        # a relation corrected
        (
            [
                "My brother Leo lives in Ohio.",
                "Leo isn't my brother, he's my cousin, we just grew up together.",
            ],
            "people",
            ["cousin Leo"],
        ),
        (
            ["My sister Anna is visiting.", "Anna is actually my stepsister, not my sister."],
            "people",
            ["stepsister Anna"],
        ),
        (["我妹妹叫小林", "小林不是我妹妹，是我表妹"], "people", ["表妹 小林"]),
        (["我姐姐叫小红", "其实小红是我闺蜜，不是我姐"], "people", ["闺蜜 小红"]),
        # moving
        (["I live in Boston.", "We relocated to Austin for my husband's job."], "location", ["Austin"]),
        # a diet change
        (["I'm vegetarian.", "I started eating meat again."], "diet", []),
        (["I'm vegan and I don't eat pork", "I stopped being vegan"], "diet", ["no pork"]),
        (["我吃素", "我又开始吃肉了。"], "diet", []),
        (["我不吃辣", "我现在开始吃素了"], "diet", ["不吃辣", "吃素"]),
        # quitting smoking, drinking; taking it up again
        (["I quit smoking three months ago!"], "habits", ["quit smoking"]),
        (["I've stopped drinking."], "habits", ["quit drinking"]),
        (["我戒烟了。"], "habits", ["戒烟"]),
        (["我已经戒了酒"], "habits", ["戒酒"]),
        (["I quit smoking.", "I started smoking again"], "habits", []),
        (["I quit smoking.", "我又开始抽烟了"], "habits", []),
    ],
)
def test_a_change_of_life_is_read(store: SQLiteStore, said: list[str], key: str, now: list[str]) -> None:
    assert _walk(store, said).values("u", key) == now


@pytest.mark.parametrize(
    ("said", "key"),
    [
        ("I want to quit smoking", "habits"),
        ("I'm trying to quit smoking", "habits"),
        ("我想戒烟", "habits"),
        ("我爸戒烟了", "habits"),
        ("Did you quit smoking?", "habits"),
        ("My dad is retired", "occupation"),
        ("I'm not retired yet", "occupation"),
        ("If I retired I'd travel", "occupation"),
        ("Should I start eating meat again?", "diet"),
        ("我妈又开始吃肉了", "diet"),
        ("Sarah and I split up the bill", "partner_name"),
        ("Is Sam my cousin, not my brother?", "people"),
        ("It's my cousin, not my brother", "people"),
        ("Tom left me a note on the fridge", "partner_name"),
        ("Did Jake and I break up?", "partner_name"),
    ],
)
def test_what_changes_nothing(said: str, key: str) -> None:
    assert [o for o in extract(said) if o.key == key] == []
