"""The topic judge (`memsched.topic`) on vectors made to order: relative to the segment's own
coherence, a candidate first, confirmed by the next message, an aside rejoining its segment."""

from __future__ import annotations

import numpy as np
import pytest

from memsched.router import Router
from memsched.topic import (
    DEFAULT_PARAMS,
    ScriptParams,
    TopicParams,
    advance,
    coherence,
    judge,
    relative_score,
    topic_params_for,
)

RNG = np.random.default_rng(7)
DIM = 32
A, B = RNG.normal(size=DIM), RNG.normal(size=DIM)  # two topics


def near(topic: np.ndarray, spread: float = 0.6) -> dict[str, np.ndarray]:
    return {"minilm": (topic + spread * RNG.normal(size=DIM)).astype(np.float32)}


PARAMS = TopicParams(
    cjk=DEFAULT_PARAMS.cjk,
    latin=ScriptParams(
        weights={"minilm": 1.0}, prior={"minilm": 0.3}, far=-0.15, confirm_far=-0.1, confirm_pair=-0.1
    ),
)
SEGMENT = [near(A) for _ in range(6)]


def test_the_score_is_relative_to_the_segments_own_coherence() -> None:
    units = [v["minilm"] for v in SEGMENT]
    coh = coherence(units)
    assert coh is not None and 0.5 < coh < 1.0
    assert coherence(units[:2]) is None  # too few turns to say
    same = relative_score(PARAMS.latin, [near(A)], SEGMENT)
    other = relative_score(PARAMS.latin, [near(B)], SEGMENT)
    assert same is not None and other is not None and other < -0.3 < same
    # A loose segment (turns far apart) tolerates a looser message than a tight one.
    loose = [near(A, 3.0) for _ in range(6)]
    tight = [near(A, 0.2) for _ in range(6)]
    msg = [near(A, 1.5)]
    assert relative_score(PARAMS.latin, msg, loose) > relative_score(PARAMS.latin, msg, tight)  # type: ignore[operator]


def test_one_far_message_is_a_candidate_and_the_next_confirms_it() -> None:
    first = judge("I want to cook dinner tonight", near(B), SEGMENT, params=PARAMS)
    assert first.candidate and not first.shift and first.score is not None and first.score < PARAMS.latin.far
    assert advance(first, shift=False, index=10, pending=-1) == (None, 10)
    second = judge("eggs or tomatoes first", near(B), SEGMENT, [near(B)], params=PARAMS)
    assert second.shift and second.late and second.pair_score is not None
    # The new segment starts at the candidate, not at the confirming message.
    assert advance(second, shift=True, index=11, pending=10) == (10, -1)
    route = Router().route("eggs or tomatoes first", topic=second, segment_turns=6)
    assert route.signals["topic_shift"] and route.as_dict()["topic"]["late"]
    assert any("began there" in n for n in route.notes)


def test_an_aside_rejoins_its_segment() -> None:
    aside = judge("hold on, someone's at the door", near(B), SEGMENT, params=PARAMS)
    assert aside.candidate
    back = judge("so about that kitchen", near(A), SEGMENT, [near(B)], params=PARAMS)
    assert not back.shift and not back.candidate and back.judged
    assert advance(back, shift=False, index=12, pending=11) == (None, -1)
    assert not Router().route("so about that kitchen", topic=back, segment_turns=6).signals["topic_shift"]


def test_short_messages_and_young_segments_are_not_judged() -> None:
    short = judge("ok", near(B), SEGMENT, [near(B)], params=PARAMS)
    assert not short.judged and not short.shift
    assert advance(short, shift=False, index=12, pending=11) == (None, 11)  # the candidate waits
    young = judge("I want to cook dinner tonight", near(B), SEGMENT[:2], params=PARAMS)
    assert not young.judged and not young.candidate


def test_a_cue_shifts_at_once() -> None:
    route = Router().route("换个话题，今晚吃什么", segment_turns=3)
    assert route.signals["topic_shift"]
    assert advance(None, shift=True, index=9, pending=-1) == (9, -1)


@pytest.mark.parametrize(
    ("names", "cjk", "latin"),
    [
        (["minilm", "wordllama", "gloss"], {"gloss"}, {"minilm"}),
        (["hash"], {"hash"}, {"hash"}),
        (["wordllama"], {"wordllama"}, {"wordllama"}),
    ],
)
def test_params_follow_the_configured_embedders(names: list[str], cjk: set[str], latin: set[str]) -> None:
    params = topic_params_for(names)
    assert set(params.cjk.weights) == cjk and set(params.latin.weights) == latin
    assert params.embedders("今晚我想做个番茄炒蛋") == frozenset(cjk)
    assert params.embedders("tomato eggs tonight") == frozenset(latin)
