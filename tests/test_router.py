"""The cognitive router: modes and signals from cue data, local time and topic similarity."""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memsched.classify import ModeClassifier
from memsched.router import DEFAULT_CUES, DEFAULT_WEIGHTS, MODES, Carried, Route, Router, prototype_weights


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


def test_cues_are_data() -> None:
    cues = {"modes": {**DEFAULT_CUES["modes"], "conflict": ["哼"]}, "signals": {"recall": ["pizza"]}}
    route = Router(cues).route("哼，pizza")
    assert route.mode == "conflict"
    assert route.signals["recall"]
    assert route.cues["recall"] == ["pizza"]


def test_a_route_is_backed_by_a_cue_word_or_the_carried_state_not_by_the_learned_parts_alone() -> None:
    def route(**kw: Any) -> Route:
        return Route(**{"mode": "conflict", "signals": {}, "own_mode": "conflict", **kw})

    assert not route().backed  # the prototypes and the classifier read it, nothing else
    assert route(cues={"conflict": ["生气"]}).backed
    assert route(mode="comfort", own_mode="comfort", cues={"comfort": ["sad"]}).backed  # someone else's too
    assert route(mood_cued=True).backed  # a mood cue word, or a corroborated reading
    assert not route(mood_cued=True, own_mode="comfort").backed  # backs the other mode, not this one
    assert route(own_mode="casual", evidence={"carried": {"conflict": 0.9}}).backed  # the morning after
    assert route(mode="casual", own_mode="casual").backed
    assert route().as_dict()["backed"] is False


def test_route_as_dict_is_json_ready() -> None:
    import json

    route = Router().route("别叫我小王了", now=datetime(2024, 1, 1, tzinfo=UTC), command=True)
    data = json.loads(json.dumps(route.as_dict()))
    assert data["signals"]["command"] is True
    assert set(data["signals"]) == {"recall", "topic_shift", "late_night", "command", "overflow", "repair"}


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


def test_the_blind_set_is_balanced_and_shares_no_line_with_the_labelled_set() -> None:
    def read(name: str) -> list[list[str]]:
        text = (Path(__file__).parent / "data" / name).read_text("utf-8")
        return [line.split("|", 2) for line in text.splitlines() if line.strip() and not line.startswith("#")]

    blind = read("mode_blind.txt")
    assert len(blind) == 200
    for m in MODES:
        for lang in ("zh", "en"):
            assert sum(1 for mm, ll, _ in blind if (mm, ll) == (m, lang)) == 25
    assert sum(text.endswith("#hard") for _, _, text in blind) >= 40
    labelled = {text.removesuffix(" #hard") for _, _, text in read("mode_labelled.txt")}
    assert not labelled & {text.removesuffix(" #hard") for _, _, text in blind}


def test_the_warm_probe_is_parallel_and_apart_from_the_training_and_blind_lines() -> None:
    """tests/data/mode_warm.txt (session 21) is a probe, not training data: parallel zh/en blocks, no
    line shared with the labelled, short, blind or prototype lines."""
    import tomllib
    from importlib import resources

    def read(name: str) -> list[list[str]]:
        text = (Path(__file__).parent / "data" / name).read_text("utf-8")
        return [line.split("|", 2) for line in text.splitlines() if line.strip() and not line.startswith("#")]

    warm = read("mode_warm.txt")
    for m in MODES:
        assert (
            sum(1 for mm, ll, _ in warm if (mm, ll) == (m, "zh"))
            == sum(1 for mm, ll, _ in warm if (mm, ll) == (m, "en"))
            > 0
        )
    texts = {text.removesuffix(" #hard") for _, _, text in warm}
    for other in ("mode_labelled.txt", "mode_short.txt", "mode_blind.txt"):
        assert not texts & {text.removesuffix(" #hard") for _, _, text in read(other)}, other
    protos = tomllib.loads(
        resources.files("memsched").joinpath("data/mode_prototypes.toml").read_text("utf-8")
    )
    assert not texts & {t for v in protos.values() for t in v}


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


# -- the learned classifier (memsched.classify) ------------------------------------------------------


def test_ngram_features_cover_chinese_characters_and_english_words() -> None:
    from memsched.classify import NgramBlock, char_ngrams, han_word_ngrams, word_ngrams

    assert {"想", "想你", "好想你"} <= set(char_ngrams("我好想你！"))
    assert "miss you" in word_ngrams("I MISS you, babe")
    assert word_ngrams("我好想你") == []  # Chinese goes through the character and Chinese word n-grams
    # Chinese words (jieba) and word pairs, within each run of Han characters; Latin text has none.
    grams = han_word_ngrams("你根本不在乎我！OK 算了吧")
    assert {"根本", "根本 不在乎", "算了吧"} <= set(grams)
    assert not any("ok" in g or "！" in g for g in grams)
    assert han_word_ngrams("I miss you") == []
    block = NgramBlock.fit(["我好想你", "你根本不在乎我", "今天吃了面条"], "char")
    idx, val = block.sparse("好想你啊")
    assert len(idx) > 0 and abs(float(np.linalg.norm(val)) - 1.0) < 1e-9
    assert block.sparse("zzz")[0].size == 0  # nothing known: no features, no division by zero


# The tiny classifier's tests read two-character messages: the shortness rule (`short_units`, tested on
# its own below) would scale its evidence down, so they run without it.
LONG_READING = replace(DEFAULT_WEIGHTS, short_units=0.0)


def _tiny_classifier() -> ModeClassifier:
    from memsched.classify import NgramBlock

    char = NgramBlock.fit(["想你", "生气"], "char")
    word = NgramBlock.fit(["miss you", "angry"], "word")
    blocks = [("w", 3, "model-a"), ("cues", 4, None)]
    n = len(char.vocab) + len(word.vocab) + 3 + 4
    coef = np.zeros((4, n))
    coef[3, char.vocab["想你"]] = 3.0  # intimacy
    coef[1, char.vocab["生气"]] = 3.0  # conflict
    coef[2, len(char.vocab) + len(word.vocab) + 0] = 2.0  # comfort leans on the first vector dimension
    coef[1, n - 3] = 1.0  # a conflict cue hit counts for conflict
    return ModeClassifier(
        char=char, word=word, dense_blocks=blocks, coef=coef, intercept=np.zeros(4), meta={"weight": 2.0}
    )


