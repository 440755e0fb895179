"""Profile facts from what the user says: bilingual rule patterns (always, microseconds, applied with
the turn) and an LLM JSON extraction (a P2 job per page, when an LLM is configured).

The patterns, and which forms they read in each language, are in `profile_rules.py`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from memsched.commands import detect, named, others_call, stated_name
from memsched.errors import LLMError
from memsched.jobs.tasks import TaskContext, task
from memsched.model import Turn
from memsched.profile import (
    ALLERGIES,
    DIET,
    DISLIKES,
    HOMETOWN,
    KEYS,
    LIKES,
    LOCATION,
    MULTI_KEYS,
    NAME,
    OCCUPATION,
    PARTNER_NAME,
    PETS,
    PREFERRED_NAME,
    SLEEP_TIME,
    TIMEZONE,
    Profile,
    same_value,
)
from memsched.profile_rules import (
    EN_BREEDS,
    EN_NOT_GREETING_NAMES,
    EN_PLACE,
    EN_V,
    PET_KINDS_EN,
    RETRACT_RULES,
    RULES,
    ZH_V,
    clean_value,
)
from memsched.store import Tx
from memsched.text.places import is_place_en, is_place_zh
from memsched.text.timeexpr import spans

if TYPE_CHECKING:
    from memsched.jobs.queue import Job
    from memsched.llm.client import ChatClient

log = logging.getLogger("memsched.profile")

Op = Literal["set", "retract"]


@dataclass(frozen=True, slots=True)
class Observation:
    """One fact a message states: `op` "set" (or "retract") `key` = `value`, found by `rule`."""

    key: str
    value: str
    op: Op = "set"
    rule: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "value": self.value, "op": self.op, "rule": self.rule}


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
    r"(?:喜欢|不喜欢|爱吃|爱喝|讨厌|受不了|不吃|吃素|对[^，,。！？!?]{1,12}过敏|住在|搬到|搬去|搬来)|(?:现在|目前)是)"
)
_ZH_MY_CLAUSE = re.compile(
    r"(?:^|[。！？!?；;，,])\s*(?:而且|并且|另外|同时|但是|但|不过)?我(?![们妈爸哥姐弟妹])[^，,。！？!?；;]*$"
)


def _zh_implied_subject(text: str) -> str:
    out, last = [], 0
    for m in _ZH_GOES_ON.finditer(text):
        if _ZH_MY_CLAUSE.search(text, 0, m.start() - 1) is None:
            continue
        out += [text[last : m.start()], "我", m.group("rest")]
        last = m.end()
    return "".join([*out, text[last:]]) if out else text


def _is_question(text: str, end: int) -> bool:
    tail = re.match(r"[^。.!！?？，,;；\n]*([?？]|吗|么)?", text[end:])
    return bool(tail and tail.group(1))


def extract(text: str) -> list[Observation]:
    """The profile facts a user message states, by rule; [] for most messages.

    Renames ("叫我大王") are not here: they are commands applied before the reply (`commands.py`).
    A name statement ("我叫李伟", "my name is Li Wei") is also reported here as `name`, and what a
    group calls the user, said alone ("大家都叫我小明"), as `preferred_name` (`apply` keeps a name the
    user asked for).
    """
    text = text.strip()
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
    for start, end in reversed(spans(text)):
        text = (text[:start] + text[end:]).replace("  ", " ")
    text = _zh_implied_subject(text)
    for cmd in commands:
        if (
            cmd.kind == "rename"
            and cmd.value
            and cmd.rule in ("zh_my_name_is", "en_my_name_is", "en_name_correction")
        ):
            found.append(Observation(NAME, cmd.value, rule=cmd.rule))
        elif cmd.kind == "rename" and cmd.rule in ("zh_name_but_called", "en_name_but_called") and given:
            found.append(Observation(NAME, given, rule=cmd.rule))  # "我叫李伟，不过大家都叫我小李": 李伟
    taken: list[tuple[int, int]] = []
    for rule, key, pattern, english in RULES:
        for m in pattern.finditer(text):
            # A rule that reads a clause's subject from the clause before marks where its own words
            # begin (`(?P<at>)`): the clause before may hold a fact of its own.
            start = m.start("at") if "at" in pattern.groupindex else m.start()
            if any(s <= start < e for s, e in taken) or _is_question(text, m.end()):
                continue
            if _hypothetical(text, m.start()):
                continue
            if key == PETS and "kind" in pattern.groupindex and m.group("v") is None:
                value = m.group("kind")  # "我有一只猫": the kind alone
            elif key == PETS and "kind" in pattern.groupindex:
                name = clean_value(m.group("v"), english=english)
                value = f"{_pet_kind(m.group('kind'))} {name}" if name else None
            elif rule == "en_teach" and m.group("v") is None:
                value = "teacher"  # "I teach at a high school"
            else:
                value = clean_value(m.group("v"), english=english)
            if value is None:
                continue
            if rule == "en_teach" and m.group("v") is not None:
                value = f"{value} teacher"
            elif rule.endswith("_intolerant"):
                value = f"{value} intolerance" if english else f"{value}不耐受"
            if key == OCCUPATION and not english and not _looks_like_occupation(value, m):
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
            if rule in ("en_im_name", "en_names", "en_name_is_pet") and (
                said in EN_NOT_GREETING_NAMES or said in _EN_PRONOUNS or is_place_en(said)
            ):
                continue
            if key == LOCATION and not english and re.match(r"[一两几][个张只件箱台把条套]", m.group("v")):
                continue  # "我搬来一个柜子" moved a thing, not the user
            one_value = (key == PETS and "kind" in pattern.groupindex) or (
                key == DIET and not rule.endswith("dont_eat")
            )
            named_pets = _EN_PET_NAMES.match(text, m.end()) if rule == "en_pet_have" else None
            if named_pets is not None:  # "I have two cats, Mochi and Tofu": each cat by its name
                kind = re.sub(r"s$", "", value.lower()) if value.lower() != "guinea pigs" else "guinea pig"
                names = re.findall(r"[A-Z][a-z'\-]+", named_pets.group("names"))
                values, end = [f"{kind} {n}" for n in names], named_pets.end()
            elif key in MULTI_KEYS and not one_value:
                values, end = _list_items(text, value, m.end(), english=english)
            else:
                values, end = [value], m.end()
            if key == DIET:
                values = [d for v in values if (d := _diet_value(rule, v, english=english)) is not None]
            found += [Observation(key, v, rule=rule) for v in values]
            if rule == "zh_work_as" and m.group("place") and is_place_zh(m.group("place")):
                # "在杭州做老师": one lives where one works, for a known place.
                found.append(Observation(LOCATION, m.group("place"), rule=rule))
            taken.append((start, end))
    for rule, key, pattern, english in RETRACT_RULES:
        for m in pattern.finditer(text):
            value = clean_value(m.group("v"), english=english)
            if value is not None and not _is_question(text, m.end()) and not _hypothetical(text, m.start()):
                found = [ob for ob in found if not (ob.key == key and ob.op == "set")]
                values, _ = _list_items(text, value, m.end(), english=english)
                if key == DIET:
                    values = [d for v in values if (d := _diet_value(rule, v, english=english)) is not None]
                found += [Observation(key, v, "retract", rule=rule) for v in values]
    sleep = _sleep_time(text)
    if sleep is not None:
        found.append(sleep)
    found += _second_predicates(text, found)
    zone = _timezone(text)
    if zone is not None:
        found.append(zone)
    return found


# The names after "I have two cats": ", Mochi and Tofu", " named Mochi and Tofu", ": Mochi & Tofu".
_EN_PET_NAMES = re.compile(
    r"(?:\s*[,:(\-–]\s*|\s+)(?:(?:named|called)\s+)?(?-i:(?P<names>[A-Z][a-z'\-]+(?:\s*(?:,|and|&|,\s*and)\s*[A-Z][a-z'\-]+)*))"
    r"(?=\s*$|\s*[.,!;:~)]|\s+(?:and|but|lol|haha|btw)\b)"
)
_EN_PRONOUNS = frozenset("he she it this that there who what which everyone nobody someone".split())  # noqa: SIM905


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
    return word in EN_BREEDS or word in EN_NOT_GREETING_NAMES or word.endswith("ese")


# A list after a verb of a several-valued key ("allergic to penicillin, peanuts and latex", "我对芒果和
# 花生过敏"): one fact per item. A further English item is short and names a thing: "I love hiking
# and my sister does too" stops at hiking. A Chinese value splits at 和/、/跟 only when every part is
# a value ("猫和狗"; "和朋友聊天" stays whole).
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
        return True
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
        if ob.op == "retract":
            profile.retract(user_id, ob.key, ob.value, at=at, tx=tx)
        else:
            if ob.key in _OPPOSITE:
                profile.retract(user_id, _OPPOSITE[ob.key], ob.value, at=at, tx=tx)
            profile.set(user_id, ob.key, ob.value, at=at, source_turn_ids=source_turn_ids, meta=meta, tx=tx)
        out.append(ob.as_dict())
    return out


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
        for turn, ob in found:
            assert turn.id is not None
            apply(profile, job.user_id, [ob], at=turn.created_at, source_turn_ids=[turn.id], tx=tx)
    log.info("profile extraction of page %s of %s: %d facts", page_id, job.user_id, len(found))
