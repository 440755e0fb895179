"""The rule lists skip the patterns whose script a message lacks (`memsched.text.scripts`), and
`commands.detect` answers a message read before from its cache: the facts and commands read are the
same as when every pattern runs on every message."""

from __future__ import annotations

import re

import pytest

from memsched import commands, profile_rules
from memsched.commands import Command, detect
from memsched.profile_extract import Observation, extract
from memsched.text.scripts import HAN, HAN_RANGES, LATIN, LATIN_RANGES, ByScript, needs, present


def _class(ranges: tuple[tuple[int, int], ...]) -> str:
    return "[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in ranges) + "]"


@pytest.mark.parametrize(("script", "ranges"), [(LATIN, LATIN_RANGES), (HAN, HAN_RANGES)])
def test_every_character_a_pattern_of_the_script_can_match_counts_as_the_script(
    script: str, ranges: tuple[tuple[int, int], ...]
) -> None:
    # A pattern needs a script when its characters are all in `ranges`; under re.IGNORECASE they
    # match more characters than they are ("s" matches "ſ", "k" the Kelvin sign "K"). Every one of
    # those must make the text count as of the script, or the pattern would be skipped on a text
    # it matches.
    folded = re.compile(_class(ranges), re.IGNORECASE)
    missed = [
        f"U+{cp:04X}"
        for cp in range(0x110000)
        if folded.fullmatch(chr(cp)) is not None and script not in present(chr(cp))
    ]
    assert missed == []


def test_long_s_and_kelvin_sign_run_a_case_insensitive_english_pattern() -> None:
    rules = ByScript([("sk", re.compile(r"\bsk[a-z]+", re.IGNORECASE))], lambda r: r[1])
    for text in ("ſki", "ſ\u212ai", "滑雪 ſ\u212ai"):  # "ski" with a long s, and a Kelvin sign for k
        assert rules.at(text)[0][1].search(text) is not None
        assert rules.at(text) == rules.at("ski")
    assert rules.at("我去滑雪") == []
    kelvin = ByScript([("k", re.compile("k", re.IGNORECASE))], lambda r: r[1])
    assert kelvin.at("7\u212a")[0][1].search("7\u212a") is not None  # a Kelvin sign its only letter


@pytest.mark.parametrize(
    ("pattern", "needed"),
    [
        (re.compile("叫我(?P<n>.+)"), {HAN}),
        (re.compile(r"\bcall me\b", re.IGNORECASE), {LATIN}),
        (re.compile("(?:叫我|call me)"), set()),  # either alternative: neither script for sure
        (re.compile("(?:叫我)?call me"), {LATIN}),  # an optional part needs nothing
        (re.compile("(?:叫我)+call me"), {HAN, LATIN}),
        (re.compile("(?<=我)call"), {HAN, LATIN}),  # a lookbehind reads the text too
        (re.compile("(?<!我)call"), {LATIN}),  # a negative one needs nothing
        (re.compile(r"[^a-z]+|\w+|.+"), set()),
        (re.compile("[a-z我]"), set()),  # a class of two scripts
        (re.compile("(?-i:[A-Z])", re.IGNORECASE), {LATIN}),
    ],
)
def test_what_a_pattern_needs_is_read_from_it(pattern: re.Pattern[str], needed: set[str]) -> None:
    assert needs(pattern) == needed


def _all_rules() -> list[tuple[str, re.Pattern[str]]]:
    out: list[tuple[str, re.Pattern[str]]] = []
    for rules in (profile_rules.RULES, profile_rules.RETRACT_RULES, profile_rules.END_RULES):
        out += [(r[0], r[2]) for r in rules]
    for lists in (
        profile_rules.PET_END_RULES,
        profile_rules.PEOPLE_RULES,
        profile_rules.PEOPLE_LIST_RULES,
        profile_rules.LOSS_RULES,
        profile_rules.DATE_RULES,
        commands.RENAME_RULES,
        commands.FORGET_RULES,
        commands.FORGET_ALL_RULES,
        commands.FORGET_TOPIC_RULES,
    ):
        out += [(r[0], r[1]) for r in lists]
    return out