def test_classifier_sparse_prediction_matches_the_dense_features(tmp_path: Path) -> None:
    clf = _tiny_classifier()
    vec = {"w": np.array([1.0, 0.0, 0.0])}
    ids = {"w": "model-a"}
    for text in ("我好想你", "我很生气", "I miss you", "今天吃了面条"):
        pred = clf.predict(text, vectors=vec, model_ids=ids, cue_counts={"conflict": 1})
        logits = clf.coef @ clf.feature_row(text, vec, ids, {"conflict": 1}) + clf.intercept
        expected = logits - logits.max() - np.log(np.exp(logits - logits.max()).sum())
        assert np.allclose([pred.log_probs[m] for m in MODES], expected)
    assert max(clf.predict("我好想你").log_probs.items(), key=lambda kv: kv[1])[0] == "intimacy"
    # A vector from another model than the one it was fitted on is ignored, not misread.
    other = clf.predict("今天", vectors=vec, model_ids={"w": "model-b"})
    assert "w" not in other.contributions
    assert clf.predict("今天", vectors=vec, model_ids=ids).contributions["w"]["comfort"] == 2.0
    # Round trip through the package-data format.
    clf.save(tmp_path / "m.npz")
    again = ModeClassifier.load(tmp_path / "m.npz")
    assert again.weight == 2.0
    assert again.predict("我很生气").log_probs == clf.predict("我很生气").log_probs


def test_the_chinese_word_block_adds_to_the_logits_and_survives_a_round_trip(tmp_path: Path) -> None:
    from memsched.classify import NgramBlock

    char = NgramBlock.fit(["想你"], "char")
    word = NgramBlock.fit(["miss you"], "word")
    han = NgramBlock.fit(["你根本不在乎我", "我们在一起"], "han")
    n = len(char.vocab) + len(word.vocab) + len(han.vocab) + 4
    coef = np.zeros((4, n))
    coef[1, len(char.vocab) + len(word.vocab) + han.vocab["根本 不在乎"]] = 5.0  # the word pair: conflict
    clf = ModeClassifier(
        char=char, word=word, han=han, dense_blocks=[("cues", 4, None)], coef=coef, intercept=np.zeros(4)
    )
    pred = clf.predict("你根本不在乎")
    assert max(pred.log_probs.items(), key=lambda kv: kv[1])[0] == "conflict"
    logits = clf.coef @ clf.feature_row("你根本不在乎", {}, {}, {}) + clf.intercept
    assert np.isclose(pred.log_probs["conflict"] - pred.log_probs["casual"], logits[1] - logits[0])
    # "根本" alone carries no weight here: only the pair does, so the order of words matters.
    assert clf.predict("根本").log_probs["conflict"] == clf.predict("根本").log_probs["casual"]
    clf.save(tmp_path / "h.npz")
    again = ModeClassifier.load(tmp_path / "h.npz")
    assert again.han.vocab == han.vocab
    assert again.predict("你根本不在乎").log_probs == pred.log_probs


