"""Moods the cue words do not show, through the HTTP service with the default embedders (the learned
parts read these lines), asserting on what reaches the (fake) upstream LLM.

A walk-through found three faults (issue 7): an argument with no cue word ("Seriously? You forgot
again. I'm so done with this." then "Don't even talk to me right now.") was routed as conflict but
left a mood of 0.15 that was never reinforced, so the next morning got the casual strategy (since
session 22 a phrase that backs the learned parts' reading, "you forgot again", "don't even talk to
me", makes it the user's mood; an argument in words that name nothing is still an expected failure); one
misread line ("What do you know about me?", "我现在住在成都", read as conflict) reached the prompt as
"upset, intensity 0.15"; and someone else's feeling ("my sister is so sad lately", "布恩迪亚家族的孤独
好像是遗传的") became the user's mood, so the next cooking question got the comfort strategy.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from memsched.config import Config
from memsched.server.app import TRACE_HEADER, create_app
from memsched.testing import FakeOpenAI, LiveServer

SH = ZoneInfo("Asia/Shanghai")
NIGHT = datetime(2025, 5, 6, 22, 30, tzinfo=SH)
PERSONA = "You are Xiaoyu."


@pytest.fixture
def server(tmp_path: Path, fake: FakeOpenAI) -> Iterator[str]:
    # The default configuration: no `embedders=` override.
    cfg = Config.load(
        home=tmp_path / "srv", upstream_base_url=fake.base_url, upstream_model="fake", llm_timeout=5.0
    )
    assert cfg.embedder_names == ["minilm", "wordllama", "gloss"]
    with LiveServer(create_app(cfg)) as base:
        yield base


def chat(base: str, user: str, session: str, text: str, at: datetime) -> dict[str, Any]:
    body = {
        "model": "m",
        "user": user,
        "metadata": {"session_id": session, "timestamp": at.isoformat(), "timezone": "Asia/Shanghai"},
        "messages": [{"role": "system", "content": PERSONA}, {"role": "user", "content": text}],
    }
    r = httpx.post(f"{base}/v1/chat/completions", json=body, timeout=60)
    assert r.status_code == 200, r.text
    trace = httpx.get(f"{base}/v1/traces/{r.headers[TRACE_HEADER]}", timeout=10).json()
    assert isinstance(trace, dict)
    return trace


def system_of(fake: FakeOpenAI) -> str:
    """The system message of the last reply request (background jobs call the fake LLM too)."""
    return str(
        next(
            b["messages"][0]["content"]
            for b in reversed(fake.chat_requests)
            if b["messages"][0].get("role") == "system"
            and str(b["messages"][0]["content"]).startswith(PERSONA)
        )
    )


def mood(base: str, user: str, at: datetime) -> dict[str, Any]:
    r = httpx.get(f"{base}/v1/users/{user}/state", params={"at": at.isoformat()}, timeout=10)
    assert r.status_code == 200, r.text
    out = r.json()["mood"]
    assert isinstance(out, dict)
    return out


ARGUMENTS = {
    "zh": (["你每次都这样，说好的事情又忘了", "我不想听你解释了"], "早"),
    "en": (
        ["Seriously? You forgot again. I'm so done with this.", "Don't even talk to me right now."],
        "morning",
    ),
}


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_an_argument_without_a_cue_word_still_shapes_the_next_morning(
    server: str, fake: FakeOpenAI, lang: str
) -> None:
    """No cue word of the mode in either line: the learned parts read them as conflict, and a phrase
    that backs such a reading ("每次都这样", "不想听你", "you forgot again", "don't even talk to me")
    makes it the user's mood, carried to the next morning."""
    fight, morning = ARGUMENTS[lang]
    first = chat(server, "sam", "night", fight[0], NIGHT)
    second = chat(server, "sam", "night", fight[1], NIGHT + timedelta(minutes=2))
    for t in (first, second):
        assert t["route"]["mode"] == "conflict" and not t["route"]["cues"].get("conflict")
        assert t["route"]["cues"]["backing"] and t["route"]["mood_cued"] and t["route"]["backed"]
        assert t["strategy"]["name"] in ("repair", "conflict_cold")
    assert first["mood"]["after"]["label"] == "upset"
    assert second["mood"]["after"]["label"] == "upset"
    assert second["mood"]["after"]["cause_turn_ids"][-1] == second["turn_ids"][0]

    trace = chat(server, "sam", "morning", morning, (NIGHT + timedelta(days=1)).replace(hour=8, minute=0))
    assert trace["route"]["mode"] == "conflict"
    assert trace["strategy"]["name"] == "conflict_cold"
    system = system_of(fake)
    assert "Conversation strategy: conflict_cold" in system
    assert "current mood" in system and fight[1] in system


