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

Deliberately not resolved: today/今天 (the turn's own date already says it), hours ("三小时前"),
vague amounts ("a few days ago", "几天前", "前几天", "前阵子"), and bare weekdays ("周三", "on Friday"),
whose week is a guess.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import dateparser

from memsched.model import Turn

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

    @property
    def label(self) -> str:
        if self.granularity == "year":
            return f"{self.date.year:04d}"
        if self.granularity == "month":
            return f"{self.date.year:04d}-{self.date.month:02d}"
        return self.date.isoformat()

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
        )


def local_now(now: datetime, timezone: str | None) -> datetime:
    """`now` in the user's IANA timezone; UTC when the timezone is missing or unknown."""
    aware = now if now.tzinfo else now.replace(tzinfo=UTC)
    if timezone:
        try:
            return aware.astimezone(ZoneInfo(timezone))
        except (ZoneInfoNotFoundError, ValueError):
            pass
    return aware.astimezone(UTC)


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

# The forms, longest first, so that "上上周三" is not read as "上周三". Each is a named group; the
# groups inside a form are named `<form>_<part>`.
_FORMS: tuple[tuple[str, str], ...] = (
    (
        "cn_wday",
        rf"(?P<cn_wday_dir>上上|下下|上|下|这|本)个?{_WEEK_CN}(?P<cn_wday_day>[一二三四五六日天1-7])",
    ),
    ("cn_wkend", r"(?P<cn_wkend_dir>上|下|这|本)个?周末"),
    ("cn_week2", rf"(?P<cn_week2_dir>上上|下下)个?{_WEEK_CN}"),
    ("cn_week", rf"(?P<cn_week_dir>上|下)个?{_WEEK_CN}"),
    ("cn_month2", r"(?P<cn_month2_dir>上上|下下)个?月"),
    ("cn_month", r"(?P<cn_month_dir>上|下)个?月"),
    ("cn_year", r"去年|明年|前年|后年"),
    (
        "cn_ago",
        rf"(?P<cn_ago_n>{_CN_NUM})(?P<cn_ago_unit>个?(?:天|日|周|星期|礼拜|月)|年)(?P<cn_ago_dir>以前|之前|前|以后|之后|后)",
    ),
    ("cn_half", r"(?<![个年月天周])半个?(?P<cn_half_unit>月|年)(?P<cn_half_dir>以前|之前|前|以后|之后|后)"),
    # 前两天 said of the speaker's own past ("我前两天去了杭州"), not "考试前两天" (two days before an exam).
    ("cn_couple", r"(?<![^\s，,。.!！?？；;~～我你他她们])前两天"),
    ("cn_day", r"大前天|前天|昨天|昨晚|昨日|昨儿|大后天|后天|明天|明早|明晚|明日"),
    ("en_day2", r"\bthe day (?:before yesterday|after tomorrow)\b"),
    ("en_week2", r"\bthe week (?P<en_week2_dir>before last|after next)\b"),
    ("en_fortnight", r"\b(?P<en_fortnight_dir>a fortnight ago|in a fortnight)\b"),
    ("en_day", r"\b(?:yesterday|tomorrow|last night)\b"),
    ("en_wkend", r"\b(?P<en_wkend_dir>last|this|next) weekend\b"),
    ("en_wday", rf"\b(?:last|this|next) (?:{'|'.join(_WEEKDAYS_EN)})\b"),
    ("en_rel", r"\b(?:last|next) (?:week|month|year)\b"),
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
_FORM_NAMES = tuple(name for name, _ in _FORMS)
_PATTERN = re.compile("|".join(f"(?P<{name}>{rx})" for name, rx in _FORMS), re.IGNORECASE)


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


def _resolve_one(
    kind: str, m: re.Match[str], base: date
) -> tuple[date, Granularity, Literal["dateparser", "rule"]] | None:
    text = m.group(kind)
    monday = base - timedelta(days=base.weekday())
    if kind == "cn_wday":
        weeks = _DIRS[m.group("cn_wday_dir")]
        return monday + timedelta(weeks=weeks, days=_WEEKDAY_CN[m.group("cn_wday_day")]), "day", "rule"
    if kind in ("cn_wkend", "en_wkend"):
        weeks = _DIRS[m.group(f"{kind}_dir").lower()]
        return monday + timedelta(weeks=weeks, days=5), "weekend", "rule"
    if kind == "cn_half":  # 半个月前: fifteen days; 半年前: six months
        sign = -1 if m.group("cn_half_dir").endswith("前") else 1
        if m.group("cn_half_unit") == "年":
            return _add_months(base, 6 * sign), "month", "rule"
        return base + timedelta(days=15 * sign), "week", "rule"
    if kind == "cn_couple":  # 前两天: a couple of days ago, about two (approximate: "week")
        return base - timedelta(days=2), "week", "rule"
    if kind == "en_couple":  # a couple of days ago: about two; half a year ago: six months
        sign = 1 if (m.group("en_couple_in") or m.group("en_couple_half_in")) else -1
        half = m.group("en_couple_half")
        if half:
            if half.lower() == "year":
                return _add_months(base, 6 * sign), "month", "rule"
            return base + timedelta(days=15 * sign), "week", "rule"
        unit = m.group("en_couple_unit").lower()
        if unit == "day":
            return base + timedelta(days=2 * sign), "week", "rule"
        if unit == "week":
            return base + timedelta(weeks=2 * sign), "week", "rule"
        months = 2 * sign if unit == "month" else 24 * sign
        return _add_months(base, months), "month" if unit == "month" else "year", "rule"
    if kind == "en_week2":
        weeks = -2 if m.group("en_week2_dir").lower().startswith("before") else 2
        return base + timedelta(weeks=weeks), "week", "rule"
    if kind == "en_fortnight":
        days = -14 if m.group("en_fortnight_dir").lower().endswith("ago") else 14
        return base + timedelta(days=days), "week", "rule"
    if kind == "cn_week2":
        return base + timedelta(weeks=_DIRS[m.group("cn_week2_dir")]), "week", "rule"
    if kind == "cn_month2":
        return _add_months(base, _DIRS[m.group("cn_month2_dir")]), "month", "rule"
    if kind == "cn_year" and text in ("前年", "后年"):
        return _add_months(base, -24 if text == "前年" else 24), "year", "rule"
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
    return (found, gran, "dateparser") if found else None


def resolve(text: str, now: datetime, timezone: str | None = None) -> list[TimeRef]:
    """The relative time expressions in `text`, resolved against `now` in the user's `timezone`.

    `now` is the message's timestamp (aware, or naive UTC); the base date is its local date in
    `timezone` (an IANA name; UTC when missing or unknown). Returns the references in text order;
    none when the message has no relative expression (the common case costs one regex scan).
    """
    base = local_now(now, timezone).date()
    refs: list[TimeRef] = []
    for m in _PATTERN.finditer(text):
        kind = next(name for name in _FORM_NAMES if m.group(name) is not None)
        resolved = _resolve_one(kind, m, base)
        if resolved is None:
            continue
        day, gran, source = resolved
        refs.append(TimeRef(m.group(), m.start(), m.end(), day, gran, source))
    return refs


def spans(text: str) -> list[tuple[int, int]]:
    """Where `text` names a relative time ("上周三", "三天前", "last night"), found by the same forms as
    `resolve`, whether or not the expression resolves to a date."""
    return [m.span() for m in _PATTERN.finditer(text)]


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
