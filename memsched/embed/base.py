"""The `Embedder` protocol and the registry every implementation (in-tree or third-party) joins."""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from memsched.errors import ConfigError

if TYPE_CHECKING:
    from memsched.config import Config


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors.

    `model_id` names the model and its settings: stored vectors are keyed by it, so a different
    model id means a re-embed. `dim` is the vector width; `batch_size` the preferred batch.
    """

    model_id: str
    dim: int
    batch_size: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A (len(texts), dim) float32 matrix, each row of unit length (zero rows for empty text)."""
        ...


EmbedderFactory = Callable[["Config"], Embedder]


def query_stand_in(embedder: Embedder, text: str) -> str | None:
    """The model id whose vector of `text` is `embedder`'s query vector for it, when the embedder
    has none of its own for such text (`embed.gloss` on text without Chinese: the English model it
    runs over); None otherwise. See `embed.gloss.GlossEmbedder.query_stand_in`."""
    stand_in = getattr(embedder, "query_stand_in", None)
    return stand_in(text) if stand_in is not None else None


def keeps_vector(embedder: Embedder, text: str) -> bool:
    """Whether a turn with this text stores a vector of `embedder`: not for an embedder of Chinese
    text only (`han_only`, `embed.gloss`) when the text has no Chinese, even though its query
    vector for that text may be another model's (`query_stand_in`)."""
    if not getattr(embedder, "han_only", False):
        return True
    from memsched.text.gloss import has_han

    return has_han(text)


_thread = threading.local()


# Background work's pause hook: it returns when the work may go on, True when nothing runs in the
# foreground (a model call started then may be cut short by the next turn, see `preempt_background`),
# anything else when it stopped waiting for a busy foreground (the next call then runs to its end).
Pause = Callable[[], object]


@contextmanager
def background(pause: Pause | None) -> Iterator[None]:
    """Mark this thread's embedding work as background: heavy embedders call `pause()` between
    small chunks, so a turn in flight is not slowed by a long batch (see `ForegroundGate`)."""
    previous = getattr(_thread, "pause", None)
    _thread.pause = pause
    try:
        yield
    finally:
        _thread.pause = previous


def background_pause() -> Pause | None:
    """The pause hook of this thread's background work, or None in the foreground."""
    return getattr(_thread, "pause", None)


class Preemptible(Protocol):
    """A model call's handle that another thread can cut short (ONNX Runtime's `RunOptions`)."""

    terminate: bool


# Background model calls in flight that a turn may cut short.
_preemptible: set[Preemptible] = set()
_preemptible_lock = threading.Lock()


@contextmanager
def preemptible(handle: Preemptible) -> Iterator[None]:
    """Register a background model call for the length of the block (see `preempt_background`)."""
    with _preemptible_lock:
        _preemptible.add(handle)
    try:
        yield
    finally:
        with _preemptible_lock:
            _preemptible.discard(handle)


def preempt_background() -> int:
    """Cut short every preemptible background model call in flight in this process; returns how many.

    Called when a turn starts: a background chunk that started while nothing ran in the foreground
    stops within a node of the model (well under a millisecond) instead of sharing the cores with
    the turn for up to a whole chunk; its embedder waits for the turn and runs the chunk again."""
    with _preemptible_lock:
        for handle in _preemptible:
            handle.terminate = True
        return len(_preemptible)


_REGISTRY: dict[str, EmbedderFactory] = {}


def serial_tokenizers() -> None:
    """Have Hugging Face `tokenizers` (MiniLM's and WordLlama's) tokenise in the calling thread.

    By default its `encode_batch` hands the texts to a pool of one thread per core that spins while
    it waits for work: on two cores, short texts cost ~10% more CPU per MiniLM text (the pool's spin
    and the model's thread losing its core to it; BENCHMARKS.md "Proxy throughput", session 18),
    and a turn's texts are a few dozen tokens. Called before a tokenizer's first use; an explicit
    TOKENIZERS_PARALLELISM in the environment is kept."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def register(name: str, factory: EmbedderFactory) -> None:
    """Make `name` usable in `MEMSCHED_EMBEDDERS`. Third-party embedders call this too."""
    _REGISTRY[name] = factory


def available() -> list[str]:
    load_builtin()
    return sorted(_REGISTRY)


def create(name: str, config: Config) -> Embedder:
    load_builtin()
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise ConfigError(f"unknown embedder {name!r}; choose from {', '.join(sorted(_REGISTRY))}") from None
    return factory(config)


def normalize(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)


# The in-tree implementations. They register themselves the way a third party would (`register` at
# import); this module names them instead of importing them, so the protocol does not depend on them.
BUILTIN_MODULES = (
    "memsched.embed.gloss",
    "memsched.embed.hashing",
    "memsched.embed.minilm",
    "memsched.embed.openai",
    "memsched.embed.wordllama",
)


def load_builtin() -> None:
    """Import (and so register) the in-tree embedders; lazy, so `import memsched` stays fast."""
    for name in BUILTIN_MODULES:
        importlib.import_module(name)
