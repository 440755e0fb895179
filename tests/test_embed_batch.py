from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from memsched.embed import base
from memsched.embed.batch import MicroBatcher, batched
from memsched.embed.hashing import HashEmbedder
from memsched.errors import EmbedderError


class Slow:
    """A hash embedder whose calls take a while and are recorded, so batches can form and be seen."""

    model_id = "slow-hash"
    dim = 256
    batch_size = 64
    micro_batch = True

    def __init__(self) -> None:
        self.inner = HashEmbedder()
        self.calls: list[int] = []
        self.gate = threading.Event()
        self.fail = False

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.gate.wait(5)
        if self.fail:
            raise EmbedderError("model exploded")
        self.calls.append(len(texts))
        return self.inner.embed(texts)


TEXTS = [f"message {i}: 我的猫叫芝麻 and it likes fish {i}" for i in range(24)]


def test_concurrent_callers_share_calls_and_each_get_their_own_rows() -> None:
    slow = Slow()
    batcher = MicroBatcher(slow, threads=1)
    results: dict[int, np.ndarray] = {}

    def call(i: int) -> None:
        results[i] = batcher.embed([TEXTS[i]])

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(TEXTS))]
    for t in threads:
        t.start()
    slow.gate.set()  # the first call was held: the others queued meanwhile
    for t in threads:
        t.join(10)
    batcher.close()
    expected = HashEmbedder().embed(TEXTS)
    for i in range(len(TEXTS)):
        assert np.allclose(results[i], expected[i : i + 1])
    assert sum(slow.calls) == len(TEXTS)
    assert len(slow.calls) < len(TEXTS)  # at least one call carried several turns' texts
    assert batcher.calls == len(slow.calls) and batcher.texts == len(TEXTS)


def test_an_error_reaches_every_caller_of_the_batch_and_the_batcher_survives() -> None:
    slow = Slow()
    slow.fail = True
    slow.gate.set()
    batcher = MicroBatcher(slow, threads=1)
    with pytest.raises(EmbedderError, match="model exploded"):
        batcher.embed(["hello"])
    slow.fail = False
    assert batcher.embed(["你好", "hello"]).shape == (2, 256)
    batcher.close()
    assert batcher.embed(["after close"]).shape == (1, 256)  # runs directly once closed


def test_background_work_and_bulk_batches_bypass_the_batcher() -> None:
    slow = Slow()
    slow.gate.set()
    batcher = MicroBatcher(slow, max_batch=8, threads=1)
    with base.background(lambda: None):
        batcher.embed(["background chunk"])
    batcher.embed(TEXTS[:10])  # larger than a batch: one direct call
    assert batcher.calls == 0 and slow.calls == [1, 10]
    batcher.close()


def test_only_embedders_that_ask_are_batched() -> None:
    plain = HashEmbedder()
    assert batched(plain) is plain
    wrapped = batched(Slow())
    assert isinstance(wrapped, MicroBatcher)
    assert wrapped.model_id == "slow-hash" and wrapped.dim == 256 and wrapped.micro_batch
    wrapped.close()


def test_memory_batches_minilm_by_default_and_stops_the_batcher_on_close(tmp_path: Any) -> None:
    from memsched.memory import Memory

    mem = Memory(home=tmp_path / "m", embedders="minilm,wordllama")
    minilm = mem.embedders["minilm"]
    assert isinstance(minilm, MicroBatcher) and minilm.model_id == "all-MiniLM-L6-v2"
    assert not isinstance(mem.embedders["wordllama"], MicroBatcher)  # sub-millisecond: not worth it
    mem.close()
    assert not any(t.is_alive() for t in minilm._threads)


def test_embed_soon_returns_before_the_model_runs_and_reads_wait_for_it() -> None:
    from memsched.embed.batch import embed_soon

    slow = Slow()  # held until the gate opens
    batcher = MicroBatcher(slow, threads=1)
    embedders = {"slow": batcher, "hash": HashEmbedder()}
    pending = embed_soon(embedders, ["slow", "hash"], "我的猫叫什么名字 what's my cat called")
    assert set(pending) == {"slow", "hash"} and len(pending) == 2  # known before any vector is
    assert slow.calls == []  # the model has not run: the caller went on
    slow.gate.set()
    expected = HashEmbedder().embed(["我的猫叫什么名字 what's my cat called"])[0]
    assert np.allclose(pending["slow"], expected) and np.allclose(pending["hash"], expected)
    assert slow.calls == [1]
    batcher.close()


def test_context_with_pending_vectors_matches_precomputed_ones(tmp_path: Any) -> None:
    from memsched.memory import Memory

    slow = Slow()
    slow.gate.set()
    mem = Memory(home=tmp_path / "m", embedders={"slow": MicroBatcher(slow, threads=1)})
    mem.add("u", "s1", "user", "My cat is called Sesame, a British shorthair")
    mem.add("u", "s1", "user", "我的猫叫芝麻，是只英短")
    mem.add("u", "s1", "user", "The tax report is due on Friday")
    for question in ("What's my cat called?", "我的猫叫什么？"):
        pending = mem.context("u", question, session_id="s2")
        direct = mem.context(
            "u", question, session_id="s2", query_vectors=mem.retriever.embed_query(question)
        )
        assert pending.messages == direct.messages
        assert "Sesame" in pending.messages[0]["content"] or "芝麻" in pending.messages[0]["content"]
    mem.close()


