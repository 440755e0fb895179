"""The router's and the mode classifier's cheaper code paths give the very floats the plain ones gave.

`ModeClassifier.predict` normalises a message once for its three n-gram blocks and counts n-grams by
vocabulary column; `Prototypes` takes every mode's top-k similarities in one sort. These tests keep
the plain formulations (what the code did before) as references and require bit-equal results on
the labelled messages, so the speed-up cannot change a routing decision.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from memsched.classify import (
    MODES,
    ModeClassifier,
    NgramBlock,
    char_ngrams,
    han_word_ngrams,
    normalize_text,
    word_ngrams,
)
from memsched.router import Prototypes

DATA = Path(__file__).parent / "data" / "mode_labelled.txt"
GRAMS = {"char": char_ngrams, "word": word_ngrams, "han": han_word_ngrams}


def _messages(step: int = 3) -> list[str]:
    rows = [
        line.split("|", 2)[2]
        for line in DATA.read_text(encoding="utf-8").splitlines()
        if "|" in line and not line.startswith("#")
    ]
    # Every third labelled line, and texts with many repeated n-grams (counts above the table's 63).
    return [*rows[::step], "哈" * 80 + "!!", "no no no no " * 20, "Ｍiss  YOU，宝贝 宝贝 宝贝"]


def _reference_sparse(block: NgramBlock, text: str) -> tuple[np.ndarray, np.ndarray]:
    """`NgramBlock.sparse` as it was written first: a Counter of in-vocabulary grams, then lookups."""
    counts = Counter(g for g in GRAMS[block.kind](text) if g in block.vocab)
    if not counts:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    idx = np.fromiter((block.vocab[g] for g in counts), dtype=np.int64, count=len(counts))
    tf = np.fromiter((1.0 + math.log(c) for c in counts.values()), dtype=np.float64, count=len(counts))
    val = tf * block.idf[idx]
    return idx, val / float(np.linalg.norm(val))


def _reference_logits(model: ModeClassifier, text: str, vectors: dict[str, np.ndarray]) -> np.ndarray:
    ngrams = np.zeros(len(MODES))
    start = 0
    for block in (model.char, model.word, model.han):
        w = model.coef[:, start : start + len(block.vocab)]
        start += len(block.vocab)
        if block.vocab:
            idx, val = _reference_sparse(block, text)
            ngrams = ngrams + w[:, idx] @ val
    contributions = [ngrams]
    ids = {name: model for name, _, model in model.dense_blocks if model}
    for name, x in model.dense_features(vectors, ids, {"conflict": 1}).items():
        contributions.append(model._dense[name][0] @ x)
    return np.asarray(model.intercept + sum(contributions, np.zeros(len(MODES))))


@pytest.fixture(scope="module")
def shipped() -> ModeClassifier:
    return ModeClassifier.load()


def test_the_ngram_lists_are_those_of_the_plain_definitions() -> None:
    for text in _messages(step=7):
        t = f" {normalize_text(text)} "
        plain = [t[i : i + n] for n in range(1, 4) for i in range(len(t) - n + 1) if t[i : i + n] != " "]
        assert char_ngrams(text) == plain


def test_sparse_features_are_bit_equal_to_the_counter_formulation(shipped: ModeClassifier) -> None:
    for block in (shipped.char, shipped.word, shipped.han):
        for text in _messages():
            idx, val = block.sparse(text)
            ref_idx, ref_val = _reference_sparse(block, text)
            assert idx.tolist() == ref_idx.tolist()  # same columns in the same order
            assert val.tobytes() == ref_val.tobytes()


def test_predict_gives_the_reference_log_probabilities_bit_for_bit(shipped: ModeClassifier) -> None:
    rng = np.random.default_rng(7)
    dims = {name: dim for name, dim, model in shipped.dense_blocks if model}
    ids = {name: model for name, _, model in shipped.dense_blocks if model}
    for i, text in enumerate(_messages()):
        vectors = {n: rng.standard_normal(d).astype(np.float32) for n, d in dims.items()} if i % 2 else {}
        logits = _reference_logits(shipped, text, vectors)
        shifted = logits - logits.max()
        ref = shifted - math.log(float(np.exp(shifted).sum()))
        got = shipped.predict(text, vectors=vectors, model_ids=ids, cue_counts={"conflict": 1}).log_probs
        assert [got[m] for m in MODES] == [float(v) for v in ref]


class _Fixed:
    """An embedder with fixed random vectors (the prototypes' own vectors do not matter here)."""

    model_id = "fixed"
    dim = 16

    def __init__(self) -> None:
        self.rng = np.random.default_rng(3)

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.rng.standard_normal((len(texts), self.dim)).astype(np.float32)


def _reference_top_k(protos: Prototypes, sims: np.ndarray, labels: np.ndarray, k: int) -> dict[str, float]:
    return {
        mode: float(np.sort(sims[labels == MODES.index(mode)])[::-1][:k].mean()) for mode in protos.examples
    }


@pytest.mark.parametrize("k", [1, 2, 3, 5])
@pytest.mark.parametrize("sizes", [(4, 4, 4, 4), (5, 3, 4, 6)])
def test_prototype_top_k_means_equal_the_per_mode_loop(k: int, sizes: tuple[int, ...]) -> None:
    # Equal blocks take the one-sort path, unequal ones the loop; both must agree with the loop.
    protos = Prototypes({m: [f"{m} {i}" for i in range(n)] for m, n in zip(MODES, sizes, strict=True)})
    embedder = _Fixed()
    labels, mat = protos.matrix("fixed", embedder)  # type: ignore[arg-type]
    rng = np.random.default_rng(k)
    for _ in range(50):
        q = rng.standard_normal(embedder.dim).astype(np.float32)
        sims = mat @ (q / float(np.linalg.norm(q)))
        assert protos._top_k_means(sims, labels, k) == _reference_top_k(protos, sims, labels, k)
