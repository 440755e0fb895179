"""Relative time in messages, resolved to absolute dates ("上周" said on 2024-10-22 -> 2024-10-15).

An LLM does not know when a remembered message was written, so "last week" loses its meaning the
moment the message is stored. `resolve(text, now, timezone)` finds the relative expressions in a
message and resolves each against the message's own timestamp in the user's local time.

Finding and resolving are separate. Finding is a small set of bilingual patterns (below), so that
only real expressions are touched (`dateparser.search` also matches ordinary words such as "may" or
"now"). Resolving goes through `dateparser` wherever it covers the form, after light normalisation
(Chinese numerals to digits: "三天前" -> "3天前"; "之前/以后" -> "前/后"; "上个星期" -> "上周").
dateparser 1.5 does not cover these, so a few lines of date arithmetic resolve them (`source="rule"`):

- a weekday of an adjacent week: 上周三, 下周五, 这周日, 上上周二 (weeks start on Monday);
- 上上周 / 下下周, 上上个月, 前年 / 后年;
- weekends: 上周末, 这周末, last weekend, this weekend, next weekend (the Saturday);
- 半个月前 / 半个月后 (fifteen days), 半年前 / half a year ago (six months), the week before last / the
  week after next, a fortnight ago / in a fortnight;
- 前两天 / a couple of days ago, in a couple of weeks (two, marked approximate: granularity "week", so
  no follow-up nudge is dated by them).

- weekdays with a direction in English: "next Thursday" is 下周四 (next week's, weeks start on
  Monday), "this Thursday" 这周四, "this coming Thursday" the next one after today, "Thursday after
  next" 下下周四, "last Thursday" the most recent one;
- parts of a month or a year and seasons, approximate (`qualifier`): 月底 / 下个月初 / 上旬 / 年底 /
  去年年底 / 去年夏天, "the end of the month", "early next month", "late March", "last summer";
- by the tense of their clause (past: the one gone by; else the coming one), forms without a
  direction: bare weekdays and weekends (周二, "on Tuesday", 周末, "the weekend"), calendar dates
  without a year (3月5号, 12/25, "March 5", "on the 15th", 20号, 上个月15号) and fixed holidays (国庆,
  圣诞, Christmas, New Year's Eve, Thanksgiving). Habits and ranges ("every Friday", 周一到周五) and
  recurring dates ("born on March 5", 生日) name no single day and stay unresolved.

Deliberately not resolved: today/今天 and its parts ("tonight", "this morning", 今晚: the turn's own
date already says it), hours ("三小时前"), vague amounts ("a few days ago", "几天前", "前几天", "过几天",
"前阵子"), and lunar holidays (春节, 中秋: no lunar calendar is installed).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from typing import Any, Literal

import dateparser

from memsched.model import Turn
from memsched.text.scripts import HAN, IGNORECASE_FOLD, LATIN, present
from memsched.zones import zone_info

Granularity = Literal["day", "week", "weekend", "month", "year"]


@dataclass(frozen=True, slots=True)
class TimeRef:
    """One relative expression of a message and the absolute date it means.

    `date` is the day the expression points at (for "last week" the same weekday a week earlier, as
    dateparser resolves it); `granularity` says how precise that is, and `label` renders it at that
    precision: "2024-10-15", "2024-09" for a month, "2023" for a year.
    """

    text: str
    start: int
    end: int
    date: date
    granularity: Granularity
    source: Literal["dateparser", "rule"]
    # How an approximate reference reads before its date: "about" (前两天: about 2024-10-20), "early" /
    # "mid" / "late" (月底: late 2024-10), a season ("summer" 2023). Empty for a plain date.
    qualifier: str = ""

    @property
    def approximate(self) -> bool:
        return bool(self.qualifier)

    @property
    def label(self) -> str:
        if self.granularity == "year":
            plain = f"{self.date.year:04d}"
        elif self.granularity == "month":
            plain = f"{self.date.year:04d}-{self.date.month:02d}"
        else:
            plain = self.date.isoformat()
        return f"{self.qualifier} {plain}" if self.qualifier else plain

    @property
    def note(self) -> str:
        """How the reference reads beside its turn: `上周 = 2024-10-15`."""
        return f"{self.text} = {self.label}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "start": self.start,
            "end": self.end,
            "date": self.date.isoformat(),
            "granularity": self.granularity,
            "label": self.label,
            "source": self.source,
            "qualifier": self.qualifier,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TimeRef:
        return cls(
            text=str(data["text"]),
            start=int(data["start"]),
            end=int(data["end"]),
            date=date.fromisoformat(str(data["date"])),
            granularity=data["granularity"],
            source=data["source"],
            qualifier=str(data.get("qualifier") or ""),
        )


def local_now(now: datetime, timezone: str | None) -> datetime:
    """`now` in the user's IANA timezone; UTC when the timezone is missing or unknown."""
    aware = now if now.tzinfo else now.replace(tzinfo=UTC)
    zone = zone_info(timezone) if timezone else None
    return aware.astimezone(zone or UTC)


def notes(refs: list[TimeRef]) -> str:
    """All references of a turn as one short string: `上周 = 2024-10-15; 明天 = 2024-10-23`."""
    return "; ".join(dict.fromkeys(r.note for r in refs))


# --- finding ----------------------------------------------------------------------------------

_CN_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_CN_NUM = "[0-9０-９零〇一二两三四五六七八九十百]+"
_WEEKDAY_CN = {
    "一": 0,
    "二": 1,
    "三": 2,
    "四": 3,
    "五": 4,
    "六": 5,
    "日": 6,
    "天": 6,
    "1": 0,
    "2": 1,
    "3": 2,
    "4": 3,
    "5": 4,
    "6": 5,
    "7": 6,
}
_WEEKDAYS_EN = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_EN_NUM = r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_WEEK_CN = "(?:周|星期|礼拜)"

