"""Fit the conversation-mode classifier (memsched/classify.py) on the tuning half of the labelled set.

Reads tests/data/mode_labelled.txt, keeps the EVEN lines only (the odd lines are the held-out half
that benchmarks/mode_accuracy.py reports on), computes the same features the router sees in a turn
(the vectors `Retriever.embed_query` computes for the message, the cue-lexicon hits, character and
word n-grams), picks the inverse regularisation C by 5-fold cross-validation on those even lines,
fits a multinomial logistic regression (scikit-learn, a dev dependency), then picks the weight of
its log-probabilities next to the router's hand-set cue and prototype evidence on the out-of-fold
predictions of the same even lines, and writes memsched/data/mode_classifier.npz. Deterministic:
the same data and models give the same file.

    python benchmarks/train_mode_classifier.py            # writes the package data
    python benchmarks/train_mode_classifier.py --out /tmp/m.npz --c 1.0
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mode_accuracy import load

from memsched.classify import MODES, ModeClassifier, NgramBlock
from memsched.memory import Memory
from memsched.router import Prototypes, Router
from memsched.text.segment import cjk_ratio

OUT = Path(__file__).resolve().parent.parent / "memsched" / "data" / "mode_classifier.npz"
C_GRID = (0.3, 1.0, 3.0, 10.0)
WEIGHT_GRID = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
EMBEDDERS = ("minilm", "wordllama")


def features(memory: Memory, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the router gets for each message in a turn: vectors by embedder name, cue counts."""
    router = Router()
    out = []
    for r in rows:
        vecs = memory.retriever.embed_query(r["text"])
        cues = {m: len(v) for m, v in router.mode_cues(r["text"]).items()}
        out.append({"vectors": vecs, "cues": cues})
    return out


def fit(
    texts: Sequence[str],
    labels: Sequence[str],
    feats: Sequence[dict[str, Any]],
    model_ids: dict[str, str],
    dims: dict[str, int],
    c: float,
    meta: dict[str, Any] | None = None,
) -> ModeClassifier:
    """A ModeClassifier fitted on these messages (vocabularies from them alone)."""
    from sklearn.linear_model import LogisticRegression

    char = NgramBlock.fit(texts, "char")
    word = NgramBlock.fit(texts, "word")
    blocks: list[tuple[str, int, str | None]] = [(n, dims[n], model_ids[n]) for n in EMBEDDERS if n in dims]
    blocks.append(("cues", len(MODES), None))
    n_feat = len(char.vocab) + len(word.vocab) + sum(d for _, d, _ in blocks)
    shell = ModeClassifier(
        char=char,
        word=word,
        dense_blocks=blocks,
        coef=np.zeros((len(MODES), n_feat)),
        intercept=np.zeros(len(MODES)),
    )
    x = np.stack(
        [shell.feature_row(t, f["vectors"], model_ids, f["cues"]) for t, f in zip(texts, feats, strict=True)]
    )
    y = np.array([MODES.index(m) for m in labels])
    clf = LogisticRegression(C=c, max_iter=10000, tol=1e-6).fit(x, y)
    return ModeClassifier(
        char=char, word=word, dense_blocks=blocks, coef=clf.coef_, intercept=clf.intercept_, meta=meta
    )


def out_of_fold(
    texts: Sequence[str],
    labels: Sequence[str],
    feats: Sequence[dict[str, Any]],
    model_ids: dict[str, str],
    dims: dict[str, int],
    c: float,
    folds: int = 5,
) -> np.ndarray:
    """Log-probabilities (rows: messages, columns: MODES) of `fit` over `folds` interleaved folds of
    the tuning half, each message predicted by a model that did not see it (vocabulary included)."""
    out = np.zeros((len(texts), len(MODES)))
    for k in range(folds):
        tr = [i for i in range(len(texts)) if i % folds != k]
        model = fit(
            [texts[i] for i in tr], [labels[i] for i in tr], [feats[i] for i in tr], model_ids, dims, c
        )
        for i in range(k, len(texts), folds):
            f = feats[i]
            pred = model.predict(texts[i], vectors=f["vectors"], model_ids=model_ids, cue_counts=f["cues"])
            out[i] = [pred.log_probs[m] for m in MODES]
    return out


def hand_set_scores(memory: Memory, texts: Sequence[str], feats: Sequence[dict[str, Any]]) -> np.ndarray:
    """The router's own scores without a classifier (cues, prototypes, casual bias), per message."""
    router = Router(prototypes=Prototypes())
    weights = memory.retriever.weights
    rows = []
    for text, f in zip(texts, feats, strict=True):
        cjk = cjk_ratio(text)
        _, scores, _, _ = router.decide_mode(
            text,
            router.mode_cues(text),
            vectors=f["vectors"],
            embedders=memory.embedders,
            embedder_weights={n: weights.dense_weight(n, cjk) for n in f["vectors"]},
        )
        rows.append([scores[m] for m in MODES])
    return np.array(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--c", type=float, default=None, help="skip cross-validation and use this C")
    args = ap.parse_args()
    rows = load()[0::2]  # the tuning half only
    texts = [r["text"] for r in rows]
    labels = [r["mode"] for r in rows]
    y = np.array([MODES.index(m) for m in labels])
    with tempfile.TemporaryDirectory() as tmp:
        memory = Memory(home=Path(tmp))
        feats = features(memory, rows)
        model_ids = {n: e.model_id for n, e in memory.embedders.items()}
        dims = {n: int(e.dim) for n, e in memory.embedders.items() if n in EMBEDDERS}
        hand = hand_set_scores(memory, texts, feats)
        memory.close()
    oof = {c: out_of_fold(texts, labels, feats, model_ids, dims, c) for c in ([args.c] if args.c else C_GRID)}
    cv = {c: round(float((p.argmax(1) == y).mean()), 4) for c, p in oof.items()}
    best = max(cv, key=lambda c: (cv[c], -c))
    centred = oof[best] - oof[best].mean(axis=1, keepdims=True)
    stacked = {w: round(float(((hand + w * centred).argmax(1) == y).mean()), 4) for w in WEIGHT_GRID}
    weight = max(stacked, key=lambda w: (stacked[w], -w))
    meta = {
        "trained_on": "tests/data/mode_labelled.txt, even lines",
        "n": len(rows),
        "C": best,
        "cv_accuracy": cv,
        "hand_set_accuracy": round(float((hand.argmax(1) == y).mean()), 4),
        "weight": weight,
        "stacked_cv_accuracy": stacked,
    }
    model = fit(texts, labels, feats, model_ids, dims, best, meta)
    model.save(args.out)
    print(json.dumps({**meta, "out": str(args.out), "features": model.coef.shape[1]}, indent=1))


if __name__ == "__main__":
    main()
