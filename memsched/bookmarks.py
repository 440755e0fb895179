"""Keyword bookmarks: generation (LLM first, rule fallback), topic segments, merging and aliases.

A bookmark describes one page (a fixed group of turns) or, when the topic shifts inside a page, one
topic segment of it: 3-8 searchable keywords, aliases for them, a one-sentence summary, a kind
(decision, plan, event, preference, fact) and an importance weight, plus the page and turn ids it
came from. Bookmarks are indexed for BM25 and embedded with every configured embedder, so the
paging scheduler (`memsched.paging`) can match a query against them.

Generation makes at most one LLM call per page: pages are batched, several to a call. Whenever no
LLM is configured, or the call fails, times out or returns invalid JSON, the rule extractor in
`memsched.keywords` bookmarks the pages instead, and the run's trace says so.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from pydantic import BaseModel, Field, field_validator

from memsched import keywords as kw
from memsched.cache import LRUCache
from memsched.embed.base import background_pause
from memsched.errors import LLMError
from memsched.model import Bookmark, Page, Turn, content_hash
from memsched.text.gloss import has_han
from memsched.vocab import embed_vocabulary

if TYPE_CHECKING:
    from memsched.llm.client import ChatClient
    from memsched.memory import Memory
    from memsched.store import Store

log = logging.getLogger(__name__)

MAX_KEYWORDS = 8
MIN_KEYWORDS = 3
LLM_BATCH_CHARS = 12_000  # turn text per bookmark call; pages are never split between calls
SEGMENT_WINDOW = 3  # turns on each side of a gap when looking for a topic shift
SEGMENT_MIN_TURNS = 5
SHIFT_DEPTH = 1.0  # a shift is a gap whose depth exceeds the page's mean depth by this many std devs
SHIFT_MIN_DEPTH = 0.3  # ... and is at least this deep (cosine units) in absolute terms


@dataclass(slots=True)
class BookmarkRun:
    """What one `generate_bookmarks` call did: the bookmarks made and a trace of how."""

    bookmarks: list[Bookmark]
    trace: dict[str, Any]


# -- LLM output -------------------------------------------------------------------------------------


class _LLMBookmark(BaseModel):
    id: str | int | None = None
    keywords: list[str] = Field(min_length=1)
    aliases: dict[str, list[str] | str] = Field(default_factory=dict)
    summary: str = Field(min_length=1)
    kind: str | None = None
    importance: float | None = None

    @field_validator("keywords")
    @classmethod
    def _clean_keywords(cls, value: list[str]) -> list[str]:
        out: list[str] = []
        for k in value:
            k = " ".join(str(k).split())
            if k and k.lower() not in {o.lower() for o in out}:
                out.append(k)
        if not out:
            raise ValueError("no usable keyword")
        return out[:MAX_KEYWORDS]

    def alias_map(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for key, value in self.aliases.items():
            items = [value] if isinstance(value, str) else list(value)
            items = [
                " ".join(i.split()) for i in items if i and i.strip() and i.strip().lower() != key.lower()
            ]
            if items:
                out[key] = items
        return out


class _LLMBatch(BaseModel):
    """Either {"bookmarks": [...]} for a batch, or a single page's flat object."""

    bookmarks: list[_LLMBookmark] = Field(default_factory=list)
    keywords: list[str] | None = None
    aliases: dict[str, list[str] | str] = Field(default_factory=dict)
    summary: str | None = None

    def items(self) -> list[_LLMBookmark]:
        if self.bookmarks:
            return self.bookmarks
        if self.keywords and self.summary:
            return [_LLMBookmark(keywords=self.keywords, aliases=self.aliases, summary=self.summary)]
        raise ValueError("reply has neither 'bookmarks' nor 'keywords' and 'summary'")


_KINDS = {"decision", "plan", "event", "preference", "fact"}


# -- term statistics ------------------------------------------------------------------------------------

_stats_lock = threading.Lock()
STATS_PAUSE_EVERY = 128  # turns counted between two pauses of background work (~3-5 ms of CPU)
_stats_cache: LRUCache[tuple[int, str], _UserStats] = LRUCache(256)


