"""The paging scheduler: which pages of history to load for a query, in three visible layers.

- recall: BM25 over turns and over bookmarks, plus matching the query against bookmark keywords
  and aliases (exact phrase matches on segmented terms, fuzzy matches with rapidfuzz);
- semantic: dense search over turns and over bookmark embeddings;
- fusion: the retriever's weighted RRF over the turn layers is the base; pages earn a prior from
  their best turns and from bookmark hits, and a page's prior promotes only those of its turns
  that also match the query (a page is never paged in wholesale on a bookmark hit alone);
  neighbours of top turns that match follow them;
- cooperative: with an LLM, one rerank call sees the top pages as `[p12] date: summary` lines and
  names the 1-3 pages needed. It is skipped when the fused ranking is already confident, when the
  session's previous query was nearly the same (its decision is reused), or when the query asks
  for a kind of bookmark directly ("what did we decide about X"); a time budget falls back to the
  fused order.

Compound questions are decomposed (LLM, or rules in Chinese and English) and retrieved per part;
a keyword co-occurrence graph over bookmarks lets a query about one entity reach pages linked to it
through a shared entity (one hop, bounded). `Pager.retrieve` returns the candidates plus a trace
with every layer's scores; `memsched.llm.llm_calls()` counts the LLM calls it made.
"""

from __future__ import annotations

import heapq
import itertools
import re
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from datetime import time as dt_time
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from pydantic import BaseModel, Field

from memsched.busy import beside
from memsched.cache import LRUCache
from memsched.embed.batch import embed_soon
from memsched.errors import LLMError
from memsched.model import Candidate, Hit
from memsched.text.common import COMMON_ZIPF, content_terms
from memsched.text.segment import cjk_ratio, has_cjk, terms
from memsched.text.timeexpr import local_now, noted_days, past_spans
from memsched.topic import without_time
from memsched.vectors import blas_single_thread, top_hits
from memsched.vocab import TermPostings, TermVectors, Vocabulary, query_terms, soft_hits

if TYPE_CHECKING:
    from memsched.llm.client import ChatClient
    from memsched.model import Bookmark
    from memsched.retrieve import Retriever
    from memsched.store import Store


class Memory(Protocol):
    """What the pager uses of a `memsched.Memory` (named here so this module does not import it)."""

    store: Store
    retriever: Retriever


@dataclass(slots=True)
class PagingOptions:
    """What the pager does. Each stage can be switched off (the ablation does exactly that)."""

    bookmarks: bool = True  # bookmark layers (BM25, dense, keyword/alias matching) feed page priors
    expand: bool = True  # pages of the best turns promote their other matching turns; neighbours
    multihop: bool = True  # decomposition + keyword co-occurrence graph
    entity_focus: bool = True  # a query about one speaker prefers what that speaker said
    cooperative: bool = True  # the LLM rerank, when an LLM is given
    turn_k: int = 50  # turn hits per layer for the base ranking
    deep_k: int = 200  # turn hits per layer that may be promoted by a page prior
    bookmark_k: int = 20
    page_top_turns: int = 30  # the best turns whose pages earn a prior
    page_weight: float = 2.0  # how much the best page's prior lifts its matching turns (plateau 2..3)
    bookmark_weight: float = 0.25  # bookmark evidence relative to turn evidence in a page's prior
    # A one-hop entity neighbour's share, relative to a direct hit. Off: 0, 0.25 and 0.5 gave the
    # same recall to four decimals on the dev conversations, so the constant earned nothing.
    graph_weight: float = 0.0
    speaker_boost: float = 1.0  # x(1 + boost) for turns by the one speaker a query names
    time_boost: float = 1.0  # x(1 + boost) for turns said in the time a query asks about
    # A query's common words (`text.common`: "make", "want", 好, 做) stay out of its lexical layers
    # (BM25 over turns and bookmarks, the soft-term layer) unless nothing else is left: in a small
    # history a common verb is as rare as a name, and "What should I make for dinner tonight?"
    # ranked a debate line first through "make". The Zipf frequency from which a word is common
    # (0: off); BENCHMARKS.md "Common words".
    common_zipf: float = COMMON_ZIPF
    # The soft-term layer leaves the query's time words out too, as BM25 does (`topic.without_time`).
    terms_timeless: bool = True
    # The names of the user's people whose relation a question names ("my sister" -> Leah) join its
    # lexical layers (`Pager._people_names`).
    people_names: bool = True
    # A dense layer's noise (`_without_noise`): on a history small enough that the deep search
    # returned every turn, a dense hit counts only if its similarity stands `dense_noise_z` standard
    # deviations above the query's mean similarity to the whole history. With ~100 turns, the 50
    # nearest are two in five of them, and a dinner question drew a debate's lines in at cosine
    # 0.12-0.15 (z 0.3-0.7; the food turns stood at z 1.5-2.4). Larger histories are never cut
    # (their 200 nearest are what stands out). 0: off. BENCHMARKS.md "Common words".
    dense_noise_z: float = 1.5
    # Diversity across sessions (MMR-style, greedy): each turn already ranked from the same session
    # multiplies a candidate's score by (1 - diversity), so a budget covers more distinct episodes.
    # Off: on the dev conversations every value > 0 lost recall at every budget (evidence clusters
    # within sessions; BENCHMARKS.md "Leave-one-out").
    diversity: float = 0.0
    diversity_top: int = 200  # how deep the greedy re-ranking goes
    # Pseudo-relevance feedback (Rocchio): the query vector plus the mean vector of the best
    # `feedback_docs` turns searches again; its hits count `feedback` times a dense layer (1: as
    # much as the first search). Off: with the resolved dates in the index, no value beat 0 out of
    # sample on the dev conversations (BENCHMARKS.md "Leave-one-out").
    feedback: float = 0.0
    feedback_docs: int = 3
    # Soft term matching over the user's embedded vocabulary (memsched.vocab): a layer of turns that
    # instantiate the query's terms ("activities" -> swimming, camping), fused with weight
    # FusionWeights.terms. `terms_threshold` is the cosine from which a user's term expands a query
    # term. Both chosen leave-one-out on the dev conversations (every fold chose 0.5, and weight 0.75;
    # BENCHMARKS.md "Leave-one-out").
    terms: bool = True
    terms_threshold: float = 0.5
    neighbour_decay: float = 0.3
    # The same speaker's previous and next turn in the session (in a two-person chat, two turns
    # away): a speaker's story often runs over their next turn, past the other side's reply.
    # Counts this share of the head turn's score (0: off). Only turns that are candidates already.
    thread_decay: float = 0.3
    neighbour_top: int = 20  # the head turns whose neighbours follow them
    # A neighbour's share of a head turn's score leaves out the head's own focus multipliers (the
    # speaker a query names, the time it asks about) and takes the neighbour's instead: in "Would
    # John ...?" the other speaker's reply to John's turn is not John's, and counted as his (x2) it
    # took a 1,000-token context's places from John's own turns. The speaker's own next turn keeps
    # the head's boost. No constant; every leave-one-out fold chose it (BENCHMARKS.md "A neighbour
    # does not inherit the named speaker's focus"). False: the head's boosted score (before).
    neighbour_own_focus: bool = True
    subquery_weight: float = 0.5
    # Speaker names a query mentions stay out of its BM25 search (False). A turn is indexed with
    # its speaker's label, so the name matches every turn of that speaker and BM25's length
    # normalisation ranks the shortest ones ("Cool! What now?") first; the speaker focus already
    # prefers the speaker's turns. True searches the names too (the earlier behaviour).
    bm25_speaker_names: bool = False
    # The same for the dense layers (False): a question that names a speaker is also embedded without
    # the names. A turn is embedded as `Speaker: text`, so the name in the question is near every turn
    # of that speaker (and every turn addressing them): it takes a share of the cosine that the
    # question's content should have. The dense layers search with the unit sum of the two vectors,
    # the message's counting `dense_name_weight` (0: the text without the names alone; chosen
    # leave-one-out, BENCHMARKS.md "Speaker names out of the dense query"). True embeds the message
    # as it is (the earlier behaviour). Costs one more query embedding, only when a name is mentioned.
    dense_speaker_names: bool = False
    dense_name_weight: float = 1.0
    # And for the BM25 search over bookmarks (False: left out as for turns; True: searched, the
    # earlier behaviour). Every leave-one-out fold chose False (BENCHMARKS.md "Speaker names out").
    bookmark_speaker_names: bool = False
    # A turn that mostly asks ("What made you pick it?") tells little about anyone: the head of the
    # ranking (`question_top` candidates) is re-scored x(1 - penalty x share of its sentences that
    # are questions). Chosen leave-one-out on the dev conversations (BENCHMARKS.md "Leave-one-out").
    question_penalty: float = 1.0
    question_top: int = 200
    # Redundancy (maximal marginal relevance over turn vectors, `_novelty`): the head's
    # (`novelty_top`) scores are discounted x(1 - novelty x the highest cosine to a turn placed
    # above), so near-copies of one exchange give way to distinct evidence. Chosen leave-one-out on
    # the dev conversations (every fold chose 0.5 among 0 to 1; BENCHMARKS.md "Redundancy").
    novelty: float = 0.5
    novelty_top: int = 120
    # Budget per token: after the re-rankings above, the head's (`question_top`) scores are divided by
    # (a turn's estimated line tokens) ** length_penalty, so that of two turns about as relevant the
    # shorter goes first and a budget holds more distinct turns (`_per_token`). Off (0): 0.2 gained
    # at 2,000 and 4,000 tokens in sample and held out, but held out it lost at 1,000 (one fold chose
    # 0.3; BENCHMARKS.md "Speaker names out of the dense query").
    length_penalty: float = 0.0
    # A relevance floor: after the re-rankings above, a candidate scoring below `floor` x the best
    # candidate's score is dropped, so a budget larger than what the question finds is left unfilled
    # instead of topped up with turns that only a weak page prior or one layer's deep tail reached
    # (a dinner question drew a science-fiction debate's page-mates in at 0.5 % of the top score).
    # Not a recall constant (LoCoMo counts no irrelevant turn against a context, so on it a floor
    # can only lose): 0.01 is the largest of 0.005 / 0.01 / 0.02 that loses no dev evidence at
    # 1,000 and 2,000 tokens (one of 477 at 4,000); BENCHMARKS.md "A relevance floor". 0: off.
    floor: float = 0.01
    # Retrievable units above the turn (issue 10; `Pager._units`), each lifting its own best
    # `unit_turns` turns that match the query (deep evidence) by weight x that evidence x the unit's
    # prior, after the page lift. Entity units: a speaker or other name the query mentions
    # (`keywords.query_entities`) groups the turns about it (the speaker's turns; the turns a BM25
    # search for the name finds), so "what does X like" gathers X's turns from every session.
    # Session units: an extractive summary of each session (its `unit_turns` turns nearest the
    # session's centroid, one vector, computed from the stored turn vectors and cached until the
    # user's turns change) searched with the query's dense vector; the `session_top` best sessions
    # get priors 1, (n-1)/n, ... Both off (BENCHMARKS.md "Units above the turn"): session units lost
    # at 1,000 tokens held out on the dev conversations; entity units gained held out (+0.6 points at
    # 1,000, +0.1 at 2,000, every fold chose weight 0.5) but only on single-hop questions, and cost
    # open-domain and multi-hop, the categories they were meant for. `unit_turns` 3 was chosen by
    # the folds for both (against 5 and 10).
    entity_units: float = 0.0
    entity_speakers: bool = True  # a speaker the query names is an entity (their own turns)
    entity_names: bool = True  # other names the query mentions are entities (the turns naming them)
    session_units: float = 0.0
    unit_turns: int = 3
    session_top: int = 3
    # Cooperative layer: skip the LLM when the fused top is this far ahead of the next page.
    confident_ratio: float = 1.2
    cache_similarity: float = 0.9  # same-session query this similar: reuse the last decision
    rerank_pages: int = 8
    rerank_timeout: float = 2.0


