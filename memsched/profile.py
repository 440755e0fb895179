"""The user profile: key/value facts with history ("preferred name: 大王 since 2024-10-15, formerly 小王").

A new value supersedes the old one instead of overwriting it (`superseded_by` names the fact that
replaced it), so the history stays queryable and a forgotten command can hand the key back to the
value before it. Some keys hold several values at once (`MULTI_KEYS`: likes, pets, allergies …):
a new like is added beside the others, and "I don't like jazz any more" retracts one. Every fact
records the turn ids it came from. The profile is rendered compactly into the system prompt of every
turn under its own token budget (`Profile.section`).

Facts come from three places: consistency commands (rename, P1, `commands.py`), rule patterns over
every user message (`profile_extract.py`, applied with the turn), and, when an LLM is configured,
a P2 extraction job per page (`profile_extract.py`). Observations may arrive out of order (a P2 job
reports what a turn said after later turns changed it): an older observation never replaces a newer
fact, it is filed as history.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from memsched.model import as_utc, utcnow
from memsched.store import Store, Tx
from memsched.text.timeexpr import local_now, zone_label

PREFERRED_NAME = "preferred_name"
NAME = "name"
BIRTHDAY = "birthday"
LOCATION = "location"
HOMETOWN = "hometown"  # where the user comes from; `location` is where they live now
OCCUPATION = "occupation"
PARTNER_NAME = "partner_name"
PETS = "pets"
PEOPLE = "people"  # the people in the user's life by name: "sister 小红", "son Leo", "best friend Anna"
LIKES = "likes"
DISLIKES = "dislikes"
ALLERGIES = "allergies"
DIET = "diet"
SLEEP_TIME = "sleep_time"
TIMEZONE = "timezone"
# Dates of the people in the user's life and of the couple ("mom's birthday: May 12", "anniversary:
# June 3"): "label: date", one per label (a date said again replaces the one before).
DATES = "dates"
# The people the user has lost ("grandma", "dad Tom"): never someone to ask after; meta `when` says
# when as the user said it ("last spring", "去年").
LOSSES = "losses"
# A habit the user gave up ("quit smoking", "戒烟"): worth encouraging, and never to offer.
HABITS = "habits"

# The canonical keys, in the order they are shown (and kept when the budget is tight: what a
# companion must never get wrong comes first).
KEYS: tuple[str, ...] = (
    PREFERRED_NAME,
    NAME,
    ALLERGIES,
    DIET,
    HABITS,
    PARTNER_NAME,
    PETS,
    PEOPLE,
    LOSSES,
    BIRTHDAY,
    DATES,
    LOCATION,
    HOMETOWN,
    OCCUPATION,
    SLEEP_TIME,
    LIKES,
    DISLIKES,
    TIMEZONE,  # last: the prompt's clock line already names it
)
# Keys that hold a set of values: a new value joins the others instead of replacing them.
MULTI_KEYS: frozenset[str] = frozenset(
    {PETS, PEOPLE, LIKES, DISLIKES, ALLERGIES, DIET, DATES, LOSSES, HABITS}
)
# Keys whose earlier values are worth naming ("formerly 小王"): old mentions in history are outdated.
FORMERLY_KEYS: frozenset[str] = frozenset({PREFERRED_NAME, NAME, LOCATION, OCCUPATION, PARTNER_NAME})

# How keys read in the system prompt; unknown keys read as their name with spaces.
KEY_LABELS: dict[str, str] = {
    PREFERRED_NAME: "preferred name (call the user this)",
    PARTNER_NAME: "partner",
    ALLERGIES: "allergies (never suggest these)",
    DIET: "diet (suggest food that fits it)",
    SLEEP_TIME: "usual bedtime",
    HOMETOWN: "hometown (where the user comes from, not where they live)",
    PEOPLE: "people in the user's life",
    DATES: "dates to remember",
    HABITS: "habits the user gave up (encourage; never offer them)",
    LOSSES: "people the user has lost (be gentle; never ask after them as if alive)",
}

# What a message asks about when it names a key's subject ("where do I live now?", "我现在住哪",
# "what's my job again?"): that key's line is the last the budget drops (`Profile.section`), so the
# answer in force is shown even when the recalled turns say the old one. General words only.
_ASKED: dict[str, re.Pattern[str]] = {
    LOCATION: re.compile(
        r"\b(?:live|living|lives|moved?|moving|address|city|neighbou?rhood|apartment|flat)\b|住|搬|地址|哪个城市",
        re.I,
    ),
    HOMETOWN: re.compile(r"\b(?:from|hometown|grew up|born in)\b|老家|家乡|哪里人|哪儿人", re.I),
    OCCUPATION: re.compile(
        r"\b(?:job|work|works|working|career|profession|occupation|for a living)\b|工作|职业|上班|做什么的|干什么的",
        re.I,
    ),
    PARTNER_NAME: re.compile(
        r"\b(?:boyfriend|girlfriend|husband|wife|partner|fianc[eé]e?|spouse|married|dating)\b|"
        r"男朋友|女朋友|男友|女友|老公|老婆|对象|丈夫|妻子|爱人",
        re.I,
    ),
    PETS: re.compile(
        r"\b(?:pets?|cats?|kitten|dogs?|puppy|rabbit|bunny|hamster|parrot|turtle|fish)\b|宠物|猫|狗|兔|仓鼠|鹦鹉|乌龟|金鱼",
        re.I,
    ),
    PEOPLE: re.compile(
        r"\b(?:sister|brother|mom|mum|mother|dad|father|son|daughter|kids?|family|friends?|cousin)\b|"
        r"姐|妹|哥|弟|妈|爸|儿子|女儿|孩子|家人|朋友|闺蜜",
        re.I,
    ),
    BIRTHDAY: re.compile(r"\bbirthday\b|\bborn\b|生日", re.I),
    DATES: re.compile(r"\b(?:birthdays?|anniversary|dates?)\b|生日|纪念日", re.I),
    LOSSES: re.compile(r"\b(?:died|passed|passing|funeral|miss (?:him|her))\b|去世|过世|葬礼", re.I),
    SLEEP_TIME: re.compile(r"\b(?:sleep|bed|bedtime)\b|睡", re.I),
    LIKES: re.compile(r"\b(?:favou?rites?|hobby|hobbies)\b|喜欢|爱好|最爱", re.I),
    DISLIKES: re.compile(r"\b(?:hate|dislike)\b|讨厌|不喜欢", re.I),
}


def asked_keys(message: str, by_key: dict[str, list[dict[str, Any]]]) -> set[str]:
    """The keys a message asks about: a key's subject in words (`_ASKED`), or one of its values, in
    force or former ("do I still live in Beijing?" is about the location, now Shanghai)."""
    if not message:
        return set()
    folded = message.casefold()
    out = {k for k, pattern in _ASKED.items() if k in by_key and pattern.search(message)}
    for key, facts in by_key.items():
        if key in out:
            continue
        # The value, or a name in it ("sister 小红": "小红最近怎么样？", "cat Luna": "how's Luna?")
        said = {p for f in facts for v in [str(f["value"]).casefold().strip()] for p in (v, *v.split()[1:])}
        if any(_mentions(folded, v) for v in said if len(v) >= 2):
            out.add(key)
    return out


def _mentions(folded: str, value: str) -> bool:
    if value.isascii():
        return re.search(rf"(?<![a-z]){re.escape(value)}(?![a-z])", folded) is not None
    return value in folded


SECTION_HEADER = "User profile (current facts; they override anything said earlier):"
# The profile's share of the context budget until the strategy table gives one per mode.
DEFAULT_PROFILE_SHARE = 0.1


@dataclass(frozen=True, slots=True)
class Fact:
    """One value a profile key had, from `valid_from` until `superseded_at` (None: still in force)."""

    id: int
    user_id: str
    key: str
    value: str
    valid_from: datetime
    superseded_at: datetime | None = None
    source_turn_ids: tuple[int, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)
    superseded_by: int | None = None

    @property
    def current(self) -> bool:
        return self.superseded_at is None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "key": self.key,
            "value": self.value,
            "current": self.current,
            "valid_from": self.valid_from.isoformat(),
            "superseded_at": self.superseded_at.isoformat() if self.superseded_at else None,
            "superseded_by": self.superseded_by,
            "source_turn_ids": list(self.source_turn_ids),
            "meta": dict(self.meta),
        }


def _fact(row: dict[str, Any]) -> Fact:
    return Fact(
        id=row["id"],
        user_id=row["user_id"],
        key=row["key"],
        value=row["value"],
        valid_from=datetime.fromtimestamp(row["valid_from"], UTC),
        superseded_at=datetime.fromtimestamp(row["superseded_at"], UTC) if row["superseded_at"] else None,
        source_turn_ids=tuple(row["source_turn_ids"]),
        meta=row["meta"],
        superseded_by=row.get("superseded_by"),
    )


def same_value(a: str, b: str) -> bool:
    """Values that name the same thing ("Jazz" and "jazz ", "芝麻" and "芝麻")."""
    return a.strip().casefold() == b.strip().casefold()


class Profile:
    """The profile facts of the users of one store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # -- writing ---------------------------------------------------------------------------------

    def set(
        self,
        user_id: str,
        key: str,
        value: str,
        *,
        at: datetime | None = None,
        source_turn_ids: Sequence[int] = (),
        meta: dict[str, Any] | None = None,
        tx: Tx | None = None,
    ) -> int:
        """Make `value` the current `key` of the user from `at` on; returns the id of the fact.

        For a multi-valued key the value joins the others; otherwise the previous value is kept as
        history (superseded at `at`, `superseded_by` the new fact). Setting a value already in force
        only adds `source_turn_ids` to it. An observation older than the fact in force is filed as
        history and does not replace it. With `tx`, the write joins that transaction.
        """
        return self._write(tx, lambda t: self._set(t, user_id, key, value, at, source_turn_ids, meta))

    def retract(
        self,
        user_id: str,
        key: str,
        value: str,
        *,
        at: datetime | None = None,
        tx: Tx | None = None,
    ) -> int:
        """End the user's `key` = `value` fact(s) in force at `at` ("I don't like jazz any more").
        Returns how many were ended."""

        def run(t: Tx) -> int:
            when = as_utc(at or utcnow()).timestamp()
            ids = [
                r["id"]
                for r in self.store.facts(user_id, key, current=True)
                if same_value(r["value"], value) and r["valid_from"] <= when
            ]
            return self.store.fact_supersede(t, user_id, ids, at=when)

        return self._write(tx, run)

    def _write(self, tx: Tx | None, fn: Callable[[Tx], int]) -> int:
        if tx is not None:
            return fn(tx)
        with self.store.transaction() as own:
            return fn(own)

    def _set(
        self,
        tx: Tx,
        user_id: str,
        key: str,
        value: str,
        at: datetime | None,
        source_turn_ids: Sequence[int],
        meta: dict[str, Any] | None,
    ) -> int:
        value = value.strip()
        when = as_utc(at or utcnow()).timestamp()
        now = utcnow().timestamp()
        rows = self.store.facts(user_id, key)
        current = [r for r in rows if r["superseded_at"] is None]
        # A fact with this value that already covers `when` (or is in force): only sources to add.
        # This is what makes re-observing an old turn harmless after the value changed.
        covering = [
            r
            for r in rows
            if same_value(r["value"], value)
            and (r["superseded_at"] is None or r["valid_from"] <= when < r["superseded_at"])
        ]
        if covering:
            fid = int(covering[-1]["id"])
            self.store.fact_add_sources(tx, fid, source_turn_ids)
            return fid
        others = [] if key in MULTI_KEYS else current
        newer = [r for r in others if r["valid_from"] > when]
        if newer:  # an older observation: history, not the value in force
            first = min(newer, key=lambda r: (r["valid_from"], r["id"]))
            return self.store.fact_insert(
                tx,
                user_id,
                key,
                value,
                valid_from=when,
                source_turn_ids=source_turn_ids,
                meta=meta,
                now=now,
                superseded_at=first["valid_from"],
                superseded_by=int(first["id"]),
            )
        fid = self.store.fact_insert(
            tx, user_id, key, value, valid_from=when, source_turn_ids=source_turn_ids, meta=meta, now=now
        )
        self.store.fact_supersede(tx, user_id, [int(r["id"]) for r in others], at=when, by=fid)
        return fid

    # -- reading ---------------------------------------------------------------------------------

    def current(self, user_id: str) -> dict[str, Fact]:
        """The fact in force per key (for a multi-valued key, its newest value; see `facts`)."""
        return {f.key: f for f in self.facts(user_id, current=True)}

    def get(self, user_id: str, key: str) -> Fact | None:
        """The fact in force for `key` (the newest, for a multi-valued key), or None."""
        found = self.facts(user_id, key, current=True)
        return found[-1] if found else None

    def values(self, user_id: str, key: str) -> list[str]:
        """Every value of `key` in force, oldest first."""
        return [f.value for f in self.facts(user_id, key, current=True)]

    def facts(self, user_id: str, key: str | None = None, *, current: bool = False) -> list[Fact]:
        """The user's facts (of `key`; only those in force with `current`), oldest first."""
        return [_fact(r) for r in self.store.facts(user_id, key, current=current)]

    def newer_sources(self, user_id: str) -> dict[int, list[int]]:
        """For each turn that stated a value since replaced ("I live in Paris", then "we moved to
        Berlin"), the turns that stated the value that replaced it: recall ranks them right before
        it (`memory.newer_first`), so the newest state is never the one a budget leaves out."""
        rows = self.store.facts(user_id)
        by_id = {int(r["id"]): r for r in rows}
        out: dict[int, list[int]] = {}
        for row in rows:
            newer = by_id.get(int(row.get("superseded_by") or 0))
            if newer is None:
                continue
            stated = [int(t) for t in newer["source_turn_ids"] if t not in row["source_turn_ids"]]
            for turn_id in row["source_turn_ids"] if stated else ():
                out[int(turn_id)] = sorted({*out.get(int(turn_id), []), *stated})
        return out

    def history(self, user_id: str, key: str | None = None) -> list[Fact]:
        """Every value of `key` (or of every key) the user has had, oldest first."""
        return self.facts(user_id, key)

    def section(
        self,
        user_id: str,
        *,
        max_tokens: int | None = None,
        count: Callable[[str], int] = len,
        timezone: str | None = None,
        clock: str | None = None,
        message: str = "",
        now: datetime | None = None,
    ) -> str:
        """The system-prompt section for the user's current facts, or "" when there are none.

        One line per key, canonical keys first: `- preferred name (...): 大王 (since 2024-10-15;
        formerly 小王)` (the date only for a value that replaced another), `- likes: jazz, hiking`. Formerly-used values are named for keys where old
        mentions would mislead. With `max_tokens` (costed by `count`), lines that do not fit are
        left out, least important key first. `timezone` is the one the turn being answered came with:
        it is the user's timezone now, though the fact is written only when the turn is recorded (a
        prompt saying "Now … (Europe/London)" must not say "timezone: Asia/Shanghai"). `clock` is the
        zone the turn is read in (`memsched.zones`: it may be a fixed offset, never a fact): the dates
        are on it, else on the timezone fact's. The lines of what `message` asks about (`asked_keys`:
        "where do I live now?") are dropped last, so the value in force is there to answer it. A
        birthday or a date to remember that falls within `NEAR_DAYS` of `now` (the turn's time) says
        so ("June 3 (in 2 days)"), so the companion can mention it near the day.
        """
        rows = self.store.facts(user_id)
        if not rows and not timezone:
            return ""
        by_key: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            by_key.setdefault(row["key"], []).append(row)
        stored = [f for f in by_key.get(TIMEZONE, []) if f["superseded_at"] is None]
        if timezone and not (stored and stored[-1]["value"] == timezone):
            by_key[TIMEZONE] = [{"value": timezone, "superseded_at": None, "valid_from": 0.0, "meta": {}}]
        order = [k for k in KEYS if k in by_key] + sorted(k for k in by_key if k not in KEYS)
        # Dates on the user's clock: a fact from 20:00 in New York is not from "tomorrow".
        zone = clock or next(
            (f["value"] for f in reversed(by_key.get(TIMEZONE, [])) if f["superseded_at"] is None), None
        )
        today = local_now(as_utc(now or utcnow()), zone).date()
        shown = {key: line for key in order if (line := _line(key, by_key[key], zone, today))}
        if not shown:
            return ""
        asked = asked_keys(message, by_key) if max_tokens is not None else set()
        asked |= {k for k in (BIRTHDAY, DATES) if k in shown and _NEAR_NOTE.search(shown[k])}
        # Dropped first: the least important key not asked about.
        keep = [k for k in shown if k in asked] + [k for k in shown if k not in asked]
        lines = list(shown.values())
        while max_tokens is not None and lines and count("\n".join([SECTION_HEADER, *lines])) > max_tokens:
            keep.pop()
            lines = [line for k, line in shown.items() if k in keep]
        return "\n".join([SECTION_HEADER, *lines]) if lines else ""