_WD_EN = "|".join(_WEEKDAYS_EN)
_MONTH_EN = (
    "january|february|march|april|may|june|july|august|september|october|november|december"
    "|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec"
)
_MONTH_FULL_EN = "january|february|march|april|may|june|july|august|september|october|november|december"
_MONTH_CN = "(?:1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])"
_DAY_CN = "(?:3[01]|[12][0-9]|0?[1-9]|三十一?|二十[一二三四五六七八九]?|十[一二三四五六七八九]?|[一二三四五六七八九])"
_PART_CN = "初|底|末|上旬|中旬|下旬"
_NOT_LUNAR = "(?![一二三四五六七八九十])"  # 正月初一, 大年初一: lunar days, not "early in the month"
_HOLIDAYS_CN = (
    "元旦|情人节|妇女节|劳动节|儿童节|国庆节?|教师节|万圣节|平安夜|圣诞节?|双十一|光棍节|感恩节|母亲节|父亲节"
)
_HOLIDAYS_EN = (
    "christmas eve|christmas day|christmas|xmas|new year['’]?s eve|new year['’]?s day|new year['’]?s"
    "|valentine['’]?s day|valentine['’]?s|halloween|thanksgiving|mother['’]?s day|father['’]?s day"
    "|independence day|the fourth of july"
)
# Things a bare weekday is not: a holiday (Good Friday, Black Friday), a habit (every Friday), the end
# of a range (Monday to Friday).
_EN_BARE_WD_BEFORE = "".join(
    f"(?<!{w} )"
    for w in (
        "every",
        "each",
        "good",
        "black",
        "cyber",
        "super",
        "ash",
        "holy",
        "maundy",
        "to",
        "through",
        "thru",
    )
)

