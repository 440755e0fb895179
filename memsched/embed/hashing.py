"""A deterministic bag-of-words embedder for tests and demos; no model, no randomness."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from memsched.embed.base import normalize, register
from memsched.text.segment import terms


class HashEmbedder:
    """Hashes each search term into one of `dim` buckets (signed). Same text, same vector, always."""

    batch_size = 256

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.model_id = f"hash-{dim}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for term in terms(text):
                digest = hashlib.blake2b(term.encode("utf-8"), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                out[row, value % self.dim] += 1.0 if (value >> 63) & 1 else -1.0
        return normalize(out)


register("hash", lambda cfg: HashEmbedder())
