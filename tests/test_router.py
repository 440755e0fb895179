"""The cognitive router: modes and signals from cue data, local time and topic similarity."""

from __future__ import annotations

import os
from datetime import UTC, datetime

import numpy as np
import pytest

from memsched.router import DEFAULT_CUES, MODES, Router, topic_similarity


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    for key in list(os.environ):
        if key.startswith("MEMSCHED_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("MEMSCHED_HOME", str(tmp_path))


@pytest.mark.parametrize(
    ("message", "mode"),
    [
        ("早安", "casual"),
        ("what's for dinner?", "casual"),
        ("我还在生气，你根本不在乎我", "conflict"),
        ("I'm so mad at you, you never listen", "conflict"),
        ("下班了，累死我了，今天被骂了好难过", "comfort"),
        ("I had a bad day and I feel lonely", "comfort"),
        ("亲爱的，我好想你", "intimacy"),
        ("I miss you, darling", "intimacy"),
    ],
)
def test_modes_from_cues(message: str, mode: str) -> None:
    assert Router().route(message).mode == mode


def test_latin_cues_match_whole_words_only() -> None:
    # "sad" must not fire inside "Sadie", nor "hug" inside "huge".
    route = Router().route("Sadie bought a huge cake")
    assert route.mode == "casual"


def test_recall_signal() -> None:
    assert Router().route("还记得我们第一次约会的餐厅吗？").signals["recall"]
    assert Router().route("Do you remember what I told you last time?").signals["recall"]
    assert not Router().route("今天天气不错").signals["recall"]


def test_late_night_uses_the_users_timezone() -> None:
    now = datetime(2024, 10, 15, 17, 30, tzinfo=UTC)  # 01:30 in Shanghai
    router = Router()
    shanghai = router.route("还不想睡", now=now, timezone="Asia/Shanghai")
    assert shanghai.signals["late_night"]
    assert shanghai.local_time is not None and shanghai.local_time.startswith("2024-10-16T01:30")
    assert not router.route("还不想睡", now=now, timezone="UTC").signals["late_night"]
    bad = router.route("hi", now=now, timezone="Mars/Olympus")
    assert not bad.signals["late_night"]
    assert bad.notes and "unknown timezone" in bad.notes[0]


def test_topic_shift_cue_needs_a_segment_to_leave() -> None:
    router = Router()
    assert router.route("换个话题，今晚吃什么", segment_turns=3).signals["topic_shift"]
    assert router.route("by the way, I got a new job", segment_turns=3).signals["topic_shift"]
    assert not router.route("换个话题，今晚吃什么", segment_turns=1).signals["topic_shift"]
    assert not router.route("我们继续聊三体吧", segment_turns=3).signals["topic_shift"]


def test_topic_shift_from_similarity() -> None:
    router = Router()
    low = router.route(
        "I want to make tomato egg stir fry tonight", similarity=0.01, embedder="minilm", segment_turns=3
    )
    assert low.signals["topic_shift"] and low.topic_threshold == pytest.approx(0.12)
    high = router.route(
        "Why didn't the Trisolarans attack Earth directly", similarity=0.4, embedder="minilm", segment_turns=3
    )
    assert not high.signals["topic_shift"]
    # A message with almost no content says nothing about the topic, however low the similarity.
    assert not router.route("haha ok", similarity=-0.2, embedder="minilm", segment_turns=3).signals[
        "topic_shift"
    ]


def test_cues_are_data() -> None:
    cues = {"modes": {**DEFAULT_CUES["modes"], "conflict": ["哼"]}, "signals": {"recall": ["pizza"]}}
    route = Router(cues).route("哼，pizza")
    assert route.mode == "conflict"
    assert route.signals["recall"]
    assert route.cues["recall"] == ["pizza"]


def test_topic_similarity() -> None:
    a = np.array([1.0, 0.0], dtype=np.float32)
    b = np.array([0.0, 1.0], dtype=np.float32)
    assert topic_similarity(a, [a, a]) == pytest.approx(1.0)
    assert topic_similarity(a, [b]) == pytest.approx(0.0)
    assert topic_similarity(a, []) is None


def test_route_as_dict_is_json_ready() -> None:
    import json

    route = Router().route("别叫我小王了", now=datetime(2024, 1, 1, tzinfo=UTC), command=True)
    data = json.loads(json.dumps(route.as_dict()))
    assert data["signals"]["command"] is True
    assert set(data["signals"]) == {"recall", "topic_shift", "late_night", "command", "overflow"}


def test_the_labelled_set_is_bilingual_balanced_and_apart_from_the_prototypes() -> None:
    import tomllib
    from importlib import resources
    from pathlib import Path

    lines = [
        line.split("|", 2)
        for line in (Path(__file__).parent / "data" / "mode_labelled.txt").read_text("utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert len(lines) >= 300
    assert {(m, lang) for m, lang, _ in lines} == {(m, lang) for m in MODES for lang in ("zh", "en")}
    assert sum(text.endswith("#hard") for _, _, text in lines) >= 20
    protos = tomllib.loads(
        resources.files("memsched").joinpath("data/mode_prototypes.toml").read_text("utf-8")
    )
    shipped = {t for texts in protos.values() for t in texts}
    assert not shipped & {text.removesuffix(" #hard") for _, _, text in lines}


def test_prototypes_and_carried_mood_move_the_mode() -> None:
    from memsched.embed.hashing import HashEmbedder
    from memsched.router import Carried, Prototypes

    class Words(HashEmbedder):  # a stand-in embedder name the router does use prototypes with
        pass

    emb = Words()
    router = Router(prototypes=Prototypes({"comfort": ["被老板骂了好难受"], "casual": ["今天吃了面条"]}))
    vec = emb.embed(["被老板骂了"])[0]
    route = router.route("被老板骂了", vectors={"w": vec}, embedders={"w": emb})
    assert route.evidence["prototypes"]["comfort"] > route.evidence["prototypes"].get("casual", 0.0)
    # "早安" carries no cue; an upset mood carried from last night makes it conflict.
    assert Router().route("早安").mode == "casual"
    upset = Router().route("早安", carried=Carried("upset", 0.5))
    assert upset.mode == "conflict" and "carried" in upset.mode_reason