def _before(**changes: Any) -> PagingOptions:
    """Options as the stages before "+names" ran: speaker names searched, no question penalty."""
    return PagingOptions(
        bm25_speaker_names=True,
        question_penalty=0.0,
        dense_speaker_names=True,
        bookmark_speaker_names=True,
        thread_decay=0.0,
        **changes,
    )


STAGES: dict[str, PagingOptions] = {
    "hybrid": _before(
        bookmarks=False, expand=False, multihop=False, entity_focus=False, cooperative=False, terms=False
    ),
    "+bookmarks": _before(expand=False, multihop=False, entity_focus=False, cooperative=False, terms=False),
    "+expansion": _before(multihop=False, entity_focus=False, cooperative=False, terms=False),
    "+multihop": _before(entity_focus=False, cooperative=False, terms=False),
    "+focus": _before(terms=False),
    "+terms": _before(),
    "+names": PagingOptions(
        question_penalty=0.0,
        novelty=0.0,
        dense_speaker_names=True,
        bookmark_speaker_names=True,
        thread_decay=0.0,
    ),
    "+questions": PagingOptions(
        novelty=0.0, dense_speaker_names=True, bookmark_speaker_names=True, thread_decay=0.0
    ),
    "+novelty": PagingOptions(dense_speaker_names=True, bookmark_speaker_names=True, thread_decay=0.0),
    "+densenames": PagingOptions(thread_decay=0.0),
    "full": PagingOptions(),
    # Methods measured and left off by default (each added to the full default on its own):
    "+feedback": PagingOptions(feedback=1.0),
    "+context": PagingOptions(),  # the eval pairs it with FusionWeights(context=1.0)
    "+diversity": PagingOptions(diversity=0.2),
    "+entityunits": PagingOptions(entity_units=0.5),
    "+sessionunits": PagingOptions(session_units=1.0),
}
"""The ablation ladder of `memsched eval locomo --ablation`: each stage adds one part ("+names"
leaves speaker names out of the BM25 query, "+questions" adds the question penalty, "+novelty" the
redundancy re-ranking, "+densenames" leaves the speaker names out of the dense query and the
bookmarks' BM25 search too, "full" lets the speaker's own next turn follow a head turn); the last
five add, one at a time, methods that are measured but off by default (feedback, contextual vectors,
session diversity, entity units, session summary units)."""


@dataclass(slots=True)
class Paging:
    """The outcome of one paging decision; duck-types `memsched.retrieve.Retrieval`."""

    candidates: list[Candidate]
    layers: dict[str, list[Hit]]
    timings_ms: dict[str, float]
    pages: dict[int, float] = field(default_factory=dict)  # page id -> prior
    info: dict[str, Any] = field(default_factory=dict)

    def trace(self, top: int = 30) -> dict[str, Any]:
        return {
            "layers": {name: len(hits) for name, hits in self.layers.items()},
            "scores": {
                name: [[h.turn_id, round(h.score, 4)] for h in hits[:10]]
                for name, hits in self.layers.items()
            },
            "pages": [[p, round(s, 6)] for p, s in sorted(self.pages.items(), key=lambda kv: -kv[1])[:10]],
            "paging": self.info,
            "candidates": [c.as_dict() for c in self.candidates[:top]],
        }


# -- query decomposition --------------------------------------------------------------------------------

_EN_JOIN = re.compile(r"\s*(?:,\s*)?\b(?:and|as well as|&)\b\s*", re.I)
_EN_CLAUSE = re.compile(
    r"(?:,\s*|\s+)(?:and|but|also)\s+(?=(?:what|when|where|why|how|who|which|did|does|do|is|are|was|were|has|have)\b)"
    r"|\?\s+(?=\S)|;\s*",
    re.I,
)
_ZH_CLAUSE = re.compile(r"[？?；;]\s*(?=\S)|，?(?:以及|并且|而且|另外|还有|同时)")
_ZH_JOIN = re.compile(r"(?:和|与|跟|及|、)")
_BOTH = re.compile(r"\b(?:both|each|together|all)\b\s*|都|一起|分别|共同", re.I)


class _Decomposition(BaseModel):
    queries: list[str] = Field(min_length=1)


def decompose_rules(query: str, entities: Sequence[str] = ()) -> list[str]:
    """Sub-queries of a compound question, by rules (Chinese and English); [] when it is simple.

    Two clauses joined by a conjunction ("..., and when did ...", "以及", a second question mark)
    become one sub-query each; two or more known entities joined by "and"/"和" ("Did Alice and Bob
    ...") become one sub-query per entity. At most three.
    """
    q = " ".join(query.split())
    parts = [p.strip(" ,，。") for p in (_ZH_CLAUSE if has_cjk(q) else _EN_CLAUSE).split(q)]
    parts = [p for p in parts if len(terms(p)) >= 2]
    if len(parts) >= 2:
        return parts[:3]
    found: list[tuple[int, int, str]] = []
    low = q.lower()
    for e in sorted({e for e in entities if e}, key=len, reverse=True):
        pos = low.find(e.lower())
        if pos >= 0 and not any(pos < end and start < pos + len(e) for start, end, _ in found):
            found.append((pos, pos + len(e), e))
    found.sort()
    if len(found) < 2:
        return []
    joiner = _ZH_JOIN if has_cjk(q) else _EN_JOIN
    # Only entities joined by "and"/"和" form a group; "Alice told Bob" is one question.
    group = [found[0]]
    for prev, cur in itertools.pairwise(found):
        between = q[prev[1] : cur[0]]
        if joiner.fullmatch(between) or between.strip() in (",", "，", "、"):
            group.append(cur)
        elif len(group) < 2:
            group = [cur]
    if len(group) < 2:
        return []
    start, end = group[0][0], group[-1][1]
    out = []
    for _, _, e in group[:3]:
        sub = q[:start] + e + q[end:]
        sub = _BOTH.sub("", sub)
        out.append(" ".join(sub.split()))
    return out


def looks_compound(query: str, entities: Sequence[str] = ()) -> bool:
    """Whether a query may hold several questions: the rules split it, or it has a conjunction.
    Only such queries are worth an LLM decomposition call."""
    if decompose_rules(query, entities):
        return True
    # A conjunction the rules could not split on is still worth asking about.
    return re.search(r"\b(?:and|both|as well as)\b|以及|并且|而且|和|与", query, re.I) is not None


def decompose(
    query: str, entities: Sequence[str] = (), llm: ChatClient | None = None, timeout: float = 2.0
) -> tuple[list[str], str]:
    """(sub-queries, how): the LLM's split when an LLM is given, the query `looks_compound` and the
    LLM answers; else the rules'.

    An empty list means the question is simple. `how` is "llm", "rules", or "rules (llm failed: ...)".
    """
    if llm is not None and looks_compound(query, entities):
        from memsched.llm.client import complete_json
        from memsched.llm.prompts import load

        try:
            reply = complete_json(
                llm,
                [{"role": "user", "content": load("decompose").format(query=query)}],
                _Decomposition,
                purpose="decompose",
                timeout=timeout,
            )
            subs = [" ".join(s.split()) for s in reply.queries if s and s.strip()][:3]
            return (subs if len(subs) >= 2 else []), "llm"
        except LLMError as exc:
            return decompose_rules(query, entities), f"rules (llm failed: {str(exc)[:120]})"
    return decompose_rules(query, entities), "rules"


# -- keyword / alias matching and the entity graph ----------------------------------------------------------


@dataclass(slots=True)
class _NameIndex:
    """A user's bookmark names (keywords and aliases) ready for matching, plus their co-occurrence."""

    signature: tuple[int, float, int]
    marks: dict[int, Bookmark]
    by_terms: dict[tuple[str, ...], set[int]]  # segmented name -> bookmark ids
    cjk_names: dict[str, set[int]]  # Chinese names, matched as substrings of the query
    vocab: list[str]  # single-term names, for fuzzy matching
    cooccur: dict[tuple[str, ...], Counter[tuple[str, ...]]]
    page_dates: dict[int, str]
    generic: set[tuple[str, ...]]  # names in too many bookmarks to tell anything
    aliases: dict[tuple[str, ...], set[int]]  # alias names (renames, short forms) -> bookmark ids


