"""Contextual vectors: a turn's vector summed with its session neighbours', kept in step incrementally."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from memsched.embed.hashing import HashEmbedder
from memsched.memory import Memory
from memsched.model import Turn
from memsched.retrieve import FusionWeights

T0 = datetime(2024, 5, 1, tzinfo=UTC)


def _turn(session: str, i: int, text: str) -> Turn:
    return Turn(
        "u", session, "user" if i % 2 == 0 else "assistant", text, created_at=T0 + timedelta(minutes=i)
    )


def test_context_vector_is_the_normalised_window_and_follows_new_turns(tmp_path: Path) -> None:
    embedder = HashEmbedder()
    mem = Memory(home=tmp_path / "m", embedders={"hash": embedder}, weights=FusionWeights(context=1.0))
    try:
        texts = ["What did you paint?", "A sunrise over the lake.", "我养了一只猫", "它叫芝麻"]
        turns = [
            _turn("s1", 0, texts[0]),
            _turn("s1", 1, texts[1]),
            _turn("s2", 2, texts[2]),
            _turn("s2", 3, texts[3]),
        ]
        mem.add_many(turns[:3])
        v = embedder.embed([t.text for t in turns])  # what is embedded: "user: ..." / "assistant: ..."
        # The reply alone: its window is (question, reply); the Chinese turn is alone in its session.
        want = (v[0] + v[1]) / np.linalg.norm(v[0] + v[1])
        hits = mem.retriever.context_dense("u", "hash", want, k=3)
        assert hits[0].score > 0.999  # both s1 turns have exactly this context vector
        assert {h.turn_id for h in hits[:2]} == {
            t.id for t in mem.store.iter_turns("u") if t.session_id == "s1"
        }
        alone = mem.retriever.context_dense("u", "hash", v[2], k=1)
        assert alone[0].score > 0.999
        # A new turn in s2 changes the earlier turn's context vector too (incremental update).
        mem.add_many([turns[3]])
        both = (v[2] + v[3]) / np.linalg.norm(v[2] + v[3])
        top = mem.retriever.context_dense("u", "hash", both, k=2)
        assert all(h.score > 0.999 for h in top)
        assert mem.retriever.context_dense("u", "hash", v[2], k=1)[0].score < 0.99
        # The context layer is fused into retrieval when its weight is on, and traced by name.
        result = mem.retriever.retrieve("u", "sunrise lake")
        assert "context:hash" in result.layers
        # Forgetting a turn rebuilds the context vectors without it.
        gone = next(t.id for t in mem.store.iter_turns("u") if t.content == texts[3])
        assert gone is not None
        mem.delete_turns("u", [gone])
        assert gone not in {h.turn_id for h in mem.retriever.context_dense("u", "hash", both, k=10)}
        assert mem.retriever.context_dense("u", "hash", v[2], k=1)[0].score > 0.999
    finally:
        mem.close()


def test_context_layer_is_off_by_default(tmp_path: Path) -> None:
    mem = Memory(home=tmp_path / "m", embedders={"hash": HashEmbedder()})
    try:
        mem.add("u", "s", "user", "hello")
        assert FusionWeights().context == 0.0
        assert not any(k.startswith("context:") for k in mem.retriever.retrieve("u", "hello").layers)
    finally:
        mem.close()
