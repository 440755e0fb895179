"""The learned conversation-mode classifier: one linear model over cheap features of a message.

The router's hand-set sum of cue hits and prototype similarities reached 0.71 on the held-out half
of the labelled set; English was fine (0.87), Chinese was not (0.55), because the offline embedders
hardly separate short Chinese sentences. A multinomial logistic regression fitted on the tuning
half does better (BENCHMARKS.md, "Conversation mode") from features that cost well under a
millisecond on top of what the turn computes anyway:

- `ngrams`: TF-IDF of character 1-3 grams (what carries short Chinese text: 想你, 累, 凭什么), of
  Latin word 1-2 grams (`you never`, `miss you`) and of Chinese word 1-2 grams (jieba: `根本 不在乎`,
  which character n-grams cut across), each block L2-normalised;
- `minilm`, `wordllama`: the message's vectors from the turn's embedders (a block is left at zero
  when the turn did not compute it: WordLlama has no weight on English queries). Not the gloss
  layer's vector: it comes from a second MiniLM call that the turn does not wait for before routing
  (BENCHMARKS.md, "Conversation mode");
- `cues`: the number of cue-lexicon hits per mode (`memsched.router.DEFAULT_CUES`).

The weights are those of the logistic regression plus, on the n-gram columns, a complement naive
Bayes' log weights (`feature_log_prob_`) times a weight chosen with C (session 16: the two together
read short Chinese text better than either; `benchmarks/train_mode_classifier.py`, `fit_parts`).
Both are linear in the same features, so the model stays one weight matrix and `predict` one
product: the sum is exact up to each model's normalising constant, which the router's centring
over modes removes.

The router adds the classifier's centred log-probabilities, times `weight`, to its hand-set cue
and prototype evidence (stacking: the hand-set prototypes still carry English best, the classifier
carries Chinese). The weights are package data (`data/mode_classifier.npz`), written by
`benchmarks/train_mode_classifier.py`: C, the naive Bayes weight and the stacking weight chosen on
the even lines of tests/data/mode_labelled.txt by grouped cross-validation, the model fitted on all
its lines.
Prediction needs numpy alone; scikit-learn is used only to fit (a dev dependency).
"""

from __future__ import annotations

import io
import json
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from memsched.errors import ConfigError
from memsched.text.segment import _jieba

MODES = ("casual", "conflict", "comfort", "intimacy")  # the router's modes, in its order
DATA_FILE = "data/mode_classifier.npz"
CHAR_NGRAMS = (1, 3)
WORD_NGRAMS = (1, 2)
HAN_WORD_NGRAMS = (1, 2)
_SPACE_RE = re.compile(r"\s+")
_LATIN_WORD_RE = re.compile(r"[^\W\d_\u3400-\u9fff\uf900-\ufaff]+(?:['’][^\W\d_]+)*", re.UNICODE)
_HAN_RUN_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
SPARSE_KINDS = ("char", "word", "han")  # the n-gram blocks, in the order of the model's columns


def normalize_text(text: str) -> str:
    """NFKC, case-folded, whitespace collapsed: full-width punctuation and letters meet their ASCII
    forms, "Miss" meets "miss"."""
    return _SPACE_RE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def char_ngrams(text: str) -> list[str]:
    """Character n-grams (`CHAR_NGRAMS`) of the normalised text, spaces included (word edges count)."""
    return _char_grams(normalize_text(text))


def word_ngrams(text: str) -> list[str]:
    """Latin word n-grams (`WORD_NGRAMS`); Chinese is covered by the character n-grams."""
    return _word_grams(normalize_text(text))


def han_word_ngrams(text: str) -> list[str]:
    """Chinese word n-grams (`HAN_WORD_NGRAMS`): each run of Han characters segmented by jieba (the
    segmenter the store's full-text index uses), n-grams taken within the run."""
    return _han_grams(normalize_text(text))


# The n-grams of an already normalised text (`normalize_text`): `ModeClassifier.predict` normalises a
# message once for its three blocks. Each list is in the order the public functions above return.


def _char_grams(norm: str) -> list[str]:
    t = f" {norm} "
    lo, hi = CHAR_NGRAMS
    out: list[str] = []
    for n in range(lo, hi + 1):
        if n == 1:
            out.extend(c for c in t if c != " ")  # a lone space is no gram; longer ones keep theirs
        else:
            out.extend([t[i : i + n] for i in range(len(t) - n + 1)])
    return out


def _word_grams(norm: str) -> list[str]:
    ws = _LATIN_WORD_RE.findall(norm)
    lo, hi = WORD_NGRAMS
    return [" ".join(ws[i : i + n]) for n in range(lo, hi + 1) for i in range(len(ws) - n + 1)]


def _han_grams(norm: str) -> list[str]:
    runs = _HAN_RUN_RE.findall(norm)
    if not runs:
        return []
    jieba = _jieba()
    lo, hi = HAN_WORD_NGRAMS
    out: list[str] = []
    for run in runs:
        ws = jieba.lcut(run, HMM=True)
        out.extend(" ".join(ws[i : i + n]) for n in range(lo, hi + 1) for i in range(len(ws) - n + 1))
    return out


