"""A micro-batcher: embedding calls of concurrent turns share one model call.

Under load, many turns want one short text embedded at the same moment (each message, each reply
after it is sent). One model call on a batch costs less than the same texts one call each (fewer
dispatches, one pass of the weights through the cache), so `MicroBatcher` queues the texts of
concurrent callers and a dispatcher thread takes everything queued (up to `max_batch` texts) as one
call. Nothing a turn waits for waits for a batch to fill: a caller that arrives when the dispatcher
is free is served at once, alone; batches form while the model is busy ("natural batching"), so a
lone turn pays only the hand-off (~0.1 ms) and a crowd shares calls.

One dispatcher by default, not one per core: a MiniLM call streams all the weights (~42 MB) through
the cache whatever its size (a 1-token call costs ~3.5 ms of CPU on a loaded 2-core machine, a
16 x 16-token call ~45 ms), so a second dispatcher that takes half of the queue doubles that fixed
cost. Under the proxy benchmark's 50 clients one dispatcher made 154 calls for 808 texts where two
made 274 for 818, and the server's CPU per turn fell ~10% (BENCHMARKS.md, "Proxy throughput").

Post-reply work (`after_reply()`: a reply's vectors, computed after the client has the reply) is not
waited for by anyone, so it may wait: up to `linger` seconds for company (a turn's message, other
replies) unless `linger_texts` texts are queued. A model call costs a fixed part plus a part per
token, so a reply that shares the next message's call costs about half of a call of its own.

Background work (`embed.base.background`) bypasses the batcher: it runs in small chunks with pauses
so turns go first, and must not join a turn's batch.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, cast, runtime_checkable

import numpy as np

from memsched import affinity
from memsched.embed.base import Embedder, background_pause, query_stand_in

log = logging.getLogger(__name__)

DEFAULT_MAX_BATCH = 32
# How long post-reply texts may wait for company, and how many queued texts dispatch them at once.
DEFAULT_LINGER = 0.050
DEFAULT_LINGER_TEXTS = 8

_thread = threading.local()


@contextmanager
def after_reply() -> Iterator[None]:
    """Mark this thread's embedding calls as post-reply work, which the batcher may hold a moment."""
    previous = getattr(_thread, "after_reply", False)
    _thread.after_reply = True
    try:
        yield
    finally:
        _thread.after_reply = previous


@dataclass
class _Request:
    texts: Sequence[str]
    future: Future[np.ndarray]
    lingers: bool
    at: float = field(default_factory=time.monotonic)