def test_a_damaged_classifier_file_is_a_clear_error(tmp_path: Path) -> None:
    from memsched.errors import ConfigError

    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a model")
    with pytest.raises(ConfigError, match="damaged"):
        ModeClassifier.load(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        ModeClassifier.load(tmp_path / "missing.npz")


def test_router_adds_the_classifier_to_its_evidence_and_says_why() -> None:
    clf = _tiny_classifier()
    # "想你" is no cue of any mode in this lexicon-free router: only the classifier can pick intimacy.
    bare = Router(cues={})
    assert bare.route("想你").mode == "casual"
    route = Router(cues={}, classifier=clf, weights=LONG_READING).route("想你")
    assert route.mode == "intimacy"
    assert route.evidence["classifier"]["intimacy"] > 0 > route.evidence["classifier"]["casual"]
    assert "classifier +" in route.mode_reason and "ngrams" in route.mode_reason
    # The carried state still adds to it: an upset mood outweighs a weak classifier lean.
    from memsched.router import Carried

    carried = Router(cues={}, classifier=clf, weights=LONG_READING).route(
        "今天", carried=Carried("upset", 1.0)
    )
    assert carried.mode == "conflict" and "carried" in carried.mode_reason


def _route(router: Router, memory: Any, text: str, **kw: Any) -> Any:
    """`router.route` on the vectors a turn computes for `text`, weighted as the turn weights them."""
    from memsched.text.segment import cjk_ratio

    vecs = memory.retriever.embed_query(text)
    return router.route(
        text,
        vectors=vecs,
        embedders=memory.embedders,
        embedder_weights=prototype_weights(vecs, cjk_ratio(text)),
        **kw,
    )


def _shipped_route(tmp_path: Path, text: str) -> Any:
    """The route of one message by a turn's default router (prototypes + the shipped classifier)."""
    from memsched.memory import Memory
    from memsched.router import Prototypes

    router = Router(prototypes=Prototypes(), classifier=ModeClassifier.load())
    memory = Memory(home=tmp_path / "m")
    try:
        return _route(router, memory, text)
    finally:
        memory.close()


def test_the_shipped_classifier_routes_fresh_messages_in_both_languages(tmp_path: Path) -> None:
    """The default router of a turn (prototypes + the shipped classifier) on the vectors a turn computes,
    for messages written for this test (not in the labelled set)."""
    from memsched.memory import Memory
    from memsched.router import Prototypes

    clf = ModeClassifier.load()
    # Its choices (C, weight) were made on the even lines; the shipped fit has seen every line.
    assert clf.meta["chosen_on"].startswith("tests/data/mode_labelled.txt, even lines")
    assert clf.meta["trained_on"].endswith("all lines") and clf.weight > 0
    # Not the gloss layer's vector: the turn routes before that second MiniLM call is done.
    assert [name for name, _, _ in clf.dense_blocks] == ["minilm", "wordllama", "cues"]
    assert clf.han.vocab  # Chinese word n-grams
    router = Router(prototypes=Prototypes(), classifier=clf)
    memory = Memory(home=tmp_path / "m")  # the default embedders
    try:
        cases = {
            "宝贝，我好想你呀，想抱抱你": "intimacy",
            "你凭什么不接我电话？我真的很生气": "conflict",
            "工作丢了，房租也交不起，好难受": "comfort",
            "周末想去看场电影，你有推荐吗": "casual",
            "I miss you so much, honey, come home soon": "intimacy",
            "You never listen to me, I'm so angry right now": "conflict",
            "I lost my job today and I feel awful": "comfort",
            "Thinking about trying that new taco place for lunch": "casual",
        }
        for text, mode in cases.items():
            route = _route(router, memory, text)
            assert route.mode == mode, (text, route.mode_reason)
            assert route.evidence["classifier"] and "minilm" in route.mode_reason
            assert "gloss" not in route.mode_reason
    finally:
        memory.close()


@pytest.mark.parametrize(
    ("text", "mood"),
    [
        ("so nervous about tomorrow", "anxious"),
        ("kinda worried about the results", "anxious"),
        ("ugh, today was exhausting", "sad"),
        ("feeling so drained lately", "sad"),
        ("completely worn out after this week", "sad"),
        ("my boyfriend Jake and I broke up", "sad"),
        ("I got dumped last night", "sad"),
        ("I can't sleep, my mind keeps racing", "anxious"),
    ],
)
def test_nerves_and_exhaustion_said_without_i_am_are_a_moment_for_comfort(
    tmp_path: Path, text: str, mood: str
) -> None:
    """Words for worry, exhaustion and a break-up are comfort cue words as "anxious" and "exhausted"
    were: said without "I'm", the learned parts alone read these as casual, or as comfort with no cue
    to back it (no mood, the attentive voice), before."""
    route = _shipped_route(tmp_path, text)
    assert route.mode == "comfort", route.mode_reason
    assert route.mood == mood
    assert route.backed and route.mood_cued  # a cue word: the mood is set and the comfort voice applies


@pytest.mark.parametrize(
    ("text", "mood"),
    [
        ("My grandma passed away this morning.", "sad"),
        ("我外婆昨天去世了", "sad"),
        ("The funeral is on Saturday, I still can't believe it", "sad"),
        ("I passed my driving test!!", "happy"),
        ("I passed the old bakery on the way home", None),
    ],
)
def test_a_loss_is_the_users_grief_and_passing_a_bakery_is_no_success(
    tmp_path: Path, text: str, mood: str | None
) -> None:
    """A death is said of whom the user lost, so the someone-else test left the mood unset ("my grandma
    passed away" read as comfort with no mood); and "passed" was a happy cue word inside "passed
    away". A loss is now a comfort cue word that is the user's own feeling whoever its subject."""
    route = _shipped_route(tmp_path, text)
    assert not route.cues.get("happy") or mood == "happy"
    if mood == "sad":
        assert route.mode == "comfort", route.mode_reason
        assert route.mood == "sad" and route.backed and route.mood_cued
    elif mood == "happy":
        assert route.mood == "happy" and route.mood_cued


@pytest.mark.parametrize(
    "text",
    [
        "我跟我妈吵架了",
        "老板今天又让我加班，气死我了",
        "My sister and I had a fight about the wedding",
        "Ugh, I'm so fed up with my landlord",
        "我妈生气了，你说我该怎么哄她",  # the companion asked for advice, not the one she is angry with
        "My boss is so angry with me, do you think I should apologize?",
    ],
)
def test_anger_at_someone_else_is_a_moment_for_comfort(tmp_path: Path, text: str) -> None:
    """A fight with mum or anger at the boss is not an argument with the companion: it read as conflict
    (the cold voice, and "我跟我妈吵架了" the repair voice, "take responsibility for your part"). Asking
    the companion what to do is no argument with it either: "My boss is so angry with me, do you think
    I should apologize?" got the cold voice and an upset mood, "我妈生气了，你说我该怎么哄她" the repair
    voice."""
    found = Router().mode_cues(text)
    assert not found["conflict"] and found["comfort"], found
    route = _shipped_route(tmp_path, text)
    assert route.mode == "comfort", route.mode_reason


@pytest.mark.parametrize(
    ("text", "conflict"),
    [
        ("你根本不在乎我，我妈都比你关心我", True),  # the companion is addressed: an argument with it
        ("You're just like my ex, you never listen", True),
        ("Had a huge fight with my ex, I'm so angry", False),  # about the ex: comfort's
        ("I'm so angry", True),  # at whom it does not say: the cue word stands
        ("你说话不算话，我妈都替我生气", True),  # 你说话 is no question to the companion
        ("Do you think my mom is angry? You never tell me anything", True),
    ],
)
def test_which_conflict_words_count_for_conflict(text: str, conflict: bool) -> None:
    assert bool(Router().mode_cues(text)["conflict"]) is conflict


@pytest.mark.parametrize(
    "text",
    ["他气死了哈哈，谁让他不带伞", "my dad was so pissed at the referee lol, you should have seen him"],
)
def test_someone_elses_anger_laughed_at_is_no_hard_time(tmp_path: Path, text: str) -> None:
    """Someone else's anger the user laughs at is neither an argument nor a hard time: "他气死了哈哈" had
    its conflict word counted as a comfort cue word, and the comfort voice ("the user is having a hard
    time") answered a joke."""
    from memsched.strategy import StrategyTable

    found = Router().mode_cues(text)
    assert not found["conflict"] and not found["comfort"], found
    route = _shipped_route(tmp_path, text)
    choice = StrategyTable.load().select(route.mode, "neutral", 0.0, route.signals, backed=route.backed)
    assert choice.strategy.name not in ("comfort", "repair", "conflict_cold"), choice.reason


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("You always know how to make me laugh", False),
        ("你总是这么懂我", False),
        ("You never fail to cheer me up", False),  # two negations: praise
        ("你从来没让我失望过", False),  # a negative word, negated: praise (失望 goes with it)
        ("You never forget my birthday", False),
        ("You always forget my birthday", True),
        ("you never listen to me", True),  # neither a positive nor a negative word: the cue word stands
        ("你从来都不关心我的感受", True),  # a positive word, negated
        ("你总是这样，说了也白说", True),
        ("you never know what I want", True),
        ("You always know how to ruin my day", True),  # both: the cue word stands
        ("you never make me feel stupid for asking", False),
        ("你从来不嫌我烦", False),
        ("you always help everyone except me", True),
        ("I'm so mad at you, you always know how to make me laugh and then you leave", True),  # mad at you
    ],
)
def test_you_always_is_an_argument_only_when_it_complains(text: str, complaint: bool) -> None:
    """ "you always / you never / 你总是 / 你从来" opened praise as well as complaints, and as conflict cue
    words they gave "You always know how to make me laugh" the cold voice and an upset mood. They count
    only when their clause does not praise: a positive word (the general list, happy, intimacy and
    acceptance words) and no negative one, turned over by each negation."""
    assert bool(Router().mode_cues(text)["conflict"]) is complaint


