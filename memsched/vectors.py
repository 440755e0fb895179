"""In-memory vector search over a user's stored embeddings, always scoped to one user and one model.

Exact cosine search (one matrix product) up to `ann_threshold` vectors; past that an HNSW index from
usearch, built incrementally as turns arrive. See docs/design.md for why usearch.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

from memsched.model import Hit

DEFAULT_ANN_THRESHOLD = 100_000

# One BLAS thread per search: a 10k x 384 product takes ~0.2 ms on one core, while OpenBLAS's two
# threads, when the other core is busy (a worker, another turn), wait on it: p90 16 ms (BENCHMARKS.md).
_blas = ThreadpoolController()


class VectorIndex:
    """The vectors of one (user, model), refreshed from the store by turn id."""

    def __init__(self, ann_threshold: int = DEFAULT_ANN_THRESHOLD) -> None:
        self.ann_threshold = ann_threshold
        # Rows live in over-allocated buffers that double when full, so appending one turn's vector
        # does not copy the whole matrix; `ids`/`matrix` are views of the filled part.
        self._ids = np.zeros(0, dtype=np.int64)
        self._buf = np.zeros((0, 0), dtype=np.float32)
        self._n = 0
        self.version: tuple[int, int] = (0, 0)  # the store's vector_version this index reflects
        self._ann: Any = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._n

    @property
    def nbytes(self) -> int:
        """Memory held, buffers included (what the retriever's cache weighs)."""
        return int(self._buf.nbytes + self._ids.nbytes)

    @property
    def ids(self) -> np.ndarray:
        return self._ids[: self._n]

    @property
    def matrix(self) -> np.ndarray:
        return self._buf[: self._n]

    def add(self, ids: np.ndarray, matrix: np.ndarray) -> None:
        """Add vectors; ids already present are skipped (so a refresh may safely overlap)."""
        if len(ids) == 0:
            return
        with self._lock:
            if self._n:
                fresh = ~np.isin(ids, self.ids)
                ids, matrix = ids[fresh], matrix[fresh]
                if len(ids) == 0:
                    return
            # the same turn may come twice in one batch (two rows for one hash); keep the first
            ids, first = np.unique(ids, return_index=True)
            matrix = np.asarray(matrix, dtype=np.float32)[first]
            need = self._n + len(ids)
            if self._buf.shape[0] < need or self._buf.shape[1] != matrix.shape[1]:
                cap = max(need, 2 * self._buf.shape[0], 64)
                buf = np.zeros((cap, matrix.shape[1]), dtype=np.float32)
                if self._n:
                    buf[: self._n] = self._buf[: self._n]
                new_ids = np.zeros(cap, dtype=np.int64)
                new_ids[: self._n] = self._ids[: self._n]
                self._buf, self._ids = buf, new_ids
            self._buf[self._n : need] = matrix
            self._ids[self._n : need] = ids
            self._n = need
            if self._ann is not None:
                self._ann.add(ids, matrix)
            elif self._n > self.ann_threshold:
                self._build_ann()

    def remove(self, ids: set[int]) -> None:
        with self._lock:
            keep = ~np.isin(self.ids, list(ids))
            kept_ids, kept = self.ids[keep].copy(), self.matrix[keep].copy()
            self._ids, self._buf, self._n = kept_ids, kept, len(kept_ids)
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
        if self._n == 0 or k <= 0:
            return []
        query = np.asarray(query, dtype=np.float32).reshape(-1)
        if self._ann is not None:
            matches = self._ann.search(query, k)
            return [
                Hit(turn_id=int(key), score=float(1.0 - dist), rank=i + 1)
                for i, (key, dist) in enumerate(zip(matches.keys, matches.distances, strict=True))
            ]
        with _blas.limit(limits=1, user_api="blas"):
            sims = self.matrix @ query
        k = min(k, len(sims))
        top = np.argpartition(-sims, k - 1)[:k]
        # Ties (one text stored for several turns, a coarse embedder) go to the older turn, as in
        # the stores' own search (`ORDER BY distance, turn id`), whichever tied rows argpartition took.
        near = np.flatnonzero(sims >= sims[top].min())
        top = near[np.lexsort((self.ids[near], -sims[near]))][:k]
        return [Hit(turn_id=int(self.ids[i]), score=float(sims[i]), rank=r + 1) for r, i in enumerate(top)]
