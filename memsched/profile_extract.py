"""Profile facts from what the user says: bilingual rule patterns (always, microseconds, applied with
the turn) and an LLM JSON extraction (a P2 job per page, when an LLM is configured).

The patterns, and which forms they read in each language, are in `profile_rules.py`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from memsched.commands import (
    NAME_RULES,
    ZH_NOT_NAME_FIRST,
    detect,
    ends_as_question,
    in_quote,
    named,
    nickname,
    others_call,
    stated_name,
    through_word,
    zh_full_name,
    zh_titled,
)
from memsched.errors import LLMError
from memsched.jobs.tasks import TaskContext, task
from memsched.model import Turn
from memsched.profile import (
    ALLERGIES,
    BIRTHDAY,
    DATES,
    DIET,
    DISLIKES,
    HABITS,
    HOMETOWN,
    KEYS,
    LIKES,
    LOCATION,
    LOSSES,
    MONTHS,
    MULTI_KEYS,
    NAME,
    OCCUPATION,
    PARTNER_NAME,
    PEOPLE,
    PETS,
    PREFERRED_NAME,
    SLEEP_TIME,
    TIMEZONE,
    Profile,
    same_value,
)
from memsched.profile_rules import (
    DATE_RULES,
    EN_BREEDS,
    EN_NOT_GREETING_NAMES,
    EN_PLACE,
    EN_V,
    END_RULES,
    HABIT_AGAIN,
    HABITS_SAME,
    KIN_CORRECTION_RULES,
    KIN_ONE,
    KIN_SAME,
    LOSS_RULES,
    MEAT_AGAIN,
    MEAT_WORDS,
    MEATLESS,
    PARTNER_WORDS,
    PEOPLE_LIST_RULES,
    PEOPLE_RULES,
    PET_END_RULES,
    PET_KIND_OR_BREED_EN,
    PET_KINDS_EN,
    PET_KINDS_ZH,
    RETRACT_RULES,
    RULES,
    ZH_V,
    clean_value,
)
from memsched.store import Tx
from memsched.text.en_names import intro_name
from memsched.text.places import is_place_en, is_place_zh
from memsched.text.scripts import IGNORECASE_FOLD, ByScript, present
from memsched.text.segment import ENGLISH_STOP_WORDS
from memsched.text.timeexpr import spans

if TYPE_CHECKING:
    from memsched.jobs.queue import Job
    from memsched.llm.client import ChatClient

log = logging.getLogger("memsched.profile")

# The rule lists as the rules that can match a text of each script (`scripts.needs`): an English
# message runs no Chinese pattern, a Chinese one no English pattern; a mixed message runs both.
_RULES = ByScript(RULES, lambda r: r[2])
_RETRACT_RULES = ByScript(RETRACT_RULES, lambda r: r[2])
_END_RULES = ByScript(END_RULES, lambda r: r[2])
_PET_END_RULES = ByScript(PET_END_RULES, lambda r: r[1])
_PEOPLE_RULES = ByScript(PEOPLE_RULES, lambda r: r[1])
_PEOPLE_LIST_RULES = ByScript(PEOPLE_LIST_RULES, lambda r: r[1])
_KIN_CORRECTION_RULES = ByScript(KIN_CORRECTION_RULES, lambda r: r[1])
_LOSS_RULES = ByScript(LOSS_RULES, lambda r: r[1])
_DATE_RULES = ByScript(DATE_RULES, lambda r: r[1])

Op = Literal["set", "retract"]
# "correct": the user corrects a value they gave ("No, I said Luna not Lola"): `old` becomes `value`
# in whichever fact in force holds it.
RuleOp = Literal["set", "retract", "correct"]


@dataclass(frozen=True, slots=True)
class Observation:
    """One fact a message states: `op` "set" (or "retract") `key` = `value`, found by `rule`."""

    key: str
    value: str
    op: RuleOp = "set"
    rule: str = ""
    old: str = ""
    when: str = ""  # a loss: when, as the user said it ("last spring", "去年")

    def as_dict(self) -> dict[str, Any]:
        out = {"key": self.key, "value": self.value, "op": self.op, "rule": self.rule}
        out = {**out, "old": self.old} if self.old else out
        return {**out, "when": self.when} if self.when else out


# -- values ----------------------------------------------------------------------------------------


_ZH_NUM = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}
_SLEEP_ZH = re.compile(
    r"我(?:一般|通常|平时|平常|每天|每晚|基本上?|总是)*(?:都)?(?:是)?(?P<part>晚上|夜里|凌晨|半夜)?"
    r"(?P<h>\d{1,2}|[一二两三四五六七八九十]{1,3})[点:：](?P<m>\d{2}|半)?(?:左右|前|多)?(?:就|才)?(?:睡|上床)"
)
_SLEEP_EN = re.compile(
    r"\bI (?:usually |normally |always |often |typically |generally )?(?:go to bed|go to sleep|sleep|fall asleep|turn in)"
    r" (?:at |around |by |before |about )+(?:(?P<midnight>midnight)|(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<ampm>am|pm|a\.m\.|p\.m\.)?)",
    re.I,
)


def _hour(raw: str) -> int | None:
    if raw.isdigit():
        return int(raw)
    if raw == "十":
        return 10
    if raw.startswith("十"):
        return 10 + _ZH_NUM.get(raw[1:], 0)
    return _ZH_NUM.get(raw)


# Facts said in the second half of a statement whose first half a rule already read (the rules skip
# a match that starts inside another's): "I work as a nurse in Leeds" (an occupation, then where),
# "I'm vegetarian and allergic to shellfish" (a diet, then an allergy).
_EN_WORK_IN = re.compile(
    rf"\bI (?:now |currently |still )?work(?: (?:as|at|for) [^,.!?;\n]{{1,40}}?)? in (?:the )?{EN_PLACE}",
    re.I,
)
_EN_AND_ALLERGIC = re.compile(
    rf"\bI(?:'m| am) (?:(?!not\b|never\b|no\b)[a-z\-]+ ){{1,3}}?(?:and|,) (?:also |very |severely )*allergic to {EN_V}",
    re.I,
)


def _second_predicates(text: str, found: Sequence[Observation]) -> list[Observation]:
    out: list[Observation] = []
    m = _EN_WORK_IN.search(text)
    if (
        m is not None
        and not any(o.key == LOCATION for o in found)
        and not _is_question(text, m.end())
        and not _hypothetical(text, m.start())
        and is_place_en(m.group("v"), gazetteer=True)
    ):
        out.append(Observation(LOCATION, m.group("v"), rule="en_work_in"))
    m = _EN_AND_ALLERGIC.search(text)
    if (
        m is not None
        and not any(o.key == ALLERGIES for o in found)
        and not _is_question(text, m.end())
        and not _hypothetical(text, m.start())
        and (value := clean_value(m.group("v"), english=True)) is not None
    ):
        values, _ = _list_items(text, value, m.end(), english=True)
        out += [Observation(ALLERGIES, v, rule="en_and_allergic_to") for v in values]
    return out


def _sleep_time(text: str) -> Observation | None:
    m = _SLEEP_ZH.search(text)
    if m:
        h = _hour(m.group("h"))
        if h is None or h > 24:
            return None
        minute = 30 if m.group("m") == "半" else int(m.group("m") or 0)
        part = m.group("part")
        if (part in ("晚上", "夜里") and 6 <= h < 12) or (part is None and 7 <= h < 12):
            h += 12
        if h == 12:  # 十二点睡 (晚上, 半夜, 凌晨 or none): a bedtime at twelve is midnight
            h = 0
        return Observation(SLEEP_TIME, f"{h % 24:02d}:{minute:02d}", rule="zh_sleep_time")
    m = _SLEEP_EN.search(text)
    if m and m.group("midnight"):
        return Observation(SLEEP_TIME, "00:00", rule="en_sleep_time")
    if m:
        h, minute = int(m.group("h")), int(m.group("m") or 0)
        ampm = (m.group("ampm") or "").lower().replace(".", "")
        if h > 24 or minute > 59:
            return None
        if (ampm == "pm" and h < 12) or (not ampm and 7 <= h < 12):
            h += 12
        if h == 12 and ampm != "pm":  # "at 12" / "12am": a bedtime at twelve is midnight
            h = 0
        return Observation(SLEEP_TIME, f"{h % 24:02d}:{minute:02d}", rule="en_sleep_time")
    return None


# -- the timezone in words -------------------------------------------------------------------------

# The zone a name or an abbreviation most often means (documented in docs/design.md). A US region's
# name or abbreviation is that region's zone with its daylight saving time ("PST" in July is still
# the user's Pacific time), not a fixed offset. CST is US Central time in English and China Standard
# Time in a Chinese message; IST is India's; GMT and UTC are UTC.
_ZONE_WORDS: dict[str, str] = {
    "pacific": "America/Los_Angeles",
    "pt": "America/Los_Angeles",
    "pst": "America/Los_Angeles",
    "pdt": "America/Los_Angeles",
    "mountain": "America/Denver",
    "mt": "America/Denver",
    "mst": "America/Denver",
    "mdt": "America/Denver",
    "central": "America/Chicago",
    "ct": "America/Chicago",
    "cst": "America/Chicago",
    "cdt": "America/Chicago",
    "eastern": "America/New_York",
    "et": "America/New_York",
    "est": "America/New_York",
    "edt": "America/New_York",
    "alaska": "America/Anchorage",
    "akst": "America/Anchorage",
    "hawaii": "Pacific/Honolulu",
    "hst": "Pacific/Honolulu",
    "gmt": "UTC",
    "utc": "UTC",
    "bst": "Europe/London",
    "uk": "Europe/London",
    "british": "Europe/London",
    "cet": "Europe/Berlin",
    "cest": "Europe/Berlin",
    "central european": "Europe/Berlin",
    "eet": "Europe/Athens",
    "eastern european": "Europe/Athens",
    "ist": "Asia/Kolkata",
    "india": "Asia/Kolkata",
    "indian": "Asia/Kolkata",
    "jst": "Asia/Tokyo",
    "japan": "Asia/Tokyo",
    "kst": "Asia/Seoul",
    "korea": "Asia/Seoul",
    "hkt": "Asia/Hong_Kong",
    "sgt": "Asia/Singapore",
    "aest": "Australia/Sydney",
    "aedt": "Australia/Sydney",
    "nzst": "Pacific/Auckland",
    "beijing": "Asia/Shanghai",
    "china": "Asia/Shanghai",
    "chinese": "Asia/Shanghai",
    "北京": "Asia/Shanghai",
    "中国": "Asia/Shanghai",
    "美东": "America/New_York",
    "美西": "America/Los_Angeles",
    "美中": "America/Chicago",
    "太平洋": "America/Los_Angeles",
    "东部": "America/New_York",
    "西部": "America/Los_Angeles",
    "日本": "Asia/Tokyo",
    "东京": "Asia/Tokyo",
    "韩国": "Asia/Seoul",
    "首尔": "Asia/Seoul",
    "伦敦": "Europe/London",
    "英国": "Europe/London",
    "纽约": "America/New_York",
    "洛杉矶": "America/Los_Angeles",
    "新加坡": "Asia/Singapore",
    "香港": "Asia/Hong_Kong",
    "悉尼": "Australia/Sydney",
}
_ZH_ZONE_CST = "Asia/Shanghai"
_OFFSET = r"(?:UTC|GMT)\s*(?P<sign>[+\-−])\s*(?P<h>\d{1,2})(?::?(?P<m>\d{2}))?"
_ZONE_ABBR = "|".join(sorted((k for k in _ZONE_WORDS if k.isascii()), key=len, reverse=True))
_ZONE_ZH = "|".join(sorted((k for k in _ZONE_WORDS if not k.isascii()), key=len, reverse=True))
_IANA = r"(?P<iana>[A-Z][a-z]+/[A-Z][A-Za-z_]+(?:/[A-Z][A-Za-z_]+)?)"
_TZ_EN = re.compile(
    r"\b(?:(?P<mine>my (?:time ?zone|tz) is)(?: in)?|I(?:'m| am) (?:on|in|using)(?: the)?|we(?:'re| are) (?:on|in)(?: the)?|"
    r"I live (?:on|in) the) "
    rf"(?:{_OFFSET}|{_IANA}|(?P<word>{_ZONE_ABBR})(?P<suffix>\s+(?:time|standard time|daylight time)(?:\s*zone)?|"
    r"\s*timezone)?)(?![A-Za-z+\-\d])",
    re.I,
)
_ZH_NUMERALS = {"一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}
_TZ_ZH = re.compile(
    r"我(?:们)?(?:这边|这里|那边|这儿)?(?:的时区)?(?:是|在|用的?是?|按|属于)?"
    rf"(?:(?P<ew>[东西])(?P<n>十[一二]?|[一二三四五六七八九十]|\d{{1,2}})区|{_OFFSET}|(?P<zh>{_ZONE_ZH})时间|"
    rf"(?P<word>{_ZONE_ABBR})(?P<suffix>时间|时区)?(?![A-Za-z]))"
    r"(?![^，,。.!！?？；;\n]*(?:吗|么|[?？]))",
    re.I,
)


def _fixed(sign: str, hours: int, minutes: int = 0) -> str | None:
    """An offset as an IANA zone: whole hours are Etc/GMT∓N (the sign is POSIX's, reversed); a
    half-hour offset has no Etc zone and is left out."""
    if minutes or hours > 14:
        return None
    if hours == 0:
        return "UTC"
    return f"Etc/GMT{'-' if sign == '+' else '+'}{hours}"


def _zh_hours(raw: str) -> int:
    if raw.isdigit():
        return int(raw)
    return 10 + _ZH_NUMERALS.get(raw[1:], 0) if raw.startswith("十") else _ZH_NUMERALS.get(raw, 0)


def _timezone(text: str) -> Observation | None:
    """The timezone a message states in words, as an IANA zone ("我在东八区" -> Etc/GMT-8, "I'm on
    Pacific time" -> America/Los_Angeles, "我这边是北京时间" -> Asia/Shanghai), or None."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    for pattern, english in ((_TZ_ZH, False), (_TZ_EN, True)):
        m = pattern.search(text)
        if m is None or _hypothetical(text, m.start()):
            continue
        g = m.groupdict()
        zone: str | None = None
        if g.get("ew"):
            n = _zh_hours(g["n"])
            zone = _fixed("+" if g["ew"] == "东" else "-", n) if 0 < n <= 12 else None
        elif g.get("h"):
            zone = _fixed("-" if g["sign"] in "-−" else "+", int(g["h"]), int(g["m"] or 0))
        elif g.get("zh"):
            zone = _ZONE_WORDS[g["zh"]]
        elif g.get("word"):
            # A bare word is a zone only as an abbreviation in capitals ("I'm on PST"), or after "my
            # timezone is": "I'm in central London", "I'm in PT" (therapy) name no zone.
            bare = not g.get("suffix") and not g.get("mine")
            if bare and not (g["word"].isupper() and len(g["word"]) >= 3):
                continue
            word = g["word"].lower()
            zone = _ZH_ZONE_CST if word == "cst" and not english else _ZONE_WORDS.get(word)
        elif g.get("iana"):
            try:
                ZoneInfo(g["iana"])
                zone = g["iana"]
            except (ZoneInfoNotFoundError, ValueError):
                zone = None
        if zone is not None:
            return Observation(TIMEZONE, zone, rule="zh_timezone" if not english else "en_timezone")
    return None


# "如果我叫小王的话", "if I'm allergic to nuts", "要是我对花生过敏": a clause that supposes states nothing.
_HYPOTHETICAL = re.compile(
    r"(?:如果|要是|假如|假设|万一|如若|倘若|若是|就算|即使|哪怕|\b(?:if|suppose|supposing|imagine|pretend|"
    r"unless|whether|even though|wish)\b)",
    re.I,
)


def _hypothetical(text: str, start: int) -> bool:
    """Whether the clause that holds text[start] supposes: a conditional word before it in the clause,
    or 的话 after it ("我叫小王的话")."""
    head = re.split(r"[，,。.!！?？；;\n]", text[:start])[-1]
    tail = re.split(r"[，,。.!！?？；;\n]", text[start:])[0]
    return bool(_HYPOTHETICAL.search(head)) or re.search(r"的话(?!题|剧|筒)", tail) is not None


# A diet reads the same whatever form said it ("素食主义者" and "吃素", "pescetarian"); what the user
# does not eat reads "no pork" / "不吃猪肉". A word after "I don't eat" that is no food ("out much",
# "before 8", "another bite") or 不吃 with nothing but 了/饭/东西 after it states no diet.
_DIET_SAME = {
    "pescetarian": "pescatarian",
    "素食者": "吃素",
    "素食主义者": "吃素",
    "纯素食者": "吃全素",
    "纯素主义者": "吃全素",
    "纯素食主义者": "吃全素",
}
_EN_NOT_FOODS = frozenset(
    "much a lot anything enough more another out late now right before after here there well properly alone at".split()  # noqa: SIM905 - a word list reads better as text
)
_ZH_NOT_FOODS = frozenset("了 饭 东西 药 这个 那个 什么".split())  # noqa: SIM905 - a word list reads better as text


def _diet_value(rule: str, value: str, *, english: bool) -> str | None:
    if rule.endswith("dont_eat"):
        if english:
            return None if value.split()[0].lower() in _EN_NOT_FOODS else f"no {value}"
        return None if value in _ZH_NOT_FOODS or value.startswith("了") else f"不吃{value}"
    if rule == "en_on_a_diet":
        return f"{value.lower()} diet"
    return _DIET_SAME.get(value.lower() if english else value, value.lower() if english else value)


# "我对海鲜过敏，而且不吃香菜", "我喜欢猫，也喜欢狗", "我又搬家了，现在住在深圳", "我跳槽了，现在是设计师"
# (是 only after 现在/目前: a new state): Chinese drops the subject of a clause that goes on
# from a clause whose subject is 我. Such a clause that begins (after 而且/也/还 …) with the verb of a
# rule gets its 我 back before the rules run; after a clause about someone else ("我妈吃素，也不吃辣")
# nothing is added.
_ZH_GOES_ON = re.compile(
    r"(?<=[，,])(?P<conn>(?:而且|并且|另外|同时|但是|但|不过)?)(?P<rest>(?:也|还|都|其实|从来|特别|很|最|现在|目前)*"
    r"(?:喜欢|不喜欢|爱吃|爱喝|讨厌|受不了|不吃|吃素|对[^，,。！？!?]{1,12}过敏|住在|搬到|搬去|搬来)|(?:现在|目前)(?:是|在|住))"
)
_ZH_MY_CLAUSE = re.compile(
    r"(?:^|[。！？!?；;，,])\s*(?:而且|并且|另外|同时|但是|但|不过)?我(?![们妈爸哥姐弟妹])[^，,。！？!?；;]*$"
)


# A discourse word that opens a clause before 我 ("其实我住在成都", "对了我对花生过敏") is left out before
# the rules run (they start at the head of a clause); one pass, not a longer head in every rule.
_ZH_OPENER = re.compile(r"(?:^|(?<=[，,。.!！?？；;~～\s]))(?:其实|对了|嗯|哦|噢|话说|说起来|说真的)(?=我)")


def _zh_implied_subject(text: str) -> str:
    out, last = [], 0
    for m in _ZH_GOES_ON.finditer(text):
        if _ZH_MY_CLAUSE.search(text, 0, m.start() - 1) is None:
            continue
        out += [text[last : m.start()], "我", m.group("rest")]
        last = m.end()
    return "".join([*out, text[last:]]) if out else text


# What undoes an end said in the same message ("我们分手了，又和好了", "I got laid off but they hired me back").
_UNDONE = re.compile(
    r"和好|复合|又在一起|回去上班|\b(?:got back together|back together|made up|hired me back|took me back)\b",
    re.I,
)

# The relative times that lie ahead, in Chinese ("下个月", "明年", "后天", "过两天").
_ZH_TO_COME = re.compile(r"下|明|后天|大后天|过[一两几三]|[一两几三]?[天周年](?:以|之)?后|将来|未来")


def _overlap(a: str, b: str) -> bool:
    a, b = a.casefold(), b.casefold()
    return a in b or b in a


def _an_occupation(value: str, *, english: bool) -> bool:
    """Whether a value a rule read where an occupation stands is one ("teacher", "产品经理")."""
    if english:
        return value.split()[-1].lower() in _EN_OCCUPATIONS
    return _looks_like_occupation(value)


def _is_question(text: str, end: int) -> bool:
    return ends_as_question(text, end)


# What makes "I'm X" an introduction beyond doubt, whatever word X is: a greeting before it ("Hi, I'm
# Hope!"), and after it "nice to meet you", an age, or what the user does ("I'm Grace, nice to meet
# you", "I'm Will, 28", "I'm Sky and I'm 30", "I'm Faith, a nurse from Ohio").
_EN_GREETING_BEFORE = re.compile(r"^(?:hi|hello|hey|hiya)(?: there)?[,!.~\s]", re.I)
_EN_INTRO_AFTER = re.compile(
    r"\s*(?:[,!.~]\s*)?(?:it's\s+|it\s+is\s+|so\s+)?(?:nice|pleased|good|great|lovely|glad)\s+to\s+meet\s+you"
    r"|\s*,\s*(?:\d|an?\s+[a-z])|\s+and\s+(?:I'm|I\s+am)\s+\d"
    r"|\s+from\s+(?-i:[A-Z])",  # "I'm Sky from Leeds", not "I'm Tired from work"
    re.I,
)


# Where a name said after a greeting ends: its clause does ("Hi, I'm Hope!", "Hey, I'm Grace"), where a
# state goes on ("Hi, I'm Happy today", "Hey, I'm Hungry lol").
_EN_CLAUSE_END = re.compile(r"\s*(?:[,.!?~…;:)]|$)")


def _clearly_introduced(text: str, m: re.Match[str]) -> bool:
    """Whether the sentence of an "I'm X" match introduces the user beyond doubt: an introduction after
    the word (`_EN_INTRO_AFTER`), or a greeting before it (`_EN_GREETING_BEFORE`) with the word ending
    its clause (`_EN_CLAUSE_END`); then a word that is also a common one ("Grace", "Hope") is the name."""
    if _EN_INTRO_AFTER.match(text, m.end("v")) is not None:
        return True
    return _EN_GREETING_BEFORE.match(text, m.start()) is not None and (
        _EN_CLAUSE_END.match(text, m.end("v")) is not None
    )


def extract(text: str) -> list[Observation]:
    """The profile facts a user message states, by rule; [] for most messages.

    Renames ("叫我大王") are not here: they are commands applied before the reply (`commands.py`).
    A name statement ("我叫李伟", "my name is Li Wei") is also reported here as `name`, and what a
    group calls the user, said alone ("大家都叫我小明"), as `preferred_name` (`apply` keeps a name the
    user asked for).
    """
    text = as_said = text.strip()
    if not text or len(text) > 2000:
        return []
    found: list[Observation] = []
    commands = detect(text)
    given = stated_name(text)
    # "大家都叫我小明": the preferred name, unless the user asked for another (`apply`).
    others = others_call(text) if not commands else None
    if others is not None:
        found.append(Observation(PREFERRED_NAME, others[1], rule=others[0]))
    # "我上个月搬到杭州了", "We moved to Seattle last week": a relative time word says when, not what; the
    # rules read the statement without it (absolute dates, as in birthdays, are not relative times).
    # A Chinese verb has no tense: with a time to come ("我下个月搬到上海", "我明年当老师") it is a plan,
    # and where the user lives or what they do is not read from it.
    planned = False
    for start, end in reversed(spans(text)):
        planned = planned or _ZH_TO_COME.match(text, start, end) is not None
        text = (text[:start] + text[end:]).replace("  ", " ")
    text = _zh_implied_subject(_ZH_OPENER.sub("", text))
    for cmd in commands:
        if cmd.kind == "rename" and cmd.value and cmd.rule in NAME_RULES:
            found.append(Observation(NAME, cmd.value, rule=cmd.rule))
        elif cmd.kind == "rename" and given and given != cmd.value:
            # "我叫李伟，不过大家都叫我小李", "I'm Joanna Whitfield, though most people call me Jo", "我叫李明，
            # 你可以叫我小明": the name said (李伟, Joanna Whitfield, 李明) besides the one to call the user
            found.append(Observation(NAME, given, rule=cmd.rule))
    taken: list[tuple[int, int]] = []
    scripts = present(text)
    for rule, key, pattern, english in _RULES.at(scripts):
        for m in pattern.finditer(text):
            # A rule that reads a clause's subject from the clause before marks where its own words
            # begin (`(?P<at>)`): the clause before may hold a fact of its own.
            start = m.start("at") if "at" in pattern.groupindex else m.start()
            if any(s <= start < e for s, e in taken) or _is_question(text, m.end()) or in_quote(text, start):
                continue
            if _hypothetical(text, m.start()):
                continue
            raw = m.group("v")
            if key in (PARTNER_NAME, PETS) and not english and raw and not raw.isascii():
                # "我老公叫马大哈": a word CC-CEDICT knows runs on through what the name's end took
                # for a particle (马大 and 哈), as after 我叫 / 叫我; "我老公叫李明哈" is 李明.
                raw = through_word(m.string, m.start("v"), raw)
            if key == PETS and "kind" in pattern.groupindex and m.group("v") is None:
                value = m.group("kind")  # "我有一只猫": the kind alone
            elif key == PETS and "kind" in pattern.groupindex:
                name = clean_value(raw, english=english)
                if name is not None and not english and not _zh_pet_name(name):
                    value = m.group("kind")  # "我家的狗叫得很凶": 叫 is its bark, unless names follow
                else:
                    value = f"{_pet_kind(m.group('kind'))} {name}" if name else None
            elif rule == "en_teach" and m.group("v") is None:
                value = "teacher"  # "I teach at a high school"
            else:
                value = clean_value(raw, english=english)
            if value is None:
                continue
            if rule == "zh_run_shop":
                value = f"{value}老板"  # 花店 -> 花店老板
            elif rule == "en_run_shop":
                value = f"{re.sub(r'^(?:small|little|tiny|local) ', '', value.strip(), flags=re.I)} owner"
            if rule == "en_teach" and m.group("v") is not None:
                value = f"{value} teacher"
            elif rule.endswith("_intolerant"):
                value = f"{value} intolerance" if english else f"{value}不耐受"
            if rule == "en_quit_other":
                value = f"quit {value}"
            if key == HABITS:
                value = HABITS_SAME.get(value.lower(), value)
            if english and key == OCCUPATION:  # "a software engineer at Google": the job
                value = re.split(r"\s+(?:at|for|with|in)\s+", value)[0]
            elif english and key == LOCATION:  # "Austin for my husband's job": the place
                value = re.split(r"\s+(?:for|because|to be|with)\b", value)[0]
            if (
                key == OCCUPATION
                and not english
                and not rule.endswith("_retired")
                and not _looks_like_occupation(value, m)
            ):
                continue
            if planned and not english and key in (LOCATION, OCCUPATION):
                continue
            if (
                rule in ("en_im_a", "en_became_a", "en_starting_as")
                and value.split()[-1].lower() not in _EN_OCCUPATIONS
            ):
                continue
            if key in (NAME, PARTNER_NAME) and value.split()[0].lower() in EN_NOT_GREETING_NAMES:
                continue
            if rule == "en_favorite" and value.split()[0].lower() in _EN_NOT_ITEM_WORDS:
                continue
            if rule.startswith("zh_topic_") and _ZH_NOT_TOPIC.fullmatch(value):
                continue  # "今天我很喜欢", "其实我不喜欢": a time or an adverb before 我, not a thing
            if not _place_ok(rule, key, value, m, english=english):
                continue
            if rule == "en_pet_is" and _is_breed(value):
                continue
            said = (m.group("v") or "").lower()
            if rule in ("en_im_name", "en_hi_im", "en_here", "en_names", "en_name_is_pet") and (
                said in EN_NOT_GREETING_NAMES or said in _EN_PRONOUNS or is_place_en(said)
            ):
                continue
            if rule in ("en_im_name", "en_hi_im", "en_here") and not intro_name(
                m.group("v"), clear=_clearly_introduced(text, m)
            ):
                continue  # "I'm Portuguese.", "I'm Lost.": what the user is, not who
            if key == LOCATION and not english and re.match(r"[一两几][个张只件箱台把条套]", m.group("v")):
                continue  # "我搬来一个柜子" moved a thing, not the user
            one_value = (key == PETS and "kind" in pattern.groupindex) or (
                key == DIET and not rule.endswith("dont_eat")
            )
            listed = _pet_list(text, m, rule, english=english) if key == PETS else None
            if listed is not None:  # "I have two cats, Mochi and Tofu", "我养了两只猫，一只叫汤圆一只叫饺子"
                values, end = listed
            elif key in MULTI_KEYS and not one_value:
                values, end = _list_items(text, value, m.end(), english=english)
            else:
                values, end = [value], m.end()
            if key == DIET:
                values = [d for v in values if (d := _diet_value(rule, v, english=english)) is not None]
            found += [Observation(key, v, rule=rule) for v in values]
            if rule in ("zh_work_as", "zh_run_shop") and m.group("place") and is_place_zh(m.group("place")):
                # "在杭州做老师": one lives where one works, for a known place.
                found.append(Observation(LOCATION, m.group("place"), rule=rule))
            taken.append((start, end))
    for rule, key, pattern, english in _RETRACT_RULES.at(scripts):
        for m in pattern.finditer(text):
            raw = next((g for g in m.groups() if g), None)  # one value group per alternative
            value = clean_value(raw, english=english) if raw else None
            if value is None or _is_question(text, m.end()) or _hypothetical(text, m.start()):
                continue
            if in_quote(text, m.start()):
                continue
            if key == OCCUPATION and not _an_occupation(value, english=english):
                continue
            if key == LOCATION and not (english or is_place_zh(value)):
                continue
            if key == PARTNER_NAME and english and value.lower() in EN_NOT_GREETING_NAMES:
                continue
            values, _ = _list_items(text, value, m.end(), english=english)
            if key == DIET:
                values = [d for v in values if (d := _diet_value(rule, v, english=english)) is not None]
            # A set the same words misread ("我对芒果不过敏" read as an allergy to 芒果不) goes.
            said = [value, *values]
            found = [
                ob
                for ob in found
                if not (ob.key == key and ob.op == "set" and any(_overlap(ob.value, v) for v in said))
            ]
            found += [Observation(key, v, "retract", rule=rule) for v in values]
    again = HABIT_AGAIN.search(as_said)
    if again is not None and not (
        _is_question(as_said, again.end()) or _hypothetical(as_said, again.start())
    ):
        habit = HABITS_SAME[(again.group("en") or again.group("zh")).translate(IGNORECASE_FOLD).lower()]
        found = [ob for ob in found if not (ob.key == HABITS and ob.op == "set")]
        # said in either language before: "quit smoking" and 戒烟 both end
        pair = {
            "quit smoking": "戒烟",
            "戒烟": "quit smoking",
            "quit drinking": "戒酒",
            "戒酒": "quit drinking",
        }
        found += [
            Observation(HABITS, h, "retract", rule="habit_again") for h in (habit, pair.get(habit)) if h
        ]
    meat = MEAT_AGAIN.search(as_said)
    if meat is not None and not (_is_question(as_said, meat.end()) or _hypothetical(as_said, meat.start())):
        found = [ob for ob in found if not (ob.key == DIET and ob.op == "set")]
        found += [Observation(DIET, v, "retract", rule="meat_again") for v in MEATLESS]
    # "我辞职了", "we broke up": the key's value ends, whatever it is; before any new value the
    # message gives ("I quit my job, now I'm a barista"). Read as said, time words kept.
    for rule, key, pattern in _END_RULES.at(as_said):
        ended = pattern.search(as_said)
        if (
            ended is None
            or _is_question(as_said, ended.end())
            or _hypothetical(as_said, ended.start())
            or in_quote(as_said, ended.start())
            or _UNDONE.search(as_said, ended.end()) is not None
            or (key == ALLERGIES and _EXCEPT.search(as_said) is not None)
        ):
            continue
        found.insert(0, Observation(key, "", "retract", rule=rule))
    # "My cat Luna died": the pet ends (before any new one the message gives), and the pet the same
    # words named ("my cat Luna") is not set again.
    for gone in reversed(_pets_gone(text)):
        found = [
            ob
            for ob in found
            if not (ob.key == PETS and ob.op == "set" and ended_pets([ob.value], gone.value))
        ]
        found.insert(0, gone)
    found += _people(text)
    found += _kin_corrections(text)
    found += _losses(text, as_said)
    found += _dates(as_said)
    found = [_dated(ob) for ob in found]
    found += _corrections(as_said)
    sleep = _sleep_time(text)
    if sleep is not None:
        found.append(sleep)
    found += _second_predicates(text, found)
    zone = _timezone(text)
    if zone is not None:
        found.append(zone)
    return found


def _pets_gone(text: str) -> list[Observation]:
    """The pets a message says are gone (`PET_END_RULES`), each a retraction of "kind name", the
    kind or the name as said (`ended_pets` reads which pet in force it is)."""
    out: list[Observation] = []
    for rule, pattern, english in _PET_END_RULES.at(text):
        for m in pattern.finditer(text):
            if (
                _is_question(text, m.end())
                or _hypothetical(text, m.start())
                or _hypothetical(text, m.end() - 1)
                or in_quote(text, m.start())
            ):
                continue
            name = m.group("name")
            if rule == "en_named_pet_gone" and name and name.lower() in ENGLISH_STOP_WORDS:
                continue  # "If my cat died …", "She died": no name
            if name and not _pet_name_ok(name, english=english):
                name = None
            kind = m.group("kind")
            said = " ".join(w for w in (kind.lower() if english and kind else kind, name) if w)
            if said:
                out.append(Observation(PETS, said, "retract", rule=rule))
    return out


def _statements(
    rules: ByScript[tuple[str, re.Pattern[str], bool]], text: str
) -> Iterator[tuple[str, re.Match[str], bool]]:
    """The matches of `rules` in `text` that state something: no question, supposition or quote."""
    for rule, pattern, english in rules.at(text):
        for m in pattern.finditer(text):
            if not (
                _is_question(text, m.end()) or _hypothetical(text, m.start()) or in_quote(text, m.start())
            ):
                yield rule, m, english


def _people(text: str) -> list[Observation]:
    """The people in the user's life a message names (`PEOPLE_RULES`): "sister 小红", "son Leo"."""
    out: list[Observation] = []
    for rule, m, english in _statements(_PEOPLE_RULES, text):
        name = _glued_name(m.group("rest")) if rule == "zh_kin_glued" else m.group("v")
        name = re.sub(r"'s$", "", name) if name and english else name  # "my best friend Sarah's birthday"
        if not name or (english and (name.lower() in EN_NOT_GREETING_NAMES or is_place_en(name))):
            continue
        if not english and (name[0] in ZH_NOT_NAME_FIRST or clean_value(name, english=False) is None):
            continue
        kin = m.group("kin").lower() if english else m.group("kin")
        value = f"{KIN_SAME.get(kin, kin)} {name}"
        if not any(o.value == value for o in out):
            out.append(Observation(PEOPLE, value, rule=rule))
    return out + [o for o in _people_listed(text) if not any(p.value == o.value for p in out)]


def _kin_corrections(text: str) -> list[Observation]:
    """A relation the user corrects (`KIN_CORRECTION_RULES`): "Sam is my cousin, not my brother" ends
    "brother Sam" and keeps "cousin Sam"."""
    out: list[Observation] = []
    for rule, m, english in _statements(_KIN_CORRECTION_RULES, text):
        who, new, old = (m.group(g) or m.group(g + "2") for g in ("who", "new", "old"))
        if english and (who.lower() in EN_NOT_GREETING_NAMES or who.lower() in ENGLISH_STOP_WORDS):
            continue
        if not english and (who[0] in ZH_NOT_NAME_FIRST or clean_value(who, english=False) is None):
            continue
        new, old = (KIN_SAME.get(k, k) for k in ((new.lower(), old.lower()) if english else (new, old)))
        if new == old:
            continue
        out += [
            Observation(PEOPLE, f"{old} {who}", "retract", rule=rule),
            Observation(PEOPLE, f"{new} {who}", rule=rule),
        ]
    return out


def _people_listed(text: str) -> list[Observation]:
    """Several people of one kind named at once (`PEOPLE_LIST_RULES`): "my sisters Anna and Mia"."""
    out: list[Observation] = []
    for rule, m, english in _statements(_PEOPLE_LIST_RULES, text):
        split = r"\s*(?:,|\band\b|&)\s*" if english else r"[和、跟]"
        names = [n.strip() for n in re.split(split, m.group("names")) if n.strip()]
        if english and any(n.lower() in EN_NOT_GREETING_NAMES or is_place_en(n) for n in names):
            continue
        if not english and any(
            n[0] in ZH_NOT_NAME_FIRST or clean_value(n, english=False) is None for n in names
        ):
            continue
        kin = m.group("kin").lower() if english else m.group("kin")
        one = KIN_ONE.get(kin, re.sub(r"s$", "", kin)) if english else KIN_SAME.get(kin, kin)
        out += [Observation(PEOPLE, f"{one} {n}", rule=rule) for n in names]
    return out


# Where a message names an exception to "no allergies" ("except penicillin", "除了青霉素"): it clears none.
_EXCEPT = re.compile(r"除了|除开|\b(?:except|besides|other than|apart from|aside from|but not)\b", re.I)
# When a loss was, as said: a relative time ("last spring", "去年") or a year ("in 2019", "2019年").
_YEAR = re.compile(r"\b(?:in )?(?:19|20)\d\d\b|(?:19|20)\d\d年")


def _losses(text: str, as_said: str) -> list[Observation]:
    """The people a message says the user lost (`LOSS_RULES`): "grandma", "dad Tom", "奶奶", with when
    it was as said."""
    out: list[Observation] = []
    for rule, m, english in _statements(_LOSS_RULES, text):
        kin = m.group("kin").lower() if english else m.group("kin")
        name = m.group("name") or ""
        if name and (name.lower() in EN_NOT_GREETING_NAMES or name.lower() in ENGLISH_STOP_WORDS):
            name = ""
        value = " ".join(w for w in (KIN_SAME.get(kin, kin), name) if w)
        times = [as_said[a:b] for a, b in spans(as_said)]
        year = _YEAR.search(as_said)
        when = times[0] if times else (year.group(0) if year else "")
        if not any(o.value == value for o in out):
            out.append(Observation(LOSSES, value, rule=rule, when=when))
    return out


_ZH_DATE_PARTS = re.compile(
    r"(?:(?P<y>\d{4}|[零〇一二三四五六七八九]{4})年)?(?P<m>\d{1,2}|[一二三四五六七八九十]{1,3})月"
    r"(?:(?P<d>\d{1,2}|[一二三四五六七八九十]{1,3})[日号])?$"
)
# A numeric day and month, with or without a four-digit year ("3/14", "14/3", "3/14/1995"): read
# when only one order is a date.
_NUMERIC_MD = re.compile(r"(?P<a>\d{1,2})/(?P<b>\d{1,2})(?:/(?P<y>\d{4}))?$")
_EN_DATE_PARTS = re.compile(
    r"(?:in )?(?:(?P<m1>[A-Za-z]+)\.?(?: (?P<d1>\d{1,2})(?:st|nd|rd|th)?)?|(?P<d2>\d{1,2})(?:st|nd|rd|th)? (?:of )?(?P<m2>[A-Za-z]+))"
    r"(?:,? (?P<y>\d{4}))?$"
    r"|(?P<iy>\d{4})-(?P<im>\d{1,2})-(?P<id>\d{1,2})$",
    re.I,
)


def _zh_number(raw: str) -> int:
    if raw.isdigit():
        return int(raw)
    digits = {"零": 0, "〇": 0, **_ZH_NUM}
    if len(raw) == 4:  # a year said digit by digit: 一九九〇
        return int("".join(str(digits.get(c, 0)) for c in raw))
    if "十" in raw:
        tens, _, ones = raw.partition("十")
        return digits.get(tens, 1) * 10 + digits.get(ones, 0)
    return digits.get(raw, 0)


def month_day(said: str) -> str | None:
    """A date as said ("十月五号", "the 3rd of March", "1990-03-03", "in May", "3/14", "14/3/1995") as
    "October 5", "March 3, 1990", "May", "March 14" or "March 14, 1995"; None when it is no calendar
    date or a numeric one that reads both ways ("4/5", "3/3/1990": April 5 in the US, 4 May elsewhere;
    a birthday keeps it as said)."""
    said = said.strip()
    if (n := _NUMERIC_MD.match(said)) is not None:
        a, b = int(n.group("a")), int(n.group("b"))
        if (a > 12) == (b > 12):  # both could be the month (ambiguous), or neither can
            return None
        mon, dom = (a, b) if b > 12 else (b, a)
        if not (1 <= mon <= 12 and 1 <= dom <= 31):
            return None
        return MONTHS[mon - 1] + f" {dom}" + (f", {n.group('y')}" if n.group("y") else "")
    if (m := _ZH_DATE_PARTS.match(said)) is not None:
        year = _zh_number(m.group("y")) if m.group("y") else None
        month, day = _zh_number(m.group("m")), _zh_number(m.group("d")) if m.group("d") else None
    elif (m := _EN_DATE_PARTS.match(said)) is not None and m.group("iy"):
        year, month, day = int(m.group("iy")), int(m.group("im")), int(m.group("id"))
    elif m is not None:
        name = (m.group("m1") or m.group("m2") or "").capitalize()
        if name not in MONTHS:
            return None
        year = int(m.group("y")) if m.group("y") else None
        month = MONTHS.index(name) + 1
        raw_day = m.group("d1") or m.group("d2")
        day = int(raw_day) if raw_day else None
    else:
        return None
    if not 1 <= month <= 12 or (day is not None and not 1 <= day <= 31):
        return None
    out = MONTHS[month - 1] + (f" {day}" if day else "")
    return f"{out}, {year}" if year and day else out


def _dated(ob: Observation) -> Observation:
    """A birthday with its date resolved ("十月五号" -> "October 5"); any other fact as it is."""
    if ob.key != BIRTHDAY or ob.op != "set" or (resolved := month_day(ob.value)) is None:
        return ob
    return Observation(ob.key, resolved, ob.op, rule=ob.rule, old=ob.old, when=ob.when)


def _dates(text: str) -> list[Observation]:
    """The dates of people the user names and of the couple (`DATE_RULES`), as "label: date":
    "mom's birthday: May", "anniversary: June 3", "妈妈的生日: May 12", "结婚纪念日: June 3"."""
    out: list[Observation] = []
    for rule, m, english in _statements(_DATE_RULES, text):
        when = month_day(m.group("v"))
        if when is None:
            continue
        if "what" in m.re.groupindex:
            label = m.group("what").lower() if english else m.group("what")
        else:
            kin = m.group("kin").lower() if english else m.group("kin")
            who = " ".join(w for w in (KIN_SAME.get(kin, kin), m.group("name") or "") if w)
            label = f"{who}'s birthday" if english else f"{who}的生日"
        out.append(Observation(DATES, f"{label}: {when}", rule=rule))
    return out


def _glued_name(rest: str) -> str | None:
    """The name jieba glues to a kinship word ("我姐小红今天来了" -> 小红, "我妈李梅" -> 李梅): the next
    word when jieba tags it a person's name, or the next two or three characters when they have a
    nickname's shape and end a word ("小红", "乐乐"); None for "我姐今天来了", "我弟刚毕业"."""
    from memsched.text.postag import lcut

    if rest[0] in "们俩家的和跟与也都还就又在是说":  # "我哥们儿", "我爸妈", "我姐也…": no name follows
        return None
    words = [(w, f) for w, f in lcut(rest)][:3]
    if not words:
        return None
    first, flag = words[0]
    if flag == "nr" and 2 <= len(first) <= 3:
        return str(first)
    joined = ""
    for w, _ in words:
        joined += w
        if len(joined) > 3:
            return None
        if len(joined) >= 2:
            return joined if nickname(joined) and not _ZH_NOT_TOPIC.fullmatch(joined) else None
    return None


# A value corrected: "No, I said Luna not Lola", "I meant peanuts, not walnuts", "her name is Luna,
# not Lola", "she's called Luna, not Lola", "not Lola, Luna"; "不是北京，是南京", "我说的是豆豆，不是逗逗",
# "我妹妹叫小雨不是小玉". `apply` changes the old word
# only where a fact in force holds it, so "it's Monday, not Tuesday" changes nothing.
_EN_WORD = r"[A-Za-z][A-Za-z'\-]*(?: [A-Z][A-Za-z'\-]*)?"
_EN_CORRECTION = re.compile(
    rf"\b(?:I said|I meant|I mean|I typed|it's|it is|its|that's|that is|is|was|called|named|spelled|spelt)\s+"
    rf"(?!(?:called|named|spelled|spelt)\b)(?P<new>{_EN_WORD}),?\s+not\s+"
    rf"(?P<old>{_EN_WORD})(?=\s*$|\s*[.!,;~)])"
    rf"|(?:^|(?<=[.!?]\s)|(?<=\bno[,!.]\s)|(?<=\bno\s))not\s+(?P<old2>{_EN_WORD})\s*[,;]\s*(?:it's\s+|but\s+|I said\s+|I meant\s+)?"
    rf"(?P<new2>{_EN_WORD})(?=\s*$|\s*[.!,;~)])",
    re.I,
)
_ZH_WORD = r"[\u4e00-\u9fffA-Za-z·]{1,8}?"
_ZH_CORRECTION = re.compile(
    rf"(?:^|(?<=[，,。.!！?？；;\s]))(?:不对|不是的|错了|说错了)?[，,]?不是(?P<old>{_ZH_WORD})[，,\s]*(?:是|而是|我说的是)(?P<new>{_ZH_WORD})"
    rf"(?=$|[，,。.!！~～;；\s]|啦|啊|呀|哦|吧)"
    rf"|(?:我说的是|我是说|应该是)(?P<new2>{_ZH_WORD})[，,\s]*(?:不是|而不是)(?P<old2>{_ZH_WORD})(?=$|[，,。.!！~～;；\s]|啦|啊|呀|哦|吧)"
    # "我妹妹叫小雨不是小玉", "她叫小雨，不叫小玉", "我的生日是五号，不是三号": a name or value said, then the one
    # it replaces.
    rf"|(?:叫做|叫|是)(?![叫是])(?P<new3>{_ZH_WORD})[，,\s]*(?:而不是|不是|不叫)(?P<old3>{_ZH_WORD})"
    r"(?=$|[，,。.!！~～;；\s]|啦|啊|呀|哦|吧)"
)


def _corrections(text: str) -> list[Observation]:
    out: list[Observation] = []
    for pattern, english in ((_EN_CORRECTION, True), (_ZH_CORRECTION, False)):
        for m in pattern.finditer(text):
            groups = m.groupdict()
            new = groups.get("new") or groups.get("new2") or groups.get("new3")
            old = groups.get("old") or groups.get("old2") or groups.get("old3")
            if not new or not old or _is_question(text, m.end()) or in_quote(text, m.start()):
                continue
            if english and (old.lower() in ENGLISH_STOP_WORDS or new.lower() in ENGLISH_STOP_WORDS):
                continue
            if not english and (
                clean_value(old, english=False) is None or clean_value(new, english=False) is None
            ):
                continue
            if same_value(new, old):
                continue
            out.append(
                Observation("", new, "correct", rule="en_correction" if english else "zh_correction", old=old)
            )
    return out


def corrected(value: str, old: str, new: str) -> str | None:
    """`value` with the word `old` as `new` ("cat Lola" -> "cat Luna"; "北京" -> "南京"), or None when
    the value does not hold it as a whole word or the whole value."""
    if same_value(value, old):
        return new
    words = value.split()
    if len(words) > 1 and any(same_value(w, old) for w in words):
        return " ".join(new if same_value(w, old) else w for w in words)
    if len(old.split()) > 1 and re.search(rf"(?<![\w]){re.escape(old)}(?![\w])", value, re.I):
        return re.sub(rf"(?<![\w]){re.escape(old)}(?![\w])", new, value, flags=re.I)
    return None


def _pet_name_ok(name: str, *, english: bool) -> bool:
    if english:
        lower = name.lower()
        return lower not in EN_NOT_GREETING_NAMES and lower not in _EN_PRONOUNS and not _is_breed(name)
    return clean_value(name, english=False) is not None and _zh_pet_name(name)


# Kinds said of the same animal: "kitten" is a cat, 猫咪 a 猫, "puppy" a dog.
_PET_FAMILY = {
    "kitten": "cat",
    "kitty": "cat",
    "puppy": "dog",
    "doggy": "dog",
    "doggo": "dog",
    "bunny": "rabbit",
    "猫咪": "猫",
    "猫猫": "猫",
    "狗狗": "狗",
    "犬": "狗",
}


def _pet_parts(value: str) -> tuple[str, str]:
    """(kind, name) of a pet value as the rules store it: "cat Luna", "golden retriever Max", "猫 豆豆",
    "猫咪" (a kind alone), "Luna" (a name alone, as an ending may say it)."""
    words = value.split()
    if len(words) == 1:
        w = words[0]
        if w.isascii():
            is_kind = w.lower() in PET_KINDS_EN or w.lower() in _PET_FAMILY or _is_breed(w)
        else:
            is_kind = re.search(f"(?:{PET_KINDS_ZH})$", w) is not None
        return (w, "") if is_kind else ("", w)
    if not value.isascii():
        return words[0], " ".join(words[1:])  # "猫 豆豆", "柯基 豆包"
    cut = len(words)
    while cut > 1 and words[cut - 1][:1].isupper():
        cut -= 1
    return " ".join(words[:cut]), " ".join(words[cut:])


def _pet_family(kind: str) -> str:
    """A kind's animal: "golden retriever" and "puppy" are dogs, 橘猫 and 猫咪 are 猫."""
    kind = kind.lower().strip()
    if not kind:
        return ""
    if kind.isascii():
        last = kind.split()[-1]
        if last in EN_BREEDS:
            return last
        return _PET_FAMILY.get(last, last)
    kind = _PET_FAMILY.get(kind, kind)
    m = re.search(f"(?:{PET_KINDS_ZH})$", kind)
    core = m.group(0) if m else kind
    core = _PET_FAMILY.get(core, core)
    return {"小猫": "猫", "小狗": "狗"}.get(core, core)


def ended_pets(current: Sequence[str], said: str) -> list[str]:
    """Which of the pets in force (`current` values) an ending names (`said`, from `_pets_gone`): the
    pet of that name; else, for a kind, the one pet of that kind (none when there are several: "my
    cat died" with two cats does not say which)."""
    kind, name = _pet_parts(said)
    if name:
        by_name = [v for v in current if _pet_parts(v)[1].casefold() == name.casefold()]
        if by_name or not kind:
            return by_name
    family = _pet_family(kind)
    same_kind = [v for v in current if _pet_family(_pet_parts(v)[0]) == family]
    return same_kind if len(same_kind) == 1 else []


# The names after "I have two cats": ", Mochi and Tofu", " named Mochi and Tofu", ": Mochi & Tofu".
_EN_PET_NAMES = re.compile(
    r"(?:(?:'?\s+names)?\s+(?:are|'re)\s+(?:(?:named|called)\s+)?|\s*[,:(\-–]\s*(?:(?:named|called)\s+)?|\s+(?:(?P<direct>named|called)\s+)?)(?-i:(?P<names>[A-Z][a-z'\-]+(?:\s*(?:,|and|&|,\s*and)\s*[A-Z][a-z'\-]+)*))"
    r"(?=\s*$|\s*[.,!;:~)]|\s+(?:and|but|lol|haha|btw)\b)"
)
_EN_MORE_NAMED_PET = re.compile(
    rf"(?:\s*,\s*(?:and\s+)?|\s+and\s+)(?:an?\s+|(?:my|our)\s+)?(?P<kind>{PET_KIND_OR_BREED_EN})"
    r"(?:(?:,?\s+(?:called|named|whose name is)\s+|\s+)(?-i:(?P<name>[A-Z][a-z'\-]+)))?(?![\w'])",
    re.I,
)
_EN_PRONOUNS = frozenset("he she it this that there who what which everyone nobody someone".split())  # noqa: SIM905
# More pets after the first one: "and a cat", ", two rabbits"; "和一只狗", "，还有一只狗".
_EN_MORE_PETS = re.compile(
    rf"(?:\s*,\s*(?:and\s+)?|\s+and\s+)(?:an?|one|two|three|four)\s+(?P<k>(?:{'|'.join(PET_KINDS_EN)})s?)\b",
    re.I,
)
_ZH_MORE_PETS = re.compile(
    rf"[，,]?(?:和|跟|、|还有|以及)(?:一|两|三|几)?(?:只|条)(?P<k>[\u4e00-\u9fff]{{0,2}}?(?:{PET_KINDS_ZH}))"
)
# The names after "我养了两只猫": "，一只叫汤圆一只叫饺子", "，分别叫汤圆和饺子", "叫咪咪".
_ZH_PET_NAME = r"(?:[\u4e00-\u9fff·]{1,6}?|[A-Za-z][A-Za-z'\-]*)"
_ZH_PET_SEP = r"(?:\s*(?:和|跟|与|、)\s*|[，,\s]*(?:另一只|另外一只|另一条|另外一条|一只|一条)叫)"
_ZH_PET_NAMES = re.compile(
    rf"(?:[，,]\s*(?:它们|她们|他们|它|她|他)?(?:的名字)?(?:分别|一只|一条)?叫|(?P<direct>叫))(?P<names>{_ZH_PET_NAME}(?:{_ZH_PET_SEP}{_ZH_PET_NAME})*)"
    r"(?=$|[。.!！~～;；\s，,]|了|呢|啊|呀|哦|吧)"
)


_ZH_PET_NAMES_BARE = re.compile(
    rf"[，,]\s*(?P<direct>)(?P<names>{_ZH_PET_NAME}(?:\s*(?:和|跟|与|、)\s*{_ZH_PET_NAME})+)"
    r"(?=$|[。.!！~～;；\s，,]|呢|啊|呀|哦|吧)"
)


def _pet_list(text: str, m: re.Match[str], rule: str, *, english: bool) -> tuple[list[str], int] | None:
    """The pets a statement of having pets lists, each with its name when one is given: "I have two
    cats, Mochi and Tofu" -> cat Mochi, cat Tofu; "I have a dog and a cat, Max and Luna" -> dog Max,
    cat Luna; "我养了两只猫，一只叫汤圆一只叫饺子" -> 猫 汤圆, 猫 饺子. Names that do not go one per kind
    ("a dog and a cat, Max, Luna and Rex") are dropped, the kinds kept. None: nothing listed beyond
    what the rule read (one pet, its name if any)."""
    kind_group = "kind" if "kind" in m.re.groupindex else "v"
    if english and kind_group == "kind":
        # "I have a cat called Mochi": the rule read the kind and its name; "… and a dog named Max"
        # names one more each time.
        others, end = [], m.end()
        while (named_m := _EN_MORE_NAMED_PET.match(text, end)) is not None:
            name = named_m.group("name")
            if name and (not _pet_name_ok(name, english=True) or name.lower() in _EN_NOT_ITEM_WORDS):
                break  # "… and a cat Sadly, …"
            others.append(
                f"{_pet_kind(named_m.group('kind'))} {name}" if name else named_m.group("kind").lower()
            )
            end = named_m.end()
        if not others or m.group("v") is None:
            return None
        return [f"{_pet_kind(m.group('kind'))} {m.group('v')}", *others], end
    names_re, more_re = (_EN_PET_NAMES, _EN_MORE_PETS) if english else (_ZH_PET_NAMES, _ZH_MORE_PETS)
    pending, values, end, listed = [m.group(kind_group)], [], m.end(kind_group), False
    while True:
        names_m = names_re.match(text, end)
        names = _pet_names(names_m.group("names"), english=english) if names_m is not None else []
        if not names and not english and (names_m := _ZH_PET_NAMES_BARE.match(text, end)) is not None:
            # "我有两只猫，咪咪和花花": names without 叫, only when each has a pet name's shape.
            names = _pet_names(names_m.group("names"), english=False)
            names = names if len(names) > 1 and all(nickname(n) for n in names) else []
        if names:
            assert names_m is not None
            kinds = [_kind_alone(k, english=english) for k in pending]
            if len(kinds) == 1:
                values += [f"{kinds[0]} {n}" for n in names]
            elif len(names) == len(kinds):
                values += [f"{k} {n}" for k, n in zip(kinds, names, strict=True)]
            elif names_m.group("direct"):  # "a cat and a dog named Max": the name is the dog's
                values += [
                    *(_kind_said(k, english=english) for k in pending[:-1]),
                    *(f"{kinds[-1]} {n}" for n in names),
                ]
            else:
                values += [_kind_said(k, english=english) for k in pending]
            pending, end, listed = [], names_m.end(), listed or len(names) > 1 or kind_group == "v"
            continue
        more = more_re.match(text, end)
        if more is None:
            break
        pending.append(more.group("k"))
        end, listed = more.end(), True
    if rule == "en_pets_are" and not values:
        return [], end  # "my cats are Siamese": no names, nothing said
    if not english and not listed:
        return None
    values += [_kind_said(k, english=english) for k in pending]
    return list(dict.fromkeys(values)), end


def _kind_said(kind: str, *, english: bool) -> str:
    return kind.lower() if english else kind


def _kind_alone(kind: str, *, english: bool) -> str:
    """A kind said of pets named one by one: "cats" -> cat."""
    return re.sub(r"s$", "", kind.lower()) if english else kind


def _pet_names(said: str, *, english: bool) -> list[str]:
    """The names of a list of pets, or [] when any is no name ("I have a cat, Sadly, …")."""
    if english:
        names = re.findall(r"[A-Z][a-z'\-]+", said)
        bad = [
            n
            for n in names
            if n.lower() in _EN_NOT_ITEM_WORDS or n.lower() in EN_NOT_GREETING_NAMES or _is_breed(n)
        ]
        return [] if bad or not names else names
    parts = [p.strip() for p in re.split(_ZH_PET_SEP, said)]
    names = [clean_value(p, english=False) for p in parts]
    return [n for n in names if n is not None] if all(n and _zh_pet_name(n) for n in names) else []


# What follows a pet's 叫 when it is its voice, not its name: "叫声很大", "叫得很凶", "叫起来很吵", "叫个不停".
_ZH_NOT_PET_NAME = re.compile(r"^[声得起个了着过的不很都也就还在是唤嚷叫啊呀]|.{5,}")


def _zh_pet_name(name: str) -> bool:
    return _ZH_NOT_PET_NAME.match(name) is None


# Capitalised words after "I'm from" that name a part of an organisation, not a place ("I'm from HR").
_EN_NOT_PLACES = frozenset(
    """hr it pr qa r&d sales marketing accounting finance legal support engineering management admin ops
    customer service headquarters hq corporate""".split()  # noqa: SIM905 - a word list reads better as text
)


def _place_ok(rule: str, key: str, value: str, m: re.Match[str], *, english: bool) -> bool:
    """Whether a place a rule read is one: a Chinese hometown or a Chinese place one is "now" in is a
    known place; an English hometown is no department; an English "I'm in X" is a known place said
    to be the new state ("now", "these days")."""
    if key not in (HOMETOWN, LOCATION) or rule in ("zh_live_in", "zh_live_in_2"):
        return True
    if not english:
        return (key == LOCATION and rule not in ("zh_now_in", "zh_work_in", "zh_work_in_2")) or is_place_zh(
            value
        )
    if rule == "en_now_in":
        return bool(m.group("pre") or m.group("post")) and is_place_en(value, gazetteer=True)
    if value.endswith("'s"):
        return False  # "I'm from Google's team"
    if key == HOMETOWN:
        first = value.split()[0].lower()
        if first in _EN_NOT_PLACES or value.lower() in EN_NOT_GREETING_NAMES:
            return False
        return not (value.isupper() and not is_place_en(value))  # "IT", "HR"; "US" is a place
    return True


# Words after "my cat is" that say what breed or colour, not which name: a few common ones, and any
# word like a demonym (Siamese, Burmese, Maltese; nationalities are in `EN_NOT_GREETING_NAMES`).
def _pet_kind(said: str) -> str:
    """The kind of a named pet as said: "big dog" is a dog, "golden retriever" stays one."""
    said = said.lower()
    kind = next((k for k in PET_KINDS_EN if said == k or said.endswith(" " + k)), None)
    return kind or said


def _is_breed(value: str) -> bool:
    word = value.split()[-1].lower()
    singular = re.sub(r"ies$", "y", word) if word.endswith("ies") else re.sub(r"(?<=[^s])s$", "", word)
    return any(w in EN_BREEDS or w in EN_NOT_GREETING_NAMES or w.endswith("ese") for w in (word, singular))


# A list after a verb of a several-valued key ("allergic to penicillin, peanuts and latex", "我对芒果和
# 花生过敏"): one fact per item. A further English item is short and names a thing: "I love hiking
# and my sister does too" stops at hiking. A Chinese value splits at 和/、/跟 only when every part is
# a value ("猫和狗"; "和朋友聊天" stays whole).
# What starts a hedge or an aside after a value, never a further item: "peanuts, like EpiPen-level
# allergic", "jazz, as in the old stuff", "cats, you know".
_EN_HEDGE = re.compile(
    r"(?:like|as in|i mean|you know|kind of|sort of|more or less|to the point|so much|big time|"
    r"super|extremely|severely|deathly|deadly)\b",
    re.I,
)
_EN_MORE = re.compile(rf"(?:\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|&)\s+){EN_V}", re.I)
_EN_NOT_ITEM_WORDS = frozenset(
    """i i'm i've i'd you he she it it's we they my your his her its our their me him us them
    is are was were be been am do does did don't doesn't have has had will would can can't could should
    not never always especially even really very so also too just only mostly sometimes usually maybe
    probably that this there then though although because since while when whenever if unless until which
    who where yet lol haha btw anyway etc sadly unfortunately fortunately luckily unluckily thankfully
    honestly apparently obviously basically actually seriously literally personally naturally clearly
    frankly hopefully surprisingly ironically weirdly oddly admittedly
    live lives work works study studies""".split()  # noqa: SIM905 - a word list reads better as text
)
_ZH_LIST_SPLIT = re.compile(r"和|、|跟|与|以及")
_ZH_MORE = re.compile(rf"、{ZH_V}")


def _list_items(text: str, first: str, end: int, *, english: bool) -> tuple[list[str], int]:
    """The items of a list whose first value was matched up to `end`, and where the list ends."""
    if not english:
        whole, stop = first, end
        while m := _ZH_MORE.match(text, stop):
            whole, stop = f"{whole}、{m.group('v')}", m.end()
        parts = [p.strip() for p in _ZH_LIST_SPLIT.split(whole)]
        cleaned = [clean_value(p, english=False) if 0 < len(p) <= 8 else None for p in parts]
        items = [c for c in cleaned if c is not None]
        return (items, stop) if len(parts) > 1 and len(items) == len(parts) else ([first], end)
    items = [first]
    while m := _EN_MORE.match(text, end):
        value = clean_value(m.group("v"), english=True)
        words = value.lower().split() if value else []
        if (
            not value
            or len(words) > 3
            or _EN_NOT_ITEM_WORDS.intersection(words)
            or _EN_HEDGE.match(
                text, m.start("v")
            )  # "peanuts, like EpiPen-level allergic": how much, not another item
            or _is_question(text, m.end())
        ):
            break
        items.append(value)
        end = m.end()
    return items, end


# Words that stand before 我 without being what the user likes ("今天我很喜欢", "其实我不喜欢").
_ZH_NOT_TOPIC = re.compile(
    r"(?:今天|明天|昨天|前天|后天|今晚|现在|最近|平时|平常|其实|反正|本来|当时|那时|这次|每次|一直|有时候?|"
    r"周末|晚上|早上|上午|下午|中午|以前|以后|后来|真的|说实话|老实说|总之|所以|但是|可是|不过|而且|"
    r"但|可|因为|虽然|那|就|嗯|哈哈|哎|唉|好吧|算了)+"
)


# "我是一名护士" is an occupation, "我是一个很懒的人" is not: a Chinese occupation ends like one.
_ZH_OCCUPATION_END = re.compile(
    r"(?:师|员|生|家|工|手|者|长|官|医|匠|士|警|商|板|总|经理|主管|老师|护士|律师|司机|厨子|模特|主播|博主|设计|开发|运营|产品|工程|编辑|记者|会计)$"
)


# A job named by its function ("做策划", "做销售") is an occupation when a workplace is named with it
# ("我在一家游戏公司做策划"): "我做测试" alone may be a task.
_ZH_JOB_FUNCTIONS = frozenset(
    """策划 销售 客服 翻译 文案 美工 测试 运维 前端 后端 行政 人事 财务 法务 市场 公关 采购 物流 外贸
    保安 保洁 保姆 收银 咨询 审计 风控 投行 猎头 教研 剪辑 后期 配音 摄影 导游""".split()  # noqa: SIM905 - a word list reads better as text
)
_ZH_WORKPLACE = re.compile(
    r"(?:公司|单位|医院|诊所|学校|大学|中学|小学|幼儿园|银行|工厂|厂|店|餐厅|饭店|酒店|事务所|研究所|研究院|"
    r"工作室|机构|集团|企业|报社|杂志社|出版社|电视台|政府|部门|大厂|外企|国企|银行|超市|商场)$"
)


def _looks_like_occupation(value: str, m: re.Match[str] | None = None) -> bool:
    if "的" in value:
        return False
    if _ZH_OCCUPATION_END.search(value):
        # "我是王海生", "我是王医生": a person's name, or a surname and a title, only ends as a job does
        return not (zh_full_name(value) or zh_titled(value))
    place = m.groupdict().get("place") if m is not None else None
    return value in _ZH_JOB_FUNCTIONS and bool(place and _ZH_WORKPLACE.search(place))


# The last word of "I'm a X": a generic list of occupations (not fitted to any data set).
_EN_OCCUPATIONS = frozenset(
    """nurse doctor physician surgeon dentist pharmacist paramedic therapist psychologist psychiatrist
    teacher professor lecturer tutor student researcher scientist engineer developer programmer coder
    designer architect lawyer attorney solicitor paralegal judge accountant auditor banker analyst
    consultant manager director executive clerk secretary receptionist assistant cashier salesperson
    chef cook baker waiter waitress bartender barista butcher farmer gardener carpenter plumber
    electrician mechanic technician builder painter artist illustrator photographer musician singer
    actor actress dancer writer author journalist reporter editor translator interpreter librarian
    pilot driver firefighter policeman policewoman officer soldier veterinarian vet pharmacist
    entrepreneur freelancer contractor administrator marketer recruiter caregiver nanny housekeeper
    cleaner janitor miner fisherman tailor hairdresser barber beautician coach trainer athlete
    streamer vlogger blogger influencer investor broker realtor agent inspector surveyor economist
    statistician mathematician physicist chemist biologist midwife optometrist radiologist
    intern apprentice professor postdoc""".split()  # noqa: SIM905 - a word list reads better as text
)


# -- applying --------------------------------------------------------------------------------------

_OPPOSITE = {LIKES: DISLIKES, DISLIKES: LIKES}


def apply(
    profile: Profile,
    user_id: str,
    observations: Sequence[Observation],
    *,
    at: datetime,
    source_turn_ids: Sequence[int],
    tx: Tx | None = None,
) -> list[dict[str, Any]]:
    """Write observations to the profile (a like retracts the same dislike and the reverse).
    Idempotent: observing the same fact again only adds source turn ids. Returns what was applied."""
    out = []
    for ob in observations:
        meta: dict[str, Any] | None = None
        if ob.key == PREFERRED_NAME and ob.op == "set":
            if not _others_may_name(profile, user_id):
                continue
            meta = {OTHERS_CALL: True}
        if ob.op == "correct":  # "No, I said Luna not Lola": the fact in force that holds Lola
            for fact in profile.facts(user_id, current=True):
                value = corrected(fact.value, ob.old, ob.value)
                if value is None or fact.key == TIMEZONE:
                    continue
                if fact.key in MULTI_KEYS:
                    profile.retract(user_id, fact.key, fact.value, at=at, tx=tx)
                profile.set(
                    user_id, fact.key, value, at=at, source_turn_ids=source_turn_ids, meta=fact.meta, tx=tx
                )
        elif ob.op == "set" and ob.key == LOSSES:  # "my grandma passed away": no one to ask after now
            lost = ob.value
            for key, value in _lost(profile, user_id, ob.value):
                profile.retract(user_id, key, value, at=at, tx=tx)
                lost = value if key == PEOPLE else lost  # "grandma" is the "grandma Rose" named before
            meta = {"when": ob.when} if ob.when else None
            profile.set(user_id, LOSSES, lost, at=at, source_turn_ids=source_turn_ids, meta=meta, tx=tx)
        elif ob.op == "set" and ob.key == DATES:  # "mom's birthday: May 12" replaces "mom's birthday: May"
            label = ob.value.split(": ")[0]
            for value in profile.values(user_id, DATES):
                if value.split(": ")[0] == label and not same_value(value, ob.value):
                    profile.retract(user_id, DATES, value, at=at, tx=tx)
            profile.set(user_id, DATES, ob.value, at=at, source_turn_ids=source_turn_ids, tx=tx)
        elif ob.op == "retract" and ob.key == PETS:  # "my cat Luna died": the pet in force it names
            for value in ended_pets(profile.values(user_id, PETS), ob.value):
                profile.retract(user_id, PETS, value, at=at, tx=tx)
        elif ob.op == "retract" and not ob.value:  # "我辞职了": whatever the value in force is
            for value in profile.values(user_id, ob.key):
                profile.retract(user_id, ob.key, value, at=at, tx=tx)
        elif ob.op == "retract":
            profile.retract(user_id, ob.key, ob.value, at=at, tx=tx)
        else:
            if ob.key in _OPPOSITE:
                profile.retract(user_id, _OPPOSITE[ob.key], ob.value, at=at, tx=tx)
            if ob.key == DIET and ob.value in DIET_KINDS:
                for value in profile.values(user_id, DIET):
                    if value in DIET_KINDS and value != ob.value:
                        profile.retract(user_id, DIET, value, at=at, tx=tx)
            if ob.key == DIET and ob.value in MEATLESS:
                # "I love a good steak", then "I've gone vegetarian": the meat is no taste in force.
                for value in profile.values(user_id, LIKES):
                    if MEAT_WORDS.search(value):
                        profile.retract(user_id, LIKES, value, at=at, tx=tx)
            profile.set(user_id, ob.key, ob.value, at=at, source_turn_ids=source_turn_ids, meta=meta, tx=tx)
        out.append(ob.as_dict())
    return out


def _lost(profile: Profile, user_id: str, lost: str) -> list[tuple[str, str]]:
    """The facts in force a loss ends: the person of that name ("grandma Rose"), else the one person
    of that kind ("grandma" with one grandma named; none when two are: it does not say which), and
    the partner when the partner died ("my husband passed away")."""
    kin, _, name = lost.partition(" ")
    if kin in PARTNER_WORDS:
        partner = profile.values(user_id, PARTNER_NAME)
        return [(PARTNER_NAME, v) for v in partner if not name or same_value(v, name)]
    people = profile.values(user_id, PEOPLE)
    if name:
        return [(PEOPLE, v) for v in people if same_value(v, lost)]
    same_kin = [v for v in people if v.partition(" ")[0].casefold() == kin.casefold()]
    return [(PEOPLE, same_kin[0])] if len(same_kin) == 1 else []


# Kinds of diet a person keeps one of at a time: a new one ends the one in force ("I guess I'm
# pescatarian now" after "I'm vegetarian" showed "diet: vegetarian, pescatarian"), while what the
# user does not eat ("no pork", 不吃辣) stays beside it.
DIET_KINDS = frozenset({"vegetarian", "vegan", "pescatarian", "吃素", "吃全素"})

# The meta of a preferred name read from what others call the user ("大家都叫我小明").
OTHERS_CALL = "others_call"


def _others_may_name(profile: Profile, user_id: str) -> bool:
    """Whether what others call the user may be the preferred name: no preferred name is in force,
    or the one in force came the same way or is the user's name itself ("我叫李伟" names, it asks for
    nothing). A name the user asked for ("叫我大王") is kept."""
    current = profile.get(user_id, PREFERRED_NAME)
    if current is None or current.meta.get(OTHERS_CALL):
        return True
    name = profile.get(user_id, NAME)
    return name is not None and same_value(name.value, current.value)


def apply_turns(profile: Profile, turns: Sequence[Turn], *, tx: Tx | None = None) -> list[dict[str, Any]]:
    """The rule facts of stored user turns that came in without a live turn (an import), as a live turn
    would have written them: the rules of `extract`, and a rename ("叫我大王", "call me Dan") as the
    preferred name. Applied oldest first by timestamp, each fact dated by its turn, so a later
    statement supersedes an earlier one whatever the order of the file (and an import older than
    what the profile holds is filed as history). Idempotent. Returns what was applied."""
    out: list[dict[str, Any]] = []
    users = [t for t in turns if t.role == "user" and t.id is not None]
    for turn in sorted(users, key=lambda t: (t.created_at, t.seq or 0, t.id or 0)):
        assert turn.id is not None
        for cmd in detect(turn.content, named=named(profile, turn.user_id, turn.content)):
            if cmd.kind == "rename" and not cmd.value and cmd.old:
                profile.retract(turn.user_id, PREFERRED_NAME, cmd.old, at=turn.created_at, tx=tx)
                out.append(Observation(PREFERRED_NAME, cmd.old, "retract", rule=cmd.rule).as_dict())
            elif cmd.kind == "rename" and cmd.value:
                meta = {"replaces": cmd.old} if cmd.old else {}
                profile.set(
                    turn.user_id,
                    PREFERRED_NAME,
                    cmd.value,
                    at=turn.created_at,
                    source_turn_ids=[turn.id],
                    meta=meta,
                    tx=tx,
                )
                out.append(Observation(PREFERRED_NAME, cmd.value, rule=cmd.rule).as_dict())
        out += apply(
            profile, turn.user_id, extract(turn.content), at=turn.created_at, source_turn_ids=[turn.id], tx=tx
        )
    return out


# -- the LLM extraction (P2) ---------------------------------------------------------------------

# Keys the LLM may set: a rename stays a command, the timezone comes with the request.
LLM_KEYS = tuple(k for k in KEYS if k not in (PREFERRED_NAME, TIMEZONE))


class _LLMFact(BaseModel):
    turn: int = Field(ge=1, description="1-based number of the message that states it")
    key: str
    value: str = Field(min_length=1, max_length=80)
    op: Op = "set"


class _LLMFacts(BaseModel):
    facts: list[_LLMFact] = Field(default_factory=list)


def llm_extract(llm: ChatClient, turns: Sequence[Turn]) -> list[tuple[Turn, Observation]]:
    """Facts the helper LLM finds in the user's messages of one page (one call per page), validated:
    unknown keys and turn numbers are dropped. Raises `LLMError` when the reply is not valid JSON."""
    from memsched.llm.client import complete_json
    from memsched.llm.prompts import load

    users = [t for t in turns if t.role == "user"]
    if not users:
        return []
    lines = "\n".join(f"{i}. {t.content}" for i, t in enumerate(users, 1))
    prompt = load("profile_extract").format(keys=", ".join(LLM_KEYS), messages=lines)
    reply = complete_json(llm, [{"role": "user", "content": prompt}], _LLMFacts, purpose="profile")
    out = []
    for f in reply.facts:
        if f.key not in LLM_KEYS or f.turn > len(users):
            continue
        out.append((users[f.turn - 1], Observation(f.key, f.value.strip(), f.op, rule="llm")))
    return out


@task("profile_extract")
def profile_extract_task(ctx: TaskContext, job: Job) -> None:
    """P2, per page: the rules again (for turns stored without them, e.g. imports) and, with an LLM,
    the LLM extraction; each fact dated by its turn. Idempotent: re-observing adds only sources."""
    page_id = int(job.payload["page_id"])
    turns = ctx.store.page_turns(job.user_id, page_id)
    found = [(t, ob) for t in turns if t.role == "user" for ob in extract(t.content)]
    if ctx.llm is not None:
        try:
            found += llm_extract(ctx.llm, turns)
        except LLMError as exc:  # the rules' facts still count; a bad reply is not worth retrying
            log.warning("profile LLM extraction of page %s failed, rules only: %s", page_id, exc)
    profile = Profile(ctx.store)
    with ctx.store.transaction() as tx:
        # A turn forgotten while this job read it or waited for the LLM gives nothing: its facts
        # would outlive the forget (read inside the transaction, so no forget lands in between).
        kept = {t.id for t in ctx.store.get_turns(job.user_id, [t.id for t, _ in found if t.id is not None])}
        for turn, ob in found:
            assert turn.id is not None
            if turn.id not in kept:
                continue
            apply(profile, job.user_id, [ob], at=turn.created_at, source_turn_ids=[turn.id], tx=tx)
    log.info("profile extraction of page %s of %s: %d facts", page_id, job.user_id, len(found))
