"""Per-user in-memory state is bounded: LRU by count and by weight, reloaded from the store."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from memsched.cache import LRUCache
from memsched.memory import Memory


def test_lru_evicts_least_recently_used_by_count() -> None:
    cache: LRUCache[str, int] = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # a is now the most recent
    cache.put("c", 3)
    assert "b" not in cache and list(cache) == ["a", "c"]
    assert cache.evictions == 1


def test_lru_caps_total_weight_but_keeps_the_entry_in_use() -> None:
    cache: LRUCache[str, np.ndarray] = LRUCache(100, max_weight=1000, weigh=lambda a: a.nbytes)
    cache.put("a", np.zeros(100, dtype=np.float32))  # 400 bytes
    cache.put("b", np.zeros(100, dtype=np.float32))
    cache.put("c", np.zeros(100, dtype=np.float32))  # 1200 > 1000: a goes
    assert list(cache) == ["b", "c"]
    cache.put("huge", np.zeros(10_000, dtype=np.float32))  # alone over the cap, still kept
    assert list(cache) == ["huge"]
    made = cache.setdefault("d", lambda: np.zeros(1, dtype=np.float32))
    assert made.shape == (1,) and "d" in cache


def test_retriever_memory_follows_active_users_and_reloads_evicted_ones(tmp_path: Path) -> None:
    mem = Memory(home=tmp_path, embedders="hash", vector_cache_mb=1, user_cache_size=3)
    try:
        for u in range(6):
            for i in range(40):
                mem.add(f"user{u}", "s1", "user", f"user {u} likes dish number {i} with extra words {u * i}")
        for u in range(6):
            assert mem.search(f"user{u}", "dish number 7")
        indexes = mem.retriever._indexes
        assert len(indexes) <= 3
        assert indexes.weight() <= 1024 * 1024 / 2 or len(indexes) == 1
        # an evicted user comes back with all of their vectors
        hits = mem.search("user0", "dish number 7", limit=50)
        assert hits and all(h.turn.user_id == "user0" for h in hits)
        assert len(mem.retriever._index("user0", "hash")) == 40
    finally:
        mem.close()