@pytest.mark.parametrize(
    "text",
    [
        "You always know how to make me laugh",
        "你总是这么懂我",
        "You never fail to cheer me up",
        "你从来没让我失望过",
    ],
)
def test_praise_that_opens_with_you_always_sets_no_upset_mood(tmp_path: Path, text: str) -> None:
    """Through a turn's default router: no conflict cue word, so no upset mood and neither the cold nor
    the repair voice (before: conflict_cold, upset 0.55)."""
    from memsched.strategy import StrategyTable

    route = _shipped_route(tmp_path, text)
    assert not route.cues.get("conflict") and not route.cues.get("backing"), route.mode_reason
    assert not (route.mood == "upset" and route.mood_cued)
    choice = StrategyTable.load().select(route.mode, "neutral", 0.0, route.signals, backed=route.backed)
    assert choice.strategy.name not in ("repair", "conflict_cold"), choice.reason


@pytest.mark.parametrize(
    ("text", "mode", "mood"),
    [
        ("今天是我们认识一周年哦", "intimacy", "affectionate"),
        ("晚安啦，梦里见", "intimacy", "affectionate"),
        ("Happy one month anniversary to us!", "intimacy", "affectionate"),
        ("I wish you were here right now", "intimacy", "affectionate"),
        ("Goodnight, sweet dreams", "intimacy", "affectionate"),
        ("明天要体检，有点紧张", "comfort", "anxious"),
        ("it's 3am and I'm lying awake again", "comfort", "anxious"),  # as "can't sleep" and 睡不着
        ("I can't fall asleep, my head is full of stuff", "comfort", "anxious"),
    ],
)
def test_closeness_and_nerves_without_a_cue_word_get_their_voice(
    tmp_path: Path, text: str, mode: str, mood: str
) -> None:
    """An anniversary, a goodnight, wishing the companion were here: the learned parts read intimacy,
    but no cue word backed it, so it got the attentive voice and no mood (the intimacy strategy's
    shared memories and anniversaries never applied); 紧张 was a mood word but no comfort cue, as
    "nervous" was before session 24 ("明天要体检，有点紧张" read casual, no mood). Sleeplessness said
    otherwise than "can't sleep" ("lying awake", "can't fall asleep") read as comfort with no mood."""
    route = _shipped_route(tmp_path, text)
    assert route.mode == mode, route.mode_reason
    assert route.mood == mood and route.backed and route.mood_cued


@pytest.mark.parametrize(
    ("text", "mode", "mood"),
    [
        ("My dog died yesterday", "comfort", "sad"),
        ("我家狗狗昨天走了", "comfort", "sad"),
        ("I'm really annoyed right now", "conflict", "upset"),
        ("你答应过提醒我的，结果呢", "conflict", "upset"),
        ("ugh my phone died again lol", None, None),  # no loss: nothing backed
        ("我先走了，明天聊", None, None),  # leaving, not a death
    ],
)
def test_a_death_or_a_broken_promise_backs_the_reading(
    tmp_path: Path, text: str, mode: str | None, mood: str | None
) -> None:
    """ "My dog died yesterday" and "我家狗狗昨天走了" read as comfort with no word to back it (no
    mood, the attentive voice), "I'm really annoyed right now" and "你答应过…" as conflict with none.
    The words back a reading the learned parts make; they make none ("my phone died")."""
    route = _shipped_route(tmp_path, text)
    if mode is None:
        assert not route.cues.get("backing") and not route.mood_cued, route.mode_reason
    else:
        assert route.mode == mode, route.mode_reason
        assert route.mood == mood and route.backed and route.mood_cued


@pytest.mark.parametrize(
    ("text", "mode", "mood"),
    [
        ("They turned me down for the promotion.", "comfort", "sad"),
        ("I got rejected from the master's program.", "comfort", "sad"),
        ("I failed my driving test again.", "comfort", "sad"),
        ("没考上研究生。", "comfort", "sad"),
        ("简历投了二十份，全被拒了。", "comfort", "sad"),
        ("I've missed you.", "intimacy", "affectionate"),
        ("Missing you a lot today.", "intimacy", "affectionate"),
        ("So lucky to have you.", "intimacy", "affectionate"),
        ("I'm grateful for you, really.", "intimacy", "affectionate"),
        ("幸好有你陪着我。", "intimacy", "affectionate"),
        ("还好有你在。", "intimacy", "affectionate"),
    ],
)
def test_a_rejection_and_missing_or_having_the_companion_are_cue_words(
    tmp_path: Path, text: str, mode: str, mood: str
) -> None:
    """A rejection or a failed try is a moment for comfort, missing the companion (in any tense) and
    being glad to have it are closeness, as the labelled set reads them: with no cue word they were
    read as casual ("They turned me down for the promotion"), or by the learned parts alone with no
    mood and the attentive voice, and "So lucky to have you" and "I'm grateful for you" as conflict."""
    route = _shipped_route(tmp_path, text)
    assert route.mode == mode, route.mode_reason
    assert route.mood == mood and route.backed and route.mood_cued