@dataclass(slots=True)
class _UserStats:
    top: int  # turns up to this id are counted
    stats: kw.TermStats
    pages: set[int]  # the pages counted (each is one document)


def user_stats(store: Store, user_id: str) -> kw.TermStats:
    """Page document frequencies of the user's terms, cached per process and kept up to date
    incrementally: only turns added since the last call are segmented (a page that gained turns
    adds just the terms it did not have), so a bookmark job costs its page, not the whole history.

    Kept in memory only (never stored); `forget_stats` drops them after a hard delete.
    """
    key = (id(store), user_id)
    top = store.max_turn_id(user_id)
    with _stats_lock:
        cached = _stats_cache.get(key)
        if cached is not None and cached.top == top:
            return cached.stats
        if cached is None or top < cached.top:  # first use, or turns were deleted: count afresh
            cached = _UserStats(0, kw.TermStats(), set())
        since = cached.top
        fresh: dict[int, set[str]] = {}
        # The first count of a user walks the whole history (~0.1-0.3 s of Python holding the GIL
        # at 10k turns): background work pauses every STATS_PAUSE_EVERY turns for a turn in flight.
        pause = background_pause()
        for n, turn in enumerate(store.iter_turns(user_id, after_id=since), 1):
            fresh.setdefault(turn.page_id or 0, set()).update(kw.doc_terms([turn.text]))
            if pause is not None and n % STATS_PAUSE_EVERY == 0:
                pause()
        for page_id, terms in fresh.items():
            if page_id in cached.pages:
                had: set[str] = set()
                for turn in store.page_turns(user_id, page_id):
                    if turn.id is not None and turn.id <= since:
                        had.update(kw.doc_terms([turn.text]))
                cached.stats.df.update(terms - had)
            else:
                cached.stats.add(terms)
                cached.pages.add(page_id)
        cached.top = top
        _stats_cache.put(key, cached)
        return cached.stats


def forget_stats(store: Store, user_id: str) -> None:
    """Drop the user's cached term statistics (after a hard delete: they hold the user's words)."""
    with _stats_lock:
        _stats_cache.pop((id(store), user_id))


# -- topic segments ------------------------------------------------------------------------------------


def topic_segments(turns: Sequence[Turn], vectors: dict[int, np.ndarray] | None = None) -> list[list[Turn]]:
    """Split a page where the topic shifts: the similarity of the windows before and after a gap
    drops well below the peaks around it (TextTiling depth on embeddings; term vectors when a turn
    has no embedding). Segments have at least `SEGMENT_MIN_TURNS` turns; at most three per page."""
    n = len(turns)
    if n < 2 * SEGMENT_MIN_TURNS:
        return [list(turns)]
    matrix = _turn_matrix(turns, vectors)
    sims: list[float] = []
    for gap in range(1, n):
        left = matrix[max(0, gap - SEGMENT_WINDOW) : gap].mean(axis=0)
        right = matrix[gap : gap + SEGMENT_WINDOW].mean(axis=0)
        denom = float(np.linalg.norm(left) * np.linalg.norm(right)) or 1.0
        sims.append(float(left @ right) / denom)
    arr = np.asarray(sims)
    # TextTiling depth: how far a gap's similarity sits below the peaks on either side. Depth is
    # relative, so it works the same for embedders whose similarities live on different scales.
    depth = np.zeros(len(arr))
    for i in range(len(arr)):
        left = i
        while left > 0 and arr[left - 1] >= arr[left]:
            left -= 1
        right = i
        while right < len(arr) - 1 and arr[right + 1] >= arr[right]:
            right += 1
        depth[i] = (arr[left] - arr[i]) + (arr[right] - arr[i])
    cutoff = max(float(depth.mean() + SHIFT_DEPTH * depth.std()), SHIFT_MIN_DEPTH)
    cuts: list[int] = []
    for gap in sorted(range(1, n), key=lambda g: -depth[g - 1]):
        if depth[gap - 1] <= cutoff or len(cuts) >= 2:
            break
        bounds = sorted([0, *cuts, gap, n])
        if all(b - a >= SEGMENT_MIN_TURNS for a, b in itertools.pairwise(bounds)):
            cuts.append(gap)
    bounds = sorted([0, *cuts, n])
    return [list(turns[a:b]) for a, b in itertools.pairwise(bounds)]


