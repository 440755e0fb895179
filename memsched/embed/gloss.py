"""MiniLM over English glosses of Chinese text: the dense layer where Chinese paraphrases meet.

MiniLM is strong in English and weak in Chinese. `memsched.text.gloss` turns Chinese words into
their CC-CEDICT English senses ("我的另一半是谁？" -> "other half spouse"), and this embedder embeds
that English with MiniLM, so a question and a fact that share no Chinese word can still meet in
meaning ("spouse" ~ "boyfriend"). Only text with Han characters has a gloss vector: the stores
select such turns (`han_only`), and any other text gets a zero row, which the retriever skips.
English stays with MiniLM's own layer, at no extra cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from memsched.embed.base import Embedder, register
from memsched.text.gloss import DEFAULT_SENSES, gloss, has_han

if TYPE_CHECKING:
    from memsched.config import Config


class GlossEmbedder:
    """Wraps an English embedder (MiniLM in the registry): Chinese texts glossed, then embedded."""

    micro_batch = True  # concurrent turns share model calls (embed.batch), as MiniLM's own
    han_only = True  # the stores hand it only turns with Han characters (Retriever.index_user)

    def __init__(self, inner: Embedder, senses: int = DEFAULT_SENSES) -> None:
        self.inner = inner
        self.senses = senses
        self.dim = inner.dim
        self.batch_size = inner.batch_size
        # The gloss settings are part of the model: other settings mean other vectors.
        self.model_id = f"gloss-cedict-s{senses}:{inner.model_id}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        rows = [i for i, t in enumerate(texts) if has_han(t)]
        if rows:
            out[rows] = self.inner.embed([gloss(texts[i], self.senses) for i in rows])
        return out


def _factory(cfg: Config) -> GlossEmbedder:
    from memsched.embed.minilm import shared_minilm

    return GlossEmbedder(shared_minilm(cfg))


register("gloss", _factory)
