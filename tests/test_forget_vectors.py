"""Forgetting a turn while an embedding pass has it in hand: the pass read the turn, the user forgot
it, then the pass's vectors came back. The vector of the forgotten text must not be written (an
orphan row no turn points at, holding what the user asked to forget). The embedder forgets the turn
itself, the moment the pass hands it the texts, so the order is fixed without any waiting."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from conftest import raw_sql

from memsched import Memory
from memsched.embed.hashing import HashEmbedder
from memsched.forget import forget


class ForgetsWhileEmbedding(HashEmbedder):
    """A hashing embedder that runs `hook` once, between the pass's read and its write."""

    hook: Callable[[], object] | None = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        hook, self.hook = self.hook, None
        if hook is not None:
            hook()
        return super().embed(texts)


def test_an_embedding_pass_writes_no_vector_for_a_turn_forgotten_meanwhile(
    backend: str, tmp_path: Path
) -> None:
    embedder = ForgetsWhileEmbedding()
    memory = Memory(home=tmp_path / "h", embedders={"hash": embedder}, page_size=4)
    try:
        kept = memory.add("u", "s", "user", "I like green tea in the morning", index=False)
        secret = memory.add("u", "s", "user", "my locker code is 4417, do not tell anyone", index=False)
        assert kept.id is not None and secret.id is not None
        embedder.hook = lambda: forget(memory, "u", turn_ids=[secret.id])
        memory.index("u")
        assert embedder.hook is None  # the pass embedded both texts, the secret's after its forget
        hashes = {
            r[0] for r in raw_sql(memory.store, "SELECT content_hash FROM turns WHERE user_id = ?", ("u",))
        }
        stored = raw_sql(memory.store, "SELECT content_hash FROM embeddings WHERE user_id = ?", ("u",))
        assert stored and {r[0] for r in stored} == hashes  # the kept turn's vector, no orphan
        assert [h.turn.id for h in memory.search("u", "locker code 4417", limit=5)] in ([], [kept.id])
    finally:
        memory.close()
