"""A taste that changed: "I love a good steak, medium rare", then "I've gone vegetarian", kept "likes:
good steak" in the profile as a current fact beside the new diet ("I've gone" was not even read:
the rule wanted "I 've"); "我最喜欢喝奶茶了", then "我戒奶茶了！以后都不喝了", kept "likes: 奶茶". A meatless
diet ends the likes that name a meat (`profile_rules.MEAT_WORDS`; fish stays for a pescatarian); a
thing given up (戒X了, 不喝X了, "I quit coffee", "I don't drink soda anymore") ends the like of it and
is kept as a habit (戒奶茶, "quit coffee")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memsched.profile import DIET, HABITS, LIKES, Profile
from memsched.profile_extract import apply, extract
from memsched.store.sqlite import SQLiteStore

T0 = datetime(2026, 1, 7, 19, tzinfo=UTC)


def _say(p: Profile, text: str, day: int) -> None:
    apply(p, "u", extract(text), at=T0 + timedelta(days=day), source_turn_ids=[day + 1])


def test_going_vegetarian_ends_a_meat_like(store: SQLiteStore) -> None:
    p = Profile(store)
    _say(p, "I'm such a carnivore. I love a good steak, medium rare, with lots of garlic butter.", 0)
    _say(p, "I love sushi.", 1)
    assert any("steak" in v for v in p.values("u", LIKES))
    _say(p, "Big change: I've gone vegetarian. I just can't eat meat anymore.", 10)
    assert "vegetarian" in p.values("u", DIET)
    likes = p.values("u", LIKES)
    assert not any("steak" in v for v in likes), likes
    assert "sushi" in likes


def test_pescatarian_keeps_fish(store: SQLiteStore) -> None:
    p = Profile(store)
    _say(p, "I love grilled salmon.", 0)
    _say(p, "I love fried chicken.", 0)
    _say(p, "I'm pescatarian now.", 5)
    assert p.values("u", LIKES) == ["grilled salmon"]


def test_zh_meatless_ends_a_meat_like(store: SQLiteStore) -> None:
    p = Profile(store)
    _say(p, "我最喜欢吃红烧肉了", 0)
    _say(p, "我开始吃素了", 3)
    assert not any("肉" in v for v in p.values("u", LIKES))


@pytest.mark.parametrize(
    ("liked", "given_up", "thing", "habit"),
    [
        ("我最喜欢喝奶茶了，每天下午都要来一杯。", "我戒奶茶了！以后都不喝了。", "奶茶", "戒奶茶"),
        ("我很喜欢喝可乐", "我不喝可乐了", "可乐", None),
        ("I love coffee.", "I quit coffee last month.", "coffee", "quit coffee"),
        ("I love soda.", "I don't drink soda anymore.", "soda", None),
    ],
)
def test_a_thing_given_up_is_no_like(
    store: SQLiteStore, liked: str, given_up: str, thing: str, habit: str | None
) -> None:
    p = Profile(store)
    _say(p, liked, 0)
    assert thing in p.values("u", LIKES)
    _say(p, given_up, 7)
    assert thing not in p.values("u", LIKES)
    if habit:
        assert habit in p.values("u", HABITS)


@pytest.mark.parametrize(
    "text",
    ["我戒指丢了", "I quit my job today.", "I gave up on him.", "我不吃香菜", "I want to quit coffee."],
)
def test_not_a_taste_given_up(text: str) -> None:
    assert not [o for o in extract(text) if o.key in (LIKES, HABITS) and o.rule.endswith(("_other", "_like"))]


@pytest.mark.parametrize(
    ("text", "job"),
    [
        ("我在成都开了一家小花店，叫拾光花房，开了两年了。", "花店老板"),
        ("我自己经营一家咖啡馆", "咖啡馆老板"),
        ("I run a small bakery in Leeds.", "bakery owner"),
        ("I own a bookstore.", "bookstore owner"),
    ],
)
def test_running_a_shop_is_an_occupation(text: str, job: str) -> None:
    """ "我在成都开了一家小花店" left the profile without the user's work (a florist's week of orders
    and staff had no job to hang on)."""
    assert ("occupation", job) in [(o.key, o.value) for o in extract(text)]


@pytest.mark.parametrize("text", ["他在上海开了一家店", "I opened a can of soup.", "My mom runs a bakery."])
def test_not_running_a_shop(text: str) -> None:
    assert not [o for o in extract(text) if o.key == "occupation"]