def _turn_matrix(turns: Sequence[Turn], vectors: dict[int, np.ndarray] | None) -> np.ndarray:
    if vectors and all(t.id in vectors for t in turns):
        return np.vstack([vectors[t.id] for t in turns if t.id is not None]).astype(np.float32)
    vocab: dict[str, int] = {}
    rows = [kw.doc_terms([t.content]) for t in turns]
    for row in rows:
        for term in row:
            vocab.setdefault(term, len(vocab))
    matrix = np.zeros((len(turns), max(1, len(vocab))), dtype=np.float32)
    for i, row in enumerate(rows):
        for term in row:
            matrix[i, vocab[term]] = 1.0
    return matrix


# -- the rule bookmarker ---------------------------------------------------------------------------------


def rule_bookmark(page: Page, turns: Sequence[Turn], stats: kw.TermStats | None = None) -> Bookmark:
    """A bookmark of `turns` (a page or a segment of it) from the rule extractor alone."""
    speakers = {t.label for t in turns} | {t.label.split()[0] for t in turns if t.label}
    texts = [t.content for t in turns]
    keywords = kw.extract_keywords(texts, stats, k=MAX_KEYWORDS, min_k=MIN_KEYWORDS, exclude=speakers)
    names = [k.text for k in keywords]
    joined = "\n".join(texts)
    kind = kw.classify(joined)
    return Bookmark(
        user_id=page.user_id,
        session_id=page.session_id,
        keywords=names,
        aliases=kw.aliases_for(names, joined),
        summary=kw.summarize([(t.label, t.content) for t in turns], keywords),
        page_ids=[page.id],
        turn_ids=[t.id for t in turns if t.id is not None],
        first_at=turns[0].created_at if turns else page.created_at,
        last_at=turns[-1].created_at if turns else page.created_at,
        kind=kind,
        importance=kw.importance(keywords, kind, joined),
        source="rule",
    )


# -- generation ------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Unit:
    key: str  # "p12" or "p12.2" for the second topic segment of page 12
    page: Page
    turns: list[Turn]


def generate_bookmarks(
    memory: Memory,
    user_id: str,
    page_ids: Sequence[int] | None = None,
    llm: ChatClient | None = None,
    *,
    embed: bool = True,
    timeout: float | None = None,
) -> BookmarkRun:
    """Bookmark pages of a user, synchronously, and store the bookmarks (replacing the pages' old ones).

    `page_ids=None` means every page that has no bookmark yet. With `llm`, pages are sent in batches
    (at most one call per page, never more); any page the LLM did not bookmark — no LLM, a failed or
    timed-out call, invalid JSON, a missing entry — gets a rule bookmark, and the trace records
    why. With `embed`, the bookmarks are embedded with every configured embedder.
    """
    t_start = time.perf_counter()
    store = memory.store
    all_pages = {p.id: p for p in store.pages(user_id)}
    if page_ids is None:
        done = store.bookmarked_page_ids(user_id)
        wanted = [p for pid, p in all_pages.items() if pid not in done]
    else:
        wanted = [all_pages[pid] for pid in page_ids if pid in all_pages]
    trace: dict[str, Any] = {
        "user_id": user_id,
        "pages": len(wanted),
        "llm_calls": 0,
        "llm_errors": [],
        "fallback": 0,
    }
    if not wanted:
        trace["ms"] = _ms(t_start)
        return BookmarkRun([], trace)

    stats = user_stats(store, user_id)
    first_embedder = next(iter(memory.embedders.values()), None)
    units: list[_Unit] = []
    for page in wanted:
        turns = store.page_turns(user_id, page.id)
        if not turns:
            continue
        vectors = (
            store.turn_vectors(user_id, first_embedder.model_id, [t.id for t in turns if t.id is not None])
            if first_embedder is not None
            else None
        )
        segments = topic_segments(turns, vectors)
        for i, seg in enumerate(segments):
            units.append(_Unit(f"p{page.id}" if len(segments) == 1 else f"p{page.id}.{i + 1}", page, seg))
    trace["units"] = len(units)

    made: dict[str, Bookmark] = {}
    if llm is not None:
        for batch in _batches(units):
            try:
                made.update(_llm_bookmarks(llm, batch, timeout))
            except LLMError as exc:
                trace["llm_errors"].append(str(exc)[:300])
                log.warning("bookmark LLM call failed, using the rule fallback: %s", exc)
            finally:
                trace["llm_calls"] += 1
    bookmarks: list[Bookmark] = []
    for unit in units:
        b = made.get(unit.key)
        if b is None:
            b = rule_bookmark(unit.page, unit.turns, stats)
            trace["fallback"] += 1
        bookmarks.append(b)
    trace["source"] = (
        "llm" if llm is not None and not trace["fallback"] else ("rule" if not made else "mixed")
    )
    if llm is None:
        trace["fallback_reason"] = "no LLM configured"
    elif trace["llm_errors"]:
        trace["fallback_reason"] = "LLM call failed"
    elif trace["fallback"]:
        trace["fallback_reason"] = "LLM left some pages out"

    store.add_bookmarks(user_id, bookmarks, replace_pages=True)
    if embed:
        trace["embedded"] = embed_bookmarks(memory, user_id)
        # The vocabulary of these pages' turns (memsched.vocab), embedded while we are here.
        trace["terms_embedded"] = embed_vocabulary(
            memory.store,
            memory.embedders,
            user_id,
            [t.id for u in units for t in u.turns if t.id is not None],
        )
    trace["bookmarks"] = len(bookmarks)
    trace["ms"] = _ms(t_start)
    return BookmarkRun(bookmarks, trace)