def test_a_turns_message_goes_ahead_of_replies_waiting_to_be_indexed() -> None:
    seen: list[str] = []

    class Recording(Slow):
        def embed(self, texts: Sequence[str]) -> np.ndarray:
            out = super().embed(texts)
            seen.extend(texts)
            return out

    slow = Recording()
    batcher = MicroBatcher(slow, max_batch=1, threads=1)
    first = batcher.submit(["reply 1"])  # the model is held, so what follows queues
    later = [batcher.submit(["reply 2"]), batcher.submit(["reply 3"])]
    message = batcher.submit(["the next message 下一句"], urgent=True)
    slow.gate.set()
    for f in (first, *later, message):
        f.result(5)
    batcher.close()
    assert seen.index("the next message 下一句") < seen.index("reply 2") < seen.index("reply 3")


def test_post_reply_texts_wait_for_company_and_share_its_call() -> None:
    from memsched.embed.batch import after_reply

    slow = Slow()
    slow.gate.set()
    batcher = MicroBatcher(slow, threads=1, linger=60.0, linger_texts=3)
    with after_reply():
        reply = batcher.submit(["ok: the reply"])
    assert not reply.done()  # alone and not waited for: it waits (here up to a minute) for company
    message = batcher.submit(["the next message"], urgent=True)
    assert message.result(5).shape == reply.result(5).shape == (1, 256)
    assert slow.calls == [2]  # one model call for both
    # Enough post-reply texts go at once, without company.
    with after_reply():
        replies = [batcher.submit([f"reply {i}"]) for i in range(3)]
    for f in replies:
        f.result(5)
    assert slow.calls == [2, 3]
    # Closing sends what still waits.
    with after_reply():
        last = batcher.submit(["the last reply"])
    batcher.close()
    assert last.result(5).shape == (1, 256)
    # Outside post-reply work nothing waits: a lone text goes at once.
    batcher = MicroBatcher(slow, threads=1, linger=60.0)
    assert batcher.embed(["a search query"]).shape == (1, 256)
    batcher.close()


def test_a_layer_over_another_layers_model_shares_its_batcher() -> None:
    from memsched.embed.batch import Submits, batch_all
    from memsched.embed.gloss import GlossEmbedder

    slow, other = Slow(), Slow()
    slow.gate.set()
    other.gate.set()
    embedders, batchers = batch_all({"slow": slow, "gloss": GlossEmbedder(slow), "hash": HashEmbedder()})
    batcher = embedders["slow"]
    gloss = embedders["gloss"]
    assert batchers == [batcher] and isinstance(batcher, MicroBatcher)
    assert isinstance(gloss, GlossEmbedder) and gloss.over is batcher  # one dispatcher for the model
    assert isinstance(gloss, Submits) and not isinstance(embedders["hash"], Submits)
    texts = ["hello there", "我很喜欢吃西红柿"]
    started = gloss.submit(texts, urgent=True)
    rows = started.result(timeout=10)
    assert not rows[0].any()  # no Han characters: a zero row, no model input
    assert np.allclose(rows, GlossEmbedder(other).embed(texts))
    assert batcher.texts == 1 and slow.calls == [1]  # only the gloss went through, in the shared batcher
    batcher.close()
    # Alone (no layer of its own for the model), the gloss layer's model still gets a batcher.
    embedders, batchers = batch_all({"gloss": GlossEmbedder(other)})
    assert len(batchers) == 1 and embedders["gloss"].over is batchers[0]  # type: ignore[attr-defined]
    batchers[0].close()


def test_the_batchers_calls_texts_and_cpu_reach_the_metrics(tmp_path: Any) -> None:
    from memsched.memory import Memory
    from memsched.trace import Metrics

    slow = Slow()
    slow.gate.set()
    batcher = MicroBatcher(slow, threads=1)
    batcher.embed(["one", "two"])
    batcher.embed(["three"])
    assert (batcher.calls, batcher.texts) == (2, 3)  # its CPU is checked on the real model below
    batcher.close()

    mem = Memory(home=tmp_path / "m", embedders="minilm,wordllama")
    try:
        mem.embedders["minilm"].embed(["hello there", "你好"])
        stats = mem.embed_stats()
        assert set(stats) == {"all-MiniLM-L6-v2"}  # WordLlama is not batched
        assert stats["all-MiniLM-L6-v2"]["calls"] == 1 and stats["all-MiniLM-L6-v2"]["texts"] == 2
        assert stats["all-MiniLM-L6-v2"]["cpu_seconds"] > 0.0
        text = Metrics(embed=mem.embed_stats).render().decode()
        assert 'memsched_embed_calls_total{model="all-MiniLM-L6-v2"} 1.0' in text
        assert 'memsched_embed_texts_total{model="all-MiniLM-L6-v2"} 2.0' in text
        assert 'memsched_embed_cpu_seconds_total{model="all-MiniLM-L6-v2"}' in text
    finally:
        mem.close()