# The forms, longest first, so that "上上周三" is not read as "上周三". Each is a named group; the
# groups inside a form are named `<form>_<part>`. `_BARE_OR_ABSOLUTE` marks the forms `spans` leaves
# out: a weekday or weekend without a direction, a calendar date, a month name or a holiday.
_FORMS: tuple[tuple[str, str], ...] = (
    (
        "cn_wday",
        rf"(?P<cn_wday_dir>上上|下下|上|下|这|本)个?{_WEEK_CN}(?P<cn_wday_day>[一二三四五六日天1-7])",
    ),
    ("cn_wkend", r"(?P<cn_wkend_dir>上|下|这|本)个?周末"),
    ("cn_mday", rf"(?P<cn_mday_dir>上上|下下|上|下|这|本)个?月(?P<cn_mday_d>{_DAY_CN})[号日]"),
    (
        "cn_mpart",
        rf"(?<![腊正冬岁\d一二三四五六七八九十])(?:(?P<cn_mpart_dir>上上|下下|上|下|这|本)个?)?月(?P<cn_mpart_part>{_PART_CN}){_NOT_LUNAR}",
    ),
    ("cn_week2", rf"(?P<cn_week2_dir>上上|下下)个?{_WEEK_CN}"),
    ("cn_week", rf"(?P<cn_week_dir>上|下)个?{_WEEK_CN}"),
    ("cn_month2", r"(?P<cn_month2_dir>上上|下下)个?月"),
    ("cn_month", r"(?P<cn_month_dir>上|下)个?月"),
    (
        "cn_ypart",
        rf"(?:(?P<cn_ypart_y>去|今|明|前)年年?|(?<![一二两三四五六七八九十几百\d每这那])年)(?P<cn_ypart_part>初|底|末){_NOT_LUNAR}",
    ),
    ("cn_season", r"(?P<cn_season_y>去|今|明|前)年(?P<cn_season_s>春|夏|秋|冬)(?:天|季)"),
    ("cn_holiday", rf"(?:(?P<cn_holiday_y>去|今|明|前)年的?)?(?P<cn_holiday_name>{_HOLIDAYS_CN})"),
    ("cn_year", r"去年|明年|前年|后年"),
    (
        "cn_md",
        rf"(?<![\d一二三四五六七八九十两几个第])(?:(?P<cn_md_y>\d{{4}})年)?(?P<cn_md_m>{_MONTH_CN})月(?![一两二三四五六七八九十几]*次)"
        rf"(?:(?P<cn_md_d>{_DAY_CN})[号日]|(?P<cn_md_part>{_PART_CN}|份){_NOT_LUNAR})?",
    ),
    (
        "cn_ago",
        rf"(?P<cn_ago_n>{_CN_NUM})(?P<cn_ago_unit>个?(?:天|日|周|星期|礼拜|月)|年)(?P<cn_ago_dir>以前|之前|前|以后|之后|后)",
    ),
    ("cn_half", r"(?<![个年月天周])半个?(?P<cn_half_unit>月|年)(?P<cn_half_dir>以前|之前|前|以后|之后|后)"),
    # 前两天 said of the speaker's own past ("我前两天去了杭州"), not "考试前两天" (two days before an exam).
    ("cn_couple", r"(?<![^\s，,。.!！?？；;~～我你他她们])前两天"),
    ("cn_soon", r"过(?:一)?两天"),  # in a couple of days
    ("cn_day", r"大前天|前天|昨天|昨晚|昨日|昨儿|大后天|后天|明天|明早|明晚|明日"),
    ("cn_bare_wkend", r"(?<![上下这本每个])周末(?!一般|通常|都|总|经常|常常|的时候)"),
    (
        "cn_bare_wday",
        rf"(?<![上下这本每个一二两三四五六七八九十几\d到至和与、第]){_WEEK_CN}(?P<cn_bare_wday_d>[一二三四五六日天])"
        rf"(?![到至~～\-—、次个回遍趟])(?![和与或跟]{_WEEK_CN})",
    ),
    # 12/25那天, and a month/day heading a clause that goes on in words ("3/28我们去厦门", "周六3/28去
    # 厦门"): a Chinese fraction is written with 的 or a measure word after it ("1/3的人", "1/2杯").
    (
        "cn_slash",
        r"(?<![\d/])(?P<cn_slash_a>\d{1,2})/(?P<cn_slash_b>\d{1,2})(?=号|那天|当天|那日)"
        r"|(?:(?<=^)|(?<=[，,。.!！?？；;~～])|(?<=周[一二三四五六日天])|(?<=星期[一二三四五六日天])|(?<=礼拜[一二三四五六日天]))(?P<cn_slash_a2>\d{1,2})/"
        r"(?P<cn_slash_b2>\d{1,2})(?![\d/])(?=[\u4e00-\u9fff])(?![的之个杯勺克斤米份次倍碗瓶张块人分])",
    ),
    (
        "cn_dom",
        rf"(?<![\d月年第号.一二三四五六七八九十])(?P<cn_dom_d>{_DAY_CN})号"
        r"(?![线楼房门床桌座位机店窗院车厅馆室台站包球员码口人])",
    ),
    ("en_day2", r"\bthe day (?:before yesterday|after tomorrow)\b"),
    ("en_week2", r"\bthe week (?P<en_week2_dir>before last|after next)\b"),
    ("en_fortnight", r"\b(?P<en_fortnight_dir>a fortnight ago|in a fortnight)\b"),
    ("en_day", r"\b(?:yesterday|tomorrow|last night)\b"),
    ("en_wkend", r"\b(?P<en_wkend_dir>last|this past|this coming|this|next) weekend\b"),
    (
        "en_wday",
        rf"\b(?P<en_wday_dir>last|this past|this coming|this|next|coming) (?P<en_wday_day>{_WD_EN})\b(?! after next)",
    ),
    ("en_after", rf"\b(?:the )?(?P<en_after_day>{_WD_EN}) after next\b"),
    (
        "en_part",
        r"\b(?:(?:the )?(?P<en_part_p>end|beginning|start|middle) of (?:the |this |(?P<en_part_d>next|last) )"
        r"|(?P<en_part_q>early|mid|late)[- ](?:this |(?P<en_part_d2>next|last) ))(?P<en_part_u>month|year)\b",
    ),
    (
        "en_mpart",
        rf"\b(?:(?:the )?(?P<en_mpart_p>end|beginning|start|middle) of |(?P<en_mpart_q>early|mid|late)[- ])"
        rf"(?P<en_mpart_m>{_MONTH_FULL_EN})\b(?!\s*\d)",
    ),
    (
        "en_season",
        r"\b(?=last|this|next)(?<!the )(?<!my )(?<!a )(?P<en_season_dir>last|this past|this coming|this|next) "
        r"(?P<en_season_s>spring|summer|fall|autumn|winter)\b",
    ),
    (
        "en_holiday",
        rf"\b(?:(?P<en_holiday_dir>last|this|next) )?(?P<en_holiday_name>{_HOLIDAYS_EN})(?![\w'’])",
    ),
    ("en_rel", r"\b(?:last|next) (?:week|month|year)\b"),
    (
        "en_md",
        rf"\b(?P<en_md_m>{_MONTH_EN})\.? (?P<en_md_d>\d{{1,2}})(?:st|nd|rd|th)?\b(?!:)(?:,? (?P<en_md_y>\d{{4}})\b)?",
    ),
    (
        "en_dm",
        rf"\b(?P<en_dm_d>\d{{1,2}})(?:st|nd|rd|th)? (?:of )?(?P<en_dm_m>{_MONTH_EN})\b(?:,? (?P<en_dm_y>\d{{4}})\b)?",
    ),
    (
        "en_inmonth",
        rf"\b(?P<en_inmonth_dir>in|last|next|this|since|until|till|by|during) (?P<en_inmonth_m>{_MONTH_FULL_EN})\b(?!,? ?\d)",
    ),
    (
        "en_dom",
        r"\b(?:on|by|until|till|before|after|since) the (?P<en_dom_d>\d{1,2})(?:st|nd|rd|th)\b(?! of)",
    ),
    (
        "en_slash",
        # after a word that introduces a date ("on 2/28", "for 2/28") or a weekday ("Saturday 2/28",
        # "Sat, 2/28"), not a fraction ("for 1/2 of it", "for 3/4 cup")
        rf"(?:\b(?P<en_slash_wd>{_WD_EN}|mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)\.?,? (?=\d{{1,2}}/)|"
        r"(?=\d{1,2}/)(?:(?<=\bon )|(?<=\bby )|(?<=\buntil )|(?<=\btill )|(?<=\bbefore )|(?<=\bafter )|"
        r"(?<=\bsince )|(?<=\bfor )))"
        r"(?P<en_slash_a>\d{1,2})/(?P<en_slash_b>\d{1,2})(?:/(?P<en_slash_y>\d{4}|\d{2}))?(?![/\d])"
        r"(?!\s*(?:of|cups?|tbsp|tsp|the|an?)\b)",
    ),
    ("en_bare_wkend", r"(?<!every )\bthe weekend\b"),
    (
        "en_bare_wday",
        rf"\b(?=(?:{_WD_EN})\b){_EN_BARE_WD_BEFORE}(?P<en_bare_wday_day>{_WD_EN})\b(?! after next)(?!\s*(?:-|–|to|through|thru)\s*(?:{_WD_EN}))",
    ),
    ("en_ago", rf"\b{_EN_NUM} (?:day|week|month|year)s? ago\b"),
    (
        "en_couple",
        r"\b(?:(?P<en_couple_in>in )?(?:a )?couple(?: of)? (?P<en_couple_unit>day|week|month|year)s?"
        r"(?(en_couple_in)|\s+ago)|(?P<en_couple_half_in>in )?half an? (?P<en_couple_half>month|year)"
        r"(?(en_couple_half_in)|\s+ago))\b",
    ),
    ("en_in", rf"\bin {_EN_NUM} (?:day|week|month|year)s?\b"),
    (
        "en_later",
        rf"\b(?P<en_later_n>{_EN_NUM}) (?P<en_later_unit>day|week|month|year)s? (?:later|from now)\b",
    ),
)
_BARE_OR_ABSOLUTE = frozenset(
    {
        "cn_holiday",
        "cn_md",
        "cn_bare_wkend",
        "cn_bare_wday",
        "cn_slash",
        "cn_dom",
        "en_mpart",
        "en_holiday",
        "en_md",
        "en_dm",
        "en_inmonth",
        "en_dom",
        "en_slash",
        "en_bare_wkend",
        "en_bare_wday",
    }
)
# The forms are scanned one by one, as one alternation of them would match: at each place the
# leftmost match wins, and of two forms matching at the same place the one listed first. One
# alternation scanned twice as slowly (the regex engine's first-character and prefix shortcuts work on
# a form alone, not on the alternation), and each form now runs only on a text in its script: a
# Chinese form needs a Han character, an English one a Latin letter.
_FORM_RX = tuple((name, re.compile(f"(?P<{name}>{rx})", re.IGNORECASE)) for name, rx in _FORMS)


def _found(text: str) -> tuple[tuple[str, re.Match[str]], ...]:
    """(form, match) of every time expression in `text`, in text order, not overlapping. Cached for
    texts of a chat message's size: a turn's message is read by the pager, the profile rules and its
    recording (a Match is immutable)."""
    # The letters IGNORECASE folds onto i, k and s, read as those letters: "laſt weekend" matched a
    # form, and its lookup by the lowered word failed.
    text = text.translate(IGNORECASE_FOLD)
    return _found_cached(text) if len(text) <= 2000 else _scan(text)


@lru_cache(maxsize=256)
def _found_cached(text: str) -> tuple[tuple[str, re.Match[str]], ...]:
    return _scan(text)


