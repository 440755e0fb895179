"""Fit the conversation-mode classifier (memsched/classify.py) on the labelled set.

Reads tests/data/mode_labelled.txt and computes the features the router sees in a turn (the
vectors `Retriever.embed_query` computes for the message, the cue-lexicon hits, character, Latin
word and Chinese word n-grams). The choices are made on the EVEN lines only (the odd lines are the
held-out half that benchmarks/mode_accuracy.py reports on): the inverse regularisation C and the
weight of a complement naive Bayes over the n-grams folded into the regression's weights (`fit_parts`)
by 5-fold cross-validation, the folds grouped so that a message and its translation (the set is written in
parallel zh/en blocks) stay on the same side, then the weight of the classifier's log-probabilities
next to the router's hand-set cue and prototype evidence, on the same out-of-fold predictions.
With those choices fixed, the multinomial logistic regression (scikit-learn, a dev dependency) is
fitted on `--lines`: `all` (the default, the shipped model: every labelled line teaches it; its
honest figures are the k-fold one and the blind set, tests/data/mode_blind.txt) or `even` (the
model whose odd-half figure mode_accuracy.py reports). Writes memsched/data/mode_classifier.npz.
Deterministic: the same data and models give the same file.

    python benchmarks/train_mode_classifier.py            # writes the package data
    python benchmarks/train_mode_classifier.py --lines even --out /tmp/m.npz --c 1.0
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mode_accuracy import load

from memsched.classify import MODES, ModeClassifier, NgramBlock
from memsched.memory import Memory
from memsched.router import Prototypes, Router, prototype_weights
from memsched.text.segment import cjk_ratio

OUT = Path(__file__).resolve().parent.parent / "memsched" / "data" / "mode_classifier.npz"
C_GRID = (3.0, 10.0, 30.0)
# The complement naive Bayes over the n-grams added to the regression (`fit_parts`): its weight is
# chosen with C; alpha is scikit-learn's smoothing, fixed.
NB_GRID = (0.0, 0.5, 1.0, 2.0)
NB_ALPHA = 0.3
WEIGHT_GRID = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
# Not the gloss layer: its vector comes from a second MiniLM call, which routing does not wait for.
EMBEDDERS = ("minilm", "wordllama")
FOLDS = 5


def groups(rows: Sequence[dict[str, Any]]) -> list[int]:
    """A group id per message: the set is written in blocks of one mode and language, a Chinese
    block followed by its English block, the n-th English line often a translation of the n-th
    Chinese one. Both get the same id, so a fold never trains on a message's translation."""
    out = list(range(len(rows)))
    runs: list[tuple[int, int]] = []  # (start, end) of each run of the same mode and language
    for i, r in enumerate(rows):
        if i and (r["mode"], r["lang"]) == (rows[i - 1]["mode"], rows[i - 1]["lang"]):
            runs[-1] = (runs[-1][0], i + 1)
        else:
            runs.append((i, i + 1))
    for (a, b), (c, d) in itertools.pairwise(runs):
        if rows[a]["mode"] == rows[c]["mode"] and rows[a]["lang"] == "zh" and rows[c]["lang"] == "en":
            for j in range(min(b - a, d - c)):
                out[c + j] = out[a + j]
    return out


def folds(group_ids: Sequence[int], k: int = FOLDS) -> list[list[int]]:
    """`k` folds of positions, whole groups assigned round-robin in order of first appearance."""
    order = list(dict.fromkeys(group_ids))
    fold_of = {g: i % k for i, g in enumerate(order)}
    return [[i for i, g in enumerate(group_ids) if fold_of[g] == f] for f in range(k)]


def features(
    memory: Memory, rows: Sequence[dict[str, Any]], vectors: Sequence[Any] | None = None
) -> list[dict[str, Any]]:
    """What the router gets for each message in a turn: vectors by embedder name (`vectors`, when the
    caller has embedded the rows already), cue counts."""
    router = Router()
    out = []
    for i, r in enumerate(rows):
        vecs = vectors[i] if vectors is not None else memory.retriever.embed_query(r["text"])
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
    nb: tuple[float, float] = (NB_ALPHA, 0.0),
) -> ModeClassifier:
    """A ModeClassifier fitted on these messages (vocabularies from them alone). `nb`: (alpha,
    weight) of the complement naive Bayes over the n-gram blocks folded into the weights."""
    return combine(fit_parts(texts, labels, feats, model_ids, dims, c, nb[0]), nb[1], meta)