def _line(
    key: str, facts: list[dict[str, Any]], timezone: str | None = None, today: date | None = None
) -> str:
    current = [f for f in facts if f["superseded_at"] is None]
    if not current:
        return ""
    label = KEY_LABELS.get(key, key.replace("_", " "))
    if key == LOSSES:  # who, when as the user said it, and the day they said it
        shown = []
        for f in current:
            told = local_now(datetime.fromtimestamp(f["valid_from"], UTC), timezone).strftime("%Y-%m-%d")
            when = f["meta"].get("when")
            shown.append(f"{f['value']} (passed away{' ' + when if when else ''}; told {told})")
        return f"- {label}: {'; '.join(dict.fromkeys(shown))}"
    if key in MULTI_KEYS:
        values = list(dict.fromkeys(f["value"] + _near(f["value"], key, today) for f in current))
        return f"- {label}: {', '.join(values)}"
    fact = current[-1]
    if key == TIMEZONE:
        return f"- {label}: {zone_label(fact['value'])}"
    since = local_now(datetime.fromtimestamp(fact["valid_from"], UTC), timezone).strftime("%Y-%m-%d")
    former: list[str] = []
    if key in FORMERLY_KEYS:
        for old in reversed(facts):
            if not same_value(old["value"], fact["value"]) and old["value"] not in former:
                former.append(old["value"])
        replaces = fact["meta"].get("replaces")
        if replaces and not same_value(replaces, fact["value"]) and replaces not in former:
            former.append(replaces)
    # The date only where it tells something: when the value replaced another one.
    note = f" (since {since}; formerly {', '.join(former[:3])})" if former else ""
    return f"- {label}: {fact['value']}{_near(fact['value'], key, today)}{note}"


