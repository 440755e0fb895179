"""WordLlama: static token embeddings (no transformer), shipped inside the `wordllama` wheel.

Fast (well under a millisecond per query) and, unlike MiniLM, trained on a multilingual tokenizer,
so it carries Chinese. Its tokenizer file is only found when `cache_dir` points at the package.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from memsched.embed.base import normalize, register, serial_tokenizers
from memsched.errors import EmbedderError


class WordLlamaEmbedder:
    batch_size = 256

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.model_id = f"wordllama-l2-supercat-{dim}"
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                serial_tokenizers()  # its tokenizer is Hugging Face's too
                try:
                    with _keep_root_logging():
                        import wordllama
                        from wordllama import WordLlama
                except ImportError as exc:
                    raise EmbedderError("the wordllama embedder needs the wordllama package") from exc
                package_dir = Path(wordllama.__file__).parent
                try:
                    self._model = WordLlama.load(dim=self.dim, cache_dir=package_dir, disable_download=True)
                except Exception as exc:
                    raise EmbedderError(f"could not load WordLlama from {package_dir}: {exc}") from exc
            return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._load().embed(list(texts), norm=True, batch_size=self.batch_size)
        return normalize(vectors)


@contextmanager
def _keep_root_logging() -> Iterator[None]:
    """wordllama calls `logging.basicConfig(level=INFO)` on import, which would take over the logging
    of whatever app embeds memsched; undo that."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        for handler in root.handlers[:]:
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)


register("wordllama", lambda cfg: WordLlamaEmbedder())
