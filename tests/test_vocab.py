"""The embedded vocabulary (memsched.vocab): stored per user on both backends, forgotten with its
source turns, and the soft-term layer that lets "what sports does Bob play" reach "tennis"."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from memsched.bookmarks import generate_bookmarks, maintain_bookmarks
from memsched.config import Config
from memsched.embed import base
from memsched.embed.hashing import HashEmbedder
from memsched.memory import Memory
from memsched.model import Turn
from memsched.paging import Pager, PagingOptions
from memsched.store import Store, open_store
from memsched.text.gloss import has_han
from memsched.vocab import Vocabulary, embed_vocabulary, soft_hits
from tests.conftest import store_location

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)


def _turns(user: str, rows: list[tuple[str, str]]) -> list[Turn]:
    return [
        Turn(user, "s1", "user", text, speaker=who, created_at=T0 + timedelta(minutes=i))
        for i, (who, text) in enumerate(rows)
    ]


def test_term_vectors_round_trip_and_version(store: Store) -> None:
    stored = store.add_turns(_turns("u", [("Ann", "tennis on Sunday"), ("Ann", "a quiet evening")]))
    a, b = (t.id for t in stored)
    assert a is not None and b is not None
    assert store.term_vectors("u", "m") == ([], pytest.approx(np.zeros((0, 0))))
    v0 = store.term_vector_version("u", "m")
    vec = np.arange(4, dtype=np.float32)
    store.put_term_vectors("u", "m", [("tennis", a, vec), ("evening", b, vec + 1)])
    words, matrix = store.term_vectors("u", "m")
    assert words == ["evening", "tennis"]
    assert matrix.dtype == np.float32 and matrix.shape == (2, 4)
    assert matrix[1].tolist() == vec.tolist()
    v1 = store.term_vector_version("u", "m")
    assert v1 != v0
    store.put_term_vectors("u", "m", [("tennis", a, vec * 2)])  # replaced, not duplicated
    words, matrix = store.term_vectors("u", "m")
    assert words == ["evening", "tennis"] and matrix[1].tolist() == (vec * 2).tolist()
    assert store.term_vector_version("u", "m") != v1
    assert store.term_vectors("u", "other-model")[0] == []
    assert store.term_vectors("v", "m")[0] == []  # per user
    assert store.turn_contents("u", [b, a, 10**9]) == {a: "tennis on Sunday", b: "a quiet evening"}
    assert store.turn_contents("v", [a]) == {}  # another user's turn ids give nothing


def test_forgetting_the_source_turn_deletes_its_terms(store: Store) -> None:
    stored = store.add_turns(_turns("u", [("Ann", "zephyrquill tennis"), ("Ann", "tennis again")]))
    a, b = (t.id for t in stored)
    assert a is not None and b is not None
    vec = np.ones(3, dtype=np.float32)
    store.put_term_vectors("u", "m", [("zephyrquill", a, vec), ("tennis", a, vec), ("again", b, vec)])
    before = store.term_vector_version("u", "m")
    store.forget_turns("u", [a])
    assert store.term_vectors("u", "m")[0] == ["again"]
    assert store.term_vector_version("u", "m") != before
    # A background pass that read the turn before it was forgotten cannot write its terms after.
    store.put_term_vectors("u", "m", [("zephyrquill", a, vec)])
    assert store.term_vectors("u", "m")[0] == ["again"]
    store.forget_user("u")
    assert store.term_vectors("u", "m")[0] == []


def test_background_pass_embeds_new_terms_once_and_refills_after_a_forget(tmp_path: Path) -> None:
    mem = Memory(home=tmp_path / "m", embedders={"hash": HashEmbedder()}, page_size=4)
    try:
        mem.add_many(_turns("u", [("Ann", "tennis on Sunday"), ("Ann", "tennis and swimming")]))
        run = generate_bookmarks(mem, "u")  # the bookmark job embeds its pages' terms
        assert run.trace["terms_embedded"] == 3  # tennis, sunday, swimming
        model = mem.embedders["hash"].model_id
        assert mem.store.term_vectors("u", model)[0] == ["sunday", "swimming", "tennis"]
        assert embed_vocabulary(mem.store, mem.embedders, "u") == 0  # nothing new
        first = next(mem.store.iter_turns("u")).id
        assert first is not None
        mem.store.forget_turns("u", [first])  # "tennis" was first seen there
        assert mem.store.term_vectors("u", model)[0] == ["swimming"]
        # The full pass (maintenance runs it) embeds "tennis" again: the second turn still uses it;
        # "sunday" is gone for good.
        assert embed_vocabulary(mem.store, mem.embedders, "u") == 1
        assert mem.store.term_vectors("u", model)[0] == ["swimming", "tennis"]
        assert maintain_bookmarks(mem, "u")["terms_embedded"] == 0
    finally:
        mem.close()


def test_soft_hits_rank_turns_by_how_many_query_terms_they_instantiate(store: Store) -> None:
    stored = store.add_turns(
        _turns("u", [("Ann", "I love tennis and the beach"), ("Ann", "tennis today"), ("Ann", "a quiet day")])
    )
    both, one, _ = (t.id for t in stored)
    # Hand-made unit vectors: "sport" is close to "tennis", "holiday" to "beach"; nothing else is.
    space = {
        "sport": [1.0, 0.0, 0.0],
        "tennis": [0.8, 0.6, 0.0],
        "holiday": [0.0, 0.0, 1.0],
        "beach": [0.0, 0.6, 0.8],
        "love": [0.0, 1.0, 0.0],
        "today": [0.0, -1.0, 0.0],
        "quiet": [0.0, -1.0, 0.0],
        "day": [-1.0, 0.0, 0.0],
        "like": [0.0, 0.0, -1.0],
    }
    words = sorted(w for w in space if w not in ("sport", "holiday"))
    vocab = Vocabulary.of((1, 1), words, np.array([space[w] for w in words], dtype=np.float32))

    def embed(texts: list[str]) -> np.ndarray:
        return np.array([space[t] for t in texts], dtype=np.float32)

    hits = soft_hits(
        store, "u", "What sport and holiday does Ann like?", vocab, embed,
        skip={"ann"}, threshold=0.7, k=10, exclude=set(),
    )  # fmt: skip
    assert [h.turn_id for h in hits] == [both, one]  # "a quiet day" instantiates nothing
    assert hits[0].score == pytest.approx(0.8 + 0.8)
    assert hits[1].score == pytest.approx(0.8)
    # A higher threshold keeps only exact terms: nothing here says "sport" or "holiday".
    assert (
        soft_hits(store, "u", "sport holiday", vocab, embed, skip=set(), threshold=0.9, k=10, exclude=set())
        == []
    )
    # Speaker names are not expanded, excluded turns are left out.
    excluded = soft_hits(store, "u", "sport", vocab, embed, skip=set(), threshold=0.7, k=10, exclude={both})
    assert [h.turn_id for h in excluded] == [one]


def test_the_pager_layer_with_minilm_finds_instances_of_the_question_word(tmp_path: Path) -> None:
    cfg = Config.load(home=tmp_path / "m", page_size=4)
    mem = Memory(cfg, embedders={"minilm": base.create("minilm", cfg)})
    try:
        rows = [
            ("Bob", "My knee hurts a bit today."),
            ("Bob", "Yesterday I played tennis with my brother."),
            ("Bob", "The weather was grey all week."),
            ("Bob", "I finally fixed the leaking kitchen tap."),
            ("Bob", "I joined a volleyball team at work."),
            ("Bob", "We watched a documentary about whales."),
        ]
        mem.add_many(_turns("u", rows))
        maintain_bookmarks(mem, "u")
        query = "What sports does Bob play?"
        assert PagingOptions().terms is True  # on by default (chosen leave-one-out)
        on = Pager(mem, PagingOptions(cooperative=False)).retrieve("u", query)
        off = Pager(mem, PagingOptions(cooperative=False, terms=False)).retrieve("u", query)
        assert "terms" in on.layers and "terms" not in off.layers
        text = {t.id: t.content for t in mem.store.iter_turns("u")}
        found = {text[h.turn_id] for h in on.layers["terms"]}
        assert found == {rows[1][1], rows[4][1]}  # tennis, volleyball: no word in common with "sports"
        assert "terms" in on.timings_ms
        # Fused in, the layer lifts the turn with no word in common with the question.
        volleyball = next(t for t, c in text.items() if c == rows[4][1])

        def rank(result: object) -> int:
            order = [c.turn_id for c in result.candidates]  # type: ignore[attr-defined]
            return order.index(volleyball) if volleyball in order else 10**6  # not found at all

        assert rank(on) < rank(off)
    finally:
        mem.close()


class _Counting(HashEmbedder):
    """A hash embedder that records every text it is asked to embed."""

    def __init__(self) -> None:
        super().__init__(dim=32)
        self.model_id = "counting-32"
        self.seen: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.seen.extend(texts)
        return super().embed(texts)


def test_word_vectors_are_embedded_once_per_process_and_dropped_after_a_forget(tmp_path: Path) -> None:
    from memsched import vocab

    vocab.clear_caches()
    emb = _Counting()
    first = vocab.embed_words(emb, ["tennis", "yoga", "tennis"])
    again = vocab.embed_words(emb, ["yoga", "tennis"])  # another user's query: nothing new to embed
    assert emb.seen == ["tennis", "yoga"]
    assert np.allclose(first[0], first[2]) and np.allclose(again[1], first[0])
    mem = Memory(home=tmp_path, embedders="hash")
    mem.forget_caches("u")  # after a hard delete the cached words (users' text) are gone too
    vocab.embed_words(emb, ["tennis"])
    assert emb.seen == ["tennis", "yoga", "tennis"]


class _Gated(_Counting):
    """A counting embedder whose calls wait until `go` is set (to see what happens meanwhile)."""

    def __init__(self) -> None:
        super().__init__()
        self.go = threading.Event()

    def embed(self, texts: list[str]) -> np.ndarray:
        assert self.go.wait(10)
        return super().embed(texts)


def _settled(batcher: object, timeout: float = 10.0) -> None:
    """Wait until no query-term batch is in flight (their futures' callbacks have run)."""
    from memsched import vocab

    deadline = time.monotonic() + timeout
    while vocab._INFLIGHT and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not vocab._INFLIGHT


def test_started_query_terms_enter_the_word_cache_unread_but_not_across_a_forget() -> None:
    from memsched import vocab
    from memsched.embed.batch import MicroBatcher

    vocab.clear_caches()
    inner = _Gated()
    batcher = MicroBatcher(inner)
    try:
        first = vocab.TermVectors(batcher)
        first.start(["tennis", "yoga", "tennis"])
        second = vocab.TermVectors(batcher)  # a concurrent query: shares the batch in flight
        second.start(["yoga", "golf"])
        inner.go.set()
        assert np.allclose(second(["yoga"]), first(["yoga"]))
        _settled(batcher)
        assert sorted(inner.seen) == ["golf", "tennis", "yoga"]
        # Words started but never read (the soft layer had nothing to do) are in the cache too.
        vocab.embed_words(batcher, ["tennis", "golf"])
        assert sorted(inner.seen) == ["golf", "tennis", "yoga"]
        # A forget while a batch is in flight: its words do not come back into the cache.
        inner.go.clear()
        vocab.TermVectors(batcher).start(["swimming"])
        vocab.clear_caches()
        inner.go.set()
        _settled(batcher)
        vocab.embed_words(batcher, ["swimming"])
        assert inner.seen.count("swimming") == 2
    finally:
        batcher.close()


def test_no_query_term_is_embedded_for_a_user_without_a_vocabulary(tmp_path: Path) -> None:
    from memsched import vocab
    from memsched.embed.batch import MicroBatcher

    vocab.clear_caches()
    inner = _Counting()
    mem = Memory(home=tmp_path / "m", embedders={"count": MicroBatcher(inner)}, page_size=4)
    try:
        mem.add_many(_turns("u", [("Bob", "Yesterday I played tennis."), ("Bob", "A grey week.")]))
        pager = Pager(mem, PagingOptions(cooperative=False))
        query = "What sports does Bob play?"
        inner.seen.clear()
        result = pager.retrieve("u", query)
        assert "terms" not in result.layers
        # The query itself and, for the dense layers, the query without the speaker it names (Pager.
        # _dense_vectors); none of its terms: there is nothing to expand into.
        assert sorted(inner.seen) == sorted([query, "What sports does play?"])
        maintain_bookmarks(mem, "u")  # now the user has a vocabulary
        inner.seen.clear()
        pager.retrieve("u", query)
        assert "sports" in inner.seen
    finally:
        mem.close()


def _reference_soft_scores(
    store: Store, user: str, weight: list[dict[str, float]], ids: list[int]
) -> dict[int, float]:
    """The soft score as first written (every query term's expansions intersected with the turn's terms)."""
    from memsched.text.segment import terms

    out: dict[int, float] = {}
    for tid, content in store.turn_contents(user, ids).items():
        have = set(terms(content))
        score = 0.0
        for w in weight:
            common = have.intersection(w)
            if common:
                score += max(w[x] for x in common)
        if score > 0:
            out[tid] = score
    return out


def test_soft_scores_equal_the_plain_definition(store: Store) -> None:
    rows = [
        ("Ann", "tennis tennis and the beach in June"),
        ("Ann", "swimming at the beach, then volleyball"),
        ("Ann", "a quiet day at home"),
        ("Ann", "我周末去打网球，然后去海边游泳"),
        ("Ann", "volleyball tennis swimming beach holiday"),
    ]
    stored = store.add_turns(_turns("u", rows))
    ids = [t.id for t in stored if t.id is not None]
    rng = np.random.default_rng(7)
    words = [
        "tennis",
        "beach",
        "june",
        "swimming",
        "volleyball",
        "quiet",
        "day",
        "home",
        "网球",
        "海边",
        "游泳",
    ]
    matrix = rng.normal(size=(len(words), 8)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    vocab = Vocabulary.of((1, 1), words, matrix)
    space = dict(zip(words, matrix, strict=True))

    def embed(texts: list[str]) -> np.ndarray:
        return np.array([space.get(t, matrix[0]) for t in texts], dtype=np.float32)

    query = "tennis beach swimming 网球 day"
    hits = soft_hits(store, "u", query, vocab, embed, skip=set(), threshold=-1.0, k=10, exclude=set())
    # threshold -1: every vocabulary word expands every query term (negative similarities included)
    sims = np.einsum("qd,vd->qv", embed(query.split()), matrix)
    weight = []
    for i, t in enumerate(query.split()):
        row = sims[i]
        idx = np.argsort(-row, kind="stable")[:24]
        weight.append({**{words[j]: float(row[j]) for j in idx}, t: 1.0})
    expected = _reference_soft_scores(store, "u", weight, ids)
    assert hits and {h.turn_id: h.score for h in hits} == expected  # exactly: same sums in the same order
    assert [h.turn_id for h in hits] == sorted(expected, key=lambda t: (-expected[t], t))


def test_term_postings_take_in_new_turns_and_start_over_after_a_delete(store: Store) -> None:
    from memsched.vocab import TermPostings

    first = store.add_turns(_turns("u", [("Ann", "tennis on Sunday"), ("Ann", "tennis and swimming")]))
    store.add_turns(_turns("v", [("Bob", "tennis with Bob")]))  # another user's turn is never a candidate
    a, b = (t.id for t in first)
    postings = TermPostings("u")
    postings.refresh(store)
    tennis = [{"tennis": 1.0}]
    assert postings.score(tennis, set()) == [(1.0, a), (1.0, b)]
    (c,) = store.add_turns(
        [
            Turn(
                "u",
                "s2",
                "user",
                "more tennis, and swimming",
                speaker="Ann",
                created_at=T0 + timedelta(days=1),
            )
        ]
    )
    assert postings.score(tennis, set()) == [(1.0, a), (1.0, b)]  # not refreshed yet
    held = postings.nbytes
    postings.refresh(store)
    assert len(postings) == 3 and postings.nbytes > held > 0  # weighed by the pager's bounded cache
    # Summed over the query terms: "tennis" and "swimming" both instantiated ranks first.
    both = [{"tennis": 1.0}, {"swimming": 0.75}]
    assert postings.score(both, set()) == [(1.75, b), (1.75, c.id), (1.0, a)]
    assert postings.score(both, {b}) == [(1.75, c.id), (1.0, a)]
    assert postings.score(both, set(), k=2) == [(1.75, b), (1.75, c.id)]  # the best two, in order
    # A delete this index was not told of (another process's) shows in the turn count: rebuilt.
    store.delete_turns("u", [b])
    postings.refresh(store)
    assert len(postings) == 2
    assert postings.score(both, set()) == [(1.75, c.id), (1.0, a)]


def test_the_pager_drops_a_users_postings_on_every_forget_path(mem: Memory) -> None:
    from memsched.forget import forget

    mem.add_many(
        _turns("u", [("Bob", "I played tennis."), ("Bob", "A grey week."), ("Bob", "tennis again, and golf")])
    )
    maintain_bookmarks(mem, "u")
    pager = mem.pager
    query = "Does Bob play tennis?"

    def soft_ids() -> set[int]:
        return {h.turn_id for h in pager.retrieve("u", query).layers.get("terms", [])}

    ids = [t.id for t in mem.store.iter_turns("u") if t.id is not None]
    assert soft_ids() == {ids[0], ids[2]}
    assert "u" in pager._postings
    mem.delete_turns("u", [ids[0]])
    assert "u" not in pager._postings
    assert soft_ids() == {ids[2]}
    forget(mem, "u", turn_ids=[ids[2]])
    assert "u" not in pager._postings
    assert soft_ids() == set()
    mem.add_many(_turns("u", [("Bob", "tennis on Monday")]))
    (new,) = (t.id for t in mem.store.iter_turns("u") if t.content == "tennis on Monday")
    assert soft_ids() == {new}  # a new turn is a candidate on the next query
    mem.delete_user("u")
    assert "u" not in pager._postings


class _MessageGated(_Counting):
    """A counting embedder whose calls with a message in them wait until `go` is set; word calls don't."""

    def __init__(self) -> None:
        super().__init__()
        self.go = threading.Event()
        self.message_started = threading.Event()

    def embed(self, texts: list[str]) -> np.ndarray:
        if any(" " in t for t in texts):
            self.message_started.set()
            assert self.go.wait(10)
        return super().embed(texts)


def test_query_terms_are_embedded_beside_a_message_call_in_flight_not_behind_it() -> None:
    from memsched import vocab
    from memsched.embed.batch import MicroBatcher

    vocab.clear_caches()
    inner = _MessageGated()
    batcher = MicroBatcher(inner)
    try:
        message = batcher.submit(["What sports does Bob play?"], urgent=True)
        assert inner.message_started.wait(10)  # the dispatcher is inside the message's call
        words = vocab.TermVectors(batcher)
        words.start(["sports", "play"])
        # Queued behind the message's call, these would wait for `go`; beside it they come now.
        future, _ = words._pending["sports"]
        assert future.result(timeout=10).shape == (2, inner.dim)
        assert not message.done()
        assert np.allclose(words(["play"])[0], inner.embed(["play"])[0])
        inner.go.set()
        assert message.result(timeout=10).shape == (1, inner.dim)
        assert batcher.totals()[:2] == (2, 3)  # the side dispatcher's call counts with the batcher's
    finally:
        inner.go.set()
        batcher.close()
    side = batcher.side()  # closed with its batcher: calls now run directly
    assert side.submit(["after"]).result(timeout=10).shape == (1, inner.dim)


def _bookmark_page(mem: Memory, user: str) -> int:
    """Run the bookmark job of the user's first page through a worker; returns the page id."""
    from memsched.jobs.queue import Job, JobQueue
    from memsched.jobs.worker import Worker

    page = mem.store.pages(user)[0].id
    assert page is not None
    queue = JobQueue(mem.store, backoff_base=0.0)
    queue.enqueue([Job(kind="bookmark", user_id=user, payload={"page_id": page})])
    assert Worker(mem, queue=queue, llm=None, poll=0.01).drain(timeout=30) >= 1
    return page


_TENNIS = [
    ("Bob", "I played tennis."),
    ("Bob", "A grey week."),
    ("Bob", "tennis again, and golf"),
    ("Bob", "golf"),
]


def test_a_bookmark_job_builds_the_term_postings_where_queries_are_served(
    mem: Memory, tmp_path: Path
) -> None:
    """The first query after a user gets a vocabulary used to build their postings inside its turn;
    the bookmark job builds them, in a process that serves queries, and the layer finds the same."""
    mem.add_many(_turns("u", _TENNIS))
    query = "Does Bob play tennis?"
    assert "terms" not in mem.pager.retrieve("u", query).layers  # no vocabulary yet: no layer, no postings
    assert "u" not in mem.pager._postings
    _bookmark_page(mem, "u")
    assert "u" in mem.pager._postings and len(mem.pager._postings.get("u") or []) == 4
    warmed = mem.pager.retrieve("u", query).layers["terms"]
    cold = Pager(mem).retrieve("u", query).layers["terms"]  # its own caches: builds them in the query
    assert warmed and [(h.turn_id, h.score) for h in warmed] == [(h.turn_id, h.score) for h in cold]
    assert mem.pager.warm_terms("u") is False  # held already: not built again

    # A process that has served no query (a `memsched worker`) builds none.
    other = Memory(home=tmp_path / "other", embedders="hash", page_size=4)
    try:
        other.add_many(_turns("v", _TENNIS))
        _bookmark_page(other, "v")
        assert other._pager is None
    finally:
        other.close()


def test_a_background_postings_build_pauses_for_turns_and_is_dropped_after_a_forget(mem: Memory) -> None:
    from memsched import vocab

    rows = [("Bob", f"tennis match number {i}") for i in range(2 * vocab.PAUSE_EVERY + 5)]
    mem.add_many(_turns("u", rows))
    maintain_bookmarks(mem, "u")  # the vocabulary
    pager = mem.pager
    pauses: list[int] = []
    with base.background(lambda: pauses.append(1)):
        assert pager.warm_terms("u") is True
    assert len(pauses) >= 4  # reading and segmenting, each every PAUSE_EVERY turns
    assert len(pager._postings.get("u") or []) == len(rows)

    # A forget while the build waits in a pause: what it built is not put in.
    mem.forget_caches("u")
    assert "u" not in pager._postings
    first = next(t.id for t in mem.store.iter_turns("u"))

    def delete_then_go_on() -> None:  # a turn of another thread deletes one while the build waits
        if not pauses:
            pauses.append(1)
            other = threading.Thread(target=mem.delete_turns, args=("u", [first]))
            other.start()
            other.join()

    pauses.clear()
    with base.background(delete_then_go_on):
        assert pager.warm_terms("u") is False
    assert "u" not in pager._postings
    hits = pager.retrieve("u", "tennis").layers.get("terms", [])
    assert hits and first not in {h.turn_id for h in hits}


def test_chinese_words_expand_by_meaning_not_into_every_other_chinese_word(tmp_path: Path) -> None:
    # MiniLM reads English only: it gave "吃饭", "冷战" and "推荐" one vector, so every Chinese
    # query word expanded into the user's whole Chinese vocabulary and a dinner question drew a
    # science-fiction debate into its context through this layer alone.
    cfg = Config.load(home=tmp_path / "m", page_size=4)
    mem = Memory(cfg, embedders={"minilm": base.create("minilm", cfg)})
    try:
        debate = [
            ("Lin", "黑暗森林法则说宇宙里每个文明都是带枪的猎人。"),
            ("Lin", "可是人类历史上也有冷战，最后也没有互相毁灭啊。"),
            ("Lin", "罗辑的威慑其实就是利用了猜疑链。"),
            ("Lin", "技术爆炸让弱小的文明也可能突然变成威胁。"),
        ]
        food = [
            ("Lin", "我最爱吃泰式绿咖喱，辣一点更好。"),
            ("Lin", "周末想做一顿好吃的晚饭。"),
        ]
        mem.add_many(_turns("u", [*debate, *food]))
        maintain_bookmarks(mem, "u")
        found = Pager(mem, PagingOptions(cooperative=False)).retrieve("u", "今晚吃什么好呢？")
        text = {t.id: t.content for t in mem.store.iter_turns("u")}
        soft = {text[h.turn_id] for h in found.layers.get("terms", [])}
        assert not soft & {c for _, c in debate}, soft
    finally:
        mem.close()


def test_a_chinese_word_is_embedded_through_its_english_senses_for_an_english_only_model() -> None:
    from memsched import vocab
    from memsched.embed.batch import MicroBatcher

    class _English(_Counting):
        english_only = True

    vocab.clear_caches()
    english = _English()
    batcher = MicroBatcher(english)
    try:
        assert vocab.english_only(batcher) and not vocab.english_only(_Counting())
        assert "takeout" in (vocab.word_text("外卖", True) or "")
        assert vocab.word_text("外卖", False) == "外卖"  # a model that reads Chinese gets the word
        assert vocab.word_text("dinner", True) == "dinner"
        assert vocab.word_text("罗辑", True) is None  # a name the dictionary lacks: nothing to embed
        rows = vocab.embed_words(batcher, ["外卖", "罗辑", "dinner"])
        assert not np.any(rows[1]) and np.any(rows[0]) and np.any(rows[2])
        assert not any(has_han(t) for t in english.seen)
        # Query terms started beside a message's call take the same path.
        english.seen.clear()
        started = vocab.TermVectors(batcher)
        started.start(["晚饭", "程心罗辑", "lunch"])
        got = started(["晚饭", "lunch"])
        assert np.any(got[0]) and np.any(got[1])
        assert not any(has_han(t) for t in english.seen) and "lunch" in english.seen
    finally:
        batcher.close()
        vocab.clear_caches()


def test_chinese_term_vectors_stored_before_are_dropped_once_on_upgrade(backend: str, tmp_path: Path) -> None:
    where = store_location(backend, tmp_path)
    s = open_store(where, page_size=4)
    (turn,) = s.add_turns(_turns("u", [("Lin", "今晚吃饭 dinner")]))
    assert turn.id is not None
    vec = np.ones(4, dtype=np.float32)
    s.put_term_vectors("u", "m", [("吃饭", turn.id, vec), ("dinner", turn.id, vec), ("今晚", turn.id, vec)])
    with s.transaction() as tx:  # as a store written before the migrations
        tx.execute(
            "DELETE FROM migrations WHERE name IN ('013_han_terms_glossed', '014_han_terms_reglossed')"
        )
    s.close()
    again = open_store(where, page_size=4)
    try:
        assert again.term_vectors("u", "m")[0] == ["dinner"]
        assert again.turn_count("u") == 1
    finally:
        again.close()


def test_a_glossed_word_has_no_pronunciation_notes_or_surname_entries() -> None:
    """玩 was glossed "play Taiwan pr" and 诸葛 "two-character surname Zhuge Taiwan pr": on the notes
    alone MiniLM put them at 0.58, and "周末去哪儿玩" expanded 玩 into a history debate's 诸葛亮."""
    from memsched.text.gloss import gloss, lookup

    assert gloss("玩") == "play have fun"
    assert lookup("诸葛") == ()  # a surname has no sense to expand into
    assert "surname" not in gloss("林") and "forest" in gloss("林")
    assert not [w for w in ("玩", "诸葛", "林", "周", "了解") if "pr" in gloss(w).split()]


def test_memory_refresh_takes_new_turns_into_held_postings_only(mem: Memory) -> None:
    """`Memory.refresh` (after a reply) brings the user's held term postings up to the store, so the
    next query's check finds them current; a user whose postings are not held gets none built."""
    mem.add_many(_turns("u", _TENNIS))
    mem.pager.retrieve("u", "Does Bob play tennis?")  # a process that serves queries
    _bookmark_page(mem, "u")
    held = mem.pager._postings.get("u")
    assert held is not None and len(held) == 4
    mem.add_many(_turns("u", [("Bob", "tennis on Monday"), ("Bob", "and golf on Sunday")]))
    assert len(held) == 4
    mem.refresh("u")
    assert len(held) == 6 and held.version == (mem.store.max_turn_id("u"), 6)
    mem.add_many(_turns("v", _TENNIS))
    mem.refresh("v")
    assert "v" not in mem.pager._postings
