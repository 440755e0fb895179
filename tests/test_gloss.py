"""Chinese glossed into English from CC-CEDICT (memsched.text.gloss)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memsched import Memory
from memsched.bookmarks import generate_bookmarks
from memsched.embed.gloss import GlossEmbedder
from memsched.embed.hashing import HashEmbedder
from memsched.model import Turn, utcnow
from memsched.scheduler import Scheduler
from memsched.store import Store
from memsched.text.gloss import gloss, has_han, lookup


def test_words_become_their_english_senses() -> None:
    assert "cello" in gloss("我学大提琴差不多八个月了").split()
    assert "musical instrument" in gloss("我最近在摆弄哪种乐器？")
    assert "boyfriend" in gloss("我男朋友叫陈浩")
    assert "spouse" in gloss("我的另一半是谁？")


def test_a_paraphrase_meets_its_fact_in_english() -> None:
    fact = set(gloss("我学大提琴差不多八个月了").split())
    question = set(gloss("最近在学什么乐器？").split())
    assert fact & question  # "learn" / "study": the Chinese shares no word


def test_names_and_non_chinese_text_stay_as_they_are() -> None:
    assert "陈浩" in gloss("我男朋友叫陈浩").split()
    assert gloss("I like green tea") == "I like green tea"
    out = gloss("I like 咖啡 and OT算法")
    assert out.startswith("I like coffee") and "OT" in out.split()


def test_stop_words_are_dropped_and_senses_limited() -> None:
    one = gloss("我学大提琴", senses=1).split()
    assert "我" not in one and "cello" in one and "violoncello" not in one
    assert "violoncello" in gloss("我学大提琴", senses=2).split()


def test_traditional_characters_and_variants() -> None:
    assert "Taiwan" in gloss("我們去台灣吃牛肉麵")
    assert lookup("臺灣") == lookup("台湾")


def test_has_han() -> None:
    assert has_han("user: 你好") and not has_han("hello") and not has_han("こんにちは")


def test_only_turns_with_han_characters_are_selected_for_gloss_vectors(store: Store) -> None:
    now = utcnow()
    texts = ["我男朋友叫陈浩", "my boyfriend is Chen Hao", "こんにちは", "안녕하세요", "I live in 臺灣"]
    store.add_turns([Turn("u", "s", "user", t, created_at=now) for t in texts])
    every = store.turns_missing_vectors("u", "m")
    chinese = store.turns_missing_vectors("u", "m", han_only=True)
    assert len(every) == 5
    assert [text for _, text in chinese] == ["user: 我男朋友叫陈浩", "user: I live in 臺灣"]


def test_gloss_layer_finds_a_synonym_and_its_vectors_go_with_the_turn(backend: str, tmp_path: Path) -> None:
    gloss_embedder = GlossEmbedder(HashEmbedder())
    mem = Memory(home=tmp_path / "m", embedders={"hash": HashEmbedder(), "gloss": gloss_embedder})
    try:
        fact = mem.add("u", "s", "user", "我很喜欢吃西红柿")
        for i in range(12):
            mem.add("u", "s", "user", f"今天天气不错，我们去公园散步吧 {i}")
            mem.add("u", "s", "user", f"I had a quiet lunch with my sister, day {i}")
        # one gloss vector per distinct Chinese text, none for the English ones
        assert mem.store.vector_count("u", gloss_embedder.model_id) == 13
        result = mem.retriever.retrieve("u", "我爱吃番茄吗？", expand=False)  # 番茄 = 西红柿 = tomato
        assert result.layers["gloss"][0].turn_id == fact.id
        # An English query searches the model the glosses are in (here the same hashed model) with
        # the gloss rows standing beside that model's rows: one layer, where the fact comes first.
        english = mem.retriever.retrieve("u", "what do I like to eat? tomato", expand=False)
        assert set(english.layers) == {"bm25", "hash"}
        assert english.layers["hash"][0].turn_id == fact.id
        assert fact.id is not None
        mem.delete_turns("u", [fact.id])
        assert mem.store.vector_count("u", gloss_embedder.model_id) == 12
    finally:
        mem.close()


def test_gloss_embedder_gives_zero_rows_for_text_without_han() -> None:
    rows = GlossEmbedder(HashEmbedder()).embed(["hello there", "我很喜欢吃西红柿"])
    assert not np.any(rows[0]) and np.isclose(np.linalg.norm(rows[1]), 1.0)


def test_warm_up_loads_the_dictionary() -> None:
    from memsched.text import gloss as module

    module.warm_up()
    assert module._table is not None and "男朋友" in module._table


def test_a_chinese_query_is_embedded_with_minilm_but_searches_the_gloss_and_wordllama_layers(
    tmp_path: Path,
) -> None:
    # The layers by name, as the default configuration has them (hashed vectors stand in for the models).
    embedders = {
        "minilm": HashEmbedder(64),
        "wordllama": HashEmbedder(32),
        "gloss": GlossEmbedder(HashEmbedder(48)),
    }
    mem = Memory(home=tmp_path / "m", embedders=embedders)
    try:
        mem.add("u", "s", "user", "我很喜欢吃西红柿")
        mem.add("u", "s", "user", "I had a quiet lunch with my sister")
        chinese, english = "我爱吃番茄吗？", "what do I like to eat?"
        # The message's MiniLM vector is computed (the router reads it, the turn stores it) ...
        assert list(mem.query_vectors(chinese)) == ["minilm", "wordllama", "gloss"]
        # (an English one searches no gloss layer of its own: were the glosses in MiniLM's space,
        # MiniLM's layer would hold their rows; here they are in another model's)
        assert list(mem.query_vectors(english)) == ["minilm"]
        # ... but a Chinese query searches no MiniLM layer, in the plain fusion and in the pager.
        assert set(mem.retriever.retrieve("u", chinese).layers) == {"bm25", "wordllama", "gloss"}
        assert set(mem.retriever.retrieve("u", english).layers) == {"bm25", "minilm"}
        paged = mem.context("u", chinese, session_id="q").trace["retrieval"]["layers"]
        assert "gloss" in paged and "wordllama" in paged and "minilm" not in paged
        assert "minilm" in mem.context("u", english, session_id="q").trace["retrieval"]["layers"]
        # Recorded, the Chinese message keeps its MiniLM vector for English queries to find.
        mem.context("u", chinese, session_id="q", record=True)
        assert mem.store.vector_count("u", "hash-64") == 3
    finally:
        mem.close()


def test_background_glossing_pauses_before_each_text() -> None:
    """Glossing is Python holding the GIL (jieba's tagger): in background work a chunk of Chinese
    turns is glossed one text at a time with a pause before each, so a turn that arrives waits for
    one text's gloss, not a chunk's; the vectors are the same."""
    from memsched.embed.base import background

    texts = ["我的猫叫芝麻", "no han here", "我男朋友叫陈浩", "我们第一次约会那家店叫什么来着？"]
    events: list[str] = []

    class Recording(HashEmbedder):
        def embed(self, texts: list[str]) -> np.ndarray:  # type: ignore[override]
            events.append(f"embed {len(texts)}")
            return super().embed(texts)

    embedder = GlossEmbedder(Recording())
    foreground = embedder.embed(texts)
    events.clear()
    with background(lambda: events.append("pause")):
        out = embedder.embed(texts)
    assert np.array_equal(out, foreground)
    assert events == ["pause", "pause", "pause", "embed 3"]  # one pause per Chinese text


class _Counting(HashEmbedder):
    """A hashed model that counts the texts it embeds."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        return super().embed(texts)


def test_an_english_question_reaches_a_chinese_turn_through_its_gloss(backend: str, tmp_path: Path) -> None:
    """The gloss layer is MiniLM's space over the Chinese turns' English glosses, so an English
    question's MiniLM layer holds the gloss rows too (each turn once, by its nearer row): it finds a
    Chinese turn that says what it asks in one layer, with one model call and no gloss layer of its
    own to search and fuse; the English message itself never gets a gloss row."""
    minilm = _Counting(64)
    embedders = {"minilm": minilm, "wordllama": HashEmbedder(32), "gloss": GlossEmbedder(minilm)}
    mem = Memory(home=tmp_path / "m", embedders=embedders)
    gloss_model = embedders["gloss"].model_id
    try:
        fact = mem.add("u", "s", "user", "我很喜欢吃西红柿")
        for i in range(12):
            mem.add("u", "s", "user", f"今天天气不错，我们去公园散步吧 {i}")
            mem.add("u", "s", "user", f"I had a quiet lunch with my sister, day {i}")
        assert mem.store.vector_count("u", gloss_model) == 13
        question = "Do you remember which vegetable I like? tomato"
        minilm.texts.clear()
        assert list(mem.query_vectors(question)) == ["minilm"]
        assert minilm.texts == [question]  # one model call, one vector
        searched = mem.retriever.retrieve("u", question, expand=False)
        assert set(searched.layers) == {"bm25", "minilm"}
        assert searched.layers["minilm"][0].turn_id == fact.id
        assert len({h.turn_id for h in searched.layers["minilm"]}) == len(searched.layers["minilm"])
        found = mem.context("u", question, session_id="q", budget=400)
        assert found.assembly is not None
        assert fact.id in {t.id for t in found.assembly.recalled}
        assert "gloss" not in found.trace["retrieval"]["layers"]
        # Recorded (by the context call and by a scheduler turn), an English message stores its
        # MiniLM vector and no gloss row; a Chinese one stores both.
        mem.context("u", question, session_id="q", record=True)
        sched = Scheduler(mem, start_workers=False)
        try:
            sched.prepare("u", "q", "And what else do I like to eat?")
            assert mem.store.vector_count("u", gloss_model) == 13
            sched.prepare("u", "q", "我也喜欢吃土豆")
            assert mem.store.vector_count("u", gloss_model) == 14
        finally:
            sched.close()
        # The bookmarks the same way: a Chinese page's bookmark is in the English question's
        # MiniLM bookmark layer, and no bookmark gloss layer is searched.
        generate_bookmarks(mem, "u")
        chinese_marks = set(mem.store.bookmark_vectors("u", gloss_model)[0].tolist())
        assert chinese_marks
        layers = mem.pager.retrieve("u", question, session_id="q").layers
        assert "bookmarks:gloss" not in layers
        assert chinese_marks <= {h.turn_id for h in layers["bookmarks:minilm"]}
    finally:
        mem.close()
