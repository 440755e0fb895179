"""The time-expression scan runs its forms one by one (and only those of the text's scripts); it must
find exactly what one alternation of all the forms finds: the leftmost match at each place, the form
listed first when two match there."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memsched import Config, Memory
from memsched.embed.hashing import HashEmbedder
from memsched.scheduler import Scheduler
from memsched.text import timeexpr
from memsched.text.timeexpr import resolve, spans

NOW = datetime(2024, 10, 22, 7, 0, tzinfo=UTC)
ONE_ALTERNATION = re.compile("|".join(f"(?P<{n}>{rx})" for n, rx in timeexpr._FORMS), re.IGNORECASE)

TEXTS = [
    "",
    "nothing to see here",
    "上上周三我们吵了一架，上周三又吵了",  # the longer form is listed first
    "I saw her the day before yesterday and again yesterday",  # en_day2 before en_day
    "the week before last, last week and this week",
    "我前两天去了杭州 and last Friday I came back",  # both scripts, in text order
    "last Friday我去了上海，上周五他来了",
    "下周五 next Friday 下周五",
    "Monday to Friday I work; every Friday I swim; next Friday after next? Friday.",
    "on 3/5 I paid, 3/5号那天他也付了",  # the two slash forms
    "the end of next month and early last year, mid-March and late 2024",
    "3月5号 5 March 2024, March 5th, 2024 and on the 15th",
    "LAST WEEKEND and Last Christmas, NEXT SPRING",
    "去年春天，前年圣诞节，明年年底，今年年初",
    "in two weeks, three days ago, a couple of days ago, in half a year, 2 weeks from now",
    "半个月前，过两天，十五天之前，3个星期前，上个月中旬",
]


@pytest.mark.parametrize("text", TEXTS)
def test_the_scan_finds_what_one_alternation_finds(text: str) -> None:
    expected = [(m.lastgroup, m.span()) for m in ONE_ALTERNATION.finditer(text)]
    found = [(kind, m.span()) for kind, m in timeexpr._found(text)]
    assert found == expected
    assert any(expected) or not text.strip() or text == "nothing to see here"


def test_letters_that_ignorecase_folds_onto_ascii_do_not_break_resolving() -> None:
    """'ſ' (long s), 'K' (Kelvin sign), 'İ' and 'ı' match s, k and i under IGNORECASE: "laſt weekend"
    matched a form, and its lookup by the lowered word raised KeyError (a turn saying it failed)."""
    for text in ("we met laſt weekend", "we met last weeKend", "we met laſt Frıday", "we met last Frİday"):
        refs = resolve(text, NOW)
        assert [(r.start, r.end, r.date, r.granularity) for r in refs] == [
            (r.start, r.end, r.date, r.granularity) for r in resolve(text.replace("ſ", "s"), NOW)
        ]
        assert refs and spans(text) == [(refs[0].start, refs[0].end)]


def test_a_turn_saying_it_is_recorded_with_its_date(tmp_path: Path) -> None:
    memory = Memory(Config.load(home=tmp_path, page_size=4), embedders={"hash": HashEmbedder()})
    sched = Scheduler(memory, llm=None, summary_llm=None, start_workers=False)
    try:
        sched.record("u", "s", "user", "we met laſt weekend at the lake", now=NOW)
        (turn,) = memory.store.session_turns("u", "s")
        assert turn.meta.get(timeexpr.DATES_KEY)  # stamped: the weekend's date note
    finally:
        sched.close()
        memory.close()