def fit_parts(
    texts: Sequence[str],
    labels: Sequence[str],
    feats: Sequence[dict[str, Any]],
    model_ids: dict[str, str],
    dims: dict[str, int],
    c: float,
    alpha: float = NB_ALPHA,
) -> dict[str, Any]:
    """The two linear models over one feature matrix: the logistic regression over every block and
    the complement naive Bayes over the n-gram blocks (TF-IDF, non-negative). ComplementNB's joint
    log-likelihood is `x @ feature_log_prob_.T` with no prior (scikit-learn, more than one class), so
    `combine` can add it to the regression's logits as weights: the router centres log-probabilities
    over the modes, which removes both models' normalising constants, so the centred log-probabilities
    of the folded model are those of the regression plus `weight` x those of the naive Bayes."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import ComplementNB

    char = NgramBlock.fit(texts, "char")
    word = NgramBlock.fit(texts, "word")
    han = NgramBlock.fit(texts, "han")
    blocks: list[tuple[str, int, str | None]] = [(n, dims[n], model_ids[n]) for n in EMBEDDERS if n in dims]
    blocks.append(("cues", len(MODES), None))
    n_sparse = len(char.vocab) + len(word.vocab) + len(han.vocab)
    n_feat = n_sparse + sum(d for _, d, _ in blocks)
    parts: dict[str, Any] = {"char": char, "word": word, "han": han, "dense_blocks": blocks}
    # Unfitted weights: the shell only turns messages into feature rows.
    shell = ModeClassifier(**parts, coef=np.zeros((len(MODES), n_feat)), intercept=np.zeros(len(MODES)))
    x = np.stack(
        [shell.feature_row(t, f["vectors"], model_ids, f["cues"]) for t, f in zip(texts, feats, strict=True)]
    )
    y = np.array([MODES.index(m) for m in labels])
    # One BLAS thread: on a shared 2-core machine the threads fight and a fit takes 20x longer.
    # Balanced class weights: the set's mix of modes is how many lines were written for each (session
    # 16 added casual topical lines), not how often people talk in each mode; without them the
    # intercepts learn that mix, and a message read from its n-grams alone (no vectors) leans casual.
    with threadpool_limits(1):
        clf = LogisticRegression(C=c, max_iter=10000, tol=1e-6, class_weight="balanced").fit(x, y)
    nb = ComplementNB(alpha=alpha).fit(x[:, :n_sparse], y)
    return {
        "parts": parts,
        "coef": clf.coef_,
        "intercept": clf.intercept_,
        "nb": np.asarray(nb.feature_log_prob_),
        "alpha": alpha,
    }


def combine(fitted: dict[str, Any], nb_weight: float, meta: dict[str, Any] | None = None) -> ModeClassifier:
    """One ModeClassifier: the regression's weights plus `nb_weight` x the naive Bayes' on the n-grams."""
    coef = np.array(fitted["coef"], dtype=np.float64)
    coef[:, : fitted["nb"].shape[1]] += nb_weight * fitted["nb"]
    return ModeClassifier(**fitted["parts"], coef=coef, intercept=fitted["intercept"], meta=meta)


def out_of_fold(
    texts: Sequence[str],
    labels: Sequence[str],
    feats: Sequence[dict[str, Any]],
    model_ids: dict[str, str],
    dims: dict[str, int],
    c: float,
    group_ids: Sequence[int],
    nb_weights: Sequence[float] = (0.0,),
    alpha: float = NB_ALPHA,
) -> dict[float, np.ndarray]:
    """Per naive Bayes weight, log-probabilities (rows: messages, columns: MODES) of `fit` over grouped
    folds (`folds`), each message predicted by a model that saw neither it nor its translation
    (vocabulary included)."""
    out = {w: np.zeros((len(texts), len(MODES))) for w in nb_weights}
    for held in folds(group_ids):
        held_set = set(held)
        tr = [i for i in range(len(texts)) if i not in held_set]
        fitted = fit_parts(
            [texts[i] for i in tr], [labels[i] for i in tr], [feats[i] for i in tr], model_ids, dims, c, alpha
        )
        for w in nb_weights:
            model = combine(fitted, w)
            for i in held:
                f = feats[i]
                pred = model.predict(
                    texts[i], vectors=f["vectors"], model_ids=model_ids, cue_counts=f["cues"]
                )
                out[w][i] = [pred.log_probs[m] for m in MODES]
    return out


def hand_set_scores(memory: Memory, texts: Sequence[str], feats: Sequence[dict[str, Any]]) -> np.ndarray:
    """The router's own scores without a classifier (cues, prototypes, casual bias), per message."""
    router = Router(prototypes=Prototypes())
    rows = []
    for text, f in zip(texts, feats, strict=True):
        cjk = cjk_ratio(text)
        scores = router.decide_mode(
            text,
            router.mode_cues(text),
            vectors=f["vectors"],
            embedders=memory.embedders,
            embedder_weights=prototype_weights(f["vectors"], cjk),
        ).scores
        rows.append([scores[m] for m in MODES])
    return np.array(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--c", type=float, default=None, help="skip cross-validation and use this C")
    ap.add_argument(
        "--lines",
        choices=("all", "even"),
        default="all",
        help="the lines the final model is fitted on (C and the weight are chosen on the even lines either way)",
    )
    args = ap.parse_args()
    rows = load()
    with tempfile.TemporaryDirectory() as tmp:
        memory = Memory(home=Path(tmp))
        model, meta = train(memory, rows, lines=args.lines, c=args.c)
        memory.close()
    model.save(args.out)
    print(json.dumps({**meta, "out": str(args.out), "features": model.coef.shape[1]}, indent=1))


def choose(
    memory: Memory, rows: Sequence[dict[str, Any]], feats: Sequence[dict[str, Any]], c: float | None = None
) -> dict[str, Any]:
    """C, the naive Bayes weight and the stacking weight, chosen on grouped out-of-fold predictions
    over `rows` (the even lines)."""
    texts = [r["text"] for r in rows]
    labels = [r["mode"] for r in rows]
    y = np.array([MODES.index(m) for m in labels])
    model_ids, dims = embedder_ids(memory)
    hand = hand_set_scores(memory, texts, feats)
    gids = groups(rows)
    oof = {
        (k, w): p
        for k in ([c] if c else C_GRID)
        for w, p in out_of_fold(texts, labels, feats, model_ids, dims, k, gids, NB_GRID).items()
    }
    cv = {k: round(float((p.argmax(1) == y).mean()), 4) for k, p in oof.items()}
    # Ties go to the smaller C, then to the smaller naive Bayes weight.
    best = max(cv, key=lambda k: (cv[k], -k[0], -k[1]))
    centred = oof[best] - oof[best].mean(axis=1, keepdims=True)
    stacked = {w: round(float(((hand + w * centred).argmax(1) == y).mean()), 4) for w in WEIGHT_GRID}
    weight = max(stacked, key=lambda w: (stacked[w], -w))
    return {
        "chosen_on": "tests/data/mode_labelled.txt, even lines, 5 grouped folds",
        "C": best[0],
        "nb_alpha": NB_ALPHA,
        "nb_weight": best[1],
        "cv_accuracy": {f"C={k} nb={w}": v for (k, w), v in cv.items()},
        "hand_set_accuracy": round(float((hand.argmax(1) == y).mean()), 4),
        "weight": weight,
        "stacked_cv_accuracy": stacked,
    }


def embedder_ids(memory: Memory) -> tuple[dict[str, str], dict[str, int]]:
    model_ids = {n: e.model_id for n, e in memory.embedders.items()}
    dims = {n: int(e.dim) for n, e in memory.embedders.items() if n in EMBEDDERS}
    return model_ids, dims


def train(
    memory: Memory,
    rows: Sequence[dict[str, Any]],
    *,
    lines: str = "all",
    c: float | None = None,
    feats: Sequence[dict[str, Any]] | None = None,
) -> tuple[ModeClassifier, dict[str, Any]]:
    """The classifier for `rows` (the whole labelled set, in file order): choices on the even lines,
    the final fit on `lines` ("all" or "even"). `feats`: `features(memory, rows)` if already computed."""
    feats = feats if feats is not None else features(memory, rows)
    meta = choose(memory, rows[0::2], feats[0::2], c)
    chosen = list(range(len(rows))) if lines == "all" else list(range(0, len(rows), 2))
    meta["trained_on"] = f"tests/data/mode_labelled.txt, {lines} lines"
    meta["n"] = len(chosen)
    model_ids, dims = embedder_ids(memory)
    model = fit(
        [rows[i]["text"] for i in chosen],
        [rows[i]["mode"] for i in chosen],
        [feats[i] for i in chosen],
        model_ids,
        dims,
        meta["C"],
        meta,
        nb=(meta["nb_alpha"], meta["nb_weight"]),
    )
    return model, meta


if __name__ == "__main__":
    main()