class MicroBatcher:
    """Wraps an `Embedder`; same protocol (`model_id`, `dim`, `batch_size`, `embed`), batched calls.

    `threads` dispatchers (default 1; see above) run model calls; each takes up to `max_batch`
    queued texts. Thread-safe. `close()` stops the dispatchers (calls made
    after it run directly on the wrapped embedder).
    """

    def __init__(
        self,
        inner: Embedder,
        *,
        max_batch: int = DEFAULT_MAX_BATCH,
        threads: int | None = None,
        linger: float = DEFAULT_LINGER,
        linger_texts: int = DEFAULT_LINGER_TEXTS,
    ) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.batch_size = inner.batch_size
        self.max_batch = max(1, max_batch)
        self.linger = max(0.0, linger)
        self.linger_texts = max(1, linger_texts)
        self._queue: deque[_Request] = deque()
        self._queued_texts = 0
        self._waited_for = 0  # queued requests that someone waits on (all but post-reply ones)
        self._holds = 0  # callers queueing several texts that should share one model call (`holding`)
        self._cond = threading.Condition()
        self._closed = False
        self._side: MicroBatcher | None = None  # `side()`, made on first use
        self.calls = 0  # model calls made (a batch is one); with `texts`, the batching's effect
        self.texts = 0
        self.cpu_seconds = 0.0  # the dispatchers' CPU time in those calls (tokenizer, model, pooling)
        n = threads if threads is not None else 1
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
        request = _Request(texts, future, lingers=not urgent and getattr(_thread, "after_reply", False))
        with self._cond:
            if not self._closed:
                if urgent:
                    self._queue.appendleft(request)
                else:
                    self._queue.append(request)
                self._queued_texts += len(texts)
                self._waited_for += not request.lingers
                self._cond.notify()
                return future
        try:
            future.set_result(self.inner.embed(texts))
        except Exception as exc:
            future.set_exception(exc)
        return future

    @contextmanager
    def holding(self) -> Iterator[None]:
        """Within the block, queued texts wait: a caller with several texts to queue (a message and
        its gloss, which are ready at different moments) gets them into one model call instead of a
        call for the first and another for the rest (each call costs a fixed ~20 tokens' worth). Keep
        the block short: every caller of the batcher waits for it to end. Reentrant."""
        with self._cond:
            self._holds += 1
        try:
            yield
        finally:
            with self._cond:
                self._holds -= 1
                self._cond.notify_all()

    def side(self) -> MicroBatcher:
        """A batcher over the same model with a dispatcher of its own (made on first use, closed
        with this one), for texts a turn needs soon but not first: the soft-term layer's query words.

        Queued here they waited for the turn's message call to end and then ran a call of their own
        anyway (a 15-token message and 3-token words are different runs: `plan_calls`), so the layer
        waited for both calls one after the other. On the side dispatcher the words' call runs beside
        the message's, on the other core (the model runs outside the GIL); concurrent turns' words
        still share its calls. The same model and inputs: the same vectors."""
        with self._cond:
            if self._side is None:
                self._side = MicroBatcher(
                    self.inner,
                    max_batch=self.max_batch,
                    threads=1,
                    linger=self.linger,
                    linger_texts=self.linger_texts,
                )
                if self._closed:
                    self._side.close()
            return self._side

    def totals(self) -> tuple[int, int, float]:
        """(calls, texts, dispatcher CPU seconds) of this batcher and its side dispatcher."""
        side = self._side
        if side is None:
            return self.calls, self.texts, self.cpu_seconds
        return self.calls + side.calls, self.texts + side.texts, self.cpu_seconds + side.cpu_seconds

    def close(self) -> None:
        with self._cond:
            self._closed = True
            side = self._side
            self._cond.notify_all()
        for t in self._threads:
            t.join(timeout=5)
        if side is not None:
            side.close()

    def _ready(self) -> bool:
        """Whether the queued requests should go now (else they are all post-reply ones, few and
        young enough to wait for company)."""
        if self._closed:
            return True
        if self._holds:
            return False
        if self._waited_for or self._queued_texts >= self.linger_texts:
            return True
        return time.monotonic() >= self._queue[0].at + self.linger

    def _take(self) -> list[_Request] | None:
        with self._cond:
            while True:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    return None  # closed and drained
                if self._ready():
                    break
                if self._holds:
                    self._cond.wait()  # `holding` notifies when it ends
                    continue
                self._cond.wait(max(0.0, self._queue[0].at + self.linger - time.monotonic()))
            taken = [self._queue.popleft()]
            size = len(taken[0].texts)
            while self._queue and size + len(self._queue[0].texts) <= self.max_batch:
                taken.append(self._queue.popleft())
                size += len(taken[-1].texts)
            self._queued_texts -= size
            self._waited_for -= sum(not r.lingers for r in taken)
            return taken

    def _dispatch(self) -> None:
        affinity.join()  # in `memsched serve`, a core of its own (`memsched.affinity`)
        try:
            self._serve()
        finally:
            affinity.leave()

    def _serve(self) -> None:
        while (taken := self._take()) is not None:
            texts = [text for request in taken for text in request.texts]
            cpu = time.thread_time()
            try:
                matrix = self.inner.embed(texts)
            except BaseException as exc:  # every caller gets the error, the dispatcher lives on
                for request in taken:
                    request.future.set_exception(exc)
                continue
            self.cpu_seconds += time.thread_time() - cpu
            self.calls += 1
            self.texts += len(texts)
            start = 0
            for request in taken:
                request.future.set_result(matrix[start : start + len(request.texts)])
                start += len(request.texts)


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

    def __contains__(self, name: object) -> bool:
        return name in self._parts  # without waiting (Mapping's own reads the vector)

    def ready(self, name: str) -> bool:
        """Whether `name`'s vector can be read without waiting."""
        part = self._parts[name]
        return not isinstance(part, Future) or part.done()

    def __iter__(self) -> Iterator[str]:
        return iter(self._parts)

    def __len__(self) -> int:
        return len(self._parts)