# How many days ahead a birthday or a date to remember is named as near in the prompt (its line is
# then kept as long as a line asked about).
NEAR_DAYS = 14
MONTHS = (
    "January February March April May June July August September October November December".split()  # noqa: SIM905
)
_MONTH_DAY = re.compile(rf"(?:^|: )(?P<m>{'|'.join(MONTHS)})(?: (?P<d>\d{{1,2}}))?(?:, \d{{4}})?$")


_NEAR_NOTE = re.compile(r" \((?:today|tomorrow|in \d+ days)\)")


def _near(value: str, key: str, today: date | None) -> str:
    """The note " (today)", " (in 3 days)" or " (this month)" for a birthday or a date to remember that is near
    `today` (dates as `profile_extract` writes them: "June 3", "mom's birthday: May"), else ""."""
    m = _MONTH_DAY.search(value) if key in (BIRTHDAY, DATES) and today is not None else None
    if m is None or today is None:
        return ""
    month = MONTHS.index(m.group("m")) + 1
    if m.group("d") is None:
        return " (this month)" if month == today.month else ""
    for year in (today.year, today.year + 1):
        try:
            day = date(year, month, int(m.group("d")))
        except ValueError:  # February 29 in a common year, a day past the month's end
            return ""
        if day >= today:
            ahead = (day - today).days
            if ahead > NEAR_DAYS:
                return ""
            return {0: " (today)", 1: " (tomorrow)"}.get(ahead, f" (in {ahead} days)")
    return ""
