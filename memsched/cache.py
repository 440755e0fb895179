"""A bounded, thread-safe LRU mapping for per-user state kept in memory (vector indexes, name
indexes, speaker maps …), so a long-running server's memory follows its active users, not every
user it has ever seen. Entries can also be weighed (bytes), with a cap on the total weight; the
most recently used entry always stays, however heavy, so the request using it never thrashes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRUCache(Generic[K, V]):
    def __init__(
        self,
        max_items: int,
        *,
        max_weight: float | None = None,
        weigh: Callable[[V], float] | None = None,
    ) -> None:
        if max_items < 1:
            raise ValueError("max_items must be at least 1")
        self.max_items = max_items
        self.max_weight = max_weight
        self._weigh = weigh
        self._data: OrderedDict[K, V] = OrderedDict()
        # Each entry's weight when last weighed, and their sum: a put or an eviction adjusts the sum
        # instead of re-weighing every entry (per turn, with thousands of cached users).
        self._weights: dict[K, float] = {}
        self._sum = 0.0
        self._lock = threading.Lock()
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def setdefault(self, key: K, make: Callable[[], V]) -> V:
        """The value for `key`, made with `make()` and inserted (evicting as needed) when absent."""
        with self._lock:
            value = self._data.get(key)
            if value is None:
                value = self._data[key] = make()
                self._reweigh(key, value)
                self._trim()
            else:
                self._data.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            self._reweigh(key, value)
            self._trim()

    def pop(self, key: K) -> V | None:
        with self._lock:
            self._sum -= self._weights.pop(key, 0.0)
            return self._data.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._weights.clear()
            self._sum = 0.0

    def __iter__(self) -> Iterator[K]:
        """Iterates over a snapshot of the keys (safe while others insert or evict)."""
        with self._lock:
            return iter(list(self._data))

    def items(self) -> list[tuple[K, V]]:
        with self._lock:
            return list(self._data.items())

    def weight(self) -> float:
        """The entries' total weight, every entry weighed now."""
        with self._lock:
            for key, value in self._data.items():
                self._reweigh(key, value)
            return self._sum

    def trim(self, key: K | None = None) -> None:
        """Evict past the caps; call after an entry has grown or shrunk in place, naming it (`key`),
        or without a key to re-weigh every entry."""
        with self._lock:
            if key is None:
                for k, value in self._data.items():
                    self._reweigh(k, value)
            elif key in self._data:
                self._reweigh(key, self._data[key])
            self._trim()

    def _reweigh(self, key: K, value: V) -> None:
        if self._weigh is not None:
            weight = float(self._weigh(value))
            self._sum += weight - self._weights.get(key, 0.0)
            self._weights[key] = weight

    def _evict(self) -> None:
        key, _ = self._data.popitem(last=False)
        self._sum -= self._weights.pop(key, 0.0)
        self.evictions += 1

    def _trim(self) -> None:
        while len(self._data) > self.max_items:
            self._evict()
        if self.max_weight is None or self._weigh is None:
            return
        while self._sum > self.max_weight and len(self._data) > 1:
            self._evict()
