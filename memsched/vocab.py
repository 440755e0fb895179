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
  user's terms at cosine >= `threshold` (the term itself at 1.0) are its expansions, searched with
  the full-text index;
- a turn scores the sum, over the query terms, of its best expansion's similarity (a soft
  coordination match): turns that instantiate several of the question's terms rank first.

Combined with the speaker focus (a question about one speaker prefers that speaker's turns), this
gathers the turns about an entity's attribute: entity-centred aggregation without an LLM.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from memsched.model import Hit
from memsched.text.segment import terms

if TYPE_CHECKING:
    from memsched.embed.base import Embedder
    from memsched.store import Store

# At most this many expansions per query term (the closest ones), so that a vague term ("things")
# cannot pull in half the vocabulary.
MAX_EXPANSIONS = 24
BATCH = 256  # terms embedded per model call in the background


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
        vectors = embedder.embed(chunk)
        store.put_term_vectors(
            user_id, embedder.model_id, [(t, source[t], v) for t, v in zip(chunk, vectors, strict=True)]
        )
    return len(wanted)


def soft_hits(
    store: Store,
    user_id: str,
    query: str,
    vocab: Vocabulary,
    embed: Callable[[list[str]], np.ndarray],
    *,
    skip: set[str],
    threshold: float,
    k: int,
    exclude: set[int],
    pool: int = 400,
) -> list[Hit]:
    """The soft-term layer: turns ranked by how many of the query's terms they instantiate.

    `skip` are terms not to expand (speaker names: the speaker focus handles those); `embed` gives
    vectors for query terms the vocabulary lacks. [] when the query has no other term."""
    q_terms = [t for t in dict.fromkeys(terms(query)) if t not in skip]
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
    sims = q_matrix @ vocab.matrix.T  # query terms x vocabulary
    weight: list[dict[str, float]] = []
    expanded: set[str] = set()
    for i, t in enumerate(q_terms):
        row = sims[i]
        idx = np.flatnonzero(row >= threshold)
        if len(idx) > MAX_EXPANSIONS:
            idx = idx[np.argsort(-row[idx], kind="stable")[:MAX_EXPANSIONS]]
        w = {vocab.terms[j]: float(row[j]) for j in idx}
        w[t] = 1.0
        weight.append(w)
        expanded.update(w)
    if not expanded:
        return []
    found = store.search_bm25(user_id, " ".join(sorted(expanded)), pool)
    ids = [h.turn_id for h in found if h.turn_id not in exclude]
    scored: list[tuple[float, int]] = []
    for turn in store.get_turns(user_id, ids):
        have = set(terms(turn.content))
        score = sum(max((v for w_t, v in w.items() if w_t in have), default=0.0) for w in weight)
        if score > 0 and turn.id is not None:
            scored.append((score, turn.id))
    scored.sort(key=lambda sv: (-sv[0], sv[1]))
    return [Hit(turn_id=tid, score=s, rank=r + 1) for r, (s, tid) in enumerate(scored[:k])]