def _build_names(
    marks: Sequence[Bookmark], signature: tuple[int, float, int], speakers: set[str]
) -> _NameIndex:
    by_terms: dict[tuple[str, ...], set[int]] = {}
    cjk_names: dict[str, set[int]] = {}
    cooccur: dict[tuple[str, ...], Counter[tuple[str, ...]]] = {}
    page_dates: dict[int, str] = {}
    aliases: dict[tuple[str, ...], set[int]] = {}
    for b in marks:
        if b.id is None:
            continue
        for alias_list in b.aliases.values():
            for alias in alias_list:
                if alias_key := tuple(terms(alias)):
                    aliases.setdefault(alias_key, set()).add(b.id)
        keys: set[tuple[str, ...]] = set()
        for name in b.names:
            key = tuple(terms(name))
            if not key or name.lower() in speakers:
                continue
            keys.add(key)
            by_terms.setdefault(key, set()).add(b.id)
            if has_cjk(name) and len(name) >= 2:
                cjk_names.setdefault(name, set()).add(b.id)
        for a in keys:
            counter = cooccur.setdefault(a, Counter())
            for other in keys:
                if other != a:
                    counter[other] += 1
        for p in b.page_ids:
            page_dates.setdefault(p, b.first_at.strftime("%Y-%m-%d"))
    limit = max(3, int(0.2 * len(marks)))
    generic = {k for k, ids in by_terms.items() if len(ids) > limit}
    vocab = sorted({k[0] for k in by_terms if len(k) == 1 and len(k[0]) >= 4 and k not in generic})
    return _NameIndex(
        signature,
        {b.id: b for b in marks if b.id is not None},
        by_terms,
        cjk_names,
        vocab,
        cooccur,
        page_dates,
        generic,
        aliases,
    )


def match_names(index: _NameIndex, query: str, fuzzy: bool = True) -> dict[int, tuple[float, list[str]]]:
    """Bookmarks whose keywords or aliases the query names: id -> (score, matched names).

    Exact matches of segmented names (any n-gram of the query's terms) score 1 per name; Chinese
    names also match as substrings; fuzzy matches (rapidfuzz ratio >= 88 on single terms) 0.7.
    """
    q_terms = terms(query)
    found: dict[int, tuple[float, list[str]]] = {}

    def add(ids: set[int], name: str, score: float) -> None:
        for bid in ids:
            s, names = found.get(bid, (0.0, []))
            if name not in names:
                found[bid] = (s + score, [*names, name])

    seen: set[tuple[str, ...]] = set()
    for n in range(min(4, len(q_terms)), 0, -1):
        for i in range(len(q_terms) - n + 1):
            key = tuple(q_terms[i : i + n])
            if key in index.by_terms and key not in index.generic and key not in seen:
                seen.add(key)
                add(index.by_terms[key], " ".join(key), 1.0)
    if has_cjk(query):
        for name, ids in index.cjk_names.items():
            key = tuple(terms(name))
            if name in query and key not in seen and key not in index.generic:
                seen.add(key)
                add(ids, name, 1.0)
    if fuzzy and index.vocab:
        from rapidfuzz import fuzz, process

        for term in {t for t in q_terms if len(t) >= 4 and (t,) not in seen}:
            for name, score, _ in process.extract(
                term, index.vocab, scorer=fuzz.ratio, score_cutoff=88, limit=3
            ):
                if name != term and (name,) not in seen:
                    seen.add((name,))
                    add(index.by_terms[(name,)], name, 0.7 * score / 100.0)
    return found


def graph_neighbours(
    index: _NameIndex, matched: Sequence[str], limit: int = 5
) -> list[tuple[tuple[str, ...], float]]:
    """Names that co-occur with the matched names in bookmarks (one hop), strongest first."""
    scores: Counter[tuple[str, ...]] = Counter()
    direct = {tuple(terms(m)) for m in matched}
    for key in direct:
        for other, n in index.cooccur.get(key, Counter()).items():
            if other not in direct and other not in index.generic:
                scores[other] += n
    if not scores:
        return []
    top = scores.most_common(limit)
    best = top[0][1]
    return [(k, n / best) for k, n in top]


# -- patterns that map to a bookmark kind -------------------------------------------------------------------

_KIND_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("decision", re.compile(r"\b(?:what|which)\b.*\b(?:decide|decided|decision|chose|choose|agree|agreed|settle)\b|决定|定了|选了|选的|选定|拍板", re.I)),
    ("plan", re.compile(r"\b(?:what|when)\b.*\b(?:plan|planned|planning|going to)\b|打算|计划|准备", re.I)),
)  # fmt: skip


def query_kind(query: str) -> str | None:
    """The bookmark kind a query asks for directly ("what did we decide about X" -> "decision")."""
    for kind, pattern in _KIND_PATTERNS:
        if pattern.search(query):
            return kind
    return None


# -- the pager -----------------------------------------------------------------------------------------------


class _Summed(Mapping[str, np.ndarray]):
    """Per embedder, the unit-length sum `a + weight * b`, computed when first read (either side
    may still be embedding); names only in `a` are `a`'s."""

    def __init__(self, a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray], weight: float) -> None:
        self._a, self._b, self._weight = a, b, weight
        self._done: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        vec = self._done.get(name)
        if vec is None:
            vec = np.asarray(self._a[name], dtype=np.float32)
            if name in self._b:
                vec = vec + self._weight * np.asarray(self._b[name], dtype=np.float32)
                norm = float(np.linalg.norm(vec))
                if norm > 0:
                    vec = vec / norm
            self._done[name] = vec
        return vec

    def __iter__(self) -> Iterator[str]:
        return iter(self._a)

    def __len__(self) -> int:
        return len(self._a)


@dataclass(slots=True)
class _SessionDecision:
    vector: np.ndarray
    pages: list[int]
    how: str


@dataclass(slots=True)
class _Ranked:
    """One (sub-)query's ranking before the cooperative layer."""

    scores: dict[int, Candidate]
    layers: dict[str, list[Hit]]
    pages: dict[int, float]
    matched: list[str]
    timings: dict[str, float]


# The soft-term layer runs on one of these threads while the calling thread runs the turn layers
# (BM25, dense, fusion): both are mostly SQLite and numpy, which release the GIL, so on two cores
# the layer's full-text pool search no longer adds to the turn's wall time. Shared by every pager.
# In a busy process the layer runs in place, on the caller's thread (`memsched.busy`).
_SOFT_THREADS = 4
_soft_pool: ThreadPoolExecutor | None = None
_soft_pool_lock = threading.Lock()


def _soft_executor() -> ThreadPoolExecutor:
    global _soft_pool
    with _soft_pool_lock:
        if _soft_pool is None:
            _soft_pool = ThreadPoolExecutor(max_workers=_SOFT_THREADS, thread_name_prefix="memsched-soft")
        return _soft_pool


# The `when` layer reads at most this many turns of the time a question asks about (oldest first).
WHEN_LIMIT = 5000
# How long after a stretch of time a turn said about it is looked for (`Pager._said_about`): people
# tell of the weekend on Monday. 0: only what was said then.
AFTER_DAYS = 7


def _when_hits(said: Sequence[int], evidence: Mapping[int, float], k: int) -> list[Hit]:
    """The `when` layer: the turns said in the asked-about time, those the other layers found best
    first, the rest in the order they were said; the first `k`."""
    order = sorted(said, key=lambda t: -evidence.get(t, 0.0))  # stable: said-order among equals
    return [Hit(turn_id=t, score=evidence.get(t, 0.0), rank=r) for r, t in enumerate(order[:k], 1)]


# At most this many cached question shares per user (then the cache starts over).
_QUESTION_CACHE_TURNS = 100_000
# Turns without a speaker are labelled by role in `turn_meta`; those labels are not names.
_ROLES = frozenset(("user", "assistant", "system", "tool"))
# Up to this many new turn ids, new speakers are looked for among the new turns alone.
_SPEAKER_RECHECK = 64


