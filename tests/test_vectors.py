from __future__ import annotations

import numpy as np

from memsched.embed.base import normalize
from memsched.store import Store
from memsched.vectors import VectorIndex


def _data(n: int, dim: int = 16) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    return np.arange(1, n + 1, dtype=np.int64), normalize(rng.normal(size=(n, dim)))


def test_exact_search_matches_brute_force() -> None:
    ids, m = _data(500)
    index = VectorIndex()
    index.add(ids[:200], m[:200])
    index.add(ids[200:], m[200:])
    q = m[123]
    hits = index.search(q, 5)
    expected = ids[np.argsort(-(m @ q))[:5]]
    assert [h.turn_id for h in hits] == list(expected)
    assert hits[0].score > 0.999 and hits[0].rank == 1


def test_ann_index_above_threshold_finds_nearest() -> None:
    ids, m = _data(300)
    index = VectorIndex(ann_threshold=100)
    index.add(ids, m)
    assert index.uses_ann
    hits = index.search(m[42], 3)
    assert hits[0].turn_id == ids[42]
    index.remove({int(ids[42])})
    assert all(h.turn_id != ids[42] for h in index.search(m[42], 3))


def test_index_sees_vectors_embedded_out_of_order(store: Store) -> None:
    """A turn embedded after a later turn was indexed still reaches the in-memory index."""
    from memsched.embed.hashing import HashEmbedder
    from memsched.model import Turn
    from memsched.retrieve import Retriever

    emb = HashEmbedder()
    r = Retriever(store, {"hash": emb})
    a, b = store.add_turns([Turn("u", "s", "user", "zebra stripes"), Turn("u", "s", "user", "lion mane")])
    r.put_vector("u", "hash", b.text, emb.embed([b.text])[0])  # the later turn first
    assert [h.turn_id for h in r.dense("u", "hash", emb.embed(["lion"])[0])] == [b.id]
    r.put_vector("u", "hash", a.text, emb.embed([a.text])[0])  # then the earlier one
    hits = r.dense("u", "hash", emb.embed(["zebra"])[0])
    assert hits[0].turn_id == a.id
    # a new turn whose text already has a vector is searchable at once
    (c,) = store.add_turns([Turn("u", "s2", "user", "zebra stripes")])
    assert c.id in {h.turn_id for h in r.dense("u", "hash", emb.embed(["zebra"])[0])}


def test_growing_index_keeps_every_row() -> None:
    index = VectorIndex()
    ids, m = _data(300)
    for start in range(0, 300, 7):
        index.add(ids[start : start + 7], m[start : start + 7])
    index.add(ids[:10], m[:10])  # repeats are ignored
    assert len(index) == 300
    assert [h.turn_id for h in index.search(m[299], 1)] == [300]