def test_a_message_and_its_gloss_share_one_model_call() -> None:
    from memsched.embed.batch import batch_all, embed_soon
    from memsched.embed.gloss import GlossEmbedder

    slow = Slow()
    slow.gate.set()  # the model runs at once: without the hold the message would go alone
    embedders, batchers = batch_all({"slow": slow, "hash": HashEmbedder(), "gloss": GlossEmbedder(slow)})
    message = "我的猫叫什么名字？"
    pending = embed_soon(embedders, ["slow", "hash", "gloss"], message)
    assert list(pending) == ["slow", "hash", "gloss"]  # the caller's order, whatever ran first
    assert np.allclose(pending["slow"], HashEmbedder().embed([message])[0])
    assert np.allclose(pending["gloss"], GlossEmbedder(HashEmbedder()).embed([message])[0])
    assert slow.calls == [2]  # the message and its English gloss in one model call
    # An English message has no gloss: its gloss-layer vector is the model's own vector of it
    # (the glosses are in that model's space). One text, one call.
    english = embed_soon(embedders, ["slow", "hash", "gloss"], "what is my cat called?")
    assert english["slow"].any() and slow.calls == [2, 1]
    assert np.array_equal(english["gloss"], english["slow"])
    batchers[0].close()


def test_a_held_batcher_dispatches_nothing_until_the_hold_ends() -> None:
    import time

    slow = Slow()
    slow.gate.set()
    batcher = MicroBatcher(slow, threads=1)
    with batcher.holding():
        first = batcher.submit(["one"], urgent=True)
        with batcher.holding():  # reentrant
            second = batcher.submit(["two"], urgent=True)
        time.sleep(0.05)  # the dispatcher had every chance to take "one" alone
        assert not first.done() and slow.calls == []
    assert first.result(5).shape == second.result(5).shape == (1, 256)
    assert slow.calls == [2]
    batcher.close()


def test_pending_vectors_say_what_they_hold_without_waiting() -> None:
    from memsched.embed.batch import embed_soon

    slow = Slow()  # held until the gate opens
    batcher = MicroBatcher(slow, threads=1)
    pending = embed_soon({"slow": batcher, "hash": HashEmbedder()}, ["slow", "hash"], "my cat")
    assert "slow" in pending and "other" not in pending  # no wait for the model
    assert pending.ready("hash") and not pending.ready("slow") and slow.calls == []
    slow.gate.set()
    assert pending["slow"].shape == (256,) and pending.ready("slow")
    batcher.close()


def test_dense_layers_with_their_vector_in_search_first_and_fuse_as_before(tmp_path: Any) -> None:
    from memsched.embed.batch import embed_soon
    from memsched.memory import Memory

    slow = Slow()  # held: the "slow" layer's query vector is still computing
    mem = Memory(
        home=tmp_path / "m", embedders={"slow": MicroBatcher(slow, threads=1), "hash": HashEmbedder()}
    )
    slow.gate.set()
    for text in ("My cat is called Sesame", "我的猫叫芝麻", "The tax report is due on Friday"):
        mem.add("u", "s1", "user", text)
    mem.index("u")
    question = "What's my cat called?"
    direct = mem.retriever.retrieve("u", question, query_vectors=mem.retriever.embed_query(question))
    slow.gate.clear()
    calls = len(slow.calls)
    pending = embed_soon(mem.embedders, ["slow", "hash"], question)
    result: list[Any] = []
    worker = threading.Thread(
        target=lambda: result.append(mem.retriever.retrieve("u", question, query_vectors=pending))
    )
    worker.start()
    worker.join(0.5)
    assert worker.is_alive() and len(slow.calls) == calls  # waiting for the model
    slow.gate.set()
    worker.join(10)
    (found,) = result
    timings = list(found.timings_ms)
    assert timings.index("dense:hash") < timings.index("dense:slow")  # the ready layer went first
    assert list(found.layers) == list(direct.layers)  # fused in the usual order
    assert [(c.turn_id, c.fused) for c in found.candidates] == [
        (c.turn_id, c.fused) for c in direct.candidates
    ]
    mem.close()


def test_a_fusion_without_reasons_has_the_same_candidates_and_scores(tmp_path: Any) -> None:
    from memsched.memory import Memory

    mem = Memory(home=tmp_path / "m", embedders={"hash": HashEmbedder()})
    for text in ("My cat is called Sesame", "我的猫叫芝麻", "Sesame likes fish", "The tax report is due"):
        mem.add("u", "s1", "user", text)
    with_reasons = mem.retriever.retrieve("u", "what is my cat called", expand=False)
    bare = mem.retriever.retrieve("u", "what is my cat called", expand=False, reasons=False)
    assert [(c.turn_id, c.fused, c.ranks) for c in bare.candidates] == [
        (c.turn_id, c.fused, c.ranks) for c in with_reasons.candidates
    ]
    assert all(c.reason.startswith("fused: ") for c in with_reasons.candidates)
    assert not any(c.reason for c in bare.candidates)
    mem.close()
