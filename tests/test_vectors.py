from __future__ import annotations

import numpy as np

from memsched.embed.base import normalize
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