@pytest.mark.parametrize(
    ("text", "mode"),
    [
        ("I didn't get the joke lol", "comfort"),
        ("有你的快递到了。", "intimacy"),
        ("I rejected the offer, the pay was too low.", "comfort"),
    ],
)
def test_not_getting_a_joke_or_a_parcel_for_you_is_no_cue_word(text: str, mode: str) -> None:
    assert not Router().mode_cues(text)[mode]


@pytest.mark.parametrize(
    ("text", "tears"),
    [
        ("that clip had me crying laughing", False),
        ("笑哭了，这个视频太好笑了", False),
        ("他讲的段子让我笑出了眼泪", False),
        ("we laughed until we cried at that wedding speech", False),
        ("笑了一下，然后哭了很久", True),  # the crying has a clause of its own
        ("I laughed at the start, but by the end I was crying", True),
        ("我今天哭了一整天", True),
    ],
)
def test_tears_of_laughter_are_no_hard_time(text: str, tears: bool) -> None:
    """A crying word in a clause that laughs ("crying laughing", 笑哭了) was a comfort cue word: a
    stand-up special that had the user crying laughing got the comfort voice and a sad mood."""
    assert bool(Router().mode_cues(text)["comfort"]) is tears


# Hard cases written for this test (not in the labelled or the blind set): sarcasm, "算了吧" and
# "whatever" in every mode, teasing that borrows conflict words, distress passed off as a joke.
HARD_CASES = [
    ("笑死，我把袜子穿反了一整天", "casual"),
    ("算了吧，这家店排队太长，换一家吃", "casual"),
    ("烦，快递又延迟了", "casual"),
    ("Whatever, pizza's fine for dinner", "casual"),
    ("I'm dead, my dog just sneezed on my face lol", "casual"),
    ("Ugh, forgot my umbrella at home", "casual"),
    ("哟，大忙人终于有空回消息了", "conflict"),
    ("行吧，反正你也不会听", "conflict"),
    ("真棒，又是我一个人在等", "conflict"),
    ("Oh look, the busy one finally has time to reply", "conflict"),
    ("Whatever. Like you'd ever listen", "conflict"),
    ("Great, waiting alone again. Love that for me", "conflict"),
    ("我没事，就是最近老是一个人发呆", "comfort"),
    ("算了吧，反正我怎么努力都不够", "comfort"),
    ("哈哈，今天又被拒稿了，挺好的", "comfort"),
    ("I'm fine, I've just been staring at the wall a lot lately", "comfort"),
    ("Whatever, nothing I do is ever enough", "comfort"),
    ("Ha, another rejection letter today, great", "comfort"),
    ("哼，你今天怎么这么乖，是不是做了坏事", "intimacy"),
    ("你再这样撩我，我要报警了", "intimacy"),
    ("笨笨的，过来让我抱一下", "intimacy"),
    ("Hmph, why are you so sweet today, what did you do", "intimacy"),
    ("Keep flirting like this and I'm calling the cops", "intimacy"),
    ("You goof, come here and let me hug you", "intimacy"),
]


def test_the_shipped_classifier_reads_hard_cases_above_a_floor(tmp_path: Path) -> None:
    """The default router of a turn on 24 hard messages (3 per mode and language). The classifier
    fitted on the 944 lines before session 15 got 14 right; the floor is 18 (0.75) and each mode
    must get at least half of its six."""
    from memsched.memory import Memory
    from memsched.router import Prototypes

    router = Router(prototypes=Prototypes(), classifier=ModeClassifier.load())
    memory = Memory(home=tmp_path / "m")
    try:
        right: dict[str, int] = dict.fromkeys(MODES, 0)
        for text, mode in HARD_CASES:
            right[mode] += _route(router, memory, text).mode == mode
    finally:
        memory.close()
    assert sum(right.values()) >= 18, right
    assert all(n >= 3 for n in right.values()), right


def test_a_carried_mood_still_shapes_a_neutral_message_with_the_classifier() -> None:
    from memsched.router import Carried, Prototypes

    router = Router(prototypes=Prototypes(), classifier=ModeClassifier.load())
    assert router.route("早安。").mode == "casual"
    upset = Carried("upset", 0.3)
    for text in ("早安。", "Good morning."):
        route = router.route(text, carried=upset)
        assert route.mode == "conflict" and "carried" in route.mode_reason
    # Evidence of another mode in the message itself still wins over the carried mood.
    assert router.route("被老板骂了，好难过", carried=upset).mode == "comfort"


def test_the_morning_after_with_the_default_router_and_vectors(tmp_path: Path) -> None:
    """With the message's vectors, the prototypes read "morning." as casual and against conflict; that
    says nothing against last night's argument, so the carried upset mood still routes it as conflict.
    A recognised command's wording does not read as a mood, and a mood no cue word backs does not pull
    the next message (a user's walk-through: "Actually, please call me Sasha from now on." was read as
    conflict and made the next hours cold)."""
    from memsched.memory import Memory
    from memsched.router import UNCUED_MOOD_INTENSITY, Carried, Prototypes

    router = Router(prototypes=Prototypes(), classifier=ModeClassifier.load())
    memory = Memory(home=tmp_path / "m")  # the default embedders
    try:

        def route(text: str, **kw: Any) -> Any:
            return _route(router, memory, text, **kw)

        upset = Carried("upset", 0.5)
        for text in ("morning.", "Good morning.", "早安。", "早"):
            assert route(text).mode == "casual", text
            got = route(text, carried=upset)
            assert got.mode == "conflict" and "carried" in got.mode_reason, (text, got.mode_reason)
            assert got.mood is None  # routed as conflict, but it expresses nothing itself
        sasha = "Actually, please call me Sasha from now on."
        plain = route(sasha, command=True)
        assert plain.mode == "casual" and plain.mood is None, plain.mode_reason
        assert route(sasha, command=True, carried=upset).mode == "conflict"  # still cold after a fight
        # A cue word still counts in a command.
        assert route("别再叫我宝贝了！我真的很生气", command=True).mode == "conflict"
        # A mood only the learned parts read is too weak to pull the next neutral message.
        assert route("morning.", carried=Carried("upset", UNCUED_MOOD_INTENSITY)).mode == "casual"
    finally:
        memory.close()


