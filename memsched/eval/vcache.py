"""A vector cache for evaluation runs: the same texts embedded by the same model are embedded once.

Repeated evaluations (a leave-one-out sweep, an ablation, the figures for BENCHMARKS.md) import the
same conversations again and again; embedding them is most of a run's time. `CachedEmbedder` wraps
an embedder and keeps its vectors in one `.npz` file per model id, keyed by the text's content
hash. A different model id (another model, or other settings) is a different file, so a cache can
never hand back another model's vector.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memsched.embed.base import Embedder
from memsched.model import content_hash


class CachedEmbedder:
    """An `Embedder` that answers from `<directory>/<model id hash>.npz` and saves what is new."""

    def __init__(self, inner: Embedder, directory: Path) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.batch_size = inner.batch_size
        self.han_only = bool(getattr(inner, "han_only", False))  # embed.gloss: Chinese turns only
        self.sentence = bool(getattr(inner, "sentence", False))
        digest = hashlib.blake2b(inner.model_id.encode("utf-8"), digest_size=8).hexdigest()
        self.path = Path(directory) / f"vectors-{digest}.npz"
        self._vectors: dict[str, np.ndarray] = {}
        self._new = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        # Off: pass through to the model (an eval that reports latency times real query embeddings).
        self.active = True
        if self.path.exists():
            with np.load(self.path, allow_pickle=False) as data:
                if str(data["model_id"]) == self.model_id:
                    self._vectors = dict(zip(data["keys"].tolist(), data["matrix"], strict=True))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not self.active:
            return self.inner.embed(texts)
        keys = [content_hash(t) for t in texts]
        with self._lock:
            missing = [i for i, k in enumerate(keys) if k not in self._vectors]
        if missing:
            fresh = self.inner.embed([texts[i] for i in missing])
            with self._lock:
                for i, vec in zip(missing, fresh, strict=True):
                    self._vectors[keys[i]] = np.asarray(vec, dtype=np.float32)
                self._new += len(missing)
        with self._lock:
            self.misses += len(missing)
            self.hits += len(keys) - len(missing)
            rows = [self._vectors[k] for k in keys]
        if not rows:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack(rows).astype(np.float32, copy=False)

    def save(self) -> None:
        """Write the cache if anything was added (atomically: a crash leaves the old file)."""
        with self._lock:
            if not self._new:
                return
            keys = list(self._vectors)
            matrix = np.stack([self._vectors[k] for k in keys]) if keys else np.zeros((0, self.dim))
            self._new = 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, model_id=np.array(self.model_id), keys=np.array(keys), matrix=matrix)
        tmp.replace(self.path)