def _scan(text: str) -> tuple[tuple[str, re.Match[str]], ...]:
    held = present(text)
    forms = [(n, rx) for n, rx in _FORM_RX if (HAN if n.startswith("cn_") else LATIN) in held]
    nexts = [rx.search(text) for _, rx in forms]
    out: list[tuple[str, re.Match[str]]] = []
    pos = 0
    while True:
        best: re.Match[str] | None = None
        form = ""
        for k, (name, rx) in enumerate(forms):
            m = nexts[k]
            if m is not None and m.start() < pos:
                m = nexts[k] = rx.search(text, pos)
            if m is not None and (best is None or m.start() < best.start()):
                best, form = m, name
        if best is None:
            return tuple(out)
        out.append((form, best))
        pos = best.end() if best.end() > best.start() else best.end() + 1  # no form matches empty text


def _cn_int(text: str) -> int | None:
    """A Chinese or Arabic numeral up to 999 as an int ("三" 3, "十五" 15, "二十" 20, "两" 2, "１２" 12)."""
    text = text.translate(str.maketrans("０１２３４５６７８９", "0123456789"))
    if text.isdigit():
        return int(text)
    total, current = 0, 0
    for ch in text:
        if ch in _CN_DIGITS:
            current = _CN_DIGITS[ch]
        elif ch == "十":
            total += (current or 1) * 10
            current = 0
        elif ch == "百":
            total += (current or 1) * 100
            current = 0
        else:
            return None
    return total + current


# --- resolving ---------------------------------------------------------------------------------


@lru_cache(maxsize=2048)
def _dateparser(expr: str, lang: str, base: date) -> date | None:
    # A noon base: no expression we pass is sub-day, and noon keeps DST shifts off the date.
    found = dateparser.parse(
        expr,
        languages=[lang],
        settings={
            "RELATIVE_BASE": datetime(base.year, base.month, base.day, 12),
            "RETURN_AS_TIMEZONE_AWARE": False,
        },
    )
    return found.date() if found else None


def warm_up() -> None:
    """Load dateparser's English and Chinese tables and its timezone patterns now (~1 s of CPU the
    first time an expression is resolved), so that no turn pays for them."""
    for expr, lang in (("last week", "en"), ("上周", "zh")):
        dateparser.parse(expr, languages=[lang], settings={"RETURN_AS_TIMEZONE_AWARE": False})


def _add_months(day: date, months: int) -> date:
    month0 = day.month - 1 + months
    year, month = day.year + month0 // 12, month0 % 12 + 1
    for d in (day.day, 30, 29, 28):
        try:
            return date(year, month, d)
        except ValueError:
            continue
    raise AssertionError("unreachable")


_DIRS = {"上上": -2, "上": -1, "这": 0, "本": 0, "下": 1, "下下": 2, "last": -1, "this": 0, "next": 1}
_CN_DAY_ALIASES = {
    "昨晚": "昨天",
    "昨日": "昨天",
    "昨儿": "昨天",
    "明早": "明天",
    "明晚": "明天",
    "明日": "明天",
}


def _unit_granularity(unit: str) -> Granularity:
    if unit in ("月", "month"):
        return "month"
    if unit in ("年", "year"):
        return "year"
    if unit in ("周", "week"):
        return "week"
    return "day"


# --- tense, for the forms that carry no direction ------------------------------------------------
#
# A bare weekday, weekend, calendar date or holiday is the coming one unless its clause speaks of the
# past ("On Tuesday I went to the dentist", "周二我去看牙了"); a future marker wins over a past one
# ("周五就要走了", "I went there before and will go again on Friday"). A habit ("every Friday",
# "周末一般睡懒觉") names no day at all.

_CLAUSE_END = re.compile(r"[，,。.!！?？;；\n]|\b(?:and|but|then)\b|但是|可是|然后", re.I)
_EN_FUTURE = re.compile(
    r"\b(?:will|shall|going to|gonna|plan(?:ning)? to|about to|can'?t wait|see you|tomorrow|next|coming|upcoming)\b|'ll\b",
    re.I,
)
_EN_PAST = re.compile(
    r"\b(?:had|was|were|went|did|got|came|saw|met|made|took|left|spent|felt|told|said|bought|ate|gave|found"
    r"|ran|began|wrote|flew|drove|slept|won|lost|paid|sent|heard|kept|broke|brought|caught|sold|yesterday|ago"
    r"|last)\b"
    r"|\b(?:i|we|he|she|they|you|what|who|which)\s+(?:\w+ly\s+)?\w+ed\b",
    re.I,
)
_ZH_FUTURE = re.compile(r"要|会|准备|打算|将|想|计划|见|等|明天|下周|得去|还没|该|有个|有场|有一")
_ZH_PAST = re.compile(r"了|过|完|刚")
_HABIT = re.compile(
    r"\b(?:every|each|usually|always|often|normally|typically)\b|每|一般|通常|总是|经常|常常", re.I
)


# A date that comes back every year names no single day: "I was born on March 5", "我的生日是3月5号".
_RECURRING = re.compile(r"\b(?:born|birthdays?|anniversar(?:y|ies))\b|生日|出生|生于|纪念日", re.I)
_HABITUAL_FORMS = frozenset(
    {"cn_bare_wday", "en_bare_wday", "cn_bare_wkend", "en_bare_wkend", "cn_dom", "en_dom"}
)


def _clause(text: str, start: int, end: int) -> str:
    """The clause of `text` around [start, end): between punctuation marks."""
    left = max((m.end() for m in _CLAUSE_END.finditer(text, 0, start)), default=0)
    right = _CLAUSE_END.search(text, end)
    return text[left : right.start() if right else len(text)]


def _past(clause: str) -> bool:
    if re.search(r"[\u4e00-\u9fff]", clause):
        return bool(_ZH_PAST.search(clause)) and not _ZH_FUTURE.search(clause)
    return bool(_EN_PAST.search(clause)) and not _EN_FUTURE.search(clause)


def _weekday_near(base: date, weekday: int, past: bool) -> date:
    """The weekday strictly before `base` (past) or strictly after it."""
    if past:
        return base - timedelta(days=(base.weekday() - weekday) % 7 or 7)
    return base + timedelta(days=(weekday - base.weekday()) % 7 or 7)


def _yearly(base: date, on: Callable[[int], date | None], direction: str) -> date | None:
    """The occurrence of a yearly day (`on(year)`) that `direction` means: "past" the latest on or
    before `base`, "future" the earliest on or after it, "last"/"next" strictly before/after it."""
    days = [d for y in (base.year - 1, base.year, base.year + 1) if (d := on(y)) is not None]
    if direction in ("past", "last"):
        found = [d for d in days if d < base or (direction == "past" and d == base)]
        return max(found) if found else None
    found = [d for d in days if d > base or (direction == "future" and d == base)]
    return min(found) if found else None


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _nth_weekday(year: int, month: int, weekday: int, n: int) -> date:
    first = date(year, month, 1)
    return first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))