@runtime_checkable
class Submits(Protocol):
    """An embedder that can start a call and return at once (`MicroBatcher`, and a layer such as
    `embed.gloss` whose model sits behind one)."""

    def submit(self, texts: Sequence[str], *, urgent: bool = False) -> Future[np.ndarray]: ...


def embed_soon(embedders: Mapping[str, Embedder], names: Iterable[str], text: str) -> PendingVectors:
    """Start embedding `text` with each named embedder: batched ones (`Submits`) in the background
    (their dispatcher runs the model while the caller goes on), the others (cheap ones) now.

    The batched ones are queued first and together (`MicroBatcher.holding`): layers over one model
    (MiniLM and the gloss layer's MiniLM over a Chinese message's English gloss) share one model
    call instead of one call each, and the cheap ones are computed while the model runs."""
    names = list(names)
    # A layer whose query vector for this text is another named model's (`query_stand_in`: the gloss
    # layer on a text without Chinese searches with its MiniLM vector) shares that one: no call.
    same = stand_ins(embedders, names, text)
    own = [n for n in names if n not in same]
    parts: dict[str, Future[np.ndarray] | np.ndarray] = {}
    batched = [n for n in own if isinstance(embedders[n], Submits) and background_pause() is None]
    with ExitStack() as stack:
        held: set[int] = set()
        for name in batched:
            batcher = _batcher_of(embedders[name])
            if batcher is not None and id(batcher) not in held:
                held.add(id(batcher))
                stack.enter_context(batcher.holding())
        for name in batched:
            parts[name] = cast(Submits, embedders[name]).submit([text], urgent=True)
    for name in own:
        if name not in parts:
            parts[name] = embedders[name].embed([text])[0]
    return PendingVectors({name: parts[same.get(name, name)] for name in names})


def stand_ins(embedders: Mapping[str, Embedder], names: Sequence[str], text: str) -> dict[str, str]:
    """For each of `names` whose query vector of `text` is another of `names`' (`query_stand_in`),
    that other name."""
    by_model = {embedders[n].model_id: n for n in names}
    out: dict[str, str] = {}
    for name in names:
        model_id = query_stand_in(embedders[name], text)
        other = by_model.get(model_id) if model_id is not None else None
        if other is not None and other != name:
            out[name] = other
    return out


def _batcher_of(embedder: Embedder) -> MicroBatcher | None:
    """The batcher whose model calls `embedder`'s texts go to (its own, or that of the model it runs
    over: `embed.gloss`), if any."""
    if isinstance(embedder, MicroBatcher):
        return embedder
    over = getattr(embedder, "over", None)
    return over if isinstance(over, MicroBatcher) else None


def batched(embedder: Embedder) -> Embedder:
    """`embedder` behind a `MicroBatcher` when it asks for one (`micro_batch = True`: models whose
    calls cost much more than their texts, e.g. MiniLM, a remote endpoint), else unchanged."""
    if getattr(embedder, "micro_batch", False):
        return MicroBatcher(embedder)
    return embedder


def batch_all(embedders: Mapping[str, Embedder]) -> tuple[dict[str, Embedder], list[MicroBatcher]]:
    """The layers' embedders with each model behind ONE batcher, and those batchers (to close).

    A layer that runs another layer's model over its own input (`embed.gloss`: MiniLM over English
    glosses; it names the model as `over`) sends its texts to that model's batcher, so a Chinese
    message's gloss and every other turn's text share model calls, instead of a second dispatcher
    paying a call's fixed cost for a text or two at a time (and competing for the cores)."""
    batchers: dict[int, MicroBatcher] = {}

    def batcher(model: Embedder) -> MicroBatcher:
        if id(model) not in batchers:
            batchers[id(model)] = MicroBatcher(model)
        return batchers[id(model)]

    out: dict[str, Embedder] = {}
    for name, embedder in embedders.items():
        over = getattr(embedder, "over", None)
        if over is not None and getattr(over, "micro_batch", False):
            embedder.over = batcher(over)  # type: ignore[attr-defined]
            out[name] = embedder
        elif getattr(embedder, "micro_batch", False):
            out[name] = batcher(embedder)
        else:
            out[name] = embedder
    return out, list(batchers.values())