@pytest.mark.parametrize(
    "text",
    [
        "我快撑不住了",
        "I'm struggling with everything at work lately",
        "I feel really down today",
        "最近我好低落",
    ],
)
def test_a_hard_time_in_the_first_person_gets_comfort_and_a_sad_mood(
    server: str, fake: FakeOpenAI, text: str
) -> None:
    """No comfort cue word: the learned parts read comfort, and a first-person phrase backs it."""
    trace = chat(server, "ada", "s", text, NIGHT.replace(hour=18))
    route = trace["route"]
    assert route["mode"] == "comfort" and not route["cues"].get("comfort") and route["cues"]["backing"]
    assert route["backed"] and trace["strategy"]["name"] == "comfort"
    assert trace["mood"]["after"]["label"] == "sad"
    assert "The user is having a hard time" in system_of(fake)


# With neither a cue word nor a backing phrase, the learned parts' reading alone is only noted.
BARE = {
    "zh": (["你说的话我一句都不信了", "随你便吧，反正你也记不住"], "早"),
    "en": (["Sure, go ahead, forget everything I say.", "No. Not now. Not after that."], "morning"),
}


@pytest.mark.xfail(
    strict=True,
    reason="open (issue 7): an argument in words that neither a cue word nor a backing phrase names "
    "sets no mood (the learned parts' reading alone is only noted; corroborating two such readings, "
    "ModeWeights.corroborate_margin, is off: BENCHMARKS.md 'Conversation mode', sessions 20-22)",
)
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_an_argument_in_bare_words_shapes_the_next_morning(server: str, fake: FakeOpenAI, lang: str) -> None:
    fight, morning = BARE[lang]
    for i, line in enumerate(fight):
        chat(server, "kim", "night", line, NIGHT + timedelta(minutes=2 * i))
    trace = chat(server, "kim", "morning", morning, (NIGHT + timedelta(days=1)).replace(hour=8, minute=0))
    assert trace["strategy"]["name"] == "conflict_cold"


def test_misread_lines_set_no_mood_and_reach_no_prompt(server: str, fake: FakeOpenAI) -> None:
    """Two neutral lines the learned parts read as conflict, one after the other: neither sets a mood,
    and the second does not corroborate the first (neither stands clear of casual)."""
    at = NIGHT.replace(hour=15)
    for i, text in enumerate(["What do you know about me?", "我现在住在成都"]):
        trace = chat(server, "ming", "s", text, at + timedelta(minutes=i))
        assert not trace["route"]["mood_corroborated"]
        assert trace["mood"]["after"]["label"] == "neutral"
        assert "current mood" not in system_of(fake)
    later = chat(server, "ming", "s", "晚饭吃什么好？", at + timedelta(minutes=5))
    assert later["strategy"]["name"] == "casual"
    assert "current mood" not in system_of(fake)
    assert mood(server, "ming", at + timedelta(minutes=6))["label"] == "neutral"


