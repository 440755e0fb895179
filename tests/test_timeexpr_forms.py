"""A companion user's time expressions, each stored with its turn as the absolute date it means
(issue 7 part 5, second walk): through `Memory.add` (the path every turn takes) with fixed timestamps
and user timezones other than UTC. Approximate ones carry their approximation in the label
("late 2026-12", "about 2026-12-03"); habits, ranges and ordinary words resolve to nothing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memsched.memory import Memory
from memsched.text.timeexpr import resolve, spans

# Tuesday 2026-12-01, 10:00 in Shanghai (still Monday 18:00 in Los Angeles).
TUE_SH = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)
SH = "Asia/Shanghai"
# Friday 2026-11-27, 09:00 in Los Angeles (already Saturday 01:00 in Shanghai).
FRI_LA = datetime(2026, 11, 27, 17, 0, tzinfo=UTC)
LA = "America/Los_Angeles"

ZH = [
    # (message, stored note)
    ("大前天我去医院了", "大前天 = 2026-11-28"),
    ("大后天要考试", "大后天 = 2026-12-04"),
    ("上上周我们见过", "上上周 = 2026-11-17"),
    ("下下周出差", "下下周 = 2026-12-15"),
    ("上周末我们去爬山了", "上周末 = 2026-11-28"),
    ("这周末有空吗", "这周末 = 2026-12-05"),
    ("月底交房租", "月底 = late 2026-12"),
    ("下个月初搬家", "下个月初 = early 2027-01"),
    ("上个月底我辞职了", "上个月底 = late 2026-11"),
    ("年底回国", "年底 = late 2026"),
    ("去年年底我们认识的", "去年年底 = late 2025"),
    ("去年夏天我们去了海边", "去年夏天 = summer 2025"),
    ("前年我在上海", "前年 = 2024"),
    ("三天后出发", "三天后 = 2026-12-04"),
    ("两周以后见", "两周以后 = 2026-12-15"),
    ("半个月前分手了", "半个月前 = 2026-11-16"),
    ("过两天再说", "过两天 = about 2026-12-03"),
    ("我前两天去了杭州", "前两天 = about 2026-11-29"),
    ("国庆节去哪玩", "国庆节 = 2027-10-01"),
    ("国庆我们去了西湖", "国庆 = 2026-10-01"),
    ("去年圣诞节我们在巴黎", "去年圣诞节 = 2025-12-25"),
    ("平安夜一起吃饭吧", "平安夜 = 2026-12-24"),
    ("上个月15号我去看了演唱会", "上个月15号 = 2026-11-15"),
    ("3月5号我们去了日本", "3月5号 = 2026-03-05"),
    ("3月5号我要去日本", "3月5号 = 2027-03-05"),
    ("12/25那天我们在一起", "12/25 = 2026-12-25"),
    ("1/15我们去滑雪", "1/15 = 2027-01-15"),  # a month/day heading the clause
    ("20号交报告", "20号 = 2026-12-20"),
    ("周二我去看牙了", "周二 = 2026-11-24"),  # a bare weekday in the past tense: the one gone by
    ("周五见", "周五 = 2026-12-04"),  # otherwise the coming one
    ("星期天要去看我妈", "星期天 = 2026-12-06"),
    ("周二要交作业", "周二 = 2026-12-08"),  # the same weekday as today, ahead: next week's
    ("这周四有空", "这周四 = 2026-12-03"),
    ("下周四开会", "下周四 = 2026-12-10"),
    ("下下周四回来", "下下周四 = 2026-12-17"),
    ("周末我去爬山了", "周末 = 2026-11-28"),
    ("周末愉快", "周末 = 2026-12-05"),  # a wish for the coming weekend: that weekend
]

EN = [
    ("the day before yesterday was rough", "the day before yesterday = 2026-11-29"),
    ("I'm free the weekend", "the weekend = 2026-12-05"),
    ("we hiked over the weekend", "the weekend = 2026-11-28"),
    ("last weekend we hiked", "last weekend = 2026-11-28"),
    ("this weekend I'll rest", "this weekend = 2026-12-05"),
    ("rent is due at the end of the month", "the end of the month = late 2026-12"),
    ("we move early next month", "early next month = early 2027-01"),
    ("I quit at the end of last year", "the end of last year = late 2025"),
    ("last summer we went to Spain", "last summer = summer 2026"),
    ("next summer we go to Spain", "next summer = summer 2027"),
    ("in 3 days I fly", "in 3 days = 2026-12-04"),
    ("a fortnight ago I quit", "a fortnight ago = 2026-11-17"),
    ("the party is on the 15th", "on the 15th = 2026-12-15"),
    ("I paid it on the 15th", "on the 15th = 2026-11-15"),
    ("Christmas is coming", "Christmas = 2026-12-25"),
    ("we spent Christmas with my parents", "Christmas = 2025-12-25"),
    ("New Year's Eve party at Tom's", "New Year's Eve = 2026-12-31"),
    ("last Thanksgiving was a mess", "last Thanksgiving = 2026-11-26"),
    ("next Thursday", "next Thursday = 2026-12-10"),  # next week's Thursday, as 下周四
    ("this Thursday", "this Thursday = 2026-12-03"),  # this week's, as 这周四
    ("this coming Thursday", "this coming Thursday = 2026-12-03"),  # the coming one
    ("Thursday after next", "Thursday after next = 2026-12-17"),  # as 下下周四
    ("last Thursday", "last Thursday = 2026-11-26"),  # the most recent one
    ("last Monday I started", "last Monday = 2026-11-30"),
    ("this Monday I started", "this Monday = 2026-11-30"),
    ("On Tuesday I went to the dentist", "Tuesday = 2026-11-24"),
    ("see you Friday", "Friday = 2026-12-04"),
    ("on 12/25 we met", "12/25 = 2025-12-25"),
    ("on 12/25 we meet again", "12/25 = 2026-12-25"),
    ("I booked a table for 1/9", "1/9 = 2027-01-09"),  # booked in the past, for a day to come
    ("we fly out Friday 12/11", "Friday 12/11 = 2026-12-11"),
    ("our first date was on Saturday 12/13", "Saturday 12/13 = 2025-12-13"),  # the year the weekday fits
    ("in May we went to Japan", "in May = 2026-05"),
    ("we fly out in May", "in May = 2027-05"),
    ("on 5 June 2023 we married", "5 June 2023 = 2023-06-05"),
    ("we met on March 5", "March 5 = 2026-03-05"),
    ("late March we moved", "late March = late 2026-03"),
    # A question in the past tense whose subject is what it asks about: the date gone by, not next year's.
    ("What happened on 17 October?", "17 October = 2026-10-17"),
    ("who called on the 15th?", "on the 15th = 2026-11-15"),
    ("Who visited on March 5?", "March 5 = 2026-03-05"),
    ("What is planned for March 5?", "March 5 = 2027-03-05"),
]


def _stored(mem: Memory, text: str, at: datetime, tz: str) -> list[str]:
    turn = mem.add("u", "s", "user", text, created_at=at, timezone=tz)
    (again,) = mem.store.get_turns("u", [turn.id])
    return list(again.meta.get("dates", []))


@pytest.mark.parametrize(("message", "note"), ZH + EN)
def test_each_form_is_stored_with_its_absolute_date(mem: Memory, message: str, note: str) -> None:
    assert _stored(mem, message, TUE_SH, SH) == [note]


@pytest.mark.parametrize(
    ("message", "note"),
    [
        ("On Tuesday I went to the dentist", "Tuesday = 2026-11-24"),
        ("周二我去看牙了", "周二 = 2026-11-24"),
        ("see you Friday", "Friday = 2026-12-04"),  # said on a Friday: next week's
        ("周五见", "周五 = 2026-12-04"),
        ("next Thursday", "next Thursday = 2026-12-03"),  # a Friday: both readings agree
        ("下周四", "下周四 = 2026-12-03"),
        ("this weekend", "this weekend = 2026-11-28"),
        ("yesterday", "yesterday = 2026-11-26"),  # Los Angeles' Friday, not Shanghai's Saturday
    ],
)
def test_said_on_a_friday_in_los_angeles(mem: Memory, message: str, note: str) -> None:
    assert _stored(mem, message, FRI_LA, LA) == [note]


@pytest.mark.parametrize(
    "message",
    [
        "May I ask you something?",
        "I'll march on",
        "the second time was better",
        "tonight I'll cook",  # today: the turn's own date says it
        "this morning I ran",
        "later today I'll call",
        "周一到周五都上班",  # a range of weekdays: a habit
        "每周五开会",
        "I work Monday to Friday",
        "every Friday I swim",
        "I usually run on Sundays",
        "周末一般睡懒觉",
        "一周三次健身",
        "3号线好挤",
        "it only took 3/4 of an hour",
        "add 1/2 cup of sugar",
        "1/3的人都没来",  # fractions
        "加了1/2杯糖",
        "得分 3/5 还行",
        "Good Friday",
        "I was born on March 5",  # a date that recurs every year names no single day
        "3月5号是我的生日",
        "春节回家",  # lunar: no calendar installed to place it
        "a few days ago",  # vague amounts stay unresolved
        "过几天再说",
        "大年初一拜年",
        "一月一次的聚会",  # a frequency, not January
        "周六和周日我都在家",
    ],
)
def test_what_is_not_a_date_stays_unresolved(mem: Memory, message: str) -> None:
    assert _stored(mem, message, TUE_SH, SH) == []


def test_calendar_dates_and_bare_weekdays_are_not_stripped_as_relative_time() -> None:
    """`spans` (what profile extraction and the topic judge drop as 'when, not what') keeps a
    birthday's date, a holiday someone likes and a bare weekday: they can be what a message is about."""
    assert spans("我最喜欢圣诞节") == []
    assert spans("my birthday is May 5th") == []
    assert spans("周五见") == []
    assert spans("我月底搬到杭州") == [(1, 3)]


@pytest.mark.parametrize(
    ("message", "notes"),
    [
        ("周二我去看牙了，周五还要去", ["周二 = 2026-11-24", "周五 = 2026-12-04"]),
        ("周五我们吵架了，周日和好了", ["周五 = 2026-11-27", "周日 = 2026-11-29"]),
        (
            "I met him on Friday and we'll meet again on Tuesday",
            ["Friday = 2026-11-27", "Tuesday = 2026-12-08"],
        ),
    ],
)
def test_each_clause_has_its_own_tense(message: str, notes: list[str]) -> None:
    assert [r.note for r in resolve(message, TUE_SH, SH)] == notes


def test_an_approximate_date_is_searchable_in_every_form(mem: Memory) -> None:
    turn = mem.add("u", "s", "user", "月底要交房租", created_at=TUE_SH, timezone=SH)
    assert turn.meta["dates"] == ["月底 = late 2026-12"]
    for query in ("2026-12", "2026年12月", "December 2026"):
        assert turn.id in [h.turn_id for h in mem.store.search_bm25("u", query)], query
