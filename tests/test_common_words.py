"""A question's everyday words do not decide what it is about, and on a small history a dense
layer's noise is not paged in.

Before, "What should I make for dinner tonight?" on a companion history of a few dozen turns with a
long science-fiction debate in it brought debate lines into the context: no turn says "dinner", so
BM25's best hit was the debate line that says "make" (as rare as a name in a small history), the
soft-term layer matched "tonight" in "we've solved science fiction for tonight", and MiniLM's 50
nearest turns, two in five of the history, reached debate lines at cosine 0.12-0.15. Now common
words (`text.common`) and time words stay out of the lexical layers, and a dense layer that holds
the whole history keeps only the hits that stand out from it (`PagingOptions.dense_noise_z`).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from memsched.bookmarks import maintain_bookmarks
from memsched.memory import Memory
from memsched.model import Hit, Turn
from memsched.paging import Pager, PagingOptions
from memsched.text.common import content_terms, is_common


def test_common_words_are_the_languages_most_frequent() -> None:
    assert is_common("make") and is_common("好") and is_common("want")
    assert not is_common("dinner") and not is_common("晚饭") and not is_common("pottery")
    assert not is_common("make", threshold=0.0)  # 0: off
    assert content_terms(["make", "dinner"]) == ["dinner"]
    assert content_terms(["好", "吃"]) == ["吃"]
    # Nothing but common words: all of them are still searched.
    assert content_terms(["want", "know"]) == ["want", "know"]


DEBATE = [
    "Okay hot take: Dune is overrated compared to Foundation.",
    "Asimov's psychohistory is a far more interesting idea than spice and sandworms.",
    "Hari Seldon predicting the fall of an empire with maths is way more original.",
    "The Mule breaks the whole plan though, it shows the limits of prediction.",
    "Dune's politics feel medieval, houses and emperors and feudal fiefs in space.",
    "The Second Foundation twist still gets me, telepaths steering history from the shadows.",
    "Leto II in God Emperor is the wildest character in all of science fiction.",
    "The Mule would just make the Reverend Mothers love him, that's his whole power.",
    "Okay I think we've solved science fiction for tonight, Foundation wins on ideas.",
    "Let's pick this up again sometime, I want to reread Children of Dune first.",
]
EVERYDAY = [
    "I work as a nurse at the county hospital, mostly night shifts.",
    "Also I'm vegetarian, have been since college.",
    "We packed sandwiches for the hike and got caught in the rain.",
    "We want to eat pastel de nata every single day in Lisbon.",
    "My grandmother taught me how to cook her lentil stew.",
    "Lunch break now, finally some quiet.",
    "I started learning guitar, my fingers hurt from the F chord.",
    "Work is getting stressful, my manager wants me to cover extra shifts.",
    "Spent Sunday afternoon repotting my plants.",
    "My sister Ada is visiting next month.",
]
SWIM = [
    "I started swimming lessons, I still can't breathe right in the water.",
    "My coach says my legs are wrong and I should practise the frog kick.",
]
QUESTION = "What should I make for dinner tonight?"
BEFORE = {"common_zipf": 0.0, "terms_timeless": False, "dense_noise_z": 0.0}


@pytest.fixture(scope="module")
def companion(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    """A companion history of 44 turns with MiniLM, the default embedder of English."""
    mem = Memory(home=tmp_path_factory.mktemp("common") / "m", embedders="minilm")
    t0 = datetime(2026, 3, 2, 19, tzinfo=UTC)
    # A session a day: an everyday line, the whole debate one evening, the two swimming lines.
    blocks = [[e] for e in EVERYDAY[:3]] + [DEBATE] + [[e] for e in EVERYDAY[3:]] + [SWIM]
    turns: list[Turn] = []
    for day, block in enumerate(blocks):
        for i, line in enumerate(block):
            at = t0 + timedelta(days=day, minutes=2 * i)
            turns.append(Turn("sam", f"d{day}", "user", line, created_at=at))
            turns.append(
                Turn("sam", f"d{day}", "assistant", "I hear you.", created_at=at + timedelta(seconds=30))
            )
    mem.add_many(turns)
    maintain_bookmarks(mem, "sam")
    yield mem
    mem.close()


def _context(mem: Memory, question: str = QUESTION, **options: object) -> str:
    if options:
        mem._pager = mem.pager.with_options(**options)
    try:
        ctx = mem.context("sam", question, session_id="ask", budget=2000)
    finally:
        mem._pager = mem.pager.with_options(**{k: getattr(PagingOptions(), k) for k in BEFORE})
    return "\n".join(str(m["content"]) for m in ctx.messages)


def test_a_dinner_question_does_not_draw_in_a_debate(companion: Memory) -> None:
    text = _context(companion)
    assert not [line for line in DEBATE if line in text]
    assert "Also I'm vegetarian, have been since college." in text
    assert "My grandmother taught me how to cook her lentil stew." in text


def test_before_the_debate_was_drawn_in(companion: Memory) -> None:
    text = _context(companion, **BEFORE)
    assert "The Mule would just make the Reverend Mothers love him, that's his whole power." in text


def test_the_next_line_of_a_story_still_follows_its_hit(companion: Memory) -> None:
    """The coach's advice shares no word with the news and stands out in no dense layer: the noise
    cut takes it out of every layer, and the neighbour steps bring it back beside the hit."""
    question = "I can finally breathe underwater!"
    paged = companion.pager.retrieve("sam", question)
    reasons = {c.turn_id: c.reason for c in paged.candidates}
    coach = next(t.id for t in companion.store.iter_turns("sam") if t.content == SWIM[1])
    assert coach not in {h.turn_id for hits in paged.layers.values() for h in hits}
    assert reasons.get(coach, "").startswith("neighbour of")
    assert SWIM[1] in _context(companion, question)


def test_the_lexical_layers_search_no_common_word(companion: Memory) -> None:
    paged = companion.pager.retrieve("sam", QUESTION)
    ids = {c.turn_id for c in paged.candidates}
    make = next(
        t.id for t in companion.store.iter_turns("sam") if t.content.startswith("The Mule would just make")
    )
    assert make not in ids
    assert not paged.layers.get("bm25")  # "dinner" is in no turn; "make" and "tonight" are not searched
    before = companion.pager.with_options(**BEFORE).retrieve("sam", QUESTION)
    assert [h.turn_id for h in before.layers["bm25"]] == [make]


def test_the_dense_noise_cut_keeps_what_stands_out() -> None:
    pager = Pager.__new__(Pager)
    pager.options = PagingOptions(dense_noise_z=1.0)
    pager.retriever = type("R", (), {"embedders": {"minilm": object()}})()  # type: ignore[assignment]
    sims = [0.9, 0.5, 0.2, 0.15, 0.1, 0.1, 0.05, 0.0]
    layer = [Hit(turn_id=i, score=s, rank=i + 1) for i, s in enumerate(sims)]
    cut = pager._without_noise({"minilm": layer, "bm25": layer}, k=200)
    # mean 0.25, standard deviation 0.27: from 0.52 on
    assert [h.turn_id for h in cut["minilm"]] == [0]
    assert cut["bm25"] == layer  # a lexical layer is never cut
    # A search that did not return the whole history (k hits) is never cut.
    assert pager._without_noise({"minilm": layer}, k=len(layer))["minilm"] == layer