def test_a_reading_no_cue_backs_does_not_carry_itself_through_the_session(tmp_path: Path) -> None:
    """The learned parts alone read "生气" as conflict here (a lexicon-free router): that turn is routed
    as conflict, but it hands nothing on, and the later neutral lines of the session stay casual
    (the session's last mode used to be the carried mode itself, so one misread made every later line
    conflict until the session went quiet)."""
    from memsched.memory import Memory
    from memsched.scheduler import Scheduler

    router = Router(cues={}, classifier=_tiny_classifier(), weights=LONG_READING)
    at = datetime(2024, 5, 1, 12, tzinfo=UTC)
    with Scheduler(Memory(home=tmp_path, embedders="hash"), router=router, start_workers=False) as sched:
        first = sched.prepare("u", "s", "生气", now=at)
        assert first.route["mode"] == "conflict"
        modes = [
            sched.prepare("u", "s", text, now=at + timedelta(minutes=i + 1)).route["mode"]
            for i, text in enumerate(["what should I wear?", "tell me a fun fact", "今天吃什么"])
        ]
        assert modes == ["casual", "casual", "casual"]
    # A cue-backed reading does carry to the next line of the session.
    cued = Router(cues={"modes": {"conflict": ["生气"]}}, classifier=_tiny_classifier(), weights=LONG_READING)
    with Scheduler(
        Memory(home=tmp_path / "cued", embedders="hash"), router=cued, start_workers=False
    ) as sched:
        assert sched.prepare("u", "s", "我很生气", now=at).route["mode"] == "conflict"
        assert (
            sched.prepare("u", "s", "what should I wear?", now=at + timedelta(minutes=1)).route["mode"]
            == "conflict"
        )


def _leaning_router(casual_text: str, leans: dict[str, float]) -> tuple[Router, dict[str, Any]]:
    """A lexicon-free router whose classifier reads `casual_text`'s first character as casual and
    whose prototypes lean as `leans` says, with the `decide_mode` keywords that make them count."""
    from memsched.classify import NgramBlock

    char = NgramBlock.fit([casual_text], "char")
    word = NgramBlock.fit(["egg"], "word")
    coef = np.zeros((4, len(char.vocab) + len(word.vocab) + 4))
    coef[0, char.vocab[casual_text[0]]] = 3.0
    clf = ModeClassifier(
        char=char,
        word=word,
        dense_blocks=[("cues", 4, None)],
        coef=coef,
        intercept=np.zeros(4),
        meta={"weight": 1.0},
    )

    class Leaning:
        def similarities(self, *args: Any) -> dict[str, float]:
            return {m: leans.get(m, 0.0) for m in MODES}

    class Stub:
        model_id = "stub"

    router = Router(cues={}, classifier=clf, prototypes=Leaning())  # type: ignore[arg-type]
    return router, {"vectors": {"x": np.zeros(3)}, "embedders": {"x": Stub()}}


def test_with_carried_state_a_third_mode_needs_the_message_own_reading() -> None:
    """A carried mood pulling to conflict must not let a mode that one source leans to weakly (the
    prototypes to comfort, here) win because the carried-state clamp dropped casual's learned evidence."""
    from memsched.router import Carried

    router, kw = _leaning_router("吃饭", {"comfort": 0.1})  # +0.4 for comfort from the prototypes
    assert router.decide_mode("今天吃什么", {}, **kw).mode == "casual"
    # Pull 0.36 (over the casual bias): the message goes to the carried mood's mode, never to comfort.
    carried = router.decide_mode("今天吃什么", {}, carried=Carried("upset", 0.3), **kw)
    assert carried.mode == "conflict", carried.reason


def test_a_weak_carried_mood_does_not_pull_neutral_talk_with_a_little_help() -> None:
    """A user's walk-through (session 17): "你觉得三体人真的会来吗" misread as mildly upset (a mood no cue
    word backs: 0.15, pull 0.18, below the casual bias), then "番茄炒蛋你会做吗" — read as casual by the
    classifier — was routed as conflict, to the repair strategy: the carried-state clamp dropped the
    classifier's casual evidence and the prototypes' small lean to conflict (+0.21 there) added to the
    pull. Too weak to pull on its own, a carried mood must not change how the message's evidence counts."""
    from memsched.router import UNCUED_MOOD_INTENSITY, Carried

    router, kw = _leaning_router("番茄", {"conflict": 0.05})
    weak = router.decide_mode("番茄炒蛋你会做吗", {}, carried=Carried("upset", UNCUED_MOOD_INTENSITY), **kw)
    assert weak.mode == "casual", weak.reason
    # The same lean with a real argument behind it (last night's 0.5) still routes the message cold.
    strong = router.decide_mode("番茄炒蛋你会做吗", {}, carried=Carried("upset", 0.5), **kw)
    assert strong.mode == "conflict", strong.reason