# Holidays on a fixed day of the solar calendar, or a fixed weekday of a month. Lunar holidays (春节,
# 中秋, 端午, 元宵, 七夕, 除夕) need a lunar calendar that no installed library provides: left alone.
_FIXED_HOLIDAYS: dict[str, Callable[[int], date]] = {
    "元旦": lambda y: date(y, 1, 1),
    "情人节": lambda y: date(y, 2, 14),
    "妇女节": lambda y: date(y, 3, 8),
    "劳动节": lambda y: date(y, 5, 1),
    "儿童节": lambda y: date(y, 6, 1),
    "教师节": lambda y: date(y, 9, 10),
    "国庆": lambda y: date(y, 10, 1),
    "万圣节": lambda y: date(y, 10, 31),
    "光棍节": lambda y: date(y, 11, 11),
    "双十一": lambda y: date(y, 11, 11),
    "平安夜": lambda y: date(y, 12, 24),
    "圣诞": lambda y: date(y, 12, 25),
    "感恩节": lambda y: _nth_weekday(y, 11, 3, 4),
    "母亲节": lambda y: _nth_weekday(y, 5, 6, 2),
    "父亲节": lambda y: _nth_weekday(y, 6, 6, 3),
    "christmas eve": lambda y: date(y, 12, 24),
    "christmas": lambda y: date(y, 12, 25),
    "new year's eve": lambda y: date(y, 12, 31),
    "new year's": lambda y: date(y, 1, 1),
    "valentine's": lambda y: date(y, 2, 14),
    "halloween": lambda y: date(y, 10, 31),
    "thanksgiving": lambda y: _nth_weekday(y, 11, 3, 4),
    "mother's day": lambda y: _nth_weekday(y, 5, 6, 2),
    "father's day": lambda y: _nth_weekday(y, 6, 6, 3),
    "independence day": lambda y: date(y, 7, 4),
    "the fourth of july": lambda y: date(y, 7, 4),
}


def _holiday(name: str) -> Callable[[int], date] | None:
    key = name.lower().replace("’", "'").replace("new years", "new year's").replace("节", "")
    key = {"xmas": "christmas", "christmas day": "christmas", "new year's day": "new year's"}.get(key, key)
    key = key.removesuffix(" day") if key.startswith("valentine") else key
    for name_key, on in _FIXED_HOLIDAYS.items():
        if name_key.replace("节", "") == key:
            return on
    return None


_MONTH_INDEX = {name: i % 12 + 1 for i, name in enumerate(_MONTH_FULL_EN.split("|"))} | {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9, "oct": 10,
    "nov": 11, "dec": 12,
}  # fmt: skip
# "May I ask", "I'll march on": these two month names are ordinary words unless capitalised.
_MONTH_WORDS = ("may", "march", "mar")
_SEASONS = {
    "春": 3,
    "夏": 6,
    "秋": 9,
    "冬": 12,
    "spring": 3,
    "summer": 6,
    "fall": 9,
    "autumn": 9,
    "winter": 12,
}
_SEASON_NAMES = {3: "spring", 6: "summer", 9: "autumn", 12: "winter"}
_YEAR_CN = {"前": -2, "去": -1, "今": 0, "明": 1}
# Where in a month or year a part lies ("月底": late), and the day that stands for it.
_PARTS = {"初": "early", "上旬": "early", "中旬": "mid", "底": "late", "末": "late", "下旬": "late"}
_PARTS |= {"beginning": "early", "start": "early", "early": "early", "middle": "mid", "mid": "mid"}
_PARTS |= {"end": "late", "late": "late"}


def _month_part(year: int, month: int, part: str) -> date:
    if part == "early":
        return date(year, month, 1)
    if part == "mid":
        return date(year, month, 15)
    return _add_months(date(year, month, 1), 1) - timedelta(days=1)


def _month_named(base: date, month: int, direction: str) -> date:
    """The first of the month named `month` that `direction` means ("in May" said in October: this
    year's when the clause is past, next year's when it is not)."""
    return _yearly(base.replace(day=1), lambda y: date(y, month, 1), direction) or date(base.year, month, 1)


def _season(base: date, start_month: int, direction: str) -> date:
    """The middle day of a season (a spring, summer, autumn or winter that starts in `start_month`)."""
    starts = [date(y, start_month, 1) for y in range(base.year - 2, base.year + 2)]
    if direction == "last":  # the latest season that has ended
        start = max(s for s in starts if _add_months(s, 3) <= base)
    elif direction == "next":  # the earliest that has not begun
        start = min(s for s in starts if s > base)
    else:  # this: the current one, or this year's
        current = [s for s in starts if s <= base < _add_months(s, 3)]
        start = current[0] if current else date(base.year, start_month, 1)
    return start.replace(day=15)


def _num(text: str | None) -> int | None:
    return _cn_int(text) if text else None


