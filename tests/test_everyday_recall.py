"""A strategy can ask everyday chat to recall only what the message is about; none of the shipped
strategies does.

"any ideas for lunch? I've got half an hour and an empty fridge" on a companion history with a long
chess deep-dive in it brings chess lines into the context: no word of the message is in any turn, so
the dense layers alone rank the history, and their nearest lines ("I also tried the London System
for a month", MiniLM cosine 0.24) pass the noise cut. A strategy's `min_similarity` (0.3 here)
recalls, when no word layer found anything, only the turns a sentence encoder finds about the
message, turns in the other language, and their neighbours (`memory.found_by_message`). The shipped
everyday strategy leaves it at 0: the associations a companion is for ("should I get a pet?" and the
user's cat, cosine 0.27) sit as low as that noise.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

import memsched
from memsched.config import Config
from memsched.errors import ConfigError
from memsched.memory import Memory, found_by_message
from memsched.model import Candidate, Turn
from memsched.scheduler import Scheduler
from memsched.strategy import StrategyTable
from memsched.testing.histories import CHESS_LINES, FILLER_LINES, HISTORY_START, companion_history

EVERYDAY = [
    "I teach chemistry at a high school in Denver.",
    "I usually grab a sandwich from the deli near school.",
    "My cat Biscuit knocked a plant off the shelf again.",
    "Went bouldering after work, my forearms are dead.",
    "Thinking about repainting the kitchen this autumn.",
]
LUNCH = "any ideas for lunch? I've got half an hour and an empty fridge"
DELI = EVERYDAY[1]
CHESS = CHESS_LINES
T0 = HISTORY_START


def _history() -> list[Turn]:
    return companion_history("jo", [[EVERYDAY[0], EVERYDAY[1]], CHESS_LINES, EVERYDAY[2:], FILLER_LINES])


@pytest.fixture(scope="module")
def companion(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    mem = Memory(home=tmp_path_factory.mktemp("everyday") / "m", embedders="minilm")
    mem.add_many(_history())
    yield mem
    mem.close()


def _recalled(mem: Memory, message: str, **kwargs: object) -> str:
    now = T0 + timedelta(days=10)
    ctx = mem.context("jo", message, session_id="today", now=now, budget=2000, **kwargs)  # type: ignore[arg-type]
    return "\n".join(str(m["content"]) for m in ctx.messages[:-1])


def test_a_lunch_question_draws_in_no_chess_line(companion: Memory) -> None:
    text = _recalled(companion, LUNCH, min_similarity=0.3)
    assert not [line for line in CHESS if line in text]
    assert DELI in text  # what the message is about is still recalled (cosine 0.49)


def test_without_the_floor_the_nearest_chess_lines_came_in(companion: Memory) -> None:
    text = _recalled(companion, LUNCH)  # a recall question's path: whatever ranks
    assert [line for line in CHESS if line in text]
    assert DELI in text


def test_a_message_that_names_something_is_ranked_as_before(companion: Memory) -> None:
    """A word layer found a turn ("Najdorf"): the floor does not apply, the whole ranking stands."""
    message = "the Najdorf still scares me"
    assert _recalled(companion, message, min_similarity=0.3) == _recalled(companion, message)


def _turn(tid: int, text: str) -> Turn:
    t = Turn("u", "s", "user", text, created_at=T0)
    t.id = tid
    return t


def test_found_by_message_keeps_what_a_sentence_encoder_finds_the_other_language_and_neighbours() -> None:
    top = [
        Candidate(1, {"minilm": 0.45}, reason="fused"),
        Candidate(2, {"minilm": 0.24, "page": 0.3, "terms": 0.9}, reason="fused"),
        Candidate(3, {"wordllama": 0.7}, reason="fused"),
        Candidate(4, {}, reason="neighbour of 1"),
        Candidate(5, {}, reason="neighbour of 2"),
        Candidate(6, {"sub1": 0.4}, reason="sub-query 1"),
        Candidate(7, {"wordllama": 0.2}, reason="fused"),
    ]
    turns = [_turn(i, "an English line") for i in range(1, 7)] + [_turn(7, "我在杭州当牙医。")]
    kept = found_by_message("any ideas for lunch?", top, turns, 0.3, {"minilm"})
    assert kept == {1, 4, 7}
    # A word layer's hit: everything stays, as it does when no sentence encoder searched (Chinese).
    worded = [*top, Candidate(8, {"bm25": 3.1}, reason="fused")]
    assert found_by_message("lunch", worded, [*turns, _turn(8, "lunch")], 0.3, {"minilm"}) == set(range(1, 9))
    assert found_by_message("午饭吃什么", top, turns, 0.3, set()) == set(range(1, 8))
    # For a Chinese message the English turns are the other language.
    assert found_by_message("午饭吃什么", top, turns, 0.3, {"minilm"}) == {1, 2, 3, 4, 5, 6}


PET = "should I get a pet?"
CAT = EVERYDAY[2]


def test_the_floor_would_cost_the_association_a_companion_is_for(companion: Memory) -> None:
    """Why no shipped strategy sets it: the user's cat, at cosine 0.27 to the question."""
    assert CAT in _recalled(companion, PET)
    assert CAT not in _recalled(companion, PET, min_similarity=0.3)


def test_no_shipped_strategy_sets_a_floor_and_a_bad_one_is_a_clear_error(tmp_path: Path) -> None:
    table = StrategyTable.load()
    assert all(s.min_similarity == 0.0 for s in table.strategies)
    mine = _floored_table(tmp_path)
    assert next(s for s in StrategyTable.load(mine).strategies if s.name == "casual").min_similarity == 0.3
    bad = '[[strategy]]\nname = "x"\nmin_similarity = 1.5\nshares = { recent = 1.0 }\n'
    with pytest.raises(ConfigError, match="min_similarity"):
        StrategyTable.parse(bad, "mine.toml")


def _floored_table(tmp_path: Path) -> Path:
    """The shipped table with `min_similarity = 0.3` on its everyday strategy."""
    shipped = (Path(memsched.__file__).parent / "strategies.toml").read_text(encoding="utf-8")
    head = 'name = "casual"\n'
    assert head in shipped
    path = tmp_path / "strategies.toml"
    path.write_text(shipped.replace(head, head + "min_similarity = 0.3\n"), encoding="utf-8")
    return path


@pytest.mark.parametrize("floored", [False, True])
def test_a_casual_turn_through_the_scheduler_takes_its_strategys_floor(tmp_path: Path, floored: bool) -> None:
    table = _floored_table(tmp_path) if floored else None
    memory = Memory(Config.load(home=tmp_path, strategies=table), embedders="minilm")
    sched = Scheduler(memory, start_workers=False)
    try:
        memory.add_many(_history())
        result = sched.prepare("jo", "today", LUNCH, now=T0 + timedelta(days=10, hours=-6), timezone="UTC")
        assert result.route["mode"] == "casual"
        text = "\n".join(str(m["content"]) for m in result.messages[:-1])
        assert bool([line for line in CHESS if line in text]) is not floored
        assert DELI in text
    finally:
        sched.close()
        memory.close()
