"""Per-user in-memory state is bounded: LRU by count and by weight, reloaded from the store."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from memsched.cache import LRUCache
from memsched.memory import Memory
from memsched.model import Turn


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


def test_lru_weight_follows_puts_pops_evictions_and_growth_in_place() -> None:
    cache: LRUCache[str, list[int]] = LRUCache(3, max_weight=10, weigh=len)
    cache.put("a", [0] * 4)
    cache.put("b", [0] * 4)
    assert cache.weight() == 8
    cache.get("a")  # b is now the least recently used
    grown = cache.setdefault("c", lambda: [0])
    grown.extend([0] * 3)  # grows in place: not seen until trimmed by name
    assert list(cache) == ["b", "a", "c"]
    cache.trim("c")  # 12 > 10: the least recently used goes
    assert list(cache) == ["a", "c"] and cache.evictions == 1
    assert cache.pop("a") == [0] * 4
    assert cache.weight() == 4
    cache.put("d", [0] * 5)
    cache.put("e", [0] * 2)  # 4 + 5 + 2 > 10: c goes, d and e stay
    cache.put("f", [0] * 1)
    assert list(cache) == ["d", "e", "f"] and cache.weight() == 8
    cache.clear()
    assert cache.weight() == 0 and len(cache) == 0


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


def test_incremental_term_stats_equal_a_full_recount(tmp_path: Path) -> None:
    from memsched import bookmarks
    from memsched.keywords import TermStats, doc_terms

    mem = Memory(home=tmp_path / "stats", embedders="hash", page_size=4)
    try:
        texts = [
            "我们去杭州西湖划船",
            "the sushi in Kyoto was great",
            "西湖边的龙井茶很好喝",
            "Kyoto temples and sushi again",
            "明天去成都吃火锅",
            "hotpot in Chengdu is spicy",
        ]
        for i, text in enumerate(texts):
            mem.add("u", "s1" if i % 3 else "s2", "user", text)
            got = bookmarks.user_stats(mem.store, "u")  # refreshed one turn at a time
        full = TermStats()
        pages: dict[int, set[str]] = {}
        for turn in mem.store.iter_turns("u"):
            pages.setdefault(turn.page_id or 0, set()).update(doc_terms([turn.text]))
        for terms in pages.values():
            full.add(terms)
        assert got.docs == full.docs == len(pages)
        assert +got.df == +full.df
        # after a hard delete (the forget path calls forget_stats) the next call counts afresh
        first = next(iter(mem.store.iter_turns("u")))
        mem.delete_turns("u", [first.id or 0])
        bookmarks.forget_stats(mem.store, "u")
        assert "划船" not in bookmarks.user_stats(mem.store, "u").df
    finally:
        mem.close()


def test_a_users_first_term_count_pauses_for_turns_in_background_work(tmp_path: Path) -> None:
    """The first count of a user's term statistics walks the whole history: in background work it
    pauses every STATS_PAUSE_EVERY turns (a turn in flight waits for that many, not the history),
    and counts the same."""
    from memsched import bookmarks
    from memsched.embed.base import background

    mem = Memory(home=tmp_path / "stats", embedders="hash", page_size=8)
    try:
        n = 2 * bookmarks.STATS_PAUSE_EVERY + 5
        mem.add_many([Turn("u", "s", "user", f"topic {i % 7} and word{i}") for i in range(n)], index=False)
        foreground = bookmarks.user_stats(mem.store, "u")
        docs, df = foreground.docs, dict(foreground.df)
        bookmarks.forget_stats(mem.store, "u")
        pauses: list[int] = []
        with background(lambda: pauses.append(1)):
            got = bookmarks.user_stats(mem.store, "u")
        assert len(pauses) == 2 and got.docs == docs and dict(got.df) == df
    finally:
        mem.close()


def test_bookmark_merge_pairs_found_blockwise_equal_the_brute_force_pairs() -> None:
    from memsched.bookmarks import _candidate_pairs

    rng = np.random.default_rng(1)
    base = rng.standard_normal((40, 16)).astype(np.float32)
    m = np.vstack([base, base + 0.01, rng.standard_normal((1100, 16)).astype(np.float32)])
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    order = list(range(len(m)))
    names = {i: {f"k{i % 7}"} for i in order}
    sims = m @ m.T
    brute = {(a, b) for a in order for b in order if a < b and sims[a, b] >= 0.9}
    assert set(_candidate_pairs(order, names, m, 0.9)) == brute and brute
    # without vectors: exactly the pairs that share a name
    by_name = {(a, b) for a in order[:50] for b in order[:50] if a < b and names[a] & names[b]}
    assert set(_candidate_pairs(order[:50], names, None, 0.9)) == by_name
