"""Relative time expressions resolved against the message's timestamp and the user's timezone."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from memsched.text.timeexpr import TimeRef, local_now, notes, resolve

# Tuesday 2024-10-22, 15:00 in Shanghai.
NOW = datetime(2024, 10, 22, 7, 0, tzinfo=UTC)
TZ = "Asia/Shanghai"

CASES = [
    # (message, expression, label, source)
    ("上周我去杭州出差了", "上周", "2024-10-15", "dateparser"),
    ("昨天好累", "昨天", "2024-10-21", "dateparser"),
    ("前天下雨了", "前天", "2024-10-20", "dateparser"),
    ("三天前我搬家了", "三天前", "2024-10-19", "dateparser"),
    ("上周三我们吵了一架", "上周三", "2024-10-16", "rule"),
    ("下周五我要面试", "下周五", "2024-11-01", "rule"),
    ("上个月我去了成都", "上个月", "2024-09", "dateparser"),
    ("去年我在北京工作", "去年", "2023", "dateparser"),
    ("明天面试", "明天", "2024-10-23", "dateparser"),
    ("I went hiking yesterday", "yesterday", "2024-10-21", "dateparser"),
    ("last week I moved", "last week", "2024-10-15", "dateparser"),
    ("Two days ago we argued", "Two days ago", "2024-10-20", "dateparser"),
    ("I met her last Tuesday", "last Tuesday", "2024-10-15", "rule"),
    ("My interview is next Friday", "next Friday", "2024-11-01", "rule"),  # next week's, as 下周五
    ("We fly out in two weeks", "in two weeks", "2024-11-05", "dateparser"),
    # more forms
    ("大前天", "大前天", "2024-10-19", "dateparser"),
    ("后天见", "后天", "2024-10-24", "dateparser"),
    ("两周后出发", "两周后", "2024-11-05", "dateparser"),
    ("十五天之前", "十五天之前", "2024-10-07", "dateparser"),
    ("3个星期前", "3个星期前", "2024-10-01", "dateparser"),
    ("两个月后", "两个月后", "2024-12", "dateparser"),
    ("上个星期", "上个星期", "2024-10-15", "dateparser"),
    ("上上周二", "上上周二", "2024-10-08", "rule"),
    ("这周日", "这周日", "2024-10-27", "rule"),
    ("上周末我们去爬山", "上周末", "2024-10-19", "rule"),
    ("前年", "前年", "2022", "rule"),
    ("上上个月", "上上个月", "2024-08", "rule"),
    ("明年", "明年", "2025", "dateparser"),
    ("the day before yesterday", "the day before yesterday", "2024-10-20", "dateparser"),
    ("last night was fun", "last night", "2024-10-21", "dateparser"),
    ("last weekend we hiked", "last weekend", "2024-10-19", "rule"),
    ("three weeks later", "three weeks later", "2024-11-12", "dateparser"),
    ("a month ago", "a month ago", "2024-09", "dateparser"),
    ("last year", "last year", "2023", "dateparser"),
    ("Last Friday I met him", "Last Friday", "2024-10-18", "rule"),
    ("半个月前我们分手了", "半个月前", "2024-10-07", "rule"),
    ("半月后回国", "半月后", "2024-11-06", "rule"),
    ("We broke up the week before last", "the week before last", "2024-10-08", "rule"),
    ("the week after next we leave", "the week after next", "2024-11-05", "rule"),
    ("I started a fortnight ago", "a fortnight ago", "2024-10-08", "rule"),
]


@pytest.mark.parametrize(("message", "expr", "label", "source"), CASES)
def test_each_form_resolves(message: str, expr: str, label: str, source: str) -> None:
    refs = resolve(message, NOW, TZ)
    assert [(r.text, r.label, r.source) for r in refs] == [(expr, label, source)]
    assert message[refs[0].start : refs[0].end] == expr


def test_seed_example_stores_the_absolute_date() -> None:
    (ref,) = resolve("上周我去杭州出差了", datetime(2024, 10, 22, 9, 0, tzinfo=UTC), TZ)
    assert ref.date == date(2024, 10, 15)
    assert ref.granularity == "week"
    assert ref.note == "上周 = 2024-10-15"


def test_the_users_timezone_decides_the_base_date() -> None:
    # 20:00 UTC on the 21st is already 04:00 on the 22nd in Shanghai, still the 21st in New York.
    late = datetime(2024, 10, 21, 20, 0, tzinfo=UTC)
    assert resolve("昨天", late, "Asia/Shanghai")[0].label == "2024-10-21"
    assert resolve("yesterday", late, "America/New_York")[0].label == "2024-10-20"
    assert resolve("yesterday", late, None)[0].label == "2024-10-20"
    # An unknown timezone falls back to UTC instead of failing the turn.
    assert resolve("yesterday", late, "Mars/Olympus")[0].label == "2024-10-20"
    assert local_now(late, "Asia/Shanghai").hour == 4


def test_several_expressions_in_one_message_keep_text_order() -> None:
    refs = resolve("昨天开会，明天出差，下周五回来", NOW, TZ)
    assert [r.note for r in refs] == ["昨天 = 2024-10-21", "明天 = 2024-10-23", "下周五 = 2024-11-01"]
    assert notes(refs) == "昨天 = 2024-10-21; 明天 = 2024-10-23; 下周五 = 2024-11-01"


@pytest.mark.parametrize(
    "message",
    [
        "今天天气不错",
        "How are you today?",
        "a few days ago",
        "几天前",
        "三小时前",
        "前面那家店",
        "may I ask",
    ],
)
def test_vague_or_absent_expressions_are_left_alone(message: str) -> None:
    assert resolve(message, NOW, TZ) == []


def test_month_arithmetic_clamps_to_the_month_end() -> None:
    (ref,) = resolve("上上个月", datetime(2024, 5, 31, 12, tzinfo=UTC), None)
    assert ref.date == date(2024, 3, 31)
    (ref,) = resolve("前年", datetime(2024, 2, 29, 12, tzinfo=UTC), None)
    assert ref.date == date(2022, 2, 28)


def test_round_trip_through_dict() -> None:
    for ref in resolve("上周三和last weekend", NOW, TZ):
        assert TimeRef.from_dict(ref.as_dict()) == ref