@pytest.mark.parametrize(
    ("feeling", "then"),
    [
        ("布恩迪亚家族的孤独好像是遗传的", "红烧肉放冰糖还是白糖比较好？"),
        ("my sister is so sad lately", "What should I cook tonight?"),
    ],
)
def test_someone_elses_feeling_is_not_the_users_mood(
    server: str, fake: FakeOpenAI, feeling: str, then: str
) -> None:
    at = NIGHT.replace(hour=15)
    said = chat(server, "yan", "s", feeling, at)
    assert said["route"]["cues"].get("comfort")  # the word is still there ...
    assert not said["route"]["mood_cued"]  # ... but it names someone else's feeling
    assert said["mood"]["after"]["label"] == "neutral"
    later = chat(server, "yan", "s", then, at + timedelta(minutes=2))
    assert later["route"]["mode"] == "casual" and later["strategy"]["name"] == "casual"
    assert "current mood" not in system_of(fake)
    # The same word said of oneself is still the user's.
    own = chat(server, "yan2", "s", "I'm so sad lately" if feeling.isascii() else "我最近好孤独", at)
    assert own["route"]["mood_cued"] and own["mood"]["after"]["label"] == "sad"


# Warm lines the shipped model reads as a feeling with no cue word (tests/data/mode_warm.txt, the
# probe of session 21): they must not get a voice that assumes the feeling (an `attentive_*` one).
WARM = {
    "zh": [
        "你记性真好，我上个月随口说的事你都记得",
        "你说得有道理，换个角度看确实不一样",
        "谢谢你的耐心，我问了这么多遍",
    ],
    "en": [
        "You've got a great memory, you remember something I said in passing last month",
        "Thanks for being patient, I've asked so many times",
        "Thanks so much, you saved me loads of time",
    ],
}
ANGRY = {"zh": "你根本不在乎我！我真的很生气", "en": "I'm so angry at you, you never listen to me!"}


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_warm_line_read_as_a_feeling_gets_a_voice_that_does_not_assume_it(
    server: str, fake: FakeOpenAI, lang: str
) -> None:
    at = NIGHT.replace(hour=15)
    misread = []
    for i, text in enumerate(WARM[lang]):
        trace = chat(server, "wen", "s", text, at + timedelta(minutes=i))
        route, strategy = trace["route"], trace["strategy"]
        if route["mode"] != "casual":
            misread.append(text)
            # (a line that names the past, "你都记得", is answered from memory: the recall strategy)
            expected = "recall" if route["signals"]["recall"] else f"attentive_{route['mode']}"
            assert not route["backed"] and strategy["name"] == expected, (text, route["mode_reason"])
        assert strategy["name"] not in ("repair", "comfort", "intimacy"), text
        system = system_of(fake)
        assert "There is tension in the conversation" not in system
        assert "The user is having a hard time" not in system
        assert "The user is being affectionate" not in system
    assert misread, "the shipped model reads all of these as casual now: pick lines it misreads"
    # A cue word backs the reading: the strong voice applies.
    trace = chat(server, "wen", "s", ANGRY[lang], at + timedelta(minutes=10))
    assert trace["route"]["mode"] == "conflict" and trace["route"]["backed"]
    assert trace["strategy"]["name"] in ("repair", "conflict_cold")
    assert "There is tension in the conversation" in system_of(fake) or "still upset" in system_of(fake)


@pytest.mark.parametrize("text", ["You always know how to make me laugh", "你总是这么懂我"])
def test_praise_that_opens_with_you_always_leaves_no_cold_morning(
    server: str, fake: FakeOpenAI, text: str
) -> None:
    """ "you always" / 你总是 were conflict cue words whatever followed: praise got the cold voice at night
    and an upset mood that made the next morning cold too. Now they count only in a clause that does
    not praise; the learned parts may still lean to conflict, which gets the hedged voice and no mood."""
    trace = chat(server, "mia", "night", text, NIGHT)
    route = trace["route"]
    assert not route["cues"].get("conflict") and not route["mood_cued"], route["mode_reason"]
    assert trace["strategy"]["name"] not in ("repair", "conflict_cold")
    assert trace["mood"]["after"]["label"] != "upset"
    assert "Conversation strategy: conflict_cold" not in system_of(fake)
    morning = chat(server, "mia", "morning", "早", (NIGHT + timedelta(days=1)).replace(hour=8, minute=0))
    assert morning["strategy"]["name"] != "conflict_cold"
    assert mood(server, "mia", (NIGHT + timedelta(days=1)).replace(hour=8))["label"] != "upset"
