from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsched.assemble import MEMORY_HEADER, assemble, format_memory
from memsched.errors import BudgetError
from memsched.model import Turn
from memsched.text.tokens import get_counter

# Runs on SQLite and on PostgreSQL (conftest.py, `backend`).
pytestmark = pytest.mark.usefixtures("backend")

COUNTER = get_counter("o200k_base")
T0 = datetime(2024, 3, 1, 20, 0, tzinfo=UTC)

words = st.lists(
    st.sampled_from([*"abc xyz 你好世界番茄炒蛋 。,!\n", "hello ", "记得 ", "🙂"]), max_size=60
).map("".join)


def _turns(contents: list[str], session: str = "s1", start: int = 0) -> list[Turn]:
    return [
        Turn(
            "u",
            session,
            "user" if i % 2 == 0 else "assistant",
            c,
            created_at=T0 + timedelta(minutes=start + i),
            id=start + i + 1,
            seq=start + i,
        )
        for i, c in enumerate(contents)
    ]


@settings(max_examples=200, deadline=None)
@given(
    recalled=st.lists(words, max_size=25),
    recent=st.lists(words, max_size=15),
    message=words,
    budget=st.integers(min_value=1, max_value=1500),
    share=st.floats(min_value=0.0, max_value=1.0),
    summaries=st.lists(words, max_size=2),
)
def test_budget_is_never_exceeded(
    recalled: list[str], recent: list[str], message: str, budget: int, share: float, summaries: list[str]
) -> None:
    try:
        out = assemble(
            counter=COUNTER,
            budget=budget,
            system_prompt="You are kind.",
            new_message=message,
            recalled=_turns(recalled, "old"),
            recent=_turns(recent, "now", start=100),
            recent_share=share,
            recent_max_turns=12,
            summaries=summaries,
        )
    except BudgetError:
        assert (
            COUNTER.messages_tokens(
                [{"role": "system", "content": "You are kind."}, {"role": "user", "content": message}]
            )
            > budget
        )
        return
    assert COUNTER.messages_tokens(out.messages) <= budget
    assert out.tokens["total"] == COUNTER.messages_tokens(out.messages)
    assert out.messages[0]["role"] == "system"
    assert out.messages[-1] == {"role": "user", "content": message}


def test_order_and_labels() -> None:
    old = _turns(["I adopted a cat named Sesame", "lovely!"], "session_1")
    recent = _turns(["what's for dinner?", "tomato eggs?"], "today", start=50)
    out = assemble(
        counter=COUNTER,
        budget=500,
        system_prompt="SYS",
        new_message="and my cat?",
        recalled=old,
        recent=recent,
        recent_share=0.5,
        recent_max_turns=10,
    )
    system = out.messages[0]["content"]
    assert system.startswith("SYS\n\n" + MEMORY_HEADER)
    assert "[2024-03-01]\nuser: I adopted a cat named Sesame" in system
    assert "session_1" not in system  # the date says when; the id would only cost tokens
    assert [m["content"] for m in out.messages[1:]] == ["what's for dinner?", "tomato eggs?", "and my cat?"]


def test_recall_groups_by_session_in_time_order_and_marks_gaps() -> None:
    a = _turns(["a0", "a1", "a2", "a3"], "A")
    b = _turns(["b0"], "B", start=10)
    text = format_memory([b[0], a[3], a[0]])
    # Two sessions on one day: each header carries the time as well, A's group first.
    assert text.count("[2024-03-01 ") == 2
    assert text.index("a0") < text.index("b0")
    assert text.index("[2024-03-01 ", text.index("a3")) < text.index("b0")
    assert "user: a0\n…\nassistant: a3" in text


def test_priority_decides_what_fits() -> None:
    recalled = _turns(["important " * 30, "filler " * 200], "old")
    out = assemble(
        counter=COUNTER,
        budget=200,
        system_prompt="S",
        new_message="q",
        recalled=recalled,
        recent=[],
        recent_share=0.0,
        recent_max_turns=0,
    )
    assert [t.content for t in out.recalled] == ["important " * 30]
    assert out.dropped >= 1


def test_budget_too_small_names_the_problem() -> None:
    with pytest.raises(BudgetError, match="cannot hold"):
        assemble(
            counter=COUNTER,
            budget=5,
            system_prompt="a long system prompt here",
            new_message="hi",
            recalled=[],
            recent=[],
            recent_share=0.3,
            recent_max_turns=5,
        )


@settings(max_examples=200, deadline=None)
@given(
    recalled=st.lists(words, max_size=25),
    recent=st.lists(words, max_size=15),
    message=words,
    budget=st.integers(min_value=1, max_value=1500),
    raw=st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=3, max_size=3),
    summaries=st.lists(words, max_size=3),
)
def test_strategy_shares_are_honoured_and_the_budget_still_holds(
    recalled: list[str], recent: list[str], message: str, budget: int, raw: list[float], summaries: list[str]
) -> None:
    total = sum(raw) or 1.0
    shares = {"recent": raw[0] / total, "recalled": raw[1] / total, "summaries": raw[2] / total}
    base = COUNTER.messages_tokens(
        [{"role": "system", "content": "You are kind."}, {"role": "user", "content": message}]
    )
    try:
        out = assemble(
            counter=COUNTER,
            budget=budget,
            system_prompt="You are kind.",
            new_message=message,
            recalled=_turns(recalled, "old"),
            recent=_turns(recent, "now", start=100),
            recent_share=0.3,
            recent_max_turns=12,
            summaries=summaries,
            shares=shares,
        )
    except BudgetError:
        assert base > budget
        return
    assert COUNTER.messages_tokens(out.messages) <= budget
    available = budget - base
    # Summaries and recalled turns stay inside their shares (header and date lines included).
    memory_side = out.tokens["summaries"] + out.tokens["memory"]
    assert memory_side <= int(available * (shares["summaries"] + shares["recalled"]))
    assert out.messages[-1] == {"role": "user", "content": message}


def test_a_small_recall_share_leaves_the_room_to_the_recent_window() -> None:
    recalled = _turns([f"old memory number {i} about the weekend" for i in range(30)], "old")
    recent = _turns([f"recent line {i}" for i in range(12)], "now", start=100)
    kwargs = {
        "counter": COUNTER,
        "budget": 600,
        "system_prompt": "S",
        "new_message": "hi",
        "recalled": recalled,
        "recent": recent,
        "recent_share": 0.3,
        "recent_max_turns": 12,
    }
    default = assemble(**kwargs)  # type: ignore[arg-type]
    cold = assemble(**kwargs, shares={"recent": 0.5, "recalled": 0.1, "summaries": 0.0})  # type: ignore[arg-type]
    assert cold.tokens["memory"] < default.tokens["memory"]
    assert len(cold.recent) == 12 >= len(default.recent)