def _rule(kind: str, m: re.Match[str], base: date) -> tuple[date, Granularity, str] | Literal[False] | None:
    """The forms resolved by rule without dateparser: (date, granularity, qualifier), None when the
    match is not a date after all, False when the form is not one of these."""
    g = m.groupdict()
    d: int | None = None
    year: int | None = None
    clause = _clause(m.string, m.start(), m.end())
    if kind in _HABITUAL_FORMS and _HABIT.search(clause):
        return None
    tense = "past" if _past(clause) else "future"
    monday = base - timedelta(days=base.weekday())
    if kind in ("cn_bare_wday", "en_bare_wday"):
        day = g[f"{kind}_d"] if kind == "cn_bare_wday" else g["en_bare_wday_day"]
        weekday = _WEEKDAY_CN[day] if kind == "cn_bare_wday" else _WEEKDAYS_EN.index(day.lower())
        return _weekday_near(base, weekday, tense == "past"), "day", ""
    if kind in ("cn_bare_wkend", "en_bare_wkend"):
        if tense == "past":
            return (
                (monday + timedelta(days=5) if base.weekday() >= 5 else monday - timedelta(days=2)),
                "weekend",
                "",
            )
        return monday + timedelta(days=12 if base.weekday() == 6 else 5), "weekend", ""
    if kind == "en_wday":  # "this"/"next": weeks start on Monday, as in 这周四 / 下周四
        direction, weekday = g["en_wday_dir"].lower(), _WEEKDAYS_EN.index(g["en_wday_day"].lower())
        if direction in ("this coming", "coming"):
            return _weekday_near(base, weekday, False), "day", ""
        if direction in (
            "last",
            "this past",
        ):  # the most recent one ("last Friday" said on a Sunday: 2 days ago)
            return _weekday_near(base, weekday, True), "day", ""
        if direction == "this":  # this week's; one already gone is the coming one unless the clause is past
            day = monday + timedelta(days=weekday)
            return (day if day >= base or tense == "past" else day + timedelta(weeks=1)), "day", ""
        return monday + timedelta(weeks=_DIRS[direction], days=weekday), "day", ""
    if kind == "en_after":  # Thursday after next: 下下周四
        return monday + timedelta(weeks=2, days=_WEEKDAYS_EN.index(g["en_after_day"].lower())), "day", ""
    if kind == "en_wkend" and g["en_wkend_dir"].lower() in ("this past", "this coming"):
        saturday = monday + timedelta(days=5)
        if g["en_wkend_dir"].lower() == "this past":
            return (saturday if base.weekday() >= 5 else saturday - timedelta(weeks=1)), "weekend", ""
        return (saturday + timedelta(weeks=1) if base.weekday() == 6 else saturday), "weekend", ""
    if kind == "cn_mday":
        first = _add_months(base.replace(day=1), _DIRS[g["cn_mday_dir"]])
        d = _num(g["cn_mday_d"])
        found = _safe_date(first.year, first.month, d) if d else None
        return (found, "day", "") if found else None
    if kind in ("cn_mpart", "en_part") and (kind == "cn_mpart" or g["en_part_u"].lower() == "month"):
        step = _DIRS[g["cn_mpart_dir"]] if kind == "cn_mpart" and g["cn_mpart_dir"] else 0
        if kind == "en_part":
            step = _DIRS[(g["en_part_d"] or g["en_part_d2"] or "this").lower()]
        part = _PARTS[
            g["cn_mpart_part"] if kind == "cn_mpart" else (g["en_part_p"] or g["en_part_q"]).lower()
        ]
        first = _add_months(base.replace(day=1), step)
        return _month_part(first.year, first.month, part), "month", part
    if kind in ("cn_ypart", "en_part"):
        if kind == "cn_ypart":
            year = base.year + _YEAR_CN[g["cn_ypart_y"]] if g["cn_ypart_y"] else base.year
            part = _PARTS[g["cn_ypart_part"]]
        else:
            year = base.year + _DIRS[(g["en_part_d"] or g["en_part_d2"] or "this").lower()]
            part = _PARTS[(g["en_part_p"] or g["en_part_q"]).lower()]
        day = {"early": date(year, 1, 1), "mid": date(year, 7, 1), "late": date(year, 12, 31)}[part]
        return day, "year", part
    if kind == "en_mpart":
        month = _MONTH_INDEX[g["en_mpart_m"].lower()]
        if g["en_mpart_m"].lower() in _MONTH_WORDS and g["en_mpart_m"].islower():
            return None
        first = _month_named(base, month, tense)
        part = _PARTS[(g["en_mpart_p"] or g["en_mpart_q"]).lower()]
        return _month_part(first.year, first.month, part), "month", part
    if kind == "cn_season":
        start_month = _SEASONS[g["cn_season_s"]]
        return (
            date(base.year + _YEAR_CN[g["cn_season_y"]], start_month, 15),
            "year",
            _SEASON_NAMES[start_month],
        )
    if kind == "en_season":
        start_month = _SEASONS[g["en_season_s"].lower()]
        direction = g["en_season_dir"].lower().replace("this past", "last").replace("this coming", "next")
        return _season(base, start_month, direction), "year", _SEASON_NAMES[start_month]
    if kind in ("cn_holiday", "en_holiday"):
        on = _holiday(g[f"{kind}_name"])
        if on is None:
            return None
        if kind == "cn_holiday" and g["cn_holiday_y"]:
            return on(base.year + _YEAR_CN[g["cn_holiday_y"]]), "day", ""
        direction = (g["en_holiday_dir"] or "").lower() if kind == "en_holiday" else ""
        if direction == "this":
            return on(base.year), "day", ""
        found = _yearly(base, on, direction or tense)
        return (found, "day", "") if found else None
    if kind in ("cn_md", "en_md", "en_dm", "cn_slash", "en_slash"):
        if _RECURRING.search(clause) and not (g.get(f"{kind}_y")):
            return None
        if kind in ("cn_slash", "en_slash"):
            a, b = int(g[f"{kind}_a"] or g[f"{kind}_a2"]), int(g[f"{kind}_b"] or g[f"{kind}_b2"])
            month, d = (a, b) if a <= 12 else (b, a)  # month first, as written in both languages
            y = g.get(f"{kind}_y")
            year = (int(y) + (2000 if len(y) == 2 else 0)) if y else None
            written = str(g.get("en_slash_wd") or "")[:3].lower()
            if written and not year and 1 <= a <= 12:
                # "Saturday 2/28": the year in which the date falls on the weekday written beside it
                fits = [
                    x
                    for y in (base.year, base.year + 1, base.year - 1)
                    if (x := _safe_date(y, month, d)) is not None and x.strftime("%a").lower() == written
                ]
                return (fits[0], "day", "") if fits else None
            if kind == "en_slash" and m.string[: m.start(kind)].lower().endswith("for "):
                tense = "future"  # "booked the dentist for 4/7": the day a plan is for
        elif kind == "cn_md":
            month, d = _num(g["cn_md_m"]) or 0, _num(g["cn_md_d"])
            year = int(g["cn_md_y"]) if g["cn_md_y"] else None
        else:
            word = g[f"{kind}_m"]
            if word.lower() in _MONTH_WORDS and word.islower():
                return None
            month, d = _MONTH_INDEX[word.lower()], int(g[f"{kind}_d"])
            year = int(g[f"{kind}_y"]) if g[f"{kind}_y"] else None
        if not 1 <= month <= 12:
            return None
        if d is None:  # a month: 3月, 3月份, 3月底
            part = _PARTS.get(g["cn_md_part"] or "", "")
            first = date(year, month, 1) if year else _month_named(base, month, tense)
            return _month_part(first.year, first.month, part) if part else first, "month", part
        day_of_month = d
        if year:
            found = _safe_date(year, month, day_of_month)
        else:
            found = _yearly(base, lambda y: _safe_date(y, month, day_of_month), tense)
        return (found, "day", "") if found else None
    if kind == "en_inmonth":
        word = g["en_inmonth_m"]
        if word.lower() in _MONTH_WORDS and word.islower():
            return None
        direction = g["en_inmonth_dir"].lower()
        month = _MONTH_INDEX[word.lower()]
        if direction == "this":
            return date(base.year, month, 1), "month", ""
        if direction in ("last", "since", "next"):
            way = "next" if direction == "next" else "last"
            found = _yearly(base.replace(day=1), lambda y: date(y, month, 1), way)
            return (found, "month", "") if found else None
        if direction in ("until", "till", "by"):
            tense = "future"
        return _month_named(base, month, tense), "month", ""
    if kind in ("cn_dom", "en_dom"):
        d = _num(g[f"{kind}_d"])
        if not d or d > 31:
            return None
        firsts = [_add_months(base.replace(day=1), k) for k in (-1, 0, 1)]
        days = [x for mo in firsts if (x := _safe_date(mo.year, mo.month, d)) is not None]
        if tense == "past":
            found = max((x for x in days if x <= base), default=None)
        else:
            found = min((x for x in days if x >= base), default=None)
        return (found, "day", "") if found else None
    if kind == "cn_soon":  # 过两天: in a couple of days, about two
        return base + timedelta(days=2), "week", "about"
    return False