_GRAMS = {"char": char_ngrams, "word": word_ngrams, "han": han_word_ngrams}
_NORM_GRAMS = {"char": _char_grams, "word": _word_grams, "han": _han_grams}
# Sublinear term frequency 1 + ln(count) for small counts, the same floats as `math.log` gives.
_SUBLINEAR_TF = np.array([0.0] + [1.0 + math.log(c) for c in range(1, 64)])


class NgramBlock:
    """A fixed vocabulary with IDF weights: sublinear TF x IDF, L2-normalised (the usual TF-IDF)."""

    def __init__(self, vocab: Sequence[str], idf: np.ndarray, kind: str) -> None:
        self.vocab = {g: i for i, g in enumerate(vocab)}
        self.idf = np.asarray(idf, dtype=np.float64)
        self.kind = kind

    @classmethod
    def fit(cls, texts: Sequence[str], kind: str, min_df: int = 1) -> NgramBlock:
        """Vocabulary and smoothed IDF (`ln((1+n)/(1+df)) + 1`) from `texts`."""
        df: Counter[str] = Counter()
        for t in texts:
            df.update(set(cls._grams(t, kind)))
        vocab = sorted(g for g, c in df.items() if c >= min_df)
        n = len(texts)
        idf = np.array([math.log((1 + n) / (1 + df[g])) + 1.0 for g in vocab])
        return cls(vocab, idf, kind)

    @staticmethod
    def _grams(text: str, kind: str) -> list[str]:
        return _GRAMS[kind](text)

    def sparse(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """(column indices, values) of the message's normalised TF-IDF vector."""
        return self.sparse_grams(self._grams(text, self.kind))

    def sparse_grams(self, grams: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """`sparse` from the message's n-grams of this block's kind. Columns come in the order their
        grams first occur (the order the norm and the dot products add them up in)."""
        counts = Counter(map(self.vocab.get, grams))  # column -> count, counted in C
        counts.pop(None, None)  # grams outside the vocabulary
        if not counts:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        n = len(counts)
        idx = np.fromiter(counts.keys(), dtype=np.int64, count=n)
        top = max(counts.values())
        if top == 1:
            tf = np.ones(n)  # 1 + ln(1), the usual case in a short message
        elif top < len(_SUBLINEAR_TF):
            tf = _SUBLINEAR_TF[np.fromiter(counts.values(), dtype=np.int64, count=n)]
        else:
            tf = np.fromiter((1.0 + math.log(c) for c in counts.values()), dtype=np.float64, count=n)
        val = tf * self.idf[idx]
        return idx, val / float(np.linalg.norm(val))

    def dense(self, text: str) -> np.ndarray:
        out = np.zeros(len(self.vocab))
        idx, val = self.sparse(text)
        out[idx] = val
        return out


@dataclass(slots=True)
class Prediction:
    """Log-probabilities per mode, and how much each feature block added to each mode's logit."""

    log_probs: dict[str, float]
    contributions: dict[str, dict[str, float]]  # block -> mode -> logit contribution


class ModeClassifier:
    """A fitted multinomial logistic regression over the blocks described in the module docstring.

    `dense_blocks` names the vector blocks in order with their sizes and, for embedders, the model id
    the vectors must come from (a vector from another model is ignored rather than misread)."""

    def __init__(
        self,
        *,
        char: NgramBlock,
        word: NgramBlock,
        dense_blocks: Sequence[tuple[str, int, str | None]],
        coef: np.ndarray,
        intercept: np.ndarray,
        meta: Mapping[str, Any] | None = None,
        han: NgramBlock | None = None,
    ) -> None:
        self.char = char
        self.word = word
        self.han = han if han is not None else NgramBlock([], np.zeros(0), "han")
        self.dense_blocks = [(str(n), int(d), m or None) for n, d, m in dense_blocks]
        self.coef = np.asarray(coef, dtype=np.float64)  # (n_modes, n_features)
        self.intercept = np.asarray(intercept, dtype=np.float64)
        self.meta = dict(meta or {})
        # How much its log-probabilities count next to the router's hand-set evidence (chosen when fitted).
        self.weight = float(self.meta.get("weight", 1.0))
        # Column slices of the n-gram blocks, in `SPARSE_KINDS` order, then the dense blocks.
        self._sparse: list[tuple[NgramBlock, np.ndarray]] = []
        start = 0
        for block in (self.char, self.word, self.han):
            self._sparse.append((block, self.coef[:, start : start + len(block.vocab)]))
            start += len(block.vocab)
        self._dense: dict[str, tuple[np.ndarray, str | None]] = {}
        for name, dim, model in self.dense_blocks:
            self._dense[name] = (self.coef[:, start : start + dim], model)
            start += dim
        if start != self.coef.shape[1] or self.coef.shape[0] != len(MODES):
            raise ConfigError(
                f"mode classifier weights have shape {self.coef.shape}, expected ({len(MODES)}, {start}): "
                "re-run benchmarks/train_mode_classifier.py"
            )

    # -- features -----------------------------------------------------------------------------------

    def dense_features(
        self,
        vectors: Mapping[str, np.ndarray],
        model_ids: Mapping[str, str],
        cue_counts: Mapping[str, int],
    ) -> dict[str, np.ndarray]:
        """The dense blocks for one message: embedder vectors (unit length) and cue counts."""
        out: dict[str, np.ndarray] = {}
        for name, dim, model in self.dense_blocks:
            if name == "cues":
                out[name] = np.array([float(cue_counts.get(m, 0)) for m in MODES])
                continue
            vec = vectors.get(name)
            if vec is None or (model is not None and model_ids.get(name) != model):
                continue
            v = np.asarray(vec, dtype=np.float64).reshape(-1)
            n = float(np.linalg.norm(v))
            if v.shape[0] == dim and n > 0:
                out[name] = v / n
        return out

    def feature_row(
        self,
        text: str,
        vectors: Mapping[str, np.ndarray],
        model_ids: Mapping[str, str],
        cue_counts: Mapping[str, int],
    ) -> np.ndarray:
        """The full feature vector (used to fit; `predict` computes the same thing sparsely)."""
        dense = self.dense_features(vectors, model_ids, cue_counts)
        parts = [self.char.dense(text), self.word.dense(text), self.han.dense(text)]
        parts += [dense.get(name, np.zeros(dim)) for name, dim, _ in self.dense_blocks]
        return np.concatenate(parts)

    # -- prediction ---------------------------------------------------------------------------------

    def predict(
        self,
        text: str,
        *,
        vectors: Mapping[str, np.ndarray] | None = None,
        model_ids: Mapping[str, str] | None = None,
        cue_counts: Mapping[str, int] | None = None,
    ) -> Prediction:
        """Log-probabilities per mode for `text`, with each block's share of the logits."""
        contributions: dict[str, np.ndarray] = {}
        ngrams = np.zeros(len(MODES))
        norm = normalize_text(text)  # once for the three blocks
        for block, w in self._sparse:
            if block.vocab:
                idx, val = block.sparse_grams(_NORM_GRAMS[block.kind](norm))
                ngrams = ngrams + w[:, idx] @ val
        contributions["ngrams"] = ngrams
        dense = self.dense_features(vectors or {}, model_ids or {}, cue_counts or {})
        for name, x in dense.items():
            contributions[name] = self._dense[name][0] @ x
        logits = self.intercept + sum(contributions.values(), np.zeros(len(MODES)))
        shifted = logits - logits.max()
        log_probs = shifted - math.log(float(np.exp(shifted).sum()))
        return Prediction(
            log_probs={m: float(v) for m, v in zip(MODES, log_probs, strict=True)},
            contributions={
                block: {m: float(v) for m, v in zip(MODES, c, strict=True)}
                for block, c in contributions.items()
            },
        )

    # -- persistence --------------------------------------------------------------------------------

    def save(self, path: Path) -> None:
        """Write the model as one .npz (no pickles: vocabularies are unicode arrays)."""
        meta = {**self.meta, "dense_blocks": self.dense_blocks, "modes": list(MODES)}
        np.savez_compressed(
            path,
            char_vocab=np.array(list(self.char.vocab), dtype=str),
            char_idf=self.char.idf,
            word_vocab=np.array(list(self.word.vocab), dtype=str),
            word_idf=self.word.idf,
            han_vocab=np.array(list(self.han.vocab), dtype=str),
            han_idf=self.han.idf,
            coef=self.coef.astype(np.float32),
            intercept=self.intercept,
            meta=np.array(json.dumps(meta, ensure_ascii=False)),
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> ModeClassifier:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            if meta.get("modes") != list(MODES):
                raise ConfigError(f"mode classifier was fitted for modes {meta.get('modes')}, not {MODES}")
            return cls(
                char=NgramBlock([str(g) for g in z["char_vocab"]], z["char_idf"], "char"),
                word=NgramBlock([str(g) for g in z["word_vocab"]], z["word_idf"], "word"),
                # Files written before the Chinese word block have none.
                han=NgramBlock([str(g) for g in z["han_vocab"]], z["han_idf"], "han")
                if "han_vocab" in z.files
                else None,
                dense_blocks=[tuple(b) for b in meta["dense_blocks"]],
                coef=z["coef"],
                intercept=z["intercept"],
                meta=meta,
            )

    @classmethod
    def load(cls, path: Path | None = None) -> ModeClassifier:
        """The shipped model (`data/mode_classifier.npz`), or the one at `path`."""
        try:
            if path is None:
                data = resources.files("memsched").joinpath(DATA_FILE).read_bytes()
            else:
                data = Path(path).read_bytes()
        except OSError as exc:
            raise ConfigError(
                f"cannot read the mode classifier ({path or DATA_FILE}): {exc}; "
                "run benchmarks/train_mode_classifier.py"
            ) from exc
        try:
            return cls.from_bytes(data)
        except (KeyError, ValueError) as exc:
            raise ConfigError(f"the mode classifier file {path or DATA_FILE} is damaged: {exc}") from exc
