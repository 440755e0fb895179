"""Proactive care: the nudges due for a user, computed on demand and never sent by memsched.

Two kinds, each with its date and the turns it comes from (`source_turn_ids`):

* `follow_up` — the user said something was coming ("明天面试", "my exam is next Friday"): ask how it
  went the day after the event, from their usual wake-up time (10:00 until it is learned). The date
  is resolved from the message's own timestamp in the user's timezone (`text/timeexpr.py`; a bare
  weekday, "on Friday" / "周五", is the coming one unless its clause speaks of the past); an event cue must sit in the same message, so "明天见" alone is not an event;
* `late_night` — the user is still writing after their usual bedtime (learned by `routine.py`; the
  default window until then): time to tell them to go to sleep.

`due_nudges(memory, user)` is the library call; `GET /v1/users/{user}/nudges` and
`memsched proactive --user U` show the same list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import TYPE_CHECKING, Any

from memsched import routine as routines
from memsched.profile import TIMEZONE, Profile
from memsched.router import hhmm, in_window, local_time
from memsched.text.segment import terms
from memsched.text.timeexpr import resolve
from memsched.zones import zone_info

if TYPE_CHECKING:
    from memsched.memory import Memory
    from memsched.model import Turn

# Events worth asking about afterwards (data: edit freely). CJK cues match as substrings, Latin cues
# as whole words, case-insensitively.
EVENT_CUES = [
    "面试",
    "考试",
    "笔试",
    "复试",
    "体检",
    "手术",
    "出差",
    "答辩",
    "汇报",
    "演讲",
    "比赛",
    "约会",
    "搬家",
    "看病",
    "看医生",
    "复查",
    "见家长",
    "报告",
    "入职",
    "上班第一天",
    "婚礼",
    "生日",
    "航班",
    "飞",
    "高考",
    "中考",
    "考研",
    "初试",
    "拔牙",
    "牙医",
    "看牙",
    "拔智齿",
    "面签",
    "旅行",
    "旅游",
    "期中",
    "期末",
    "医院",
    "预约",
    "开学",
    "复诊",
    "产检",
    "开会",
    "会议",
    "见客户",
    "路演",
    "发布会",
    "演出",
    "音乐会",
    "相亲",
    "年会",
    "培训",
    "deadline",
    "interview",
    "exam",
    "test",
    "surgery",
    "appointment",
    "doctor",
    "presentation",
    "trip",
    "flight",
    "date",
    "wedding",
    "birthday",
    "competition",
    "match",
    "move",
    "moving",
    "first day",
    "new job",
    "review",
    "audition",
    "defense",
    "defence",
    "meeting",
    "dentist",
    "vet",
    "final",
    "midterm",
    "conference",
    "concert",
    "recital",
    "performance",
    "pitch",
    "hearing",
    "checkup",
    "check-up",
    "fly",
    "flying",
]
# Messages read for follow-ups: an event is asked about when its day has passed however far ahead it
# was announced, so the read reaches back as far as plans are made ahead ("4月3号拔智齿" said on 18
# March, "my sister's wedding is on November 2" said in September), not two weeks. In conversation
# the read runs at most once a day per user (`follow_ups_since`); a message older than this whose
# event is still to come is not followed up.
LOOKBACK = timedelta(days=92)
# A plan called off or moved ("the Duluth trip is off", "my interview got cancelled", "we postponed
# it", "厦门不去了，取消了", "面试推迟了"): the follow-up of the event it is about is not asked (data:
# edit freely). "He's off to work" and "the day off" are no cancellation.
CALLED_OFF = re.compile(
    r"\b(?:cancel(?:l)?ed|called (?:it )?off|calling (?:it )?off|call (?:it )?off|"
    r"(?:is|are|was|were|'s|'re) (?:now |officially |totally |all )?off(?!\s+(?:to|for|from|work|duty|the|at|on)\b)|"
    r"fell through|falls through|postponed|rescheduled|pushed (?:it )?back|(?:got |was |were |been |is )moved to|moved it to|not happening|"
    r"had to (?:cancel|reschedule|postpone|push (?:it )?back|call (?:it )?off)|"
    r"isn't happening|won't happen|scrapped|not going any ?more)\b"
    r"|取消|不去了|去不了了|去不成了|泡汤|黄了|推迟|改期|延期|改到|不办了|吹了|作罢",
    re.I,
)
# Of those, the ones that move the event to another day ("rescheduled to Friday", "推迟到下周三"): the
# day the same message names is the new one, still followed up.
MOVED = re.compile(
    r"\b(?:postponed|rescheduled|pushed (?:it )?back|(?:got |was |were |been |is )moved to|moved it to|had to (?:reschedule|postpone|push (?:it )?back))\b"
    r"|推迟|改期|延期|改到",
    re.I,
)
# A cancellation only supposed, hoped against or asked about ("I hope it doesn't get cancelled",
# "what if the trip is off?", "万一取消了怎么办"): nothing is called off.
_UNSURE = re.compile(
    r"\b(?:if|might|may|could|hope|hoping|afraid|worried|whether|unless|in case|maybe|probably)\b"
    r"|如果|万一|可能|怕|担心|希望|会不会|是不是|要是",
    re.I,
)
_BOUNDARY = re.compile(r"[，,。.!！?？;；\n]")
# Words of an announcement that say which event it is beside its cue: a name or a place ("Duluth",
# "厦门"), not the time words around it.
_NAME_EN = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]{2,}\b")
_TIME_ZH = re.compile(r"那天|今天|明天|后天|昨天|前天|时候|周末|下周|这周|上周|星期|礼拜")
FOLLOW_UP_WINDOW = timedelta(days=3)  # a follow-up stays due this long after its time
ACTIVE_WITHIN = timedelta(minutes=30)  # "still up" means a message at most this long ago
DEFAULT_FOLLOW_UP_TIME = 10 * 60  # local minute of the day, until a wake-up time is learned

_LATIN = re.compile(
    r"(?<![\w'])(?:"
    + "|".join(re.escape(c) for c in sorted((c for c in EVENT_CUES if c.isascii()), key=len, reverse=True))
    + r")(?:s|es)?(?![\w'])",  # "exams", "interviews"
    re.I,
)
_CJK = [c for c in EVENT_CUES if not c.isascii()]
# 考 with what is sat ("考驾照", "考科目二", "考雅思", "考四级"): an exam whatever its name, as "exam" or
# "test" is in English; not the words 考 is only part of (考虑 consider, 思考, 参考, 考验, 考察 …).
_ZH_SIT_EXAM = re.compile(
    r"(?<![思参备报招高中])考(?![虑验察究核古量勤评证据了过完得])(?P<what>[\u4e00-\u9fffA-Za-z0-9]{1,4})"
)


def event_cue(text: str) -> str | None:
    """The first event cue in `text`, or None."""
    for c in _CJK:
        if c in text:
            return c
    if (sat := _ZH_SIT_EXAM.search(text)) is not None:
        return sat.group(0)
    m = _LATIN.search(text)
    return m.group(0).lower() if m else None


@dataclass(frozen=True, slots=True)
class Nudge:
    kind: str  # follow_up | late_night
    due_at: datetime  # aware, UTC
    due: bool  # due now (False: upcoming)
    reason: str
    suggestion: str  # what a companion might say; the app decides
    source_turn_ids: tuple[int, ...] = ()
    event_date: str | None = None  # follow-ups: the day the event was said to happen
    quote: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "due_at": self.due_at.isoformat(),
            "due": self.due,
            "reason": self.reason,
            "suggestion": self.suggestion,
            "event_date": self.event_date,
            "quote": self.quote,
            "source_turn_ids": list(self.source_turn_ids),
        }


def _zone(timezone: str | None) -> tzinfo:
    return (zone_info(timezone) if timezone else None) or UTC


def due_nudges(
    memory: Memory,
    user_id: str,
    now: datetime | None = None,
    *,
    timezone: str | None = None,
    include_upcoming: bool = False,
) -> list[Nudge]:
    """The nudges due for `user_id` at `now` (default: now), oldest first; with `include_upcoming`
    also the follow-ups whose time has not come yet. `timezone` defaults to the one the user's
    routine was learned in. Reads only; sends nothing."""
    now = now or datetime.now(UTC)
    store = memory.store
    routine = routines.from_row(store.routine_get(user_id))
    tz = timezone or routine.timezone or _profile_timezone(memory, user_id)
    zone = _zone(tz)
    out: list[Nudge] = []
    follow_minute = _follow_minute(routine)
    since = (now - LOOKBACK).timestamp()
    ids = [tid for tid, ts in store.user_turn_times(user_id, since) if ts <= now.timestamp()]
    seen: set[str] = set()
    turns = store.get_turns(user_id, ids)
    offs = [(t, _days(t, tz)) for t in turns if called_off(t.content)]
    for turn in turns:
        cue = event_cue(turn.content)
        if cue is None:
            continue
        said_on = local_time(turn.created_at, tz)[0].date()
        days = [
            (ref.text, ref.date)
            for ref in resolve(turn.content, turn.created_at, tz)
            if ref.granularity == "day" and ref.date >= said_on
        ]
        for text, day in days:
            key = f"{day}:{cue}"
            if key in seen or _cancelled(turn, cue, day, offs, tz):
                continue
            seen.add(key)
            day_after = day + timedelta(days=1)
            at = datetime.combine(day_after, time(follow_minute // 60, follow_minute % 60), zone).astimezone(
                UTC
            )
            if now > at + FOLLOW_UP_WINDOW:
                continue
            due = now >= at
            if not due and not include_upcoming:
                continue
            out.append(
                Nudge(
                    kind="follow_up",
                    due_at=at,
                    due=due,
                    reason=f"said on {said_on.isoformat()}: {text} ({day.isoformat()}) — {cue}",
                    suggestion=f"Ask how the {cue} on {day.isoformat()} went.",
                    source_turn_ids=(turn.id,) if turn.id is not None else (),
                    event_date=day.isoformat(),
                    quote=turn.content,
                )
            )
    last = store.last_active(user_id)
    if last is not None:
        last_at = datetime.fromtimestamp(last, UTC)
        window, source = routine.late_window()
        local = local_time(now, tz)[0]
        if now - last_at <= ACTIVE_WITHIN and in_window(local.hour * 60 + local.minute, window):
            last_ids = [tid for tid, ts in store.user_turn_times(user_id, last - 1) if ts == last]
            bedtime = (
                hhmm(routine.sleep_minute) if routine.learned and routine.sleep_minute is not None else None
            )
            out.append(
                Nudge(
                    kind="late_night",
                    due_at=now,
                    due=True,
                    reason=(
                        f"still writing at {local.strftime('%H:%M')} local time; usual bedtime {bedtime}"
                        if bedtime
                        else f"still writing at {local.strftime('%H:%M')} local time (default late window)"
                    ),
                    suggestion="Tell them, caring but firm, to put the phone down and go to sleep.",
                    source_turn_ids=tuple(last_ids[-1:]),
                    meta={"late_window": f"{hhmm(window[0])}-{hhmm(window[1])} ({source})"},
                )
            )
    out.sort(key=lambda n: n.due_at)
    return out


def called_off(text: str) -> bool:
    """Whether `text` says a plan is called off or moved (`CALLED_OFF`), not only supposes or asks it."""
    for m in CALLED_OFF.finditer(text):
        start = max((b.end() for b in _BOUNDARY.finditer(text, 0, m.start())), default=0)
        end = _BOUNDARY.search(text, m.end())
        if end is not None and end.group(0) in "?？":
            continue
        if _UNSURE.search(text, start, m.start()) is None:
            return True
    return False


def _days(turn: Turn, tz: str | None) -> set[date]:
    return {ref.date for ref in resolve(turn.content, turn.created_at, tz) if ref.granularity == "day"}


def _names(text: str) -> set[str]:
    """The words that name what an event is beside its cue: capitalised words inside a sentence, and
    Chinese words of two characters or more that are no time words."""
    out = {w.lower() for w in _NAME_EN.findall(text)}
    out |= {w for w in terms(text) if len(w) >= 2 and not w.isascii() and not _TIME_ZH.search(w)}
    return out - {m.group(0).lower() for m in CALLED_OFF.finditer(text)}


def _cancelled(turn: Turn, cue: str, day: date, offs: list[tuple[Turn, set[date]]], tz: str | None) -> bool:
    """Whether a message said at or after `turn` (before its event's `day` was over) calls off the
    event `turn` announced: it names the same cue, the same day or the same name or place."""
    for off, off_days in offs:
        if off.created_at < turn.created_at or local_time(off.created_at, tz)[0].date() > day:
            continue
        moved = MOVED.search(off.content) is not None
        if moved and day in off_days:
            continue  # "rescheduled the dentist to Friday": Friday is the new day
        if off.id == turn.id:
            if not moved:
                return True  # "the dentist on Friday got cancelled"
            continue
        text = off.content
        same_cue = (
            (cue in text) if not cue.isascii() else re.search(rf"(?<![\w']){re.escape(cue)}", text, re.I)
        )
        if same_cue or day in off_days or _names(turn.content) & _names(text):
            return True
    return False


def _follow_minute(routine: routines.Routine) -> int:
    """The local minute of the day a follow-up falls due: an hour after the learned wake-up time."""
    if routine.learned and routine.wake_minute:
        return (routine.wake_minute + 60) % 1440
    return DEFAULT_FOLLOW_UP_TIME


def follow_ups_since(
    memory: Memory,
    user_id: str,
    since: datetime | None,
    now: datetime,
    *,
    timezone: str | None = None,
    routine: routines.Routine | None = None,
) -> list[Nudge]:
    """The follow-ups that became askable after `since` (the user's previous message) and by `now`:
    what a companion brings up the first time the user writes after an event they said was coming
    ("明天面试" → from the next day on, "how did it go?"), and not again after that. In conversation
    an event is asked about once its day is over (local midnight), not only from the proactive
    nudge's due time (`due_nudges`, for a message sent unprompted).

    So unless a local midnight lies between `since` and `now` nothing can have become askable and no
    turn is read: the recent turns are scanned at most about once a day per user, not on every
    message."""
    if since is None or since >= now:
        return []
    if routine is None:
        routine = routines.from_row(memory.store.routine_get(user_id))
    tz = timezone or routine.timezone or _profile_timezone(memory, user_id)
    zone = _zone(tz)
    first, last = since.astimezone(zone).date(), now.astimezone(zone).date()
    if first == last:
        return []
    out = []
    for n in due_nudges(memory, user_id, now, timezone=tz, include_upcoming=True):
        if n.kind != "follow_up" or n.event_date is None:
            continue
        askable = datetime.combine(date.fromisoformat(n.event_date) + timedelta(days=1), time(0), zone)
        if since < askable <= now:
            out.append(n)
    return out


def _profile_timezone(memory: Memory, user_id: str) -> str | None:
    """The timezone the user last sent with a turn (a profile fact), if any."""
    fact = Profile(memory.store).get(user_id, TIMEZONE)
    return fact.value if fact is not None else None


def user_timezone(memory: Memory, user_id: str) -> str | None:
    """The user's timezone as nudges read it: the one their routine was learned in, else the one they
    last sent or stated (a profile fact); None when neither is known."""
    routine = routines.from_row(memory.store.routine_get(user_id))
    return routine.timezone or _profile_timezone(memory, user_id)
