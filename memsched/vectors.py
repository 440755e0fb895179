"""In-memory vector search over a user's stored embeddings, always scoped to one user and one model.

Exact cosine search (one matrix product) up to `ann_threshold` vectors; past that an HNSW index from
usearch, built incrementally as turns arrive. See docs/design.md for why usearch.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from memsched.model import Hit

DEFAULT_ANN_THRESHOLD = 100_000


class VectorIndex:
    """The vectors of one (user, model), refreshed from the store by turn id."""

    def __init__(self, ann_threshold: int = DEFAULT_ANN_THRESHOLD) -> None:
        self.ann_threshold = ann_threshold
        self.ids = np.zeros(0, dtype=np.int64)
        self.matrix = np.zeros((0, 0), dtype=np.float32)
        self.max_id = 0
        self._ann: Any = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, ids: np.ndarray, matrix: np.ndarray) -> None:
        if len(ids) == 0:
            return
        with self._lock:
            if len(self.ids) == 0:
                self.ids, self.matrix = ids.copy(), np.array(matrix, dtype=np.float32)
            else:
                self.ids = np.concatenate([self.ids, ids])
                self.matrix = np.vstack([self.matrix, matrix])
            self.max_id = int(self.ids.max())
            if self._ann is not None:
                self._ann.add(ids, matrix)
            elif len(self.ids) > self.ann_threshold:
                self._build_ann()

    def remove(self, ids: set[int]) -> None:
        with self._lock:
            keep = ~np.isin(self.ids, list(ids))
            self.ids, self.matrix = self.ids[keep], self.matrix[keep]
            if self._ann is not None:
                self._build_ann()

    def _build_ann(self) -> None:
        from usearch.index import Index

        index = Index(ndim=self.matrix.shape[1], metric="cos", dtype="f32")
        index.add(self.ids, self.matrix)
        self._ann = index

    @property
    def uses_ann(self) -> bool:
        return self._ann is not None

    def search(self, query: np.ndarray, k: int) -> list[Hit]:
        """The k nearest turns by cosine similarity (vectors are unit length), best first."""
        if len(self.ids) == 0 or k <= 0:
            return []
        query = np.asarray(query, dtype=np.float32).reshape(-1)
        if self._ann is not None:
            matches = self._ann.search(query, k)
            return [
                Hit(turn_id=int(key), score=float(1.0 - dist), rank=i + 1)
                for i, (key, dist) in enumerate(zip(matches.keys, matches.distances, strict=True))
            ]
        sims = self.matrix @ query
        k = min(k, len(sims))
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.argsort(-sims[top], kind="stable")]
        return [Hit(turn_id=int(self.ids[i]), score=float(sims[i]), rank=r + 1) for r, i in enumerate(top)]
