"""The paging scheduler: layers in the trace, alias resolution, decomposition (zh+en), the entity
graph, and the cooperative layer's skips (confidence, session cache, query pattern) and fallbacks
(HTTP 500, timeout, an unusable reply) against the fake OpenAI server."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from memsched.bookmarks import generate_bookmarks, maintain_bookmarks
from memsched.embed.hashing import HashEmbedder
from memsched.llm import OpenAIChatClient, llm_calls, reset_llm_calls
from memsched.memory import Memory
from memsched.model import Candidate, Turn
from memsched.paging import (
    STAGES,
    Pager,
    PagingOptions,
    _build_names,
    decompose,
    decompose_rules,
    graph_neighbours,
    looks_compound,
    match_names,
    query_kind,
    question_share,
)
from memsched.testing import Delay, Fail, FakeOpenAI

# Runs on SQLite and on PostgreSQL (conftest.py, `backend`).
pytestmark = pytest.mark.usefixtures("backend")

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)

CONVERSATION = [
    # session, speaker, text
    ("s1", "Alice", "We decided to build the Alpha module with Rust and Tokio."),
    ("s1", "Bob", "Good, the Alpha module also needs an audit log."),
    ("s1", "Alice", "Carol will own the Alpha module from Monday."),
    ("s1", "Bob", "Then the Alpha module ships in May."),
    ("s2", "Bob", "My daughter started piano lessons with Mrs. Schmidt."),
    ("s2", "Alice", "Piano lessons are great, how old is she?"),
    ("s2", "Bob", "She is seven, and she already plays a little Mozart."),
    ("s2", "Alice", "Mozart at seven, impressive!"),
    ("s3", "Alice", "I booked a trip to Kyoto for the cherry blossoms."),
    ("s3", "Bob", "Kyoto in April is beautiful, visit the Fushimi Inari shrine."),
    ("s3", "Alice", "I will, and I want to try a tea ceremony in Gion."),
    ("s3", "Bob", "Gion is lovely in the evening."),
    ("s4", "Alice", "By the way, we renamed the Alpha module to Nova yesterday."),
    ("s4", "Bob", "Noted, that name is easier to say."),
    ("s4", "Alice", "The weather has been rainy all week."),
    ("s4", "Bob", "Yes, lots of rain lately."),
]


def build(tmp_path: Path, **overrides: object) -> Memory:
    mem = Memory(home=tmp_path / "m", embedders={"hash": HashEmbedder()}, page_size=4, **overrides)  # type: ignore[arg-type]
    turns = [
        Turn(
            "u",
            s,
            "user" if who == "Alice" else "assistant",
            text,
            speaker=who,
            created_at=T0 + timedelta(days=i // 4, minutes=i),
        )
        for i, (s, who, text) in enumerate(CONVERSATION)
    ]
    mem.add_many(turns)
    maintain_bookmarks(mem, "u")
    return mem


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    m = build(tmp_path)
    yield m
    m.close()


def page_of(mem: Memory, session: str) -> int:
    return next(p.id for p in mem.store.pages("u") if p.session_id == session)


def test_layers_and_scores_are_in_the_trace(mem: Memory) -> None:
    result = mem.context("u", "Who owns the Alpha module?", budget=600)
    retrieval = result.trace["retrieval"]
    assert {"bm25", "hash", "bookmarks:bm25", "bookmarks:hash", "bookmarks:keywords"} <= set(
        retrieval["layers"]
    )
    assert retrieval["scores"]["bookmarks:keywords"]  # the keyword layer matched "Alpha module"
    assert retrieval["pages"] and retrieval["pages"][0][0] == page_of(mem, "s1")
    assert "Carol will own the Alpha module" in result.messages[0]["content"]
    assert retrieval["paging"]["stages"]["bookmarks"] is True
    assert result.trace["tokens"]["total"] <= 600


def test_query_with_the_new_name_reaches_the_old_page(mem: Memory) -> None:
    # "Nova" occurs only in session 4; the design talk of session 1 is reached through the alias
    # that maintenance added to its bookmark.
    s1 = {t.id for t in mem.store.page_turns("u", page_of(mem, "s1"))}
    paging = Pager(mem).retrieve("u", "What language is Nova written in?")
    top = [c.turn_id for c in paging.candidates[:6]]
    assert s1 & set(top), paging.trace()
    lifted = [c for c in paging.candidates if c.turn_id in s1]
    assert any("page" in c.scores for c in lifted)
    assert dict(paging.trace()["pages"])[page_of(mem, "s1")] >= 1.0  # named by its alias
    # Without bookmarks the old page has nothing to go on.
    plain = Pager(mem, STAGES["hybrid"]).retrieve("u", "What language is Nova written in?")
    assert not s1 & {c.turn_id for c in plain.candidates[:2]}


def test_keyword_matching_exact_fuzzy_and_graph(mem: Memory) -> None:
    marks = mem.store.bookmarks("u")
    index = _build_names(marks, (0, 0.0, 0), {"alice", "bob"})
    exact = match_names(index, "tell me about Kyoto")
    assert exact and all("kyoto" in " ".join(names).lower() for _, names in exact.values())
    fuzzy = match_names(index, "the Mozzart piece")  # a typo still finds Mozart
    assert any("mozart" in n.lower() for _, names in fuzzy.values() for n in names)
    assert match_names(index, "the Mozzart piece", fuzzy=False) == {}
    neighbours = [" ".join(k) for k, _ in graph_neighbours(index, ["Kyoto"])]
    # Which phrases the rule extractor keeps can vary with set order (e.g. "cherry blossoms" or
    # "cherry" and "blossoms"); what matters is that Kyoto's neighbours are the Kyoto trip's words.
    kyoto_words = {"gion", "fushimi", "inari", "shrine", "cherry", "blossoms"}
    assert neighbours and any(kyoto_words & set(n.split()) for n in neighbours)


def test_rule_decomposition_english_and_chinese() -> None:
    assert decompose_rules("What did Alice and Bob eat?", ["Alice", "Bob"]) == [
        "What did Alice eat?",
        "What did Bob eat?",
    ]
    assert decompose_rules("What hobbies do Alice and Bob both have?", ["Alice", "Bob"]) == [
        "What hobbies do Alice have?",
        "What hobbies do Bob have?",
    ]
    assert decompose_rules("When did Alice go to Kyoto, and what did Bob buy?") == [
        "When did Alice go to Kyoto",
        "what did Bob buy?",
    ]
    assert decompose_rules("小明和小红分别喜欢什么运动？", ["小明", "小红"]) == [
        "小明喜欢什么运动？",
        "小红喜欢什么运动？",
    ]
    assert decompose_rules("我们为什么放弃方案A？以及方案C的瓶颈是什么？") == [
        "我们为什么放弃方案A",
        "方案C的瓶颈是什么？",
    ]
    # One question stays whole.
    assert decompose_rules("What did Alice tell Bob about Kyoto?", ["Alice", "Bob"]) == []
    assert decompose_rules("小明喜欢什么？", ["小明"]) == []
    assert looks_compound("What did Alice and Bob eat?", ["Alice", "Bob"])
    assert not looks_compound("What did Alice eat?", ["Alice"])


def test_llm_decomposition_and_its_fallback(fake: FakeOpenAI) -> None:
    llm = OpenAIChatClient(fake.base_url, None, "m", timeout=5, retries=0)
    fake.script(json.dumps({"queries": ["Why was plan A dropped?", "What is plan C's bottleneck?"]}))
    subs, how = decompose("Why was plan A dropped and what is plan C's bottleneck?", [], llm)
    assert how == "llm" and subs == ["Why was plan A dropped?", "What is plan C's bottleneck?"]
    fake.script("no json here")
    subs, how = decompose("What did Alice and Bob eat?", ["Alice", "Bob"], llm)
    assert how.startswith("rules (llm failed: invalid JSON")
    assert subs == ["What did Alice eat?", "What did Bob eat?"]
    reset_llm_calls()
    decompose("What did Alice eat?", ["Alice"], llm)  # not compound: no call at all
    assert llm_calls() == {}


def test_multihop_retrieves_each_part(mem: Memory) -> None:
    paging = Pager(mem).retrieve(
        "u", "What instrument does Bob's daughter play, and where did Alice book a trip?"
    )
    info = paging.info["decomposition"]
    assert info["how"] == "rules" and len(info["queries"]) == 2
    top = {c.turn_id for c in paging.candidates[:6]}
    s2 = {t.id for t in mem.store.page_turns("u", page_of(mem, "s2"))}
    s3 = {t.id for t in mem.store.page_turns("u", page_of(mem, "s3"))}
    assert top & s2 and top & s3
    assert any(name.startswith("sub1:") for name in paging.layers)


def test_query_kind_patterns() -> None:
    assert query_kind("What did we decide about the Alpha module?") == "decision"
    assert query_kind("我们关于Alpha模块决定了什么？") == "decision"
    assert query_kind("What are you planning for the summer?") == "plan"
    assert query_kind("How is the weather?") is None


# -- the cooperative layer ----------------------------------------------------------------------------------


def coop_pager(mem: Memory, fake: FakeOpenAI, timeout: float = 5.0, **changes: object) -> Pager:
    llm = OpenAIChatClient(fake.base_url, None, "m", timeout=timeout, retries=0, backoff=0.01)
    return Pager(mem, PagingOptions(**changes), llm=llm)  # type: ignore[arg-type]


def test_confident_ranking_skips_the_llm(mem: Memory, fake: FakeOpenAI) -> None:
    reset_llm_calls()
    paging = coop_pager(mem, fake).retrieve("u", "Fushimi Inari shrine")
    assert paging.info["cooperative"]["skipped"] == "confident"
    assert "rerank" not in llm_calls()


def test_rerank_call_promotes_the_chosen_page_then_the_session_cache_reuses_it(
    mem: Memory, fake: FakeOpenAI
) -> None:
    pager = coop_pager(mem, fake, confident_ratio=100.0)
    s2 = page_of(mem, "s2")
    fake.script(f"p{s2}")
    reset_llm_calls()
    first = pager.retrieve("u", "what happened recently?", session_id="chat")
    coop = first.info["cooperative"]
    assert coop["called"] is True and coop["pages"] == [s2]
    assert llm_calls() == {"rerank": 1}
    prompt = fake.chat_requests[-1]["messages"][0]["content"]
    assert f"[p{s2}]" in prompt and "what happened recently?" in prompt
    s2_turns = {t.id for t in mem.store.page_turns("u", s2)}
    assert first.candidates[0].turn_id in s2_turns
    # The same question again in the same session: the decision is reused, no call.
    again = pager.retrieve("u", "what happened recently?", session_id="chat")
    assert again.info["cooperative"]["skipped"] == "session cache"
    assert llm_calls() == {"rerank": 1}
    # Another session does not share the cache.
    fake.script("none")
    other = pager.retrieve("u", "what happened recently?", session_id="other")
    assert other.info["cooperative"]["pages"] == [] and llm_calls() == {"rerank": 2}


def test_decision_question_maps_to_decision_bookmarks_without_the_llm(mem: Memory, fake: FakeOpenAI) -> None:
    reset_llm_calls()
    paging = coop_pager(mem, fake, confident_ratio=100.0).retrieve(
        "u", "What did we decide about the Alpha module?"
    )
    assert paging.info["cooperative"]["skipped"] == "pattern: decision"
    assert paging.info["cooperative"]["pages"][0] == page_of(mem, "s1")
    assert "rerank" not in llm_calls()


@pytest.mark.parametrize(
    ("reply", "expect"),
    [
        (Fail(500), "HTTP 500"),
        (Delay(2.0, then="p1"), "timed out"),
        ("I think the second one", "named no candidate"),
    ],
    ids=["http-500", "timeout", "unusable-reply"],
)
def test_rerank_failures_fall_back_to_the_fused_order(
    mem: Memory, fake: FakeOpenAI, reply: object, expect: str
) -> None:
    fused = Pager(mem, PagingOptions(cooperative=False)).retrieve("u", "what happened recently?")
    fake.script(reply)  # type: ignore[arg-type]
    pager = coop_pager(mem, fake, timeout=0.3, confident_ratio=100.0, rerank_timeout=0.3)
    paging = pager.retrieve("u", "what happened recently?", session_id="s")
    coop = paging.info["cooperative"]
    assert coop["fallback"].startswith("fused order") and expect in coop["fallback"]
    assert [c.turn_id for c in paging.candidates] == [c.turn_id for c in fused.candidates]


def test_memory_context_uses_the_pager_and_offline_makes_no_llm_call(mem: Memory) -> None:
    reset_llm_calls()
    result = mem.context("u", "Where is Alice travelling for the cherry blossoms?", budget=500)
    assert "Kyoto" in result.messages[0]["content"]
    assert "paging" in result.trace["retrieval"]
    assert llm_calls() == {}


def test_the_dense_query_leaves_out_the_speaker_names(mem: Memory) -> None:
    # The dense layer's hits are compared as searched: without the noise cut of a small history.
    pager = Pager(mem, PagingOptions(cooperative=False, dense_noise_z=0.0))
    assert pager._dense_text("u", "What does Alice think about Gion?") == "What does think about Gion?"
    assert (
        pager._dense_text("u", "Is alice's trip to Kyoto with BOB booked?") == "Is trip to Kyoto with booked?"
    )
    # Nothing to leave out, or nothing but names: the message's own vectors.
    assert pager._dense_text("u", "Where is Gion?") is None
    assert pager._dense_text("u", "Alice and Bob?") is None
    assert pager._dense_text("u", "Where did Alicea go?") is None  # a name inside a word is no name
    qvecs = mem.retriever.embed_query("Where is Gion?")
    assert pager._dense_vectors("u", "Where is Gion?", qvecs) is qvecs  # no second embedding

    query = "What does Alice think about Gion?"
    embedder = mem.embedders["hash"]
    full, stripped = embedder.embed([query, "What does think about Gion?"])
    expected = full + stripped
    expected /= np.linalg.norm(expected)
    qvecs = mem.retriever.embed_query(query)
    got = pager._dense_vectors("u", query, qvecs)
    assert np.allclose(got["hash"], expected, atol=1e-6)
    alone = Pager(mem, PagingOptions(cooperative=False, dense_name_weight=0.0))._dense_vectors(
        "u", query, qvecs
    )
    assert np.allclose(alone["hash"], stripped / np.linalg.norm(stripped), atol=1e-6)
    # The dense layer searched with that vector; with the option off, with the message's.
    result = pager.retrieve("u", query)
    assert [h.turn_id for h in result.layers["hash"]] == [
        h.turn_id for h in mem.retriever.dense("u", "hash", expected, len(result.layers["hash"]))
    ]
    kept = Pager(mem, PagingOptions(cooperative=False, dense_speaker_names=True, dense_noise_z=0.0))
    assert kept._dense_text("u", query) is None
    assert [h.turn_id for h in kept.retrieve("u", query).layers["hash"]] == [
        h.turn_id for h in mem.retriever.dense("u", "hash", qvecs["hash"], len(result.layers["hash"]))
    ]


def test_speaker_names_stay_out_of_the_bookmark_search(mem: Memory) -> None:
    query = "What did Alice plan in Kyoto?"
    k = PagingOptions().bookmark_k
    default = Pager(mem, PagingOptions(cooperative=False)).retrieve("u", query)
    without = mem.store.search_bookmarks_bm25("u", "plan kyoto", k)
    assert without and [h.turn_id for h in default.layers["bookmarks:bm25"]] == [h.turn_id for h in without]
    named = Pager(mem, PagingOptions(cooperative=False, bookmark_speaker_names=True)).retrieve("u", query)
    assert [h.turn_id for h in named.layers["bookmarks:bm25"]] == [
        h.turn_id for h in mem.store.search_bookmarks_bm25("u", query, k)
    ]


def test_budget_per_token_puts_the_shorter_of_two_equal_turns_first(mem: Memory) -> None:
    from memsched.model import Candidate
    from memsched.paging import LINE_OVERHEAD, line_tokens

    assert line_tokens("abcd" * 5) == 5 + LINE_OVERHEAD
    assert line_tokens("我们明天见") == 5 + LINE_OVERHEAD  # a CJK character is about a token
    texts = {t.id: t.content for t in mem.store.iter_turns("u")}
    short = min(texts, key=lambda t: len(texts[t]))
    long = max(texts, key=lambda t: len(texts[t]))
    ranked = [Candidate(turn_id=long, fused=1.0), Candidate(turn_id=short, fused=1.0)]
    pager = Pager(mem, PagingOptions(cooperative=False, length_penalty=0.5))
    out = pager._per_token("u", ranked)
    assert [c.turn_id for c in out] == [short, long]
    assert out[0].fused == pytest.approx(line_tokens(texts[short]) ** -0.5)
    # Off by default: the order is the fused one.
    assert PagingOptions().length_penalty == 0.0


def test_generate_then_stages_are_all_usable(tmp_path: Path) -> None:
    m = Memory(home=tmp_path / "x", embedders={"hash": HashEmbedder()}, page_size=4)
    try:
        m.add("u", "s", "user", "hello there, I adopted a cat named Sesame")
        # No bookmarks yet: every stage still answers from the turn layers.
        for options in STAGES.values():
            assert Pager(m, options).retrieve("u", "cat name").candidates
        generate_bookmarks(m, "u")
        for options in STAGES.values():
            assert Pager(m, options).retrieve("u", "cat name").candidates
    finally:
        m.close()


def test_chinese_question_reaches_its_page_through_bookmark_keywords(tmp_path: Path) -> None:
    m = Memory(home=tmp_path / "zh", embedders={"hash": HashEmbedder()}, page_size=4)
    talks = [
        [
            "我们决定采用OT算法来解决实时协同编辑的冲突。",
            "OT算法需要一个中央服务器。",
            "前端考虑使用Yjs库。",
            "中央服务器交给小王部署。",
        ],
        ["晚上我做了番茄炒蛋。", "番茄炒蛋要先炒鸡蛋。", "周末想学红烧肉。", "红烧肉需要冰糖上色。"],
        ["下周去杭州出差。", "记得去西湖看看。", "顺便吃一次东坡肉。", "好的，我会带伞。"],
    ]
    try:
        for day, talk in enumerate(talks):
            m.add_many(
                [
                    Turn("u", f"s{day}", "user", t, created_at=T0 + timedelta(days=day, minutes=i))
                    for i, t in enumerate(talk)
                ]
            )
        generate_bookmarks(m, "u")
        ot_page = page_of(m, "s0")
        paging = Pager(m).retrieve("u", "之前我们为协同编辑选的冲突解决方案，对网络延迟的要求高吗？")
        assert paging.trace()["scores"]["bookmarks:keywords"][0][0] in {
            b.id for b in m.store.bookmarks("u", page_id=ot_page)
        }
        top = m.store.get_turns("u", [c.turn_id for c in paging.candidates[:3]])
        assert all(t.page_id == ot_page for t in top)
        result = m.context("u", "OT算法需要什么服务器？", budget=300)
        assert "中央服务器" in result.messages[0]["content"]
    finally:
        m.close()


def test_feedback_searches_again_from_the_best_turns(mem: Memory) -> None:
    query = "Mozart piano lessons"
    # (without the question penalty, which puts a turn that only asks at 0)
    with_feedback = Pager(mem, PagingOptions(cooperative=False, feedback=1.0, question_penalty=0.0)).retrieve(
        "u", query
    )
    assert PagingOptions().feedback == 0  # measured, off by default
    assert with_feedback.layers["feedback:hash"]  # the Rocchio search ran and its hits are traced
    assert "feedback" in with_feedback.timings_ms
    fed = [c for c in with_feedback.candidates if "feedback" in c.scores]
    assert fed and all(c.fused > 0 for c in fed)
    without = Pager(mem, PagingOptions(cooperative=False, feedback=0.0)).retrieve("u", query)
    assert not any(k.startswith("feedback") for k in without.layers)
    # Chinese queries go through the same path
    zh = Pager(mem, PagingOptions(cooperative=False, feedback=1.0)).retrieve("u", "钢琴课 莫扎特")
    assert "feedback" in zh.timings_ms or not zh.candidates


def test_session_diversity_interleaves_sessions(mem: Memory) -> None:
    query = "Alpha module Kyoto"
    # Without the relevance floor: a re-ranking this strong (x0.1) would move turns across it.
    plain = Pager(mem, PagingOptions(cooperative=False, diversity=0.0, floor=0.0)).retrieve("u", query)
    diverse = Pager(mem, PagingOptions(cooperative=False, diversity=0.9, floor=0.0)).retrieve("u", query)
    session = {t.id: t.session_id for t in mem.store.iter_turns("u")}

    def distinct_in_top(result: object, n: int) -> int:
        return len({session[c.turn_id] for c in result.candidates[:n]})  # type: ignore[attr-defined]

    assert sorted(c.turn_id for c in plain.candidates) == sorted(c.turn_id for c in diverse.candidates)
    assert distinct_in_top(diverse, 3) >= distinct_in_top(plain, 3)
    assert distinct_in_top(diverse, 3) == 3  # three sessions in the first three places
    assert any("diversity" in c.scores for c in diverse.candidates)


def test_novelty_gives_way_to_distinct_turns(tmp_path: Path) -> None:
    mem = Memory(home=tmp_path / "n", embedders={"hash": HashEmbedder()}, page_size=4)  # type: ignore[arg-type]
    texts = [
        "The Alpha module ships in May with the audit log.",
        "The Alpha module ships in May with the audit log, as planned.",
        "So the Alpha module ships in May with the audit log.",
        "Carol reviews the Alpha module's tests.",
        "Lunch was good today.",
    ]
    mem.add_many(
        [
            Turn("u", f"s{i}", "user", text, created_at=T0 + timedelta(days=i))  # type: ignore[arg-type]
            for i, text in enumerate(texts)
        ]
    )
    ids = {t.content: t.id for t in mem.store.iter_turns("u")}
    query = "Alpha module ships in May audit log"
    assert PagingOptions().novelty == 0.5  # on by default (chosen leave-one-out)
    plain = Pager(mem, PagingOptions(cooperative=False, novelty=0.0)).retrieve("u", query)
    novel = Pager(mem, PagingOptions(cooperative=False, novelty=0.9)).retrieve("u", query)
    assert sorted(c.turn_id for c in plain.candidates) == sorted(c.turn_id for c in novel.candidates)
    distinct = ids["Carol reviews the Alpha module's tests."]
    plain_order = [c.turn_id for c in plain.candidates]
    novel_order = [c.turn_id for c in novel.candidates]
    # Without it, the near-copies come first; with it, the distinct turn moves ahead of two of them.
    assert plain_order.index(distinct) >= 3
    assert novel_order.index(distinct) == 1
    assert any("novelty" in c.scores for c in novel.candidates) and "novelty" in novel.timings_ms
    # The vectors it compares are the stored ones, by turn id, on either store.
    found = mem.retriever.vectors_by_id("u", "hash", [distinct, 10_000])
    assert list(found) == [distinct] and found[distinct].shape == (mem.embedders["hash"].dim,)
    mem.close()


def test_question_share_counts_sentences_that_ask() -> None:
    assert question_share("What now?") == 1.0
    assert question_share("I went swimming with the kids. Did you?") == 0.5
    assert question_share("Cool! What type of music do you play? Been playing long?") == pytest.approx(2 / 3)
    assert question_share("我很好。你呢？") == 0.5
    assert question_share("No question here.") == 0.0
    assert question_share("   ") == 0.0


def test_turns_that_only_ask_rank_below_turns_that_tell(mem: Memory) -> None:
    texts = {t.id: t.content for t in mem.store.iter_turns("u") if t.id is not None}
    asks = next(i for i, t in texts.items() if t.startswith("Piano lessons are great, how old"))
    tells = next(i for i, t in texts.items() if t.startswith("My daughter started piano"))
    query = "piano lessons"
    assert PagingOptions().question_penalty == 1.0  # on by default (chosen leave-one-out)
    penalised = Pager(mem, PagingOptions(cooperative=False, floor=0.0)).retrieve("u", query)
    order = [c.turn_id for c in penalised.candidates]
    # By default a turn scored 0 is below the relevance floor: not paged in at all.
    assert asks not in {
        c.turn_id for c in Pager(mem, PagingOptions(cooperative=False)).retrieve("u", query).candidates
    }
    by_id = {c.turn_id: c for c in penalised.candidates}
    assert by_id[asks].scores["questions"] == 1.0 and by_id[asks].fused == 0.0
    assert order.index(tells) < order.index(asks)
    assert "questions" in penalised.timings_ms
    # The shares are cached per user (a turn's text never changes) and dropped after a delete.
    mem.context("u", query, budget=400)
    cached = mem.pager._questions.get("u")
    assert cached is not None and cached[asks] == 1.0
    mem.delete_turns("u", [tells])
    assert mem.pager._questions.get("u") is None
    plain = Pager(mem, PagingOptions(cooperative=False, question_penalty=0.0)).retrieve("u", query)
    assert not any("questions" in c.scores for c in plain.candidates)
    assert {c.turn_id: c for c in plain.candidates}[asks].fused > 0


def test_speaker_names_stay_out_of_the_bm25_search(mem: Memory) -> None:
    texts = {t.id: t.content for t in mem.store.iter_turns("u")}
    query = "What does Alice think about Gion?"
    default = Pager(mem, PagingOptions(cooperative=False)).retrieve("u", query)
    found = {h.turn_id for h in default.layers["bm25"]}
    assert found and all("Gion" in texts[t] for t in found)  # not every turn of Alice's
    named = Pager(mem, PagingOptions(cooperative=False, bm25_speaker_names=True)).retrieve("u", query)
    assert {h.turn_id for h in named.layers["bm25"]} > found  # her name matched her other turns
    # A query that is nothing but a name still searches the name.
    only = Pager(mem, PagingOptions(cooperative=False)).retrieve("u", "Alice?")
    assert only.layers["bm25"]


def test_the_speakers_next_turn_follows_a_head_turn(tmp_path: Path) -> None:
    mem = Memory(home=tmp_path / "t", embedders={"hash": HashEmbedder()}, page_size=8)  # type: ignore[arg-type]
    talk = [
        # Turns that share a word with the question, stored first: the meteor turn, which shares
        # none, ranks below all of them on its own.
        *((f"s{3 + i}", "Carol", f"A short trip to the shop, errand {i}.") for i in range(30)),
        ("s1", "Alice", "Our family camping trip to Yosemite was the best weekend."),
        ("s1", "Bob", "Sounds fun, tell me more!"),
        ("s1", "Alice", "At night we lay outside and watched the meteor shower."),
        ("s1", "Bob", "Wow, I have never seen one."),
        ("s2", "Bob", "The meteor shower was on the news too."),
        ("s2", "Alice", "I started a pottery class on Monday."),
    ]
    mem.add_many(
        [
            Turn("u", s, "user", text, speaker=who, created_at=T0 + timedelta(minutes=i))
            for i, (s, who, text) in enumerate(talk)
        ]
    )
    ids = {t.content: t.id for t in mem.store.iter_turns("u")}
    meteor = ids["At night we lay outside and watched the meteor shower."]
    query = "Yosemite camping trip"
    assert PagingOptions().thread_decay == 0.3  # on by default (chosen leave-one-out)
    # The meteor turn is one of the hash layer's deep hits, as in a large history: no noise cut.
    plain = Pager(
        mem, PagingOptions(cooperative=False, thread_decay=0.0, novelty=0.0, dense_noise_z=0.0)
    ).retrieve("u", query)
    thread = Pager(mem, PagingOptions(cooperative=False, novelty=0.0, dense_noise_z=0.0)).retrieve("u", query)
    before = {c.turn_id: c for c in plain.candidates}
    after = {c.turn_id: c for c in thread.candidates}
    # Alice's next turn (two places on, past Bob's reply) gets a share of the hit's score ...
    assert after[meteor].fused > before[meteor].fused
    assert "neighbour" in after[meteor].scores or after[meteor].reason.startswith("neighbour")
    # ... Bob's turn two places after his own reply does not follow Alice's hit, nor another session's.
    for text in ("Wow, I have never seen one.", "The meteor shower was on the news too."):
        assert after[ids[text]].fused == pytest.approx(before[ids[text]].fused)
    mem.close()


def test_the_deep_rankings_scores_are_the_fused_candidates_scores(tmp_path: Path) -> None:
    """`Retriever.fused_scores` (the pager's deep ranking, no candidates built) scores, orders, cuts
    and excludes exactly as the candidates of `retrieve(hits=...)` do, the soft layer's hits too."""
    mem = build(tmp_path)
    try:
        retriever = mem.retriever
        query = "Who owns the Alpha module, and where is the tea ceremony?"
        layers = retriever.retrieve("u", query, k=8, expand=False, fuse=False).layers
        assert {"bm25", "hash"} <= set(layers) and all(layers.values())
        some = layers["bm25"][0].turn_id
        layers = {**layers, "terms": [h for h in layers["hash"][::-1]]}  # another order, ranks kept
        for k, exclude in ((8, set()), (3, {some}), (1, set())):
            want = retriever.retrieve("u", query, k=k, expand=False, hits=layers, exclude=exclude)
            got = retriever.fused_scores(query, layers, k=k, exclude=exclude)
            assert list(got.items()) == [(c.turn_id, c.fused) for c in want.candidates]
            assert some not in got or not exclude
    finally:
        mem.close()


def test_the_pagers_turn_facts_cache_reads_only_new_turns_and_forgets_deleted_ones(tmp_path: Path) -> None:
    """`Pager._turn_meta` answers as `store.turn_meta` does (unknown ids left out; ids ascending),
    reads the store only for turns it has not seen, and a delete drops what it held."""
    mem = build(tmp_path)
    try:
        pager, store = mem.pager, mem.store
        ids = [t.id for t in store.session_turns("u", "s1") + store.session_turns("u", "s2") if t.id]
        assert len(ids) == 8
        first = pager._turn_meta("u", [*reversed(ids[:5]), 10_000])
        assert first == store.turn_meta("u", ids[:5]) and list(first) == sorted(ids[:5])
        seen: list[int] = []
        real = store.turn_meta

        def counting(user_id: str, turn_ids: Sequence[int]) -> dict[int, tuple[int, str, int, str]]:
            seen.extend(turn_ids)
            return real(user_id, turn_ids)

        store.turn_meta = counting  # type: ignore[method-assign]
        try:
            both = pager._turn_meta("u", set(ids))
        finally:
            del store.turn_meta
        assert sorted(seen) == ids[5:]  # only the turns not seen before
        assert both == store.turn_meta("u", ids) and list(both) == sorted(ids)
        mem.delete_turns("u", [ids[0]])
        assert ids[0] not in pager._turn_meta("u", ids)
    finally:
        mem.close()


def test_query_entities_finds_names_in_english_and_chinese() -> None:
    from memsched.keywords import query_entities

    assert query_entities("What does Melanie like to do with Oliver?") == ["Melanie", "Oliver"]
    assert "Grand Canyon" in query_entities("Would she go to the Grand Canyon again?")
    assert query_entities("what did we talk about yesterday?") == []
    found = query_entities("张伟和李娜在上海做了什么")
    assert "上海" in found and "李娜" in found
    assert "什么" not in found


def _units_memory(tmp_path: Path) -> tuple[Memory, dict[str, int]]:
    mem = Memory(home=tmp_path / "t", embedders={"hash": HashEmbedder()}, page_size=4)  # type: ignore[arg-type]
    talk = [
        ("s1", "Alice", "Our dog Oliver loves chasing the red ball in the park."),
        ("s1", "Bob", "Dogs are such good company."),
        *((f"s{2 + i}", "Bob", f"The weekly report for the project, part {i}.") for i in range(6)),
        ("s9", "Alice", "Oliver chewed my new slippers, the little rascal."),
        ("s9", "Bob", "Ha, that happens with puppies."),
        ("s10", "Alice", "I finished reading a long novel about sailing."),
    ]
    mem.add_many(
        [
            Turn("u", s, "user", text, speaker=who, created_at=T0 + timedelta(minutes=i))
            for i, (s, who, text) in enumerate(talk)
        ]
    )
    maintain_bookmarks(mem, "u")
    return mem, {t.content: t.id for t in mem.store.iter_turns("u") if t.id is not None}


def test_entity_units_lift_the_turns_about_a_named_entity(tmp_path: Path) -> None:
    mem, ids = _units_memory(tmp_path)
    assert PagingOptions().entity_units == 0.0  # off by default (not better held out)
    query = "What does Oliver like to play with?"
    plain = {
        c.turn_id: c for c in Pager(mem, PagingOptions(cooperative=False)).retrieve("u", query).candidates
    }
    units = Pager(mem, PagingOptions(cooperative=False, entity_units=1.0)).retrieve("u", query)
    after = {c.turn_id: c for c in units.candidates}
    about = [ids[t] for t in ids if "Oliver" in t]
    for tid in about:  # every turn naming Oliver is lifted, in whichever session it is
        assert "entity" in after[tid].scores
        assert after[tid].fused > plain[tid].fused
    for text, tid in ids.items():  # and nothing else
        if "Oliver" not in text and tid in after:
            assert "entity" not in after[tid].scores
    assert "units" in units.timings_ms
    mem.close()


def test_session_units_lift_the_best_turns_of_the_nearest_session(tmp_path: Path) -> None:
    mem, ids = _units_memory(tmp_path)
    opts = PagingOptions(cooperative=False, session_units=1.0, session_top=1, unit_turns=2)
    pager = Pager(mem, opts)
    name = next(iter(mem.retriever.embedders))
    sessions, matrix = pager._session_vectors("u", name)
    assert len(sessions) == 9 and matrix.shape[0] == 9  # s1-s7, s9, s10
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    paged = pager.retrieve("u", "the weekly report for the project part 3")
    lifted = [c for c in paged.candidates if "session" in c.scores]
    assert 1 <= len(lifted) <= 2  # only the one best session, only its best turns
    meta = mem.store.turn_meta("u", [c.turn_id for c in lifted])
    assert len({m[1] for m in meta.values()}) == 1
    # ... and it is one of the report's sessions, not the dog's or the novel's (the hash test embedder
    # tells the report's parts apart only by their number, so which part is not asserted).
    reports = {tid for text, tid in ids.items() if text.startswith("The weekly report")}
    assert {c.turn_id for c in lifted} <= reports
    # A new session is a new unit: the cached summaries are rebuilt once a turn is added.
    mem.add_many([Turn("u", "s11", "user", "A brand new topic about gardening.", speaker="Alice")])
    assert len(pager._session_vectors("u", name)[0]) == 10
    mem.close()


def test_a_relevance_floor_leaves_the_budget_unfilled_rather_than_topping_it_up(mem: Memory) -> None:
    # A budget larger than what the question finds is not filled with turns far below the best one
    # (a dinner question drew a science-fiction debate's page-mates in at 0.5 % of the top score).
    assert PagingOptions().floor == 0.01  # on by default
    question = "Who owns the Alpha module?"
    full = mem.pager.with_options(floor=0.0).retrieve("u", question)
    top = max(c.fused for c in full.candidates)
    strict = mem.pager.with_options(floor=0.5).retrieve("u", question)
    kept = [c.turn_id for c in strict.candidates]
    assert kept == [c.turn_id for c in full.candidates if c.fused >= 0.5 * top]
    assert 0 < len(kept) < len(full.candidates)
    assert strict.info["below_floor"] == len(full.candidates) - len(kept)
    # Through the context: the budget is left unfilled, and the trace says how many were dropped.
    mem._pager = mem.pager.with_options(floor=0.5)
    ctx = mem.context("u", question, budget=4000)
    assert ctx.trace["retrieval"]["paging"]["below_floor"] > 0
    assert "Carol will own the Alpha module" in ctx.messages[0]["content"]
    assert "Gion is lovely in the evening." not in ctx.messages[0]["content"]


def test_a_neighbour_by_another_speaker_does_not_inherit_the_named_speakers_focus(tmp_path: Path) -> None:
    """In "What does Alice ...?" Alice's turns count double (the speaker focus); the other side's reply
    next to her hit follows it with a share of her score without that doubling, while her own next
    turn keeps it (`PagingOptions.neighbour_own_focus`). A question naming no speaker: no change."""
    mem = Memory(home=tmp_path / "t", embedders={"hash": HashEmbedder()}, page_size=8)  # type: ignore[arg-type]
    talk = [
        *((f"s{3 + i}", "Carol", f"A short errand to the shop, number {i}.") for i in range(30)),
        ("s1", "Alice", "Our family camping trip to Yosemite was the best weekend."),
        ("s1", "Bob", "Wow, go on!"),
        ("s1", "Alice", "At night we lay outside and watched the meteor shower."),
        ("s2", "Bob", "I started a pottery class on Monday."),
        ("s2", "Alice", "Nice, I prefer painting."),
    ]
    mem.add_many(
        [
            Turn("u", s, "user", text, speaker=who, created_at=T0 + timedelta(minutes=i))
            for i, (s, who, text) in enumerate(talk)
        ]
    )
    ids = {t.content: t.id for t in mem.store.iter_turns("u")}
    head, reply = ids["Our family camping trip to Yosemite was the best weekend."], ids["Wow, go on!"]
    thread = ids["At night we lay outside and watched the meteor shower."]
    assert PagingOptions().neighbour_own_focus is True  # on by default (chosen leave-one-out)
    # No page lift: the reply would share its page's prior, which is not what is measured here.
    base = {"cooperative": False, "novelty": 0.0, "dense_noise_z": 0.0, "floor": 0.0, "page_weight": 0.0}

    def ranked(query: str, own: bool, **more: float) -> dict[int, Candidate]:
        opts = PagingOptions(**base, neighbour_own_focus=own, **more)  # type: ignore[arg-type]
        return {c.turn_id: c for c in Pager(mem, opts).retrieve("u", query).candidates}

    query = "What did Alice say about the Yosemite camping trip?"
    old, new = ranked(query, False), ranked(query, True)
    top = new[head].fused
    assert old[head].fused == pytest.approx(top) and new[head].scores.get("speaker") == 1.0
    decay, boost = PagingOptions().neighbour_decay, 1.0 + PagingOptions().speaker_boost
    # Bob's reply: the head's boosted share before, the share of her score without the boost now
    # (or its own score, found by the query itself, when that is more).
    alone = ranked(query, True, neighbour_decay=0.0, thread_decay=0.0)[reply].fused
    assert old[reply].fused == pytest.approx(max(alone, top * decay))
    assert new[reply].fused == pytest.approx(max(alone, top * decay / boost))
    assert new[reply].fused < old[reply].fused
    # Alice's own next turn (past Bob's reply) keeps the boosted share either way.
    assert new[thread].fused == pytest.approx(old[thread].fused)
    assert new[thread].fused >= top * PagingOptions().thread_decay - 1e-9
    # No speaker named: no focus, nothing to leave out.
    plain = "Yosemite camping trip"
    assert {t: c.fused for t, c in ranked(plain, False).items()} == pytest.approx(
        {t: c.fused for t, c in ranked(plain, True).items()}
    )
    mem.close()