def embed_bookmarks(memory: Memory, user_id: str) -> int:
    """Embed the user's bookmarks that have no vector yet, with each embedder. Returns how many."""
    done = 0
    for embedder in memory.embedders.values():
        missing = memory.store.bookmarks_missing_vectors(user_id, embedder.model_id)
        if getattr(embedder, "han_only", False):  # embed.gloss: only Chinese text has a vector
            missing = [b for b in missing if has_han(b.text)]
        for start in range(0, len(missing), embedder.batch_size):
            chunk = missing[start : start + embedder.batch_size]
            texts = [b.text for b in chunk]
            vectors = embedder.embed(texts)
            memory.store.put_vectors(
                user_id,
                embedder.model_id,
                [(content_hash(t), v) for t, v in zip(texts, vectors, strict=True)],
            )
            done += len(chunk)
    return done


def _batches(units: Sequence[_Unit]) -> list[list[_Unit]]:
    """Units grouped into calls of about `LLM_BATCH_CHARS`, a page's segments always together."""
    out: list[list[_Unit]] = []
    current: list[_Unit] = []
    size = 0
    last_page: int | None = None
    for unit in units:
        chars = sum(len(t.text) for t in unit.turns)
        if current and unit.page.id != last_page and size + chars > LLM_BATCH_CHARS:
            out.append(current)
            current, size = [], 0
        current.append(unit)
        size += chars
        last_page = unit.page.id
    if current:
        out.append(current)
    return out