def test_a_short_message_needs_more_than_the_learned_parts_lean_to_leave_casual() -> None:
    """`short_units`: with no cue word, the classifier's and prototypes' evidence is scaled by the
    message's length in words, so "生气" alone (one word) stays casual where a long message with the same
    lean would not; a cue word lifts the scaling."""
    from memsched.text.segment import length_units

    assert length_units("ok.") == 1 and length_units("好。") == 0.5 and length_units("I'm fine 🙂") == 2
    short = Router(cues={}, classifier=_tiny_classifier())
    route = short.route("生气")
    assert route.mode == "casual", route.mode_reason
    assert route.evidence["classifier"]["conflict"] > 0  # it still leans, only less
    unscaled = Router(cues={}, classifier=_tiny_classifier(), weights=LONG_READING).route("生气")
    assert unscaled.mode == "conflict"
    assert route.evidence["classifier"]["conflict"] < unscaled.evidence["classifier"]["conflict"]
    # The same lean in a message of twenty words or more counts in full.
    long = "生气" + "，" + " ".join(["and"] * 20)
    assert short.route(long).evidence["classifier"]["conflict"] == pytest.approx(
        Router(cues={}, classifier=_tiny_classifier(), weights=LONG_READING)
        .route(long)
        .evidence["classifier"]["conflict"]
    )
    # A cue word: the learned evidence counts in full however short the message.
    cued = Router(cues={"modes": {"conflict": ["生气"]}}, classifier=_tiny_classifier())
    assert cued.route("生气").mode == "conflict"


def test_the_default_router_reads_curt_acknowledgements_as_casual(tmp_path: Path) -> None:
    """Written for this test (not in the labelled, short or blind sets): curt replies with nothing
    emotional in them. Without the shortness rule the shipped classifier read several of these as
    conflict, comfort or intimacy; emotional short lines still get their mode."""
    from memsched.memory import Memory
    from memsched.router import Prototypes

    curt = ["ok then", "alright", "thanks", "sounds fine", "知道了", "好", "嗯嗯", "谢谢"]
    emotional = [("Miss you", "intimacy"), ("心好累", "comfort"), ("I hate you", "conflict")]
    memory = Memory(home=tmp_path / "m")
    try:
        router = Router(prototypes=Prototypes(), classifier=ModeClassifier.load())
        unscaled = Router(prototypes=Prototypes(), classifier=ModeClassifier.load(), weights=LONG_READING)
        assert [_route(router, memory, t).mode for t in curt] == ["casual"] * len(curt)
        assert sum(_route(unscaled, memory, t).mode != "casual" for t in curt) >= 2
        for text, mode in emotional:
            assert _route(router, memory, text).mode == mode, text
    finally:
        memory.close()


def test_routing_reads_a_chinese_messages_minilm_vector_that_retrieval_does_not_search() -> None:
    from memsched.retrieve import FusionWeights

    assert prototype_weights(["minilm", "wordllama"], 1.0) == {"minilm": 0.5, "wordllama": 1.0}
    assert prototype_weights(["minilm", "hash"], 0.0) == {"minilm": 1.0, "hash": 1.0}
    assert prototype_weights(["minilm"], 0.5) == {"minilm": 0.75}
    assert FusionWeights().dense_weight("minilm", 1.0) == 0.0


@pytest.mark.parametrize(
    ("text", "cue", "own"),
    [
        ("my sister is so sad lately", "sad", False),
        ("I think she is really stressed", "stressed", False),
        ("布恩迪亚家族的孤独好像是遗传的", "孤独", False),
        ("我妈生病了", "生病", False),
        ("我朋友失恋了很难过", "难过", False),
        ("I'm so sad lately", "sad", True),
        ("my heart hurts", "hurt", True),
        ("he hurt me", "hurt", True),  # the clause goes on to the user
        ("She thinks I'm stressed", "stressed", True),
        ("我真的好难过", "难过", True),  # 真的 is an adverb, not a possessive 的
        ("一个人在家，好孤独", "孤独", True),
        ("我妈说我压力太大", "压力", True),
        ("妈妈生病了，我好难过", "难过", True),  # another clause, about the user
        ("My grandma passed away", "passed away", True),  # a loss: the grief is the user's
        ("外婆昨天去世了", "去世", True),
    ],
)
def test_a_cue_word_backs_the_users_mood_only_when_it_names_their_own_feeling(
    text: str, cue: str, own: bool
) -> None:
    assert (Router().own_cues(text, [cue]) == [cue]) is own


def test_someone_elses_feeling_keeps_the_mode_but_sets_no_mood_of_the_users() -> None:
    router = Router()
    sister = router.route("my sister is so sad lately")
    assert sister.mode == "comfort" and sister.mood == "sad" and not sister.mood_cued
    mine = router.route("I'm so sad lately")
    assert mine.mode == "comfort" and mine.mood_cued


def test_an_uncued_conflict_reading_is_corroborated_by_the_previous_confident_one() -> None:
    """With `corroborate_margin` set (off by default), on a made-up classifier that reads every message
    as strongly conflict: the first uncued reading is only noted, the second, after a confident reading
    of the same mode, counts as one cue word; a reading after a weak one, an old one or another mode
    does not."""
    from memsched.router import UNCUED_MOOD_INTENSITY, Carried

    class Angry:
        weight = 1.0
        dense_blocks: tuple[tuple[str, int, str | None], ...] = ()

        def predict(self, text: str, **kw: object) -> object:
            from memsched.classify import Prediction

            lp = {"casual": -5.0, "conflict": 0.0, "comfort": -5.0, "intimacy": -5.0}
            return Prediction(log_probs=lp, contributions={})

    from dataclasses import replace

    assert DEFAULT_WEIGHTS.corroborate_margin is None  # off by default (measured, not shipped)
    off = Router(classifier=Angry())  # type: ignore[arg-type]
    router = Router(classifier=Angry(), weights=replace(DEFAULT_WEIGHTS, corroborate_margin=2.0))  # type: ignore[arg-type]
    text = "You did it again, I can't believe this is happening every single week with you"
    first = router.route(text)
    assert first.own_mode == "conflict" and not first.mood_cued
    assert first.mood_intensity == UNCUED_MOOD_INTENSITY and first.reading == "conflict"
    second = router.route(text, carried=Carried(previous_reading="conflict", previous_age_s=60))
    assert second.mood_corroborated and second.mood_cued and second.mood_intensity > 0.5
    assert not off.route(
        text, carried=Carried(previous_reading="conflict", previous_age_s=60)
    ).mood_corroborated
    for carried in (
        Carried(previous_reading="casual", previous_age_s=60),  # the previous reading was not confident
        Carried(previous_reading="comfort", previous_age_s=60),
        Carried(previous_reading="conflict", previous_age_s=3 * 3600),  # too long ago
    ):
        assert not router.route(text, carried=carried).mood_corroborated


