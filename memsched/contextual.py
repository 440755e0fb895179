"""Contextual turn vectors: each turn's vector averaged with its session neighbours' (no model call).

A reply such as "Thanks! I'm still looking into counseling" means little on its own; the question
before it and the turn after it say what it is about. The contextual vector of a turn is the
normalised sum of its own vector and those of the turns just before and after it in its session
(a window of three, equally weighted, so there is no constant to tune). Searching these vectors is
one more dense layer, fused with the plain one: it finds turns by what their exchange is about.

The vectors are derived from the stored ones, so they cost no embedding; the index follows its
base `VectorIndex` incrementally (a new turn updates its own row and its predecessor's).
"""

from __future__ import annotations

import threading

import numpy as np
from threadpoolctl import ThreadpoolController

from memsched.model import Hit
from memsched.store.base import Store
from memsched.vectors import VectorIndex

_blas = ThreadpoolController()


class ContextIndex:
    """Contextual vectors of one (user, model), kept in step with the base index."""

    def __init__(self) -> None:
        self.version: tuple[int, int] = (-1, -1)
        self._lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self._ids = np.zeros(0, dtype=np.int64)
        self._raw = np.zeros((0, 0), dtype=np.float32)
        self._ctx = np.zeros((0, 0), dtype=np.float32)
        self._n = 0
        self._row: dict[int, int] = {}
        self._at: dict[tuple[str, int], int] = {}  # (session, seq) -> row
        self._key: list[tuple[str, int] | None] = []

    @property
    def nbytes(self) -> int:
        """Memory held by the matrices (what the retriever's cache weighs)."""
        return int(self._ids.nbytes + self._raw.nbytes + self._ctx.nbytes)

    def refresh(self, store: Store, user_id: str, base: VectorIndex) -> None:
        """Catch up with `base` (append-only in the common case; anything else rebuilds)."""
        with self._lock:
            if base.version == self.version:
                return
            ids, matrix = base.ids, base.matrix
            if len(ids) < self._n or (self._n and ids[self._n - 1] != self._ids[self._n - 1]):
                self._reset()
            new_ids, new_rows = ids[self._n :], matrix[self._n :]
            if len(new_ids):
                self._append(store, user_id, new_ids, new_rows)
            self.version = base.version

    def _append(self, store: Store, user_id: str, ids: np.ndarray, rows: np.ndarray) -> None:
        start, need = self._n, self._n + len(ids)
        if self._raw.shape[0] < need or self._raw.shape[1] != rows.shape[1]:
            cap = max(need, 2 * self._raw.shape[0], 64)
            raw = np.zeros((cap, rows.shape[1]), dtype=np.float32)
            ctx = np.zeros_like(raw)
            new_ids = np.zeros(cap, dtype=np.int64)
            if start:
                raw[:start], ctx[:start], new_ids[:start] = (
                    self._raw[:start],
                    self._ctx[:start],
                    self._ids[:start],
                )
            self._raw, self._ctx, self._ids = raw, ctx, new_ids
        self._raw[start:need] = rows
        self._ids[start:need] = ids
        self._n = need
        meta = store.turn_meta(user_id, [int(i) for i in ids])
        touched: set[int] = set()
        for offset, tid in enumerate(ids.tolist()):
            row = start + offset
            self._row[tid] = row
            m = meta.get(tid)
            key = (m[1], m[2]) if m is not None else None
            self._key.append(key)
            touched.add(row)
            if key is not None:
                self._at[key] = row
                for d in (-1, 1):
                    other = self._at.get((key[0], key[1] + d))
                    if other is not None:
                        touched.add(other)
        for row in touched:
            vec = self._raw[row].copy()
            key = self._key[row]
            if key is not None:
                for d in (-1, 1):
                    other = self._at.get((key[0], key[1] + d))
                    if other is not None:
                        vec += self._raw[other]
            norm = float(np.linalg.norm(vec))
            self._ctx[row] = vec / norm if norm > 0 else vec

    def search(self, query: np.ndarray, k: int) -> list[Hit]:
        with self._lock:
            if self._n == 0 or k <= 0:
                return []
            q = np.asarray(query, dtype=np.float32).reshape(-1)
            with _blas.limit(limits=1, user_api="blas"):
                sims = self._ctx[: self._n] @ q
            ids = self._ids[: self._n].copy()
        k = min(k, len(sims))
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.argsort(-sims[top], kind="stable")]
        return [Hit(turn_id=int(ids[i]), score=float(sims[i]), rank=r + 1) for r, i in enumerate(top)]