def _llm_bookmarks(llm: ChatClient, units: Sequence[_Unit], timeout: float | None) -> dict[str, Bookmark]:
    from memsched.llm.client import complete_json
    from memsched.llm.prompts import load

    blocks = []
    for unit in units:
        date = unit.turns[0].created_at.strftime("%Y-%m-%d")
        lines = "\n".join(f"{t.label}: {t.content}" for t in unit.turns)
        blocks.append(f"### [{unit.key}] {date}\n{lines}")
    prompt = load("bookmark").format(ids=", ".join(u.key for u in units), segments="\n\n".join(blocks))
    reply = complete_json(
        llm, [{"role": "user", "content": prompt}], _LLMBatch, purpose="bookmark", timeout=timeout
    )
    try:
        items = reply.items()
    except ValueError as exc:
        raise LLMError(f"invalid JSON from LLM: {exc}") from None
    by_key = {u.key: u for u in units}
    out: dict[str, Bookmark] = {}
    for i, item in enumerate(items):
        key = str(item.id).strip("[] ") if item.id is not None else (units[i].key if i < len(units) else "")
        if key and not key.startswith("p"):
            key = f"p{key}"
        found = by_key.get(key)
        if found is None:
            continue
        unit = found
        joined = "\n".join(t.content for t in unit.turns)
        kind = item.kind if item.kind in _KINDS else kw.classify(joined)
        keywords = item.keywords
        out[key] = Bookmark(
            user_id=unit.page.user_id,
            session_id=unit.page.session_id,
            keywords=keywords,
            aliases=item.alias_map(),
            summary=kw.clip(item.summary),
            page_ids=[unit.page.id],
            turn_ids=[t.id for t in unit.turns if t.id is not None],
            first_at=unit.turns[0].created_at,
            last_at=unit.turns[-1].created_at,
            kind=kind,
            importance=float(item.importance)
            if item.importance is not None and 0 <= item.importance <= 1
            else kw.importance([kw.Keyword(k, 1.0, "entity") for k in keywords], kind, joined),
            source="llm",
        )
    return out


# -- maintenance ------------------------------------------------------------------------------------------


def update_aliases(memory: Memory, user_id: str) -> list[dict[str, Any]]:
    """Follow renames and abbreviations of later turns back to older bookmarks (semantic drift).

    A later turn that says "A 改名为 B" / "rename A to B" / "A (aka B)", or a later bookmark whose
    keyword is a short form of an older keyword ("Alpha" of "Alpha模块"), adds the new name as an
    alias of the older bookmark, so a query using the new name still reaches the old pages.
    Returns the changes made.
    """
    store = memory.store
    marks = store.bookmarks(user_id)
    changes: list[dict[str, Any]] = []
    if not marks:
        return changes
    turn_ids = sorted({t for b in marks for t in b.turn_ids})
    turns = {t.id: t for t in store.get_turns(user_id, turn_ids)}
    dirty: dict[int, Bookmark] = {}

    def add_alias(target: Bookmark, key: str, alias: str, why: str) -> None:
        if alias.lower() in {n.lower() for n in target.names}:
            return
        target.aliases.setdefault(key, []).append(alias)
        if target.id is not None:
            dirty[target.id] = target
        changes.append({"bookmark_id": target.id, "keyword": key, "alias": alias, "why": why})

    ordered = sorted(marks, key=lambda b: (b.first_at, b.id or 0))
    rank = {id(b): n for n, b in enumerate(ordered)}
    # short form -> (bookmark, keyword) it abbreviates: one pass over all keywords instead of
    # comparing every pair of bookmarks (quadratic in a long history).
    shortened: dict[str, list[tuple[Bookmark, str]]] = {}
    for b in ordered:
        for key in b.keywords:
            for short in kw.short_forms(key):
                shortened.setdefault(short, []).append((b, key))
    for later in ordered:
        text = "\n".join(turns[t].content for t in later.turn_ids if t in turns)
        for old, new in kw.renames(text):  # rare: only then look at every earlier bookmark
            for earlier in ordered[: rank[id(later)]]:
                if earlier.first_at > later.first_at:
                    continue
                for name in earlier.names:
                    if _same_name(name, old):
                        add_alias(earlier, _key_of(earlier, name), new, f"renamed in {later.ref}")
                        break
        # A later keyword that is the short form of an earlier keyword ("Alpha" for "Alpha模块").
        for name in later.keywords:
            for earlier, key in shortened.get(name, ()):
                if earlier is later or earlier.first_at > later.first_at or name.lower() == key.lower():
                    continue
                add_alias(earlier, key, name, f"short form used in {later.ref}")
    for b in dirty.values():
        store.update_bookmark(user_id, b)
    if dirty:
        embed_bookmarks(memory, user_id)
    return changes


def _same_name(a: str, b: str) -> bool:
    a, b = a.lower().strip(), b.lower().strip()
    return a == b or (len(b) >= 2 and (a.endswith(b) or b.endswith(a)) and min(len(a), len(b)) >= 2)