MIXED = [
    "我叫李伟, call me Wei",
    "My name is Li Wei, 叫我小李就好",
    "Call me Wei，我住在上海",
    "I moved to 杭州 last year",
    "I love hiking and 火锅",
    "I work as a nurse. 我对花生过敏",
    "我养了一只猫叫Mochi",
    "忘掉刚才那句话, forget what I said",
    "my name iſ \u212aate",
    "Pleaſe call me \u212aaſper",
    "I'm a ſoftware engineer, 我住在杭州",
    "我叫李伟",
    "I live in Seattle",
]


@pytest.mark.parametrize("text", MIXED)
def test_a_rule_that_matches_a_message_is_one_its_scripts_run(text: str) -> None:
    for rule, pattern in _all_rules():
        if pattern.search(text) is not None:
            assert needs(pattern) <= present(text), rule


def test_every_rule_needs_a_script() -> None:
    # Else it runs on every message; not wrong, but the rule list's cost comes back.
    assert [rule for rule, pattern in _all_rules() if not needs(pattern)] == []


def test_a_mixed_message_reads_both_languages() -> None:
    assert detect("我叫李伟, call me Wei") == [
        Command(kind="rename", value="李伟", matched="我叫李伟", rule="zh_my_name_is")
    ]
    assert extract("我叫李伟, call me Wei") == [Observation("name", "李伟", rule="zh_my_name_is")]
    assert detect("My name is Li Wei, 叫我小李就好") == [
        Command(kind="rename", value="小李", matched="叫我小李就好", rule="zh_call_me_suffix")
    ]
    assert extract("My name is Li Wei, 叫我小李就好") == [
        Observation("name", "Li Wei", rule="zh_call_me_suffix")
    ]
    assert detect("Call me Wei，我住在上海") == [
        Command(kind="rename", value="Wei", matched="Call me Wei", rule="en_call_me")
    ]
    assert extract("Call me Wei，我住在上海") == [Observation("location", "上海", rule="zh_live_in")]
    assert extract("I love hiking and 火锅") == [
        Observation("likes", "hiking", rule="en_like"),
        Observation("likes", "火锅", rule="en_like"),
    ]
    assert extract("I work as a nurse. 我对花生过敏") == [
        Observation("allergies", "花生", rule="zh_allergic_to"),
        Observation("occupation", "nurse", rule="en_work_as"),
    ]


def test_the_case_insensitive_letters_still_read_an_english_statement() -> None:
    assert detect("my name iſ Kate") == [
        Command(kind="rename", value="Kate", matched="my name iſ Kate", rule="en_my_name_is")
    ]
    assert extract("my name iſ Kate") == [Observation("name", "Kate", rule="en_my_name_is")]
    assert detect("Please call me Kaſper") == [
        Command(kind="rename", value="Kaſper", matched="Please call me Kaſper", rule="en_call_me")
    ]


def test_detect_read_again_is_the_same_and_a_new_list() -> None:
    first = detect("以后叫我大王")
    first.append(Command(kind="forget_last"))  # a caller's list is its own
    again = detect("  以后叫我大王  ")
    assert [c.value for c in again] == ["大王"]
    assert detect("I prefer Liz") == []  # `named` is part of what is read
    assert [c.value for c in detect("I prefer Liz", named=True)] == ["Liz"]
    assert detect("I prefer Liz") == []


@pytest.mark.parametrize(
    "text", ["I ſtarted ſmoking again", "I started smokıng agaın", "I ſtarted ſmoKing again"]
)
def test_a_habit_said_with_folded_letters_is_read_not_a_crash(text: str) -> None:
    """HABIT_AGAIN matched "ſmoking" case-insensitively, and its lookup by the lowered word raised
    KeyError (the turn saying it failed)."""
    assert [(o.key, o.op, o.value) for o in extract(text)] == [
        (o.key, o.op, o.value) for o in extract("I started smoking again")
    ]
