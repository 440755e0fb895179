"""WordLlama: static token embeddings (no transformer), shipped inside the `wordllama` wheel.

Fast (well under a millisecond per query) and, unlike MiniLM, trained on a multilingual tokenizer,
so it carries Chinese. Its tokenizer file is only found when `cache_dir` points at the package.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memsched.embed.base import normalize, register
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
                try:
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


register("wordllama", lambda cfg: WordLlamaEmbedder())