def _key_of(b: Bookmark, name: str) -> str:
    for key, aliases in b.aliases.items():
        if name == key or name in aliases:
            return key
    return name


def merge_bookmarks(
    memory: Memory, user_id: str, *, threshold: float = 0.9, min_overlap: float = 0.34
) -> list[dict[str, Any]]:
    """Merge near-duplicate bookmarks into one stronger bookmark pointing to all their pages.

    Two bookmarks are near-duplicates when their embeddings (first embedder) are at least
    `threshold` similar and they share at least `min_overlap` of their keywords (Jaccard, case
    folded, aliases included). Clusters are formed by single linkage. Returns the merges made.
    """
    store = memory.store
    marks = {b.id: b for b in store.bookmarks(user_id) if b.id is not None}
    if len(marks) < 2:
        return []
    embedder = next(iter(memory.embedders.values()), None)
    embed_bookmarks(memory, user_id)
    vectors: np.ndarray | None = None
    order: list[int] = sorted(marks)
    if embedder is not None:
        ids, matrix = store.bookmark_vectors(user_id, embedder.model_id)
        pos = {int(i): n for n, i in enumerate(ids)}
        order = [i for i in order if i in pos]
        if order:
            vectors = matrix[[pos[i] for i in order]]
    parent = {i: i for i in order}

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    names = {i: {n.lower() for n in marks[i].names} for i in order}
    for a, b in _candidate_pairs(order, names, vectors, threshold):
        ia, ib = order[a], order[b]
        union = names[ia] | names[ib]
        if not union or len(names[ia] & names[ib]) / len(union) < min_overlap:
            continue
        parent[find(ib)] = find(ia)
    clusters: dict[int, list[int]] = {}
    for i in order:
        clusters.setdefault(find(i), []).append(i)
    merges: list[dict[str, Any]] = []
    for members in clusters.values():
        if len(members) < 2:
            continue
        group = [marks[i] for i in members]
        merged = _merge(group)
        store.replace_bookmarks(user_id, members, [merged])
        merges.append({"merged": members, "into": merged.id, "pages": merged.page_ids})
    if merges:
        embed_bookmarks(memory, user_id)
    return merges


def _candidate_pairs(
    order: Sequence[int], names: dict[int, set[str]], matrix: np.ndarray | None, threshold: float
) -> list[tuple[int, int]]:
    """Index pairs (a < b) worth a keyword check: cosine >= threshold, found block by block so
    memory stays O(block x B); without vectors, pairs that share at least one name."""
    pairs: list[tuple[int, int]] = []
    if matrix is not None:
        block = 512
        for start in range(0, len(order), block):
            sims = matrix[start : start + block] @ matrix.T
            rows, cols = np.nonzero(sims >= threshold)
            pairs.extend((start + int(r), int(c)) for r, c in zip(rows, cols, strict=True) if start + r < c)
        return pairs
    by_name: dict[str, list[int]] = {}
    for n, i in enumerate(order):
        for name in names[i]:
            by_name.setdefault(name, []).append(n)
    seen: set[tuple[int, int]] = set()
    for members in by_name.values():
        for x, a in enumerate(members):
            for b in members[x + 1 :]:
                seen.add((a, b))
    return sorted(seen)


def _merge(group: Sequence[Bookmark]) -> Bookmark:
    best = max(group, key=lambda b: (b.importance, len(b.keywords)))
    counts: dict[str, tuple[int, str]] = {}
    for b in group:
        for k in b.keywords:
            n, surface = counts.get(k.lower(), (0, k))
            counts[k.lower()] = (n + 1, surface)
    keywords = [s for _, (n, s) in sorted(counts.items(), key=lambda kv: (-kv[1][0], kv[0]))][:MAX_KEYWORDS]
    aliases: dict[str, list[str]] = {}
    for b in group:
        for key, lst in b.aliases.items():
            merged_list = aliases.setdefault(key, [])
            merged_list.extend(a for a in lst if a not in merged_list)
    # Keywords squeezed out by the cap stay findable as aliases of the first keyword.
    dropped = [s for _, (_, s) in counts.items() if s not in keywords]
    if dropped and keywords:
        aliases.setdefault(keywords[0], []).extend(
            d for d in dropped if d not in aliases.get(keywords[0], [])
        )
    return Bookmark(
        user_id=best.user_id,
        session_id=best.session_id,
        keywords=keywords,
        aliases=aliases,
        summary=best.summary,
        page_ids=sorted({p for b in group for p in b.page_ids}),
        turn_ids=sorted({t for b in group for t in b.turn_ids}),
        first_at=min(b.first_at for b in group),
        last_at=max(b.last_at for b in group),
        kind=best.kind,
        # Repetition is evidence of importance: a topic that keeps coming back matters.
        importance=round(min(1.0, max(b.importance for b in group) + 0.1 * (len(group) - 1)), 3),
        source="merged",
    )


