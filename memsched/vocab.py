"""The user's vocabulary, embedded word by word: soft term matching for aggregation questions.

"What activities does Melanie partake in?" shares no word with "I'm off to go swimming with the
kids", and a whole-turn embedding is dominated by everything else the turn says. But the word
"activities" is close to "swimming", "camping" and "pottery" in the embedding space, and the
question's other terms ("cities", "countries", "exercises", "career") likewise to the instances
the user actually mentioned ("Rome", "Spain", "yoga", "jobs"). So:

- in the background (after bookmarking), every distinct search term of the user's turns gets a
  vector, stored per user through the store (`TermVectorStore`; removed with the turns that use
  it);
- at query time, each query term that is not a speaker name is compared with the vocabulary; the
  user's terms at cosine >= `threshold` (the term itself at 1.0) are its expansions, looked up
  in the user's term postings (`TermPostings`, kept in memory per user);
- a turn scores the sum, over the query terms, of its best expansion's similarity (a soft
  coordination match): turns that instantiate several of the question's terms rank first.

Combined with the speaker focus (a question about one speaker prefers that speaker's turns), this
gathers the turns about an entity's attribute: entity-centred aggregation without an LLM.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from memsched.cache import LRUCache
from memsched.model import Hit
from memsched.text.gloss import HAN_REGEX, gloss, has_han
from memsched.text.segment import terms

if TYPE_CHECKING:
    from memsched.embed.base import Embedder
    from memsched.store import Store

log = logging.getLogger(__name__)

# At most this many expansions per query term (the closest ones), so that a vague term ("things")
# cannot pull in half the vocabulary.
MAX_EXPANSIONS = 24
BATCH = 256  # terms embedded per model call in the background
_HAN_RUN = re.compile(HAN_REGEX + "+")
# A word's vector depends on the word alone, so one process-wide cache serves every user's queries
# and background passes: common words are embedded once per process, not once per user and query
# (20,000 words x 384 floats = 31 MB). A user's vocabulary is still stored per user, with the turn
# it came from, so forgetting removes it; `clear_caches` (after a forget) empties this one.
WORD_CACHE_SIZE = 20_000
_WORDS: LRUCache[tuple[str, str], np.ndarray] = LRUCache(WORD_CACHE_SIZE)
# Query terms being embedded now, by (model, word): (the batch's future, the word's row in it).
_INFLIGHT: dict[tuple[str, str], tuple[Future[np.ndarray], int]] = {}
_INFLIGHT_LOCK = threading.Lock()
# Bumped by `clear_caches`: an embedding started before a forget does not refill the cache after it.
_generation = 0


def clear_caches() -> None:
    """Drop every cached word vector (after a hard delete: the keys are the users' words)."""
    global _generation
    with _INFLIGHT_LOCK:
        _generation += 1
        _WORDS.clear()


def english_only(embedder: Embedder) -> bool:
    """Whether `embedder` (or the model a batcher wraps) reads English only (MiniLM): its vector of a
    Chinese word is noise. MiniLM's tokenizer splits most Han characters into the same unknown
    token, so "吃饭", "冷战" and "推荐" got one vector (cosine 1.0) and each expanded into the
    other: a dinner question pulled in a science-fiction debate."""
    layer: object | None = embedder
    while layer is not None:
        if getattr(layer, "english_only", False):
            return True
        layer = getattr(layer, "inner", None)
    return False


def word_text(word: str, english: bool) -> str | None:
    """What the model embeds for a vocabulary word. For an English-only model a Chinese word is
    embedded as its English senses (CC-CEDICT, `text.gloss`: "外卖" -> "provide a takeout or
    takeout"), so it meets its near-synonyms in either language; a word the dictionary does not
    know (most names) has nothing left and gives None: it expands to nothing but itself (the
    layer still matches it exactly). Any other word, or any word for another model, as it is."""
    if not english or not has_han(word):
        return word
    text = " ".join(_HAN_RUN.sub(" ", gloss(word)).split())
    return text or None


def embed_words(embedder: Embedder, words: Sequence[str]) -> np.ndarray:
    """The vectors of `words` (float32, one row each), from the word cache where it has them. A word
    with nothing to embed (`word_text`) gets a zero row: similar to nothing."""
    model = embedder.model_id
    found = {w: v for w in dict.fromkeys(words) if (v := _WORDS.get((model, w))) is not None}
    todo = [w for w in dict.fromkeys(words) if w not in found]
    if todo:
        english = english_only(embedder)
        texts = {w: t for w in todo if (t := word_text(w, english)) is not None}
        embedded = embedder.embed(list(texts.values())) if texts else np.zeros((0, 0), dtype=np.float32)
        vectors = dict(zip(texts, embedded, strict=True))
        for w in todo:
            v = vectors.get(w)
            found[w] = vec = np.zeros(embedder.dim, np.float32) if v is None else np.asarray(v, np.float32)
            _WORDS.put((model, w), vec)
    if not words:
        return np.zeros((0, 0), dtype=np.float32)
    return np.stack([found[w] for w in words])


@dataclass(slots=True)
class Vocabulary:
    """A user's embedded terms: `terms[i]` has the (normalised) vector `matrix[i]`."""

    version: tuple[int, int]
    terms: list[str]
    matrix: np.ndarray
    index: dict[str, int]

    @classmethod
    def of(cls, version: tuple[int, int], words: Sequence[str], matrix: np.ndarray) -> Vocabulary:
        return cls(version, list(words), matrix, {w: i for i, w in enumerate(words)})


def embed_vocabulary(
    store: Store, embedders: Mapping[str, Embedder], user_id: str, turn_ids: Sequence[int] | None = None
) -> int:
    """Give every term of the user's turns (or of `turn_ids`) a vector, with the first embedder.

    Background work (the bookmark job runs it for its page, maintenance for every turn). Terms that
    already have a vector are skipped, so this is cheap when nothing is new. Returns how many terms
    were embedded."""
    embedder = next(iter(embedders.values()), None)
    if embedder is None:
        return 0
    have = set(store.term_vectors(user_id, embedder.model_id)[0])
    turns = store.iter_turns(user_id) if turn_ids is None else store.get_turns(user_id, list(turn_ids))
    source: dict[str, int] = {}
    for turn in turns:
        if turn.id is None:
            continue
        for term in terms(turn.content):
            if term not in have:
                source.setdefault(term, turn.id)
    wanted = sorted(source)
    for start in range(0, len(wanted), BATCH):
        chunk = wanted[start : start + BATCH]
        vectors = embed_words(embedder, chunk)
        store.put_term_vectors(
            user_id, embedder.model_id, [(t, source[t], v) for t, v in zip(chunk, vectors, strict=True)]
        )
    return len(wanted)


def query_terms(query: str, skip: AbstractSet[str]) -> list[str]:
    """The query's terms the soft layer expands: distinct, in order, without `skip` (speaker names)."""
    return [t for t in dict.fromkeys(terms(query)) if t not in skip]


class TermVectors:
    """Vectors of query terms the vocabulary lacks, embedded once per query (and its sub-queries).

    `start` submits them to a micro-batched embedder's side dispatcher (`MicroBatcher.side`), so the
    model runs beside the message's call and the SQL stages (the vectors are read only when the soft
    layer needs them); others are embedded when asked.
    Started words enter the process-wide word cache as soon as their batch is done, read or not, and
    a word another query already has in flight is taken from that query's batch, not embedded twice
    (concurrent turns share common words)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._known: dict[str, np.ndarray] = {}
        self._pending: dict[str, tuple[Future[np.ndarray], int]] = {}

    def start(self, words: list[str]) -> None:
        from memsched.embed.base import background_pause
        from memsched.embed.batch import MicroBatcher

        if not isinstance(self.embedder, MicroBatcher) or background_pause() is not None:
            return
        model = self.embedder.model_id
        english = english_only(self.embedder)
        new: list[str] = []
        texts: list[str] = []
        with _INFLIGHT_LOCK:
            for w in dict.fromkeys(words):
                if (model, w) in _INFLIGHT:
                    self._pending[w] = _INFLIGHT[(model, w)]
                elif _WORDS.get((model, w)) is None:
                    text = word_text(w, english)
                    if text is None:  # nothing to embed: similar to nothing (`embed_words`)
                        self._known[w] = np.zeros(self.embedder.dim, np.float32)
                        continue
                    new.append(w)
                    texts.append(text)
            if not new:
                return
            generation = _generation
            # Beside the message's call, not queued behind it (`MicroBatcher.side`).
            future = self.embedder.side().submit(texts, urgent=True)
            for i, w in enumerate(new):
                self._pending[w] = _INFLIGHT[(model, w)] = (future, i)

        def settle(done: Future[np.ndarray]) -> None:
            with _INFLIGHT_LOCK:
                ok = done.exception() is None and generation == _generation
                for i, w in enumerate(new):
                    if ok:
                        _WORDS.put((model, w), np.asarray(done.result()[i], dtype=np.float32))
                    if _INFLIGHT.get((model, w), (None, 0))[0] is done:
                        del _INFLIGHT[(model, w)]

        future.add_done_callback(settle)

    def __call__(self, words: list[str]) -> np.ndarray:
        for w in words:
            if w not in self._known and w in self._pending:
                future, i = self._pending.pop(w)
                try:
                    self._known[w] = np.asarray(future.result()[i], dtype=np.float32)
                except Exception:
                    log.warning("a started query-term embedding failed; embedding %r again", w)
        todo = [w for w in words if w not in self._known]
        if todo:
            self._known.update(zip(todo, embed_words(self.embedder, todo), strict=True))
        return np.stack([np.asarray(self._known[w], dtype=np.float32) for w in words])


PAUSE_EVERY = 128  # turns segmented between two pauses of a background build (~3-8 ms of CPU)


class TermPostings:
    """Which of one user's turns use each search term, in memory: the soft layer's candidates.

    The soft layer scores every turn that uses one of the query's expansions (up to ~60 terms).
    Asking the full-text index for them (an OR of every expansion, ranked by BM25, cut at a pool of
    400) and segmenting the pool's texts again was most of the layer's time; here each turn is
    segmented once, when it is first seen, and a query only looks its expansions up.

    Built on first use from the user's turns (`terms()` of each: ~20 us for an English turn, ~60 for
    a Chinese one; BENCHMARKS.md gives the build's cost), then extended with the turns added since.
    `version` is (newest turn id, turn count) as last seen in the store: when the count does not
    match what was added (turns deleted by another process, or committed out of id order), the
    index is rebuilt. The pager drops it on every delete of this process (`Pager.forget`) and keeps
    a bounded number of bytes of them (`nbytes`). Thread-safe (one lock; a refresh and a scoring
    take well under a millisecond once built).
    """

    def __init__(self, user_id: str) -> None:
        self.user_id = user_id
        self.version = (0, 0)
        self.nbytes = 0  # about what the index holds in memory
        self._lock = threading.Lock()
        self._ids = np.zeros(0, dtype=np.int64)  # position -> turn id, ascending
        self._postings: dict[str, np.ndarray] = {}  # term -> positions of the turns using it

    def __len__(self) -> int:
        return len(self._ids)

    def refresh(self, store: Store) -> None:
        """Take in the user's turns added since the last look (or everything, when out of step)."""
        with self._lock:
            self._refresh(store)

    def _refresh(self, store: Store) -> None:
        newest, count = store.max_turn_id(self.user_id), store.turn_count(self.user_id)
        if (newest, count) == self.version:
            return
        if newest >= self.version[0] and count > self.version[1]:
            fresh = self._read(store, self.version[0])
            if fresh and self.version[1] + len(fresh) == count:
                self._add(fresh)
                self.version = (int(self._ids[-1]), count)
                return
        # Out of step: turns were deleted (or a lower id appeared late). Start over.
        self._ids = np.zeros(0, dtype=np.int64)
        self._postings, self.nbytes = {}, 0
        everything = self._read(store, 0)
        self._add(everything)
        self.version = (int(self._ids[-1]) if len(self._ids) else 0, len(everything))

    def _read(self, store: Store, after_id: int) -> list[tuple[int, str]]:
        """(id, text) of the user's turns with ids above `after_id`; background work pauses
        every `PAUSE_EVERY` rows (see `_add`)."""
        from memsched.embed.base import background_pause

        pause = background_pause()
        out: list[tuple[int, str]] = []
        for n, t in enumerate(store.iter_turns(self.user_id, after_id), 1):
            if t.id:
                out.append((t.id, t.content))
            if pause is not None and n % PAUSE_EVERY == 0:
                pause()
        return out

    def _add(self, turns: list[tuple[int, str]]) -> None:
        """Append turns whose ids are all above the ones held (positions stay in id order).
        Background work (`Pager.warm_terms`, on an index no query holds yet) pauses every
        `PAUSE_EVERY` turns for a turn in flight."""
        from memsched.embed.base import background_pause

        pause = background_pause()
        turns.sort()
        start = len(self._ids)
        index: dict[str, int] = {}
        term_of: list[int] = []
        for position, (_, content) in enumerate(turns, start):
            if pause is not None and position > start and (position - start) % PAUSE_EVERY == 0:
                pause()
            for term in set(terms(content)):
                i = index.get(term)
                if i is None:
                    i = index[term] = len(index)
                term_of.append(i)
                term_of.append(position)
        pairs = np.asarray(term_of, dtype=np.int32).reshape(-1, 2)
        pairs = pairs[np.argsort(pairs[:, 0], kind="stable")]  # by term, positions ascending within
        cuts = np.flatnonzero(np.diff(pairs[:, 0])) + 1
        for term, positions in zip(index, np.split(pairs[:, 1], cuts) if len(pairs) else [], strict=True):
            old = self._postings.get(term)
            self._postings[term] = positions if old is None else np.concatenate([old, positions])
            self.nbytes += positions.nbytes + (0 if old is not None else 120 + len(term))
        self._ids = np.concatenate([self._ids, np.fromiter((t for t, _ in turns), np.int64, len(turns))])
        self.nbytes += 8 * len(turns)

    def score(
        self, weight: Sequence[Mapping[str, float]], exclude: set[int], k: int | None = None
    ) -> list[tuple[float, int]]:
        """(score, turn id) of every turn that uses an expansion (the best `k` of them), best first
        (ties: lower id first).

        A turn's score is the sum, over the query terms in order, of its best expansion's weight for
        that term (terms it has no expansion of add nothing), in float64: the same sums, bit for bit,
        as scoring each turn's own terms one query term after another."""
        with self._lock:
            n = len(self._ids)
            total = np.zeros(n, dtype=np.float64)
            touched = np.zeros(n, dtype=bool)
            for w in weight:
                best = np.full(n, -np.inf, dtype=np.float64)
                for x, s in w.items():
                    at = self._postings.get(x)
                    if at is not None:
                        best[at] = np.maximum(best[at], s)
                have = best > -np.inf
                total[have] += best[have]
                touched |= have
            if exclude and n:
                wanted = np.fromiter(exclude, np.int64, len(exclude))
                at = np.minimum(np.searchsorted(self._ids, wanted), n - 1)
                touched[at[self._ids[at] == wanted]] = False
            cand = np.flatnonzero(touched & (total > 0))
            ids = self._ids[cand]
            scores = total[cand]
        # Only the first k become Python objects (~600 candidates a query on the benchmark's user,
        # 200 read); tolist() gives the same floats and ints as float() and int() of each element.
        order = np.lexsort((ids, -scores))[:k]
        return list(zip(scores[order].tolist(), ids[order].tolist(), strict=True))


def soft_hits(
    store: Store,
    user_id: str,
    query: str,
    vocab: Vocabulary,
    embed: Callable[[list[str]], np.ndarray],
    *,
    skip: AbstractSet[str],
    threshold: float,
    k: int,
    exclude: set[int],
    postings: TermPostings | None = None,
) -> list[Hit]:
    """The soft-term layer: turns ranked by how many of the query's terms they instantiate.

    `skip` are terms not to expand (speaker names: the speaker focus handles those); `embed` gives
    vectors for query terms the vocabulary lacks; `postings` is the user's term index (the pager
    keeps one per user; without it one is built from the store now). [] when the query has no other
    term."""
    q_terms = query_terms(query, skip)
    if not q_terms or len(vocab.terms) == 0:
        return []
    missing = [t for t in q_terms if t not in vocab.index]
    extra = dict(zip(missing, embed(missing), strict=True)) if missing else {}
    q_matrix = np.stack(
        [
            vocab.matrix[vocab.index[t]] if t in vocab.index else np.asarray(extra[t], np.float32)
            for t in q_terms
        ]
    )
    # einsum, not `@`: a product this small is ~1 ms in numpy's own loop, while BLAS threads on a
    # busy machine made it 40-140 ms (measured under load, BENCHMARKS.md "Soft terms").
    sims = np.einsum("qd,vd->qv", q_matrix, vocab.matrix)
    weight: list[dict[str, float]] = []
    for i, t in enumerate(q_terms):
        row = sims[i]
        idx = np.flatnonzero(row >= threshold)
        if len(idx) > MAX_EXPANSIONS:
            idx = idx[np.argsort(-row[idx], kind="stable")[:MAX_EXPANSIONS]]
        w = {vocab.terms[j]: float(row[j]) for j in idx}
        w[t] = 1.0
        weight.append(w)
    if postings is None:
        postings = TermPostings(user_id)
    postings.refresh(store)
    scored = postings.score(weight, exclude, k)
    return [Hit(turn_id=tid, score=s, rank=r + 1) for r, (s, tid) in enumerate(scored)]
