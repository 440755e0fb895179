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
                self._trim()
            else:
                self._data.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            self._trim()

    def pop(self, key: K) -> V | None:
        with self._lock:
            return self._data.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __iter__(self) -> Iterator[K]:
        """Iterates over a snapshot of the keys (safe while others insert or evict)."""
        with self._lock:
            return iter(list(self._data))

    def items(self) -> list[tuple[K, V]]:
        with self._lock:
            return list(self._data.items())

    def weight(self) -> float:
        with self._lock:
            return self._total()

    def trim(self) -> None:
        """Evict past the caps (call after an entry has grown in place)."""
        with self._lock:
            self._trim()

    def _total(self) -> float:
        return sum(self._weigh(v) for v in self._data.values()) if self._weigh else 0.0

    def _trim(self) -> None:
        while len(self._data) > self.max_items:
            self._data.popitem(last=False)
            self.evictions += 1
        if self.max_weight is None or self._weigh is None:
            return
        total = self._total()
        while total > self.max_weight and len(self._data) > 1:
            _, value = self._data.popitem(last=False)
            total -= self._weigh(value)
            self.evictions += 1