def maintain_bookmarks(memory: Memory, user_id: str, llm: ChatClient | None = None) -> dict[str, Any]:
    """Idle-time upkeep: bookmark pages still missing one, follow renames, merge near-duplicates,
    and embed vocabulary terms that have no vector (e.g. their source turn was forgotten while other
    turns still use them)."""
    t0 = time.perf_counter()
    run = generate_bookmarks(memory, user_id, llm=llm)
    aliases = update_aliases(memory, user_id)
    merges = merge_bookmarks(memory, user_id)
    terms_embedded = embed_vocabulary(memory.store, memory.embedders, user_id)
    return {
        "generated": len(run.bookmarks),
        "aliases": aliases,
        "merges": merges,
        "terms_embedded": terms_embedded,
        "ms": _ms(t0),
    }


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000.0, 3)


# -- job kinds -----------------------------------------------------------------------------------------------


def _register_jobs() -> None:
    """Register the "bookmark" and "bookmark_maintenance" job kinds, if the job runtime exists.

    Guarded so that importing this module never depends on `memsched.jobs` being present.
    """
    try:
        from memsched.jobs.tasks import TaskContext, task
    except ImportError:
        return

    @task("bookmark")
    def run_bookmark(ctx: TaskContext, job: Any) -> None:
        # Idempotent: the page's bookmarks are replaced, never added to.
        memory, user_id, payload = _job_parts(ctx, job)
        result = generate_bookmarks(memory, user_id, [int(payload["page_id"])], llm=_ctx_llm(ctx, memory))
        # In a process that serves queries the user's next one finds their term postings built (the
        # page may have given them their vocabulary) instead of building them inside its turn.
        memory.warm_terms(user_id)
        # Counts only at INFO: the trace holds the user's words (keywords, summaries).
        log.info("bookmarked page %s of %s: %d bookmarks", payload["page_id"], user_id, len(result.bookmarks))
        log.debug("bookmark trace of page %s: %s", payload["page_id"], result.trace)

    @task("bookmark_maintenance")
    def run_maintenance(ctx: TaskContext, job: Any) -> None:
        memory, user_id, _ = _job_parts(ctx, job)
        done = maintain_bookmarks(memory, user_id, llm=_ctx_llm(ctx, memory))
        # Counts only at INFO: alias updates and merges quote the user's words.
        log.info(
            "bookmark maintenance of %s: %s",
            user_id,
            {k: len(v) if isinstance(v, list | dict) else v for k, v in done.items()},
        )
        log.debug("bookmark maintenance details of %s: %s", user_id, done)


def _job_parts(ctx: Any, job: Any) -> tuple[Memory, str, dict[str, Any]]:
    memory = getattr(ctx, "memory", None)
    if memory is None:
        raise RuntimeError("bookmark jobs need TaskContext.memory")
    payload = getattr(job, "payload", None)
    if isinstance(payload, str):
        payload = json.loads(payload)
    user_id = getattr(job, "user_id", None) or (payload or {}).get("user_id")
    if not user_id:
        raise RuntimeError("bookmark job has no user_id")
    return memory, str(user_id), dict(payload or {})


def _ctx_llm(ctx: Any, memory: Memory) -> ChatClient | None:
    llm = getattr(ctx, "llm", None)
    if llm is not None:
        return cast("ChatClient", llm)
    from memsched.llm.client import client_from_config

    return client_from_config(memory.config, "helper")


_register_jobs()