class Pager:
    """Decides which turns (grouped in pages) to load for a query; see the module docstring.

    `llm` enables the cooperative layer and LLM decomposition; without it everything is offline.
    Thread-safe: caches are per user and guarded.
    """

    def __init__(
        self, memory: Memory, options: PagingOptions | None = None, llm: ChatClient | None = None
    ) -> None:
        self.memory = memory
        self.store = memory.store
        self.retriever = memory.retriever
        self.options = options or PagingOptions()
        self.llm = llm
        self._lock = threading.Lock()
        # Per-user caches, bounded so memory follows the active users (Config.user_cache_size).
        size = memory.retriever.cache_users
        self._names: LRUCache[str, _NameIndex] = LRUCache(size)
        self._vectors: LRUCache[tuple[str, str], tuple[tuple[int, float, int], np.ndarray, np.ndarray]] = (
            LRUCache(size)
        )
        # user -> (newest turn id seen, speaker names, the names' terms: what the soft layer and BM25
        # do not expand or search, read several times a query)
        self._speakers: LRUCache[str, tuple[int, dict[str, str], frozenset[str]]] = LRUCache(size)
        # Within one `retrieve` (this thread's): (user, their speaker entry), read from the store once.
        self._looking = threading.local()
        self._vocab: LRUCache[tuple[str, str], Vocabulary] = LRUCache(size)
        # turn id -> question share, per user: a turn's text never changes, so each is read once
        # (dropped with the user's other caches after a delete, which may free its id).
        self._questions: LRUCache[str, dict[int, float]] = LRUCache(size)
        # turn id -> estimated tokens of its line, per user, filled by the same read (`_per_token`).
        self._lengths: LRUCache[str, dict[int, float]] = LRUCache(size)
        # turn id -> (page id, session id, seq, speaker label), per user: none of it changes after
        # the turn is stored, so a ranking reads only turns it has not seen (`_turn_meta`).
        self._meta: LRUCache[str, dict[int, tuple[int, str, int, str]]] = LRUCache(size)
        # user -> which of the user's turns use each term (the soft-term layer's candidates), within
        # a quarter of the vector cache's bytes (a 10k-turn user's postings take ~2 MB).
        self._postings: LRUCache[str, TermPostings] = LRUCache(
            size, max_weight=memory.retriever.cache_bytes / 4, weigh=lambda p: p.nbytes
        )
        self._sessions: OrderedDict[tuple[str, str], _SessionDecision] = OrderedDict()
        # (user, embedder, unit_turns) -> (max turn id, session ids, summary vectors): `_session_vectors`.
        self._session_units: LRUCache[tuple[str, str, int], tuple[int, list[str], np.ndarray]] = LRUCache(
            size
        )
        self.stats: Counter[str] = Counter()  # rerank outcomes: called, skipped:<why>, failed
        self._forgets = 0  # `forget` calls so far: a postings build that saw one is not put in

    def with_options(self, **changes: Any) -> Pager:
        """A pager sharing this one's caches with some options changed."""
        other = Pager(self.memory, replace(self.options, **changes), self.llm)
        other._names, other._vectors, other._speakers = self._names, self._vectors, self._speakers
        other._vocab = self._vocab
        other._questions = self._questions
        other._lengths = self._lengths
        other._meta = self._meta
        other._postings = self._postings
        other._session_units = self._session_units
        return other

    # -- caches ------------------------------------------------------------------------------------------

    def forget(self, user_id: str) -> None:
        """Drop every cache of the user (after a hard delete: they hold bookmark words and names)."""
        with self._lock:
            self._forgets += 1
            self._names.pop(user_id)
            self._speakers.pop(user_id)
            self._questions.pop(user_id)
            self._lengths.pop(user_id)
            self._meta.pop(user_id)
            self._postings.pop(user_id)
            for key in [k for k in self._vectors if k[0] == user_id]:
                self._vectors.pop(key)
            for vkey in [k for k in self._vocab if k[0] == user_id]:
                self._vocab.pop(vkey)
            for ukey in [k for k in self._session_units if k[0] == user_id]:
                self._session_units.pop(ukey)
            for key in [k for k in self._sessions if k[0] == user_id]:
                del self._sessions[key]

    def _name_index(self, user_id: str) -> _NameIndex:
        sig = self.store.bookmark_signature(user_id)
        with self._lock:
            cached = self._names.get(user_id)
        if cached is not None and cached.signature == sig:
            return cached
        index = _build_names(
            self.store.bookmarks(user_id), sig, {s.lower() for s in self._speaker_names(user_id)}
        )
        with self._lock:
            self._names.put(user_id, index)
        return index

    def _bookmark_matrix(self, user_id: str, model_id: str) -> tuple[np.ndarray, np.ndarray]:
        sig = self.store.bookmark_signature(user_id)
        key = (user_id, model_id)
        with self._lock:
            cached = self._vectors.get(key)
        if cached is not None and cached[0] == sig:
            return cached[1], cached[2]
        ids, matrix = self.store.bookmark_vectors(user_id, model_id)
        with self._lock:
            self._vectors.put(key, (sig, ids, matrix))
        return ids, matrix

    def _vocabulary(self, user_id: str, model_id: str) -> Vocabulary:
        version = self.store.term_vector_version(user_id, model_id)
        key = (user_id, model_id)
        with self._lock:
            cached = self._vocab.get(key)
        if cached is not None and cached.version == version:
            return cached
        words, matrix = self.store.term_vectors(user_id, model_id)
        vocab = Vocabulary.of(version, words, matrix)
        with self._lock:
            self._vocab.put(key, vocab)
        return vocab

    def _dense_text(self, user_id: str, query: str) -> str | None:
        """`query` without the speaker names it mentions (`PagingOptions.dense_speaker_names`), or
        None when it names none, has nothing else to search for, or the option keeps them."""
        if self.options.dense_speaker_names:
            return None
        names = [low for low in self._speaker_names(user_id) if low not in _ROLES and _mentions(query, low)]
        if not names:
            return None
        text = query
        for low in sorted(names, key=len, reverse=True):  # "Anna Lee" before "Anna"
            if has_cjk(low):
                text = text.replace(low, " ")
            else:
                text = re.sub(rf"(?<![\w]){re.escape(low)}(?:['’]s)?(?![\w])", " ", text, flags=re.I)
        text = " ".join(text.split())
        return text if terms(text) else None  # a query of names and stop words keeps its vectors

    def _dense_vectors(
        self, user_id: str, query: str, qvecs: Mapping[str, np.ndarray]
    ) -> Mapping[str, np.ndarray]:
        """The vectors the dense layers search with: `qvecs` (the message's, which the scheduler also
        stores as the turn's) unless the query names a speaker; then the text without the names is
        embedded for the layers searched (started now, read by the dense layers after the SQL stages)."""
        text = self._dense_text(user_id, query)
        if text is None:
            return qvecs
        embedders = self.retriever.embedders
        cjk = cjk_ratio(query)
        searched = [n for n in qvecs if n in embedders and self.retriever.weights.dense_weight(n, cjk) > 0]
        stripped = embed_soon(embedders, searched, text)
        weight = self.options.dense_name_weight
        if weight <= 0:
            return stripped
        return _Summed(stripped, qvecs, weight)

    def _term_skip(self, user_id: str) -> frozenset[str]:
        """The terms of the user's speaker names (cached with the names)."""
        return self._speaker_entry(user_id)[2]

    def _said_then(
        self,
        user_id: str,
        query: str,
        now: datetime | None,
        timezone: str | None,
        exclude: set[int],
        info: dict[str, Any],
    ) -> list[int]:
        """The turns said in the time gone by that `query` names ("yesterday", 10月10号, "last
        weekend": `timeexpr.past_spans` on the user's clock), oldest first, the recent window left
        out. A question about a day finds what was said that day, not only turns that mention it."""
        if now is None or self.retriever.weights.when <= 0:
            return []
        spans = past_spans(query, now, timezone)
        if not spans:
            return []
        ids: list[int] = []
        for start, end in spans:
            ids.extend(self.store.turn_ids_between(user_id, start, end, WHEN_LIMIT))
        said = [t for t in dict.fromkeys(ids) if t not in exclude]
        about = self._said_about(user_id, spans, now, timezone, set(said) | exclude)
        info["when"] = {
            "spans": [[a.isoformat(), b.isoformat()] for a, b in spans],
            "turns": len(said),
            "about": len(about),
        }
        return said + about

    def _said_about(
        self,
        user_id: str,
        spans: Sequence[tuple[datetime, datetime]],
        now: datetime,
        timezone: str | None,
        skip: set[int],
    ) -> list[int]:
        """The turns said in the `AFTER_DAYS` after a span whose date notes fall in it: "Spent
        Sunday afternoon repotting my plants", said on Monday, is about last weekend. Only turns
        with notes are read (`timeexpr.noted_days`, what `stamp` stored when the turn was recorded)."""
        if AFTER_DAYS <= 0:
            return []
        zone = local_now(now, timezone).tzinfo
        found: list[int] = []
        for start, end in spans:
            later = [
                t
                for t in self.store.turn_ids_between(
                    user_id, end, min(end + timedelta(days=AFTER_DAYS), now), WHEN_LIMIT
                )
                if t not in skip
            ]
            if not later:
                continue
            first, last = start.astimezone(zone).date(), end.astimezone(zone).date()
            if end.astimezone(zone).time() != dt_time.min:
                last += timedelta(days=1)  # a span cut at `now` still holds that day
            for turn in self.store.get_turns(user_id, later):
                if turn.id is not None and any(a < last and b > first for a, b in noted_days(turn.meta)):
                    found.append(turn.id)
        return list(dict.fromkeys(found))

    def _term_vectors(self, user_id: str, query: str) -> TermVectors | None:
        """Start embedding the query's terms the vocabulary lacks (overlapping the SQL stages).
        None without a vocabulary (a new user's, before a page is bookmarked): the layer has nothing
        to expand into, so nothing is embedded for it."""
        embedder = next(iter(self.retriever.embedders.values()), None)
        if embedder is None:
            return None
        vocab = self._vocabulary(user_id, embedder.model_id)
        if not vocab.terms:
            return None
        vectors = TermVectors(embedder)
        vectors.start([t for t in query_terms(query, self._term_skip(user_id)) if t not in vocab.index])
        return vectors

    def _people_names(self, user_id: str, q_terms: Sequence[str]) -> list[str]:
        """The search terms of the names of the user's people whose relation is one of `q_terms`."""
        asked = set(q_terms)
        out: list[str] = []
        for fact in self.store.facts_current(user_id):
            if fact.get("key") != "people":
                continue
            relation, _, name = str(fact.get("value", "")).rpartition(" ")
            if relation and name and asked & set(terms(relation)):
                out += terms(name)
        return out

    def _without_noise(self, layers: dict[str, list[Hit]], k: int) -> dict[str, list[Hit]]:
        """`layers` with each dense layer that holds the whole history (fewer than `k` hits: the
        search returned every turn) cut where its similarities stop standing out: below the mean +
        `dense_noise_z` standard deviations of them all. Hits are best first, so what is kept is a
        prefix and keeps its ranks."""
        out = dict(layers)
        for name, hits in layers.items():
            if name not in self.retriever.embedders or not 2 < len(hits) < k:
                continue
            sims = np.fromiter((h.score for h in hits), dtype=np.float64, count=len(hits))
            spread = float(sims.std())
            if spread <= 0:
                continue
            least = float(sims.mean()) + self.options.dense_noise_z * spread
            out[name] = [h for h in hits if h.score >= least]
        return out

    def _timed_soft_layer(
        self, user_id: str, query: str, exclude: set[int], vectors: TermVectors
    ) -> tuple[list[Hit], float]:
        t0 = time.perf_counter()
        return self._soft_layer(user_id, query, exclude, vectors), _ms(t0)

    def _soft_layer(self, user_id: str, query: str, exclude: set[int], vectors: TermVectors) -> list[Hit]:
        """The soft-term layer (memsched.vocab) over the first embedder's vocabulary."""
        vocab = self._vocabulary(user_id, vectors.embedder.model_id)
        if not vocab.terms:
            return []
        hits = soft_hits(
            self.store,
            user_id,
            query,
            vocab,
            vectors,
            skip=self._term_skip(user_id),
            threshold=self.options.terms_threshold,
            k=self.options.deep_k,
            exclude=exclude,
            postings=self._term_postings(user_id),
        )
        self._postings.trim(user_id)  # it may have grown
        return hits

    def _term_postings(self, user_id: str) -> TermPostings:
        return self._postings.setdefault(user_id, lambda: TermPostings(user_id))

    def refresh(self, user_id: str) -> bool:
        """Take the user's new turns into their term postings, if this pager holds them (the next
        query then finds them current: a version check instead of reading and segmenting the turns,
        ~0.6 ms of the turn). Returns whether it held them."""
        postings = self._postings.get(user_id)
        if postings is None:
            return False
        postings.refresh(self.store)
        self._postings.trim(user_id)  # it may have grown
        return True

    def warm_terms(self, user_id: str) -> bool:
        """Build the user's term postings (and load their vocabulary) ahead of their next query, when
        the soft layer is on, they have a vocabulary and this pager holds no postings for them.
        Otherwise the first query of the user in this process pays the build inside its turn
        (~0.1-0.3 s of GIL-bound Python at 10k turns). For background work beside the turns of this
        process (the bookmark job that gives a user a vocabulary calls it through
        `Memory.warm_terms`): the index is built aside, pausing for turns in flight, and put in
        only if no query made one meanwhile and nothing of the user was forgotten since it began.
        Returns whether it put one in."""
        if not self.options.terms or user_id in self._postings:
            return False
        embedder = next(iter(self.retriever.embedders.values()), None)
        if embedder is None or not self._vocabulary(user_id, embedder.model_id).terms:
            return False
        with self._lock:
            forgets = self._forgets
        built = TermPostings(user_id)
        built.refresh(self.store)
        with self._lock:
            if self._forgets != forgets:
                return False
            if self._postings.setdefault(user_id, lambda: built) is not built:
                return False
        self._postings.trim(user_id)
        return True

    def _speaker_names(self, user_id: str) -> dict[str, str]:
        """lower-cased speaker name (and first name) -> label."""
        return self._speaker_entry(user_id)[1]

    def _speaker_entry(self, user_id: str) -> tuple[int, dict[str, str], frozenset[str]]:
        """(newest turn id, `_speaker_names`, `_term_skip`) of the user, up to date: read once per
        `retrieve` (its stages ask for the names four times or more; they all see the same ones)."""
        looking = self._looking
        held = getattr(looking, "entry", None)
        if held is not None and held[0] == user_id:
            return held[1]
        entry = self._read_speaker_entry(user_id)
        if getattr(looking, "user", None) == user_id:
            looking.entry = (user_id, entry)
        return entry

    def _read_speaker_entry(self, user_id: str) -> tuple[int, dict[str, str], frozenset[str]]:
        count = self.store.max_turn_id(user_id)  # new turns may bring new speakers
        with self._lock:
            cached = self._speakers.get(user_id)
        if cached is not None and cached[0] == count:
            return cached
        if cached is not None and 0 < count - cached[0] <= _SPEAKER_RECHECK:
            # Only the turns since the last look can bring a new name: look at those alone (counting
            # every speaker scans all of the user's turns, and every turn adds turns).
            fresh = self.store.turn_meta(user_id, range(cached[0] + 1, count + 1))
            known = set(cached[1].values())
            if all(m[3] in known or m[3] in _ROLES for m in fresh.values()):
                entry = (count, cached[1], cached[2])
                with self._lock:
                    self._speakers.put(user_id, entry)
                return entry
        names: dict[str, str] = {}
        for label in self.store.speakers(user_id):
            names[label.lower()] = label
            first = label.split()[0] if label.split() else label
            names.setdefault(first.lower(), label)
        entry = (count, names, frozenset(w for label in names for w in terms(label)))
        with self._lock:
            self._speakers.put(user_id, entry)
        return entry

    # -- retrieval -----------------------------------------------------------------------------------------

    def retrieve(
        self,
        user_id: str,
        query: str,
        *,
        session_id: str | None = None,
        exclude: set[int] | None = None,
        query_vectors: Mapping[str, np.ndarray] | None = None,
        now: datetime | None = None,
        timezone: str | None = None,
    ) -> Paging:
        """Ranked candidates for `query`, with every layer's hits and the paging decision in `info`.
        `now` (when the question is asked) and `timezone` (the user's) resolve the time it asks about
        ("what did we talk about yesterday?": the `when` layer); without `now` no such layer."""
        looking = self._looking
        outer = getattr(looking, "user", None), getattr(looking, "entry", None)
        looking.user, looking.entry = user_id, None  # the speakers are read once, when first asked
        try:
            return self._retrieve(
                user_id,
                query,
                session_id=session_id,
                exclude=exclude,
                query_vectors=query_vectors,
                now=now,
                timezone=timezone,
            )
        finally:
            looking.user, looking.entry = outer

    def _retrieve(
        self,
        user_id: str,
        query: str,
        *,
        session_id: str | None,
        exclude: set[int] | None,
        query_vectors: Mapping[str, np.ndarray] | None,
        now: datetime | None,
        timezone: str | None,
    ) -> Paging:
        t_start = time.perf_counter()
        opts = self.options
        exclude = exclude or set()
        # Not copied: the vectors may still be computing (Memory.query_vectors) and are read only by
        # the dense layers, after BM25 and the bookmark lookups.
        qvecs = query_vectors if query_vectors is not None else self.retriever.embed_query(query)
        info: dict[str, Any] = {
            "stages": {
                k: getattr(opts, k)
                for k in ("bookmarks", "expand", "multihop", "entity_focus", "cooperative", "terms")
            }
        }
        use_bookmarks = (opts.bookmarks or opts.multihop) and self.store.bookmark_count(user_id) > 0
        index = self._name_index(user_id) if use_bookmarks else None

        term_vectors = self._term_vectors(user_id, query) if opts.terms else None
        said = self._said_then(user_id, query, now, timezone, exclude, info)
        dense_vecs = self._dense_vectors(user_id, query, qvecs)
        main = self._rank(user_id, query, dense_vecs, exclude, index, term_vectors, said)
        timings = dict(main.timings)
        layers = dict(main.layers)
        scores = main.scores
        pages = dict(main.pages)

        if opts.multihop:
            t0 = time.perf_counter()
            entities = [*self._speaker_names(user_id).values(), *main.matched]
            llm = self.llm if opts.cooperative else None
            subs, how = decompose(query, entities, llm, timeout=opts.rerank_timeout)
            info["decomposition"] = {"queries": subs, "how": how}
            for n, sub in enumerate(subs):
                part = self._rank(user_id, sub, None, exclude, index, term_vectors)
                for name, hits in part.layers.items():
                    layers[f"sub{n + 1}:{name}"] = hits
                # Each part's own best turns are lifted toward the top, so every part of the question
                # gets a share of the budget rather than the part with the most lexical overlap.
                top = max((c.fused for c in part.scores.values()), default=0.0) or 1.0
                main_top = max((c.fused for c in scores.values()), default=0.0) or 1.0
                for tid, cand in part.scores.items():
                    lift = opts.subquery_weight * cand.fused / top * main_top
                    cur = scores.get(tid)
                    if cur is None:
                        cur = scores[tid] = Candidate(turn_id=tid, reason=f"sub-query {n + 1}")
                    cur.scores[f"sub{n + 1}"] = round(cand.fused, 6)
                    cur.fused += lift
                for p, s in part.pages.items():
                    pages[p] = pages.get(p, 0.0) + opts.subquery_weight * s
            timings["multihop"] = _ms(t0)

        if opts.feedback > 0 and scores:
            t0 = time.perf_counter()
            self._feedback(user_id, query, qvecs, scores, layers, exclude)
            timings["feedback"] = _ms(t0)
        ranked = sorted(scores.values(), key=lambda c: (-c.fused, c.turn_id))
        if opts.question_penalty > 0 and ranked:
            t0 = time.perf_counter()
            ranked = self._penalise_questions(user_id, ranked)
            timings["questions"] = _ms(t0)
        if opts.novelty > 0 and ranked:
            t0 = time.perf_counter()
            ranked = self._novelty(user_id, ranked)
            timings["novelty"] = _ms(t0)
        if opts.diversity > 0 and ranked:
            t0 = time.perf_counter()
            ranked = self._diversify(user_id, ranked)
            timings["diversity"] = _ms(t0)
        if opts.length_penalty > 0 and ranked:
            t0 = time.perf_counter()
            ranked = self._per_token(user_id, ranked)
            timings["per_token"] = _ms(t0)
        if opts.floor > 0 and ranked:
            least = opts.floor * max(c.fused for c in ranked)
            kept = [c for c in ranked if c.fused >= least]
            info["below_floor"] = len(ranked) - len(kept)
            ranked = kept
        if opts.cooperative and self.llm is not None and index is not None:
            t0 = time.perf_counter()
            ranked = self._cooperate(user_id, session_id, query, qvecs, ranked, pages, index, info)
            timings["cooperative"] = _ms(t0)
        for c in ranked:
            if not c.reason:
                c.reason = "fused: " + ", ".join(f"{layer}#{rank}" for layer, rank in sorted(c.ranks.items()))
        if self.llm is not None:
            from memsched.llm.client import llm_calls

            # Process-wide counts per purpose (what /metrics exports), and this pager's rerank record.
            info["llm_calls"] = llm_calls()
            info["rerank_stats"] = dict(self.stats)
        timings["paging_total"] = _ms(t_start)
        return Paging(candidates=ranked, layers=layers, timings_ms=timings, pages=pages, info=info)

    def _rank(
        self,
        user_id: str,
        query: str,
        qvecs: Mapping[str, np.ndarray] | None,
        exclude: set[int],
        index: _NameIndex | None,
        term_vectors: TermVectors | None = None,
        said: Sequence[int] = (),
    ) -> _Ranked:
        opts = self.options
        timings: dict[str, float] = {}
        if qvecs is None:
            t0 = time.perf_counter()
            qvecs = self._dense_vectors(user_id, query, self.retriever.embed_query(query))
            timings["embed_subquery"] = _ms(t0)
        lexical: str | None = None
        q_terms = terms(query)
        # When the message happened is not what it asks about: its time words ("tonight", 今晚, 周末,
        # "recently") left in the BM25 query match every turn that says them ("Emma rang tonight").
        # Kept when nothing else is left ("what did I do last weekend?"). Speaker names: `bm25_speaker_names`.
        skip = set() if opts.bm25_speaker_names else self._term_skip(user_id)
        timeless = [t for t in terms(without_time(query)) if t not in skip]
        kept = content_terms(timeless or [t for t in q_terms if t not in skip], opts.common_zipf)
        if opts.people_names:
            # "What did I tell you about my sister?": the turns about her say her name (小雨, Leah), not
            # "sister". The profile's people (`profile.PEOPLE`: "妹妹 小雨", "sister Leah") whose
            # relation the question names add the name to the lexical layers.
            kept += [t for t in self._people_names(user_id, q_terms) if t not in kept]
        if kept and kept != q_terms:
            lexical = " ".join(kept)
        soft_job: Future[tuple[list[Hit], float]] | None = None
        if opts.terms and term_vectors is not None:
            soft_query = query
            if opts.terms_timeless:
                soft_query = lexical or query
            elif opts.common_zipf > 0:
                soft_query = " ".join(content_terms(q_terms, opts.common_zipf))
            soft_job = beside(
                _soft_executor(), self._timed_soft_layer, user_id, soft_query, exclude, term_vectors
            )
        # One search at the deeper k; the base ranking is the same hits cut at turn_k, fused again.
        # With the soft layer on, the turn layers are fused together with its hits.
        deep_k = max(opts.deep_k, opts.turn_k)
        wide = self.retriever.retrieve(
            user_id,
            query,
            k=deep_k,
            exclude=exclude,
            query_vectors=qvecs,
            expand=False,
            lexical_query=lexical,
            fuse=False,
        )
        timings.update(wide.timings_ms)
        layers_hits = wide.layers
        # On a small history the neighbour steps below may reach any turn, not just the deep list's
        # (a dense layer's noise cut takes out the next line of a story that shares no word with
        # the question: "I finally learned to breathe!" after "started swimming lessons" / "my coach
        # says to practise the kick").
        whole: set[int] = set()
        if opts.dense_noise_z > 0:
            cut = self._without_noise(layers_hits, deep_k)
            if cut != layers_hits:
                whole = {h.turn_id for hits in layers_hits.values() for h in hits}
            layers_hits = cut
        if soft_job is not None:
            t0 = time.perf_counter()
            soft, timings["terms_layer"] = soft_job.result()
            timings["terms"] = _ms(t0)  # what is left of the layer after the turn layers
            if soft:
                layers_hits = {**layers_hits, "terms": soft}
        deep: dict[int, float] = {}
        t0 = time.perf_counter()
        if opts.expand or opts.bookmarks or said:
            # Only the deep ranking's fused scores are read: no candidates are built for it.
            deep = self.retriever.fused_scores(query, layers_hits, k=deep_k, exclude=exclude)
        if said:
            # The turns said in the time the question asks about, the best of them by the other
            # layers first, then in the order they were said: one more layer of the fusion.
            layers_hits = {**layers_hits, "when": _when_hits(said, deep, opts.turn_k)}
            deep = self.retriever.fused_scores(query, layers_hits, k=deep_k, exclude=exclude)
        timings["fuse"] = _ms(t0)
        t0 = time.perf_counter()
        base = self.retriever.retrieve(
            user_id, query, k=opts.turn_k, exclude=exclude, expand=False, hits=layers_hits
        )
        layers: dict[str, list[Hit]] = dict(base.layers)
        scores = {c.turn_id: c for c in base.candidates}
        timings["deep"] = _ms(t0)
        meta = (
            self._turn_meta(user_id, set(scores) | set(deep) | whole) if (deep or opts.entity_focus) else {}
        )

        # Entity focus: a query about exactly one speaker prefers what that speaker said.
        focus: str | None = None
        if opts.entity_focus:
            named = {label for low, label in self._speaker_names(user_id).items() if _mentions(query, low)}
            if len(named) == 1:
                focus = next(iter(named))
                for tid, cand in scores.items():
                    if tid in meta and meta[tid][3] == focus:
                        cand.fused *= 1.0 + opts.speaker_boost
                        cand.scores["speaker"] = 1.0

        # Time focus: a query about a time gone by prefers what was said then (as a speaker's).
        then = set(said)
        if then and opts.time_boost > 0:
            for tid, cand in scores.items():
                if tid in then:
                    cand.fused *= 1.0 + opts.time_boost
                    cand.scores["said_then"] = 1.0

        def boost(tid: int) -> float:
            b = (
                1.0 + opts.speaker_boost
                if focus is not None and tid in meta and meta[tid][3] == focus
                else 1.0
            )
            return b * (1.0 + opts.time_boost) if tid in then else b

        pages: dict[int, float] = {}
        matched: list[str] = []
        if opts.expand:
            for cand in sorted(scores.values(), key=lambda c: -c.fused)[: opts.page_top_turns]:
                if cand.turn_id in meta:
                    p = meta[cand.turn_id][0]
                    pages[p] = pages.get(p, 0.0) + cand.fused
        if index is not None and (opts.bookmarks or opts.multihop):
            t0 = time.perf_counter()
            bm_query = query if opts.bookmark_speaker_names or lexical is None else lexical
            kw_hits = match_names(index, query)  # read by the keyword layer and below
            bm_layers = self._bookmark_layers(user_id, query, qvecs, index, bm_query, found=kw_hits)
            timings["bookmarks"] = _ms(t0)
            layers.update(bm_layers)
            rrf_k = self.retriever.weights.rrf_k
            cjk = cjk_ratio(query)
            bm_score: dict[int, float] = {}
            if opts.bookmarks:
                for name, hits in bm_layers.items():
                    if name == "bookmarks:keywords":
                        weight = 1.0
                    elif name == "bookmarks:bm25":
                        weight = self.retriever.weights.bm25
                    else:
                        weight = self.retriever.weights.dense_weight(name.split(":", 1)[1], cjk)
                    for hit in hits:
                        bm_score[hit.turn_id] = bm_score.get(hit.turn_id, 0.0) + weight / (rrf_k + hit.rank)
            matched = sorted({n for _, names in kw_hits.values() for n in names})
            alias_pages: set[int] = set()
            if opts.bookmarks and deep:
                # A page whose bookmark the query names by an alias (a new name for an old concept)
                # may share no word with the query: it counts as much as the best page, and its
                # turns join the evidence at the median level.
                for bid, (_, names) in kw_hits.items():
                    if bid in index.marks and any(
                        bid in index.aliases.get(tuple(terms(n)), set()) for n in names
                    ):
                        alias_pages.update(index.marks[bid].page_ids)
                if alias_pages:
                    level = float(np.median(list(deep.values())))
                    for tids in self.store.page_turn_ids(user_id, sorted(alias_pages)).values():
                        added = [t for t in tids if t not in deep and t not in exclude]
                        for t in added:
                            deep[t] = level
                        meta.update(self._turn_meta(user_id, added))
            if opts.multihop and matched and opts.graph_weight > 0:
                for key, strength in graph_neighbours(index, matched):
                    for bid in index.by_terms.get(key, set()):
                        bm_score[bid] = bm_score.get(bid, 0.0) + opts.graph_weight * strength / (rrf_k + 1)
            bm_pages: dict[int, float] = {}
            for bid, s in bm_score.items():
                b = index.marks.get(bid)
                if b is None:
                    continue
                for p in b.page_ids:
                    bm_pages[p] = bm_pages.get(p, 0.0) + s
            # Each source is taken relative to its own best page, so neither depends on the other's
            # scale (or on the fusion's); bookmark evidence counts `bookmark_weight` of turn evidence.
            top_turn_page = max(pages.values(), default=0.0) or 1.0
            top_bm_page = max(bm_pages.values(), default=0.0) or 1.0
            pages = {p: v / top_turn_page for p, v in pages.items()}
            for p, v in bm_pages.items():
                pages[p] = pages.get(p, 0.0) + opts.bookmark_weight * v / top_bm_page
            for p in alias_pages:
                pages[p] = max(pages.get(p, 0.0), 1.0)
        elif pages:
            top_turn_page = max(pages.values()) or 1.0
            pages = {p: v / top_turn_page for p, v in pages.items()}
        if pages and deep:
            for tid, evidence in deep.items():
                m = meta.get(tid)
                if m is None or m[0] not in pages:
                    continue
                # Promote only turns that match the query themselves (deep evidence), in proportion.
                lift = opts.page_weight * evidence * boost(tid) * pages[m[0]]
                lifted = scores.get(tid)
                if lifted is None:
                    lifted = scores[tid] = Candidate(turn_id=tid, reason=f"page p{m[0]}")
                lifted.scores["page"] = round(lift, 6)
                lifted.fused += lift
        if (opts.entity_units > 0 or opts.session_units > 0) and deep:
            t0 = time.perf_counter()
            self._units(user_id, query, qvecs, deep, meta, scores, exclude, boost)
            timings["units"] = _ms(t0)
        if opts.expand and (opts.neighbour_decay > 0 or opts.thread_decay > 0) and deep:
            by_pos = {(m[1], m[2]): tid for tid, m in meta.items()}
            head = sorted(scores.values(), key=lambda c: -c.fused)[: opts.neighbour_top]
            for cand in head:
                m = meta.get(cand.turn_id)
                if m is None:
                    continue
                near: list[tuple[int, float]] = []
                if opts.neighbour_decay > 0:
                    near += [(d, opts.neighbour_decay) for d in (-1, 1)]
                if opts.thread_decay > 0:
                    for step in (-1, 1):
                        for d in range(2 * step, 5 * step, step):  # the speaker's nearest turn within 4
                            nid = by_pos.get((m[1], m[2] + d))
                            if nid is not None and meta[nid][3] == m[3]:
                                near.append((d, opts.thread_decay))
                                break
                for d, decay in near:
                    nid = by_pos.get((m[1], m[2] + d))
                    if nid is None or nid in exclude:
                        continue
                    score = cand.fused * decay
                    if opts.neighbour_own_focus and (own := boost(cand.turn_id)) > 0:
                        score *= boost(nid) / own
                    other = scores.get(nid)
                    if other is None:
                        scores[nid] = Candidate(
                            turn_id=nid, fused=score, reason=f"neighbour of {cand.turn_id}"
                        )
                    elif score > other.fused:
                        other.scores["neighbour"] = round(score, 6)
                        other.fused = score
        return _Ranked(scores, layers, pages, matched, timings)

    def _units(
        self,
        user_id: str,
        query: str,
        qvecs: Mapping[str, np.ndarray],
        deep: dict[int, float],
        meta: dict[int, tuple[int, str, int, str]],
        scores: dict[int, Candidate],
        exclude: set[int],
        boost: Callable[[int], float],
    ) -> None:
        """Entity and session units (`PagingOptions.entity_units`, `session_units`): each unit the
        query hits lifts its best `unit_turns` deep-evidence turns by weight x evidence x prior."""
        opts = self.options
        lifts: list[tuple[str, float, dict[int, float]]] = []  # (unit, weight, turn -> prior)
        if opts.entity_units > 0:
            for name, group in self._entity_groups(user_id, query, deep, meta, exclude).items():
                lifts.append((f"entity:{name}", opts.entity_units, dict.fromkeys(group, 1.0)))
        if opts.session_units > 0:
            ranked = self._session_hits(user_id, qvecs)
            by_session: dict[str, list[int]] = {}
            for tid in deep:
                m = meta.get(tid)
                if m is not None:
                    by_session.setdefault(m[1], []).append(tid)
            n = len(ranked)
            for r, session in enumerate(ranked):
                tids = by_session.get(session, [])
                lifts.append((f"session:{session}", opts.session_units, dict.fromkeys(tids, (n - r) / n)))
        for unit, weight, priors in lifts:
            best = sorted(priors, key=lambda t: (-deep[t], t))[: opts.unit_turns]
            for tid in best:
                lift = weight * deep[tid] * priors[tid] * boost(tid)
                cand = scores.get(tid)
                if cand is None:
                    cand = scores[tid] = Candidate(turn_id=tid, reason=unit)
                cand.scores[unit.split(":", 1)[0]] = round(lift, 6)
                cand.fused += lift

    def _entity_groups(
        self,
        user_id: str,
        query: str,
        deep: dict[int, float],
        meta: dict[int, tuple[int, str, int, str]],
        exclude: set[int],
    ) -> dict[str, list[int]]:
        """name -> the deep-evidence turns about it, for every name the query mentions: a speaker's
        own turns; for another name, the turns a BM25 search for the name alone finds."""
        from memsched.keywords import query_entities

        speakers = self._speaker_names(user_id)
        groups: dict[str, list[int]] = {}
        for low, label in speakers.items() if self.options.entity_speakers else ():
            if low not in _ROLES and _mentions(query, low) and label not in groups:
                groups[label] = [t for t in deep if (m := meta.get(t)) is not None and m[3] == label]
        for name in query_entities(query) if self.options.entity_names else ():
            low = name.lower()
            if low in speakers or any(w in speakers for w in low.split()) or name in groups:
                continue
            hits = self.store.search_bm25(user_id, name, self.options.deep_k)
            groups[name] = [h.turn_id for h in hits if h.turn_id in deep and h.turn_id not in exclude]
        return {k: v for k, v in groups.items() if v}

    def _session_hits(self, user_id: str, qvecs: Mapping[str, np.ndarray]) -> list[str]:
        """The `session_top` sessions whose summary vector (`_session_vectors`) is nearest the query's
        dense vector (the first embedder's), best first."""
        name = next((n for n in self.retriever.embedders if n in qvecs), None)
        if name is None:
            return []
        sessions, matrix = self._session_vectors(user_id, name)
        if not sessions:
            return []
        sims = matrix @ np.asarray(qvecs[name], dtype=np.float32)
        top = np.argsort(-sims, kind="stable")[: self.options.session_top]
        return [sessions[i] for i in top]

    def _session_vectors(self, user_id: str, name: str) -> tuple[list[str], np.ndarray]:
        """Each session's extractive summary as one vector: the unit mean of its `unit_turns` turns
        nearest the session's centroid. Computed from the stored turn vectors, cached per user until
        a turn is added (`store.max_turn_id`)."""
        count = self.store.max_turn_id(user_id)
        key = (user_id, name, self.options.unit_turns)
        with self._lock:
            cached = self._session_units.get(key)
        if cached is not None and cached[0] == count:
            return cached[1], cached[2]
        meta = self._turn_meta(user_id, range(1, count + 1))
        vectors = self.retriever.vectors_by_id(user_id, name, sorted(meta))
        members: dict[str, list[np.ndarray]] = {}
        for tid, m in meta.items():
            if tid in vectors:
                members.setdefault(m[1], []).append(vectors[tid])
        sessions = sorted(members)
        rows = []
        for session in sessions:
            mat = np.stack(members[session]).astype(np.float32, copy=False)
            centroid = mat.mean(axis=0)
            near = np.argsort(-(mat @ centroid), kind="stable")[: self.options.unit_turns]
            vec = mat[near].mean(axis=0)
            rows.append(vec / (float(np.linalg.norm(vec)) or 1.0))
        matrix = np.stack(rows) if rows else np.zeros((0, 0), dtype=np.float32)
        with self._lock:
            self._session_units.put(key, (count, sessions, matrix))
        return sessions, matrix

    def _feedback(
        self,
        user_id: str,
        query: str,
        qvecs: Mapping[str, np.ndarray],
        scores: dict[int, Candidate],
        layers: dict[str, list[Hit]],
        exclude: set[int],
    ) -> None:
        """Rocchio feedback: search again with the query vector moved toward its best turns."""
        opts = self.options
        w = self.retriever.weights
        cjk = cjk_ratio(query)
        top = [c.turn_id for c in sorted(scores.values(), key=lambda c: -c.fused)[: opts.feedback_docs]]
        for name, qvec in qvecs.items():
            weight = opts.feedback * w.dense_weight(name, cjk)
            if weight <= 0 or not np.any(qvec):
                continue
            rows = self.retriever.vectors_for(user_id, name, top)
            if len(rows) == 0:
                continue
            vec = np.asarray(qvec, dtype=np.float32) + rows.mean(axis=0)
            vec /= float(np.linalg.norm(vec)) or 1.0
            hits = [
                h for h in self.retriever.dense(user_id, name, vec, opts.turn_k) if h.turn_id not in exclude
            ]
            layers[f"feedback:{name}"] = hits
            for rank, hit in enumerate(hits, start=1):
                cand = scores.get(hit.turn_id)
                if cand is None:
                    cand = scores[hit.turn_id] = Candidate(turn_id=hit.turn_id, reason="feedback")
                cand.scores["feedback"] = round(hit.score, 4)
                cand.fused += weight / (w.rrf_k + rank)

    def _turn_facts(self, user_id: str, ids: Sequence[int]) -> tuple[dict[int, float], dict[int, float]]:
        """Each turn's question share and estimated line tokens, cached per user: a turn's text never
        changes, so only turns not seen before are read (one read for both)."""
        with self._lock:
            shares = self._questions.get(user_id)
            if shares is None:
                shares = {}
                self._questions.put(user_id, shares)
            lengths = self._lengths.get(user_id)
            if lengths is None:
                lengths = {}
                self._lengths.put(user_id, lengths)
        missing = [tid for tid in ids if tid not in shares or tid not in lengths]
        if missing:
            texts = self.store.turn_contents(user_id, missing)
            fresh = {tid: question_share(text) for tid, text in texts.items()}
            sizes = {tid: line_tokens(text) for tid, text in texts.items()}
            with self._lock:
                if len(shares) > _QUESTION_CACHE_TURNS:
                    shares.clear()
                if len(lengths) > _QUESTION_CACHE_TURNS:
                    lengths.clear()
                shares.update(fresh)
                lengths.update(sizes)
        return shares, lengths

    def _turn_meta(self, user_id: str, ids: Iterable[int]) -> dict[int, tuple[int, str, int, str]]:
        """`store.turn_meta` (ids ascending; turns not found left out) through a per-user cache: the
        deep ranking looks up ~500 turns a query, most of them seen by the queries before."""
        wanted = sorted(set(ids))
        with self._lock:
            known = self._meta.get(user_id)
            if known is None:
                known = {}
                self._meta.put(user_id, known)
        missing = [tid for tid in wanted if tid not in known]
        if missing:
            fresh = self.store.turn_meta(user_id, missing)
            with self._lock:
                if len(known) > _QUESTION_CACHE_TURNS:
                    known.clear()
                known.update(fresh)
        else:
            fresh = {}
        return {tid: m for tid in wanted if (m := known.get(tid, fresh.get(tid))) is not None}

    def _penalise_questions(self, user_id: str, ranked: list[Candidate]) -> list[Candidate]:
        """The head re-scored by how much of each turn is questions (`question_share`), re-sorted;
        the tail stays below it. Shares are cached per user: only turns not seen before are read."""
        opts = self.options
        head, tail = ranked[: opts.question_top], ranked[opts.question_top :]
        shares, _ = self._turn_facts(user_id, [c.turn_id for c in head])
        for c in head:
            share = shares.get(c.turn_id, 0.0)
            if share > 0:
                c.fused *= 1.0 - opts.question_penalty * share
                c.scores["questions"] = round(share, 3)
        return sorted(head, key=lambda c: (-c.fused, c.turn_id)) + tail

    def _per_token(self, user_id: str, ranked: list[Candidate]) -> list[Candidate]:
        """The head (`question_top` candidates) re-scored per token of context it would take: x
        (estimated line tokens) ** -length_penalty, re-sorted; the tail stays below it. The budget is
        packed in this order, so of two turns about as relevant the shorter leaves room for more."""
        opts = self.options
        head, tail = ranked[: opts.question_top], ranked[opts.question_top :]
        _, lengths = self._turn_facts(user_id, [c.turn_id for c in head])
        for c in head:
            size = lengths.get(c.turn_id)
            if size is not None:
                c.fused *= size**-opts.length_penalty
                c.scores["tokens"] = round(size, 1)
        return sorted(head, key=lambda c: (-c.fused, c.turn_id)) + tail

    def _novelty(self, user_id: str, ranked: list[Candidate]) -> list[Candidate]:
        """Maximal marginal relevance over the head (`novelty_top` candidates): greedily, each next
        turn is the one whose fused score x (1 - novelty x its highest cosine to a turn already
        placed) is best, so a budget holds fewer near-copies of one exchange ("Family time matters
        to me" again and again) and more distinct evidence. Candidates without a vector keep their
        score; the tail stays below the head."""
        opts = self.options
        head, tail = ranked[: opts.novelty_top], ranked[opts.novelty_top :]
        name = next(iter(self.retriever.embedders), None)
        if name is None or len(head) < 2:
            return ranked
        found = self.retriever.vectors_by_id(user_id, name, [c.turn_id for c in head])
        keep = [c for c in head if c.turn_id in found]
        if len(keep) < 2:
            return ranked
        matrix = np.stack([found[c.turn_id] for c in keep]).astype(np.float32, copy=False)
        with blas_single_thread():
            sims = matrix @ matrix.T
        np.clip(sims, 0.0, 1.0, out=sims)
        # Lazy greedy: a candidate's score only falls as turns are placed, so a popped candidate whose
        # re-scored value still beats every other (stale, hence higher or equal) score is the best.
        # Same order as re-scoring everything at each step, at a fraction of the numpy calls.
        base = [c.fused for c in keep]
        nearest = np.zeros(len(keep), dtype=np.float64)
        heap = [(-b, i) for i, b in enumerate(base)]
        heapq.heapify(heap)
        while heap:
            _, i = heapq.heappop(heap)
            near = float(nearest[i])
            score = base[i] * (1.0 - opts.novelty * near)
            if heap and score < -heap[0][0]:
                heapq.heappush(heap, (-score, i))
                continue
            if near > 0:
                keep[i].scores["novelty"] = round(1.0 - opts.novelty * near, 4)
            # Greedy picks come out in non-increasing score, so the final sort keeps their order.
            keep[i].fused = score
            np.maximum(nearest, sims[i], out=nearest)
        return sorted(head, key=lambda c: (-c.fused, c.turn_id)) + tail

    def _diversify(self, user_id: str, ranked: list[Candidate]) -> list[Candidate]:
        """Greedy session-diverse order of the head: a candidate's score is discounted by
        (1 - diversity) for every turn of its session already placed above it (lazy greedy: the
        discount only grows, so a popped candidate whose count did not change is the best)."""
        import heapq

        opts = self.options
        head, tail = ranked[: opts.diversity_top], ranked[opts.diversity_top :]
        meta = self.store.turn_meta(user_id, [c.turn_id for c in head])
        keep = 1.0 - opts.diversity
        placed: Counter[str] = Counter()
        heap = [(-c.fused, i, 0) for i, c in enumerate(head)]
        heapq.heapify(heap)
        out: list[Candidate] = []
        while heap:
            neg, i, seen = heapq.heappop(heap)
            cand = head[i]
            session = meta[cand.turn_id][1] if cand.turn_id in meta else f"?{cand.turn_id}"
            if placed[session] != seen:
                heapq.heappush(heap, (-cand.fused * keep ** placed[session], i, placed[session]))
                continue
            if seen:
                cand.scores["diversity"] = round(keep**seen, 4)
            cand.fused = -neg
            placed[session] += 1
            out.append(cand)
        # The tail stays below the head (its scores are not discounted, so it is not re-sorted in).
        return out + tail

    def _bookmark_layers(
        self,
        user_id: str,
        query: str,
        qvecs: Mapping[str, np.ndarray],
        index: _NameIndex,
        lexical: str | None = None,
        found: dict[int, tuple[float, list[str]]] | None = None,
    ) -> dict[str, list[Hit]]:
        """The bookmark layers: BM25 and dense over the bookmarks, and keyword/alias matches
        (`found`: `match_names(index, query)` when the caller has it)."""
        k = self.options.bookmark_k
        out: dict[str, list[Hit]] = {
            "bookmarks:bm25": self.store.search_bookmarks_bm25(user_id, lexical or query, k)
        }
        cjk = cjk_ratio(query)
        for name, embedder in self.retriever.embedders.items():
            if name not in qvecs or self.retriever.weights.dense_weight(name, cjk) <= 0:
                continue  # a layer that counts nothing for this query's script (MiniLM for Chinese)
            if not np.any(qvecs[name]):
                continue
            query_vector = np.asarray(qvecs[name], dtype=np.float32)
            ids, matrix = self._bookmark_matrix(user_id, embedder.model_id)
            pair = self.retriever.space_of(name)
            if pair is not None:  # MiniLM's and the gloss layer's bookmark rows as one space
                other = self.retriever.embedders[pair[1] if name == pair[0] else pair[0]].model_id
                more_ids, more = self._bookmark_matrix(user_id, other)
                if len(more_ids):
                    sims = matrix @ query_vector if len(ids) else np.zeros(0, dtype=np.float32)
                    both = np.concatenate([ids, more_ids]), np.concatenate([sims, more @ query_vector])
                    out[f"bookmarks:{name}"] = top_hits(*both, k, once=True)
                    continue
            if len(ids) == 0:
                continue
            sims = matrix @ query_vector
            top = np.argsort(-sims, kind="stable")[:k]
            out[f"bookmarks:{name}"] = [
                Hit(turn_id=int(ids[i]), score=float(sims[i]), rank=r + 1) for r, i in enumerate(top)
            ]
        if found is None:
            found = match_names(index, query)
        ranked = sorted(found.items(), key=lambda kv: (-kv[1][0], kv[0]))[:k]
        out["bookmarks:keywords"] = [
            Hit(turn_id=bid, score=s, rank=r + 1) for r, (bid, (s, _)) in enumerate(ranked)
        ]
        return out

    # -- the cooperative layer ------------------------------------------------------------------------------------

    def _cooperate(
        self,
        user_id: str,
        session_id: str | None,
        query: str,
        qvecs: Mapping[str, np.ndarray],
        ranked: list[Candidate],
        pages: dict[int, float],
        index: _NameIndex,
        info: dict[str, Any],
    ) -> list[Candidate]:
        opts = self.options
        coop: dict[str, Any] = {}
        info["cooperative"] = coop
        meta = self.store.turn_meta(user_id, [c.turn_id for c in ranked[:100]])
        # Page order as the fused ranking sees it: a page ranks by its best turn.
        order: list[int] = []
        best: dict[int, float] = {}
        for c in ranked[:100]:
            m = meta.get(c.turn_id)
            if m is None:
                continue
            if m[0] not in best:
                best[m[0]] = c.fused
                order.append(m[0])
        vec = next(iter(qvecs.values()), None)
        key = (user_id, session_id or "")
        chosen: list[int] | None = None

        prev = self._sessions.get(key) if session_id else None
        if prev is not None and vec is not None and float(np.dot(prev.vector, vec)) >= opts.cache_similarity:
            chosen, coop["skipped"] = prev.pages, "session cache"
        elif len(order) < 2:
            coop["skipped"] = "fewer than two candidate pages"
        elif best[order[0]] >= opts.confident_ratio * best[order[1]]:
            coop["skipped"] = "confident"
            chosen = [order[0]]
        elif (kind := query_kind(query)) is not None:
            typed = [
                p
                for bid, (_, _) in sorted(match_names(index, query).items(), key=lambda kv: -kv[1][0])
                if (b := index.marks.get(bid)) is not None and b.kind == kind
                for p in b.page_ids
            ]
            if typed:
                chosen, coop["skipped"] = list(dict.fromkeys(typed))[:3], f"pattern: {kind}"
        if "skipped" in coop:
            self.stats[f"skipped:{coop['skipped']}"] += 1
        else:
            chosen = self._rerank_call(query, order[: opts.rerank_pages], index, coop)
        if chosen is None:
            return ranked
        coop["pages"] = chosen
        if session_id and vec is not None:
            with self._lock:
                self._sessions[key] = _SessionDecision(
                    np.asarray(vec), list(chosen), coop.get("skipped", "llm")
                )
                while len(self._sessions) > 1024:
                    self._sessions.popitem(last=False)
        if not chosen:
            return ranked
        # Turns of the chosen pages that are already candidates move ahead, in the LLM's page order.
        rank_of = {p: i for i, p in enumerate(chosen)}
        top = ranked[0].fused if ranked else 1.0
        for c in ranked:
            m = meta.get(c.turn_id)
            if m is not None and m[0] in rank_of:
                c.fused += top * (1.0 - 0.1 * rank_of[m[0]])
                c.scores["cooperative"] = 1.0
        return sorted(ranked, key=lambda c: (-c.fused, c.turn_id))

    def _rerank_call(
        self, query: str, page_ids: list[int], index: _NameIndex, coop: dict[str, Any]
    ) -> list[int] | None:
        from memsched.llm.prompts import load

        assert self.llm is not None
        by_page: dict[int, list[Bookmark]] = {}
        for b in index.marks.values():
            for p in b.page_ids:
                by_page.setdefault(p, []).append(b)
        lines = []
        for p in page_ids:
            marks = by_page.get(p, [])
            summary = " / ".join(b.summary for b in marks[:2]) or "(no bookmark)"
            keys = ", ".join(dict.fromkeys(k for b in marks for k in b.keywords[:4]))
            lines.append(f"[p{p}] {index.page_dates.get(p, '')}: {summary} ({keys})")
        prompt = load("rerank").format(query=query, candidates="\n".join(lines))
        t0 = time.perf_counter()
        try:
            reply = self.llm.complete(
                [{"role": "user", "content": prompt}],
                purpose="rerank",
                timeout=self.options.rerank_timeout,
                max_tokens=30,
            )
        except LLMError as exc:
            coop["fallback"] = f"fused order (rerank failed: {str(exc)[:160]})"
            coop["ms"] = _ms(t0)
            self.stats["failed"] += 1
            return None
        coop["ms"] = _ms(t0)
        coop["called"] = True
        self.stats["called"] += 1
        text = reply.content.strip()
        coop["reply"] = text[:200]
        if re.fullmatch(r"\W*(?:none|无|没有)\W*", text, re.I):
            return []
        wanted = set(page_ids)
        picked = [int(m) for m in re.findall(r"p?(\d+)", text) if int(m) in wanted]
        if not picked:
            coop["fallback"] = "fused order (rerank reply named no candidate)"
            return None
        return list(dict.fromkeys(picked))[:3]


_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*")


_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]")
LINE_OVERHEAD = 8  # a memory line's speaker label, separator and newline, in tokens (about)


def line_tokens(text: str) -> float:
    """A turn's memory line in tokens, estimated without a tokenizer: a CJK character is about one
    token, other text about four characters per token, plus the line's own overhead."""
    cjk = len(_CJK_CHAR.findall(text))
    return cjk + (len(text) - cjk) / 4.0 + LINE_OVERHEAD


def question_share(text: str) -> float:
    """The share of a text's sentences that are questions (end in '?' or '？')."""
    sentences = [s for s in _SENTENCE_END.split(text.strip()) if s.strip()]
    if not sentences:
        return 0.0
    return sum(1 for s in sentences if s.rstrip().endswith(("?", "？"))) / len(sentences)


def _mentions(query: str, name: str) -> bool:
    if not name:
        return False
    if has_cjk(name):
        return name in query
    return re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", query, re.I) is not None


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000.0, 3)