def _resolve_one(
    kind: str, m: re.Match[str], base: date
) -> tuple[date, Granularity, Literal["dateparser", "rule"], str] | None:
    ruled = _rule(kind, m, base)
    if ruled is None:
        return None
    if ruled is not False:
        return ruled[0], ruled[1], "rule", ruled[2]
    text = m.group(kind)
    monday = base - timedelta(days=base.weekday())
    if kind == "cn_wday":
        weeks = _DIRS[m.group("cn_wday_dir")]
        return monday + timedelta(weeks=weeks, days=_WEEKDAY_CN[m.group("cn_wday_day")]), "day", "rule", ""
    if kind in ("cn_wkend", "en_wkend"):
        weeks = _DIRS[m.group(f"{kind}_dir").lower()]
        return monday + timedelta(weeks=weeks, days=5), "weekend", "rule", ""
    if kind == "cn_half":  # 半个月前: fifteen days; 半年前: six months
        sign = -1 if m.group("cn_half_dir").endswith("前") else 1
        if m.group("cn_half_unit") == "年":
            return _add_months(base, 6 * sign), "month", "rule", ""
        return base + timedelta(days=15 * sign), "week", "rule", ""
    if kind == "cn_couple":  # 前两天: a couple of days ago, about two (approximate: "week")
        return base - timedelta(days=2), "week", "rule", "about"
    if kind == "en_couple":  # a couple of days ago: about two; half a year ago: six months
        sign = 1 if (m.group("en_couple_in") or m.group("en_couple_half_in")) else -1
        half = m.group("en_couple_half")
        if half:
            if half.lower() == "year":
                return _add_months(base, 6 * sign), "month", "rule", ""
            return base + timedelta(days=15 * sign), "week", "rule", ""
        unit = m.group("en_couple_unit").lower()
        if unit == "day":
            return base + timedelta(days=2 * sign), "week", "rule", "about"
        if unit == "week":
            return base + timedelta(weeks=2 * sign), "week", "rule", "about"
        months = 2 * sign if unit == "month" else 24 * sign
        return _add_months(base, months), "month" if unit == "month" else "year", "rule", "about"
    if kind == "en_week2":
        weeks = -2 if m.group("en_week2_dir").lower().startswith("before") else 2
        return base + timedelta(weeks=weeks), "week", "rule", ""
    if kind == "en_fortnight":
        days = -14 if m.group("en_fortnight_dir").lower().endswith("ago") else 14
        return base + timedelta(days=days), "week", "rule", ""
    if kind == "cn_week2":
        return base + timedelta(weeks=_DIRS[m.group("cn_week2_dir")]), "week", "rule", ""
    if kind == "cn_month2":
        return _add_months(base, _DIRS[m.group("cn_month2_dir")]), "month", "rule", ""
    if kind == "cn_year" and text in ("前年", "后年"):
        return _add_months(base, -24 if text == "前年" else 24), "year", "rule", ""
    if kind == "en_later":
        n, unit = m.group("en_later_n"), m.group("en_later_unit").lower()
        expr, lang, gran = f"in {n} {unit}s", "en", _unit_granularity(unit)
    elif kind == "cn_week":
        expr, lang, gran = f"{m.group('cn_week_dir')}周", "zh", "week"
    elif kind == "cn_month":
        expr, lang, gran = f"{m.group('cn_month_dir')}个月", "zh", "month"
    elif kind == "cn_year":
        expr, lang, gran = text, "zh", "year"
    elif kind == "cn_ago":
        n = _cn_int(m.group("cn_ago_n"))
        if n is None:
            return None
        unit = m.group("cn_ago_unit").replace("星期", "周").replace("礼拜", "周").replace("日", "天")
        if unit == "个周":
            unit = "周"
        direction = "前" if m.group("cn_ago_dir").endswith("前") else "后"
        expr, lang = f"{n}{unit}{direction}", "zh"
        gran = _unit_granularity(unit.lstrip("个"))
    elif kind == "cn_day":
        expr, lang, gran = _CN_DAY_ALIASES.get(text, text), "zh", "day"
    else:  # English forms dateparser reads as written
        expr, lang = text.lower(), "en"
        unit = re.search(r"(day|week|month|year)", expr)
        gran = _unit_granularity(unit.group(1)) if unit and kind in ("en_rel", "en_ago", "en_in") else "day"
    found = _dateparser(expr, lang, base)
    return (found, gran, "dateparser", "") if found else None


def resolve(text: str, now: datetime, timezone: str | None = None) -> list[TimeRef]:
    """The relative time expressions in `text`, resolved against `now` in the user's `timezone`.

    `now` is the message's timestamp (aware, or naive UTC); the base date is its local date in
    `timezone` (an IANA name; UTC when missing or unknown). Returns the references in text order;
    none when the message has no relative expression (the common case costs one regex scan).
    """
    base = local_now(now, timezone).date()
    refs: list[TimeRef] = []
    for kind, m in _found(text):
        resolved = _resolve_one(kind, m, base)
        if resolved is None:
            continue
        day, gran, source, qualifier = resolved
        refs.append(TimeRef(m.group(), m.start(), m.end(), day, gran, source, qualifier))
    return refs


