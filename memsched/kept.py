"""Searches asked again and again, kept per user and extended by the turns added since.

A strategy's recall hint ("压力 累 难过 … stress tired anxious …", `strategies.toml`) is the same
words on every comfort or intimacy turn. Searched afresh each time it cost ~5 ms of a turn's 25 at
10,000 stored turns (one FTS5 count per common word; BENCHMARKS.md, "P0 in session 30"), more than
any other stage on the turn's own thread. Its hits change only by the turns added since the last
search, so they are kept: a later search ranks only those turns (`Store.search_bm25(after_id=)`,
FTS5 seeking every doclist to the id) and merges them into the kept hits by score.

The kept scores were computed with the statistics of their time (document count, average length,
each word's document frequency); the new turns' with today's. The drift is small against what a
hint decides (three extra turns after the best candidates), and a full search renews the hits every
`RENEW_EVERY` extensions, or at once when the user's newest turn id went back (turns deleted).
`forget` drops a user's kept searches, so a deleted turn is never offered again by this process;
another process's deletion is caught where every candidate is loaded (a turn no longer stored is
skipped there). On PostgreSQL a turn committed after a later id was read is missed until the next
renewal (ids are not visible in order there); the hint is a preference, never the only way in.
"""

from __future__ import annotations

from dataclasses import dataclass

from memsched.cache import LRUCache
from memsched.model import Hit
from memsched.store.base import Store

# Extensions of kept hits before the next full search.
RENEW_EVERY = 32


@dataclass(frozen=True, slots=True)
class _Kept:
    hits: tuple[tuple[int, float], ...]  # (turn id, score), best first
    through: int  # the user's newest turn id when they were searched
    extensions: int = 0


class KeptSearches:
    """BM25 searches of fixed queries per user, kept between turns (module docstring)."""

    def __init__(self, store: Store, max_items: int = 4000) -> None:
        self.store = store
        self._kept: LRUCache[tuple[str, str, int], _Kept] = LRUCache(max_items)
        self.full = 0  # searches of the whole history (a counter for tests and the curious)
        self.extended = 0  # searches of the turns added since

    def bm25(self, user_id: str, query: str, k: int) -> list[Hit]:
        """The user's best `k` turns for `query` by BM25, as `Store.search_bm25` finds them, up to
        the drift of the kept scores' statistics (module docstring)."""
        newest = self.store.max_turn_id(user_id)
        key = (user_id, query, k)
        kept = self._kept.get(key)
        if kept is None or kept.extensions >= RENEW_EVERY or newest < kept.through:
            found = self.store.search_bm25(user_id, query, k)
            kept = _Kept(tuple((h.turn_id, h.score) for h in found), newest)
            self.full += 1
        elif newest > kept.through:
            added = self.store.search_bm25(user_id, query, k, after_id=kept.through)
            scores = dict(kept.hits)
            scores.update((h.turn_id, h.score) for h in added)
            best = sorted(scores.items(), key=lambda item: (-item[1], -item[0]))[:k]
            kept = _Kept(tuple(best), newest, kept.extensions + 1)
            self.extended += 1
        self._kept.put(key, kept)
        return [Hit(turn_id=i, score=s, rank=n + 1) for n, (i, s) in enumerate(kept.hits)]

    def forget(self, user_id: str) -> None:
        """Drop every kept search of the user (their turns were deleted)."""
        for key in [key for key in self._kept if key[0] == user_id]:
            self._kept.pop(key)