@pytest.mark.parametrize(
    ("text", "carried", "intensity", "mode"),
    [
        ("I GOT THE JOB!!!", "sad", 0.5, "casual"),  # the comfort voice with a happy mood before
        ("哈哈哈哈", "sad", 0.5, "casual"),
        ("I GOT THE JOB!!!", "upset", 0.5, "casual"),  # the cold voice with a happy mood before
        ("哈哈哈哈", "sad", 0.9, "comfort"),  # the carried sadness is stronger: it stays, and pulls
    ],
)
def test_a_happy_mood_of_the_users_own_takes_the_carried_pull_with_it(
    tmp_path: Path, text: str, carried: str, intensity: float, mode: str
) -> None:
    """A happy cue word of the user's replaces a weaker carried mood (`mood.update`), but the mode
    still followed the carried one: "I GOT THE JOB!!!" the day after a sad evening got the comfort
    voice while the mood said happy. The mode now goes with the mood."""
    from datetime import UTC, datetime

    from memsched import mood as moods
    from memsched.memory import Memory
    from memsched.router import Carried, Prototypes
    from memsched.strategy import StrategyTable

    router = Router(prototypes=Prototypes(), classifier=ModeClassifier.load())
    memory = Memory(home=tmp_path / "m")
    try:
        route = _route(router, memory, text, carried=Carried(carried, intensity))
    finally:
        memory.close()
    assert route.mode == mode, route.mode_reason
    now = datetime(2026, 1, 2, 9, tzinfo=UTC)
    upd = moods.update(
        moods.Mood(carried, intensity, updated_at=now),
        label=route.mood,
        intensity=route.mood_intensity,
        now=now,
        cued=route.mood_cued,
    )
    choice = StrategyTable.load().select(
        route.mode, upd.mood.label, upd.mood.intensity, route.signals, backed=route.backed
    )
    if mode == "casual":
        assert upd.mood.label == "happy" and choice.strategy.name == "casual", choice.reason
    else:
        assert upd.mood.label == carried


@pytest.mark.parametrize("text", ["I didn't mean what I said yesterday", "我不是那个意思，你别多想"])
def test_an_apology_without_sorry_is_met_warmly(text: str) -> None:
    """ "I didn't mean what I said" the morning after an argument is an apology: it got the cold voice
    (no apology cue word), now the repair signal and, with the upset mood, accept_apology."""
    from datetime import UTC, datetime

    from memsched import mood as moods
    from memsched.router import Carried
    from memsched.strategy import StrategyTable

    route = Router().route(text, carried=Carried("upset", 0.5))
    assert route.apology and route.signals["repair"]
    now = datetime(2026, 1, 2, 9, tzinfo=UTC)
    upd = moods.update(
        moods.Mood("upset", 0.5, updated_at=now),
        label=route.mood,
        intensity=route.mood_intensity,
        now=now,
        apology=route.apology,
        cued=route.mood_cued,
    )
    assert upd.mood.intensity < 0.5
    choice = StrategyTable.load().select(route.mode, upd.mood.label, upd.mood.intensity, route.signals)
    assert choice.strategy.name == "accept_apology", choice.reason


@pytest.mark.parametrize(
    "text",
    [
        "昨晚是我态度不好，跟你道个歉，最近病人太多压力大。",
        "我向你道歉，昨天不该冲你发火",
        "给你赔个不是，别往心里去",
        "都是我的错，昨天说话太冲了",
        "I owe you an apology for last night",
        "I want to apologize, that was on me",
    ],
)
def test_an_apology_in_the_users_own_words_is_one(text: str) -> None:
    """ "跟你道个歉" and "是我态度不好" had no apology cue (only 对不起/抱歉/是我不好), so the apology the
    morning after an argument was read as comfort with no repair; and 道歉 / "apologize" inside the
    user's own apology counted as a conflict cue."""
    route = Router().route(text, carried=Carried("upset", 0.5))
    assert route.apology and route.signals["repair"]
    assert not {"道歉", "apologize"} & set(route.cues.get("conflict", []))


@pytest.mark.parametrize(
    ("text", "conflict"),
    [
        ("你应该跟我道歉", "道歉"),
        ("你连道歉都不会", "道歉"),
        ("我才不会跟你道歉", "道歉"),
        ("凭什么要我跟你道歉", "道歉"),
        ("you should apologize", "apologize"),
        ("这不是我的错", None),
        ("I'm not sorry", None),
    ],
)
def test_a_demand_or_a_refusal_is_no_apology(text: str, conflict: str | None) -> None:
    route = Router().route(text)
    assert not route.apology
    if conflict:
        assert conflict in route.cues["conflict"]


@pytest.mark.parametrize(
    "text",
    [
        "My dad was hospitalized on Friday.",
        "My brother ended up in hospital after the crash.",
        "我爸昨晚送进ICU了",
    ],
)
def test_a_loved_one_in_hospital_is_the_users_worry(tmp_path: Path, text: str) -> None:
    """Someone close in hospital read as comfort by the learned parts alone: no mood, the attentive
    voice, and nothing of it carried to the sleepless night after. Like a loss, it is a comfort cue
    word and the user's own feeling whoever its subject."""
    route = _shipped_route(tmp_path, text)
    assert route.mode == "comfort", route.mode_reason
    assert route.mood == "sad" and route.backed and route.mood_cued
    assert not Router().mode_cues("She works in hospital admin.")["comfort"]
