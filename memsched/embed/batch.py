"""A micro-batcher: embedding calls of concurrent turns share one model call.

Under load, many turns want one short text embedded at the same moment (each message, each reply
after it is sent). One model call on a batch costs less than the same texts one call each (fewer
dispatches, one pass of the weights through the cache), so `MicroBatcher` queues the texts of
concurrent callers and a few dispatcher threads each take everything queued (up to `max_batch`
texts) as one call. Nothing waits for a batch to fill: a caller that arrives when a dispatcher is
free is served at once, alone; batches form only while the model is busy ("natural batching"), so
a lone turn pays only the hand-off (~0.1 ms) and a crowd shares calls.

Background work (`embed.base.background`) bypasses the batcher: it runs in small chunks with pauses
so turns go first, and must not join a turn's batch.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from typing import Any

import numpy as np

from memsched.embed.base import Embedder, background_pause

log = logging.getLogger(__name__)

DEFAULT_MAX_BATCH = 32


class MicroBatcher:
    """Wraps an `Embedder`; same protocol (`model_id`, `dim`, `batch_size`, `embed`), batched calls.

    `threads` dispatchers (default: one per core, at most 2) run model calls in parallel; each
    takes up to `max_batch` queued texts. Thread-safe. `close()` stops the dispatchers (calls made
    after it run directly on the wrapped embedder).
    """

    def __init__(
        self, inner: Embedder, *, max_batch: int = DEFAULT_MAX_BATCH, threads: int | None = None
    ) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.batch_size = inner.batch_size
        self.max_batch = max(1, max_batch)
        self._queue: deque[tuple[Sequence[str], Future[np.ndarray]]] = deque()
        self._cond = threading.Condition()
        self._closed = False
        self.calls = 0  # model calls made (a batch is one); with `texts`, the batching's effect
        self.texts = 0
        n = threads if threads is not None else min(2, os.cpu_count() or 1)
        self._threads = [
            threading.Thread(target=self._dispatch, name=f"memsched-embed-{i}", daemon=True)
            for i in range(max(1, n))
        ]
        for t in self._threads:
            t.start()

    @property
    def dim(self) -> int:
        return self.inner.dim  # read through: the openai embedder learns its width on first use

    @dim.setter
    def dim(self, value: int) -> None:
        self.inner.dim = value

    def __getattr__(self, name: str) -> Any:
        # Attributes of the wrapped embedder (e.g. `backend`) stay readable through the wrapper.
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if background_pause() is not None or len(texts) >= self.max_batch:
            return self.inner.embed(texts)  # background chunks and bulk batches go straight through
        return self.submit(texts).result()

    def submit(self, texts: Sequence[str], *, urgent: bool = False) -> Future[np.ndarray]:
        """Queue `texts` and return at once; the future holds their vectors when the batch is done.
        `urgent` texts (a turn's message, which the turn waits for) go to the front of the queue,
        ahead of replies being indexed after their turn."""
        future: Future[np.ndarray] = Future()
        with self._cond:
            if not self._closed:
                if urgent:
                    self._queue.appendleft((texts, future))
                else:
                    self._queue.append((texts, future))
                self._cond.notify()
                return future
        try:
            future.set_result(self.inner.embed(texts))
        except Exception as exc:
            future.set_exception(exc)
        return future

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        for t in self._threads:
            t.join(timeout=5)

    def _take(self) -> list[tuple[Sequence[str], Future[np.ndarray]]] | None:
        with self._cond:
            while not self._queue and not self._closed:
                self._cond.wait()
            if not self._queue:
                return None  # closed and drained
            taken = [self._queue.popleft()]
            size = len(taken[0][0])
            while self._queue and size + len(self._queue[0][0]) <= self.max_batch:
                item = self._queue.popleft()
                taken.append(item)
                size += len(item[0])
            return taken

    def _dispatch(self) -> None:
        while (taken := self._take()) is not None:
            texts = [text for request, _ in taken for text in request]
            try:
                matrix = self.inner.embed(texts)
            except BaseException as exc:  # every caller gets the error, the dispatcher lives on
                for _, future in taken:
                    future.set_exception(exc)
                continue
            self.calls += 1
            self.texts += len(texts)
            start = 0
            for request, future in taken:
                future.set_result(matrix[start : start + len(request)])
                start += len(request)


class PendingVectors(Mapping[str, np.ndarray]):
    """The vectors of one text under several embedders, some still being computed.

    The names are known at once; reading a vector waits for its embedding. Code that starts the
    query's embedding first and reads the vectors only where it needs them (the dense layers, after
    BM25 and the other SQL stages) overlaps the model with the database work.
    """

    def __init__(self, parts: dict[str, Future[np.ndarray] | np.ndarray]) -> None:
        self._parts = parts

    def __getitem__(self, name: str) -> np.ndarray:
        part = self._parts[name]
        if isinstance(part, Future):
            part = self._parts[name] = part.result()[0]
        return part

    def __iter__(self) -> Iterator[str]:
        return iter(self._parts)

    def __len__(self) -> int:
        return len(self._parts)


def embed_soon(embedders: Mapping[str, Embedder], names: Iterable[str], text: str) -> PendingVectors:
    """Start embedding `text` with each named embedder: batched ones in the background (their
    dispatcher runs the model while the caller goes on), the others (cheap ones) now."""
    parts: dict[str, Future[np.ndarray] | np.ndarray] = {}
    for name in names:
        embedder = embedders[name]
        if isinstance(embedder, MicroBatcher) and background_pause() is None:
            parts[name] = embedder.submit([text], urgent=True)
        else:
            parts[name] = embedder.embed([text])[0]
    return PendingVectors(parts)


def batched(embedder: Embedder) -> Embedder:
    """`embedder` behind a `MicroBatcher` when it asks for one (`micro_batch = True`: models whose
    calls cost much more than their texts, e.g. MiniLM, a remote endpoint), else unchanged."""
    if getattr(embedder, "micro_batch", False):
        return MicroBatcher(embedder)
    return embedder
