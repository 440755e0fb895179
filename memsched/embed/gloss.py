"""MiniLM over English glosses of Chinese text: the dense layer where Chinese paraphrases meet.

MiniLM is strong in English and weak in Chinese. `memsched.text.gloss` turns Chinese words into
their CC-CEDICT English senses ("我的另一半是谁？" -> "other half spouse"), and this embedder embeds
that English with MiniLM, so a question and a fact that share no Chinese word can still meet in
meaning ("spouse" ~ "boyfriend"). Only text with Han characters has a gloss vector: the stores
select such turns (`han_only`), and any other text gets a zero row, which the retriever skips.

The layer is also the bridge from English to Chinese: a gloss vector lives in MiniLM's space, so
MiniLM's layer searches the gloss rows beside its own (`Retriever.space_of`, each turn by its
nearer row) and an English message reaches Chinese turns that say what it asks ("Who's my
manager?" finds "我老板叫 Grace") with its own MiniLM vector: the gloss of English is the English
itself (`query_stand_in`, for a configuration that searches this layer on its own for English).
Its stored rows stay Chinese turns only.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING

import numpy as np

from memsched.embed.base import Embedder, background_pause, register
from memsched.text.gloss import DEFAULT_SENSES, gloss, has_han

if TYPE_CHECKING:
    from memsched.config import Config


class GlossEmbedder:
    """Wraps an English embedder (MiniLM in the registry): Chinese texts glossed, then embedded.

    `over` is the English model. `embed.batch.batch_all` puts it behind the batcher of the `minilm`
    layer when both are configured, so glosses share that layer's model calls (one dispatcher);
    `submit` then starts a gloss's embedding and returns at once, as the batcher's own does."""

    han_only = True  # the stores hand it only turns with Han characters (Retriever.index_user)

    def __init__(self, inner: Embedder, senses: int = DEFAULT_SENSES) -> None:
        self.over = inner
        self.senses = senses
        self.dim = inner.dim
        self.batch_size = inner.batch_size
        # The gloss settings are part of the model: other settings mean other vectors.
        self.model_id = f"gloss-cedict-s{senses}:{inner.model_id}"

    def query_stand_in(self, text: str) -> str | None:
        """For a text without Han characters (nothing to gloss), the model whose vector is this
        layer's query vector: the English model the glosses are embedded with. A caller that embeds
        the query with that model too (`embed.batch.embed_soon`) reuses its vector."""
        return None if has_han(text) else self.over.model_id

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        rows = [i for i, t in enumerate(texts) if has_han(t)]
        if rows:
            out[rows] = self.over.embed(self._glosses([texts[i] for i in rows]))
        return out

    def _glosses(self, texts: Sequence[str]) -> list[str]:
        """The texts' glosses. Background work (`embed.base.background`) pauses before each: glossing
        is Python holding the GIL (jieba's tagger: ~0.2-0.3 ms a message, ~0.05 once its runs were seen), and a chunk of 32 Chinese
        turns in one go was ~15-35 ms that a turn arriving meanwhile shared the GIL with."""
        pause = background_pause()
        if pause is None:
            return [gloss(t, self.senses) for t in texts]
        out = []
        for text in texts:
            pause()
            out.append(gloss(text, self.senses))
        return out

    def submit(self, texts: Sequence[str], *, urgent: bool = False) -> Future[np.ndarray]:
        """Gloss now, embed in the model's batcher (at once when `over` has none); the future holds
        one row per text (zeros for texts without Han characters)."""
        from memsched.embed.batch import Submits

        out: Future[np.ndarray] = Future()
        rows = [i for i, t in enumerate(texts) if has_han(t)]
        if not rows or not isinstance(self.over, Submits):
            try:
                out.set_result(self.embed(texts))
            except Exception as exc:
                out.set_exception(exc)
            return out
        inner = self.over.submit([gloss(texts[i], self.senses) for i in rows], urgent=urgent)

        def done(got: Future[np.ndarray]) -> None:
            error = got.exception()
            if error is not None:
                out.set_exception(error)
                return
            matrix = np.zeros((len(texts), self.dim), dtype=np.float32)
            matrix[rows] = got.result()
            out.set_result(matrix)

        inner.add_done_callback(done)
        return out


def _factory(cfg: Config) -> GlossEmbedder:
    from memsched.embed.minilm import shared_minilm

    return GlossEmbedder(shared_minilm(cfg))


register("gloss", _factory)
