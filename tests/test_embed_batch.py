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