def spans(text: str) -> list[tuple[int, int]]:
    """Where `text` names a relative time ("上周三", "三天前", "last night"), found by the same forms as
    `resolve`, whether or not the expression resolves to a date."""
    return [m.span() for kind, m in _found(text) if kind not in _BARE_OR_ABSOLUTE]


def days_of(ref: TimeRef) -> tuple[date, date]:
    """The local days [first, end) that `ref` names: its day, its weekend (Saturday and Sunday), its
    week (Monday to Sunday; about a week around the day when approximate: 前两天), its month, its
    season (three months from the season's first) or its year."""
    d = ref.date
    if ref.granularity == "day":
        return d, d + timedelta(days=1)
    if ref.granularity == "weekend":
        return d, d + timedelta(days=2)
    if ref.granularity == "week":
        if ref.qualifier == "about":
            return d - timedelta(days=3), d + timedelta(days=4)
        monday = d - timedelta(days=d.weekday())
        return monday, monday + timedelta(days=7)
    if ref.granularity == "month" or ref.qualifier in _SEASON_NAMES.values():
        first = d.replace(day=1)
        return first, _add_months(first, 1 if ref.granularity == "month" else 3)
    return date(d.year, 1, 1), date(d.year + 1, 1, 1)


def past_spans(text: str, now: datetime, timezone: str | None = None) -> list[tuple[datetime, datetime]]:
    """The stretches of time gone by that `text` asks about, as aware UTC [start, end): "yesterday",
    "on the 9th of October", 上周末, "last month", 去年夏天. Each begins before the user's local today
    (so "next Friday" and "this weekend", said on a Wednesday, name none; today and tonight are not
    resolved at all) and is cut at `now`; in text order, without repeats."""
    refs = resolve(text, now, timezone)
    if not refs:
        return []
    local = local_now(now, timezone)
    zone = local.tzinfo
    today = local.date()
    out: list[tuple[datetime, datetime]] = []
    for ref in refs:
        first, end = days_of(ref)
        if first >= today:
            continue
        start = datetime.combine(first, datetime.min.time(), zone).astimezone(UTC)
        stop = min(datetime.combine(end, datetime.min.time(), zone).astimezone(UTC), now.astimezone(UTC))
        if (start, stop) not in out:
            out.append((start, stop))
    return out


# --- turns -------------------------------------------------------------------------------------

DATES_KEY = "dates"  # Turn.meta key: the notes ("上周 = 2024-10-15") of the relative time a turn mentions


def stamp(turns: Iterable[Turn], timezone: str | None = None) -> None:
    """Resolve the relative time each turn mentions against its own timestamp; store the notes in
    `turn.meta["dates"]` (kept with the turn, indexed for full-text search, shown wherever it is).

    System turns (summaries) and turns already stamped are left alone.
    """
    for turn in turns:
        if turn.role == "system" or DATES_KEY in turn.meta:
            continue
        refs = resolve(turn.content, turn.created_at, timezone)
        if refs:
            turn.meta[DATES_KEY] = list(dict.fromkeys(r.note for r in refs))


def turn_dates(meta: dict[str, Any]) -> list[str]:
    """The date notes stored with a turn (`stamp`), or []."""
    found = meta.get(DATES_KEY)
    return [str(x) for x in found] if isinstance(found, list) else []


_ISO_DAY = re.compile(r"(\d{4})-(\d{2})(?:-(\d{2}))?$")


def noted_days(meta: dict[str, Any]) -> list[tuple[date, date]]:
    """The local days [first, end) a turn's date notes name: "周日 = 2026-03-08" one day, "上个月 =
    2026-02" a month, "去年 = 2025" a year (a qualifier, "late 2026-12", "summer 2025", reads as the
    date after it). What a turn is *about* in time, as `days_of` is what a question asks about."""
    out: list[tuple[date, date]] = []
    for note in turn_dates(meta):
        label = note.rsplit(" = ", 1)[-1].rsplit(" ", 1)[-1]
        m = _ISO_DAY.match(label)
        try:
            if m and m.group(3):
                d = date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
                out.append((d, d + timedelta(days=1)))
            elif m:
                first = date(int(m.group(1)), int(m.group(2)), 1)
                out.append((first, _add_months(first, 1)))
            elif label.isdigit() and len(label) == 4:
                out.append((date(int(label), 1, 1), date(int(label) + 1, 1, 1)))
        except ValueError:
            continue  # a note that names no real day
    return out


_MONTHS_EN = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


def search_terms(meta: dict[str, Any]) -> str:
    """Words that make a turn's dates findable by full-text search: each label also in Chinese and
    English form ("2024-10-15 2024年10月15日 15 October 2024")."""
    out: list[str] = []
    for note in turn_dates(meta):
        label = note.rsplit(" = ", 1)[-1]
        out.append(label)
        label = label.rsplit(" ", 1)[-1]  # "late 2026-12", "summer 2025": the date after the qualifier
        m = _ISO_DAY.match(label)
        if m:
            year, month, day = m.group(1), int(m.group(2)), m.group(3)
            if day:
                out += [f"{year}年{month}月{int(day)}日", f"{int(day)} {_MONTHS_EN[month - 1]} {year}"]
            else:
                out += [f"{year}年{month}月", f"{_MONTHS_EN[month - 1]} {year}"]
        elif label.isdigit():
            out.append(f"{label}年")
    return " ".join(out)


def searchable_text(turn: Turn) -> str:
    """What full-text search indexes for a turn: its text plus its dates in every form (`search_terms`)."""
    extra = search_terms(turn.meta)
    return f"{turn.text} {extra}" if extra else turn.text


def zone_label(timezone: str) -> str:
    """A zone's name as a reader takes it: the IANA fixed offsets read with POSIX's reversed sign
    (Etc/GMT-8 is eight hours *ahead*), so they are shown as `UTC+08:00`; other names as they are."""
    m = re.fullmatch(r"Etc/GMT([+-])(\d{1,2})", timezone)
    if m is None:
        return timezone
    return f"UTC{'-' if m.group(1) == '+' else '+'}{int(m.group(2)):02d}:00"


def clock_line(now: datetime, timezone: str | None) -> str:
    """The user's local date, weekday and time for the system prompt:
    `Now (user's local time): 2024-10-22 Tuesday 15:00 (Asia/Shanghai)`."""
    local = local_now(now, timezone)
    zone = zone_label(timezone) if timezone and local.tzinfo is not UTC else "UTC"
    return f"Now (user's local time): {local:%Y-%m-%d} {_WEEKDAYS_EN[local.weekday()].title()} {local:%H:%M} ({zone})"
