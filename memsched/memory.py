"""`Memory`: the embedded library API — record turns, search them, build budgeted contexts."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memsched.assemble import Assembly, assemble
from memsched.config import Config
from memsched.embed import base as embed_base
from memsched.embed.base import Embedder, keeps_vector
from memsched.embed.batch import MicroBatcher, PendingVectors, batch_all, embed_soon
from memsched.errors import UnknownUserError
from memsched.model import Candidate, Hit, Role, Turn, as_utc, utcnow
from memsched.profile import Profile
from memsched.retrieve import FusionWeights, Retriever
from memsched.store import Store, open_store
from memsched.text.segment import cjk_ratio
from memsched.text.timeexpr import stamp
from memsched.text.tokens import TokenCounter, get_counter
from memsched.tools import DEFAULT_INDEX_SHARE, attach_index
from memsched.zones import sent_offset

if TYPE_CHECKING:
    from concurrent.futures import Future

    from memsched.paging import Pager, Paging
    from memsched.retrieve import Retrieval


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()
"""Per-call override sentinel: UNSET means "use the configured default"."""

HINT_EXTRA = 3  # turns a strategy's recall hint adds right after the best candidates


@dataclass(slots=True)
class ContextResult:
    """The messages to send to an LLM and the trace of how they were chosen."""

    messages: list[dict[str, Any]]
    trace: dict[str, Any]
    assembly: Assembly | None = field(default=None, repr=False)

    @property
    def tokens(self) -> int:
        return int(self.trace["tokens"]["total"])


@dataclass(slots=True)
class SearchHit:
    turn: Turn
    score: float
    candidate: Candidate


class Memory:
    """memsched embedded in your process: one SQLite file, models loaded lazily on first use.

    >>> mem = Memory(home="/tmp/ms", embedders="hash")
    >>> _ = mem.add("alice", "s1", "user", "My cat is called Sesame")
    >>> "Sesame" in mem.context("alice", "what's my cat's name?").messages[0]["content"]
    True
    """

    def __init__(
        self,
        config: Config | None = None,
        *,
        store: Store | None = None,
        embedders: dict[str, Embedder] | str | None = None,
        weights: FusionWeights | None = None,
        **overrides: Any,
    ) -> None:
        if isinstance(embedders, str):  # a spec like "minilm,wordllama" is a setting, not instances
            overrides["embedders"] = embedders
            embedders = None
        self.config = config if config is not None else Config.load(**overrides)
        if config is not None and overrides:
            self.config = config.replace(**overrides)
        self.store = store if store is not None else open_store(self.config)
        self._batchers: list[MicroBatcher] = []
        if embedders is None:
            # Heavy models sit behind a micro-batcher, one per model: concurrent turns (and the
            # layers that run the same model) share model calls.
            embedders, self._batchers = batch_all(
                {name: embed_base.create(name, self.config) for name in self.config.embedder_names}
            )
        self.embedders = embedders
        # The layers whose similarity says whether a turn is about the message (`found_by_message`).
        self._sentence_layers = frozenset(n for n, e in embedders.items() if getattr(e, "sentence", False))
        self.retriever = Retriever(
            self.store,
            embedders,
            weights=weights,
            cache_mb=self.config.vector_cache_mb,
            cache_users=self.config.user_cache_size,
        )
        self._counter: TokenCounter | None = None
        self._pager: Pager | None = None
        self._lock = threading.Lock()

    @property
    def pager(self) -> Pager:
        """The paging scheduler `context` uses (created on first use). It gets the helper LLM only
        when `config.rerank` is on: otherwise the cooperative layer uses its rule fallbacks."""
        if self._pager is None:
            from memsched.llm.client import client_from_config
            from memsched.paging import Pager, PagingOptions

            llm = client_from_config(self.config, "helper") if self.config.rerank else None
            options = PagingOptions(rerank_timeout=self.config.rerank_timeout)
            self._pager = Pager(self, options, llm=llm)
        return self._pager

    @property
    def counter(self) -> TokenCounter:
        if self._counter is None:
            self._counter = get_counter(self.config.tokenizer)
        return self._counter

    def embed_stats(self) -> dict[str, dict[str, float]]:
        """Per batched model (by model id): the model calls its batcher made, the texts they carried
        and the dispatcher's CPU seconds in them, since start (background and bulk calls, which
        bypass the batcher, are not counted)."""
        stats: dict[str, dict[str, float]] = {}
        for b in self._batchers:
            calls, texts, cpu = b.totals()  # with its side dispatcher's (the soft layer's query words)
            stats[b.model_id] = {"calls": calls, "texts": texts, "cpu_seconds": cpu}
        return stats

    def close(self) -> None:
        self.store.close()
        for embedder in {*self._batchers, *self.embedders.values()}:
            if isinstance(embedder, MicroBatcher):
                embedder.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -------------------------------------------------------------------------------------

    def add(
        self,
        user_id: str,
        session_id: str,
        role: Role,
        content: str,
        *,
        created_at: datetime | None = None,
        speaker: str | None = None,
        external_id: str | None = None,
        index: bool = True,
        timezone: str | None = None,
    ) -> Turn:
        """Record one turn (and embed it unless `index=False`). Returns it with its id.

        Relative time it mentions ("上周", "last Tuesday") is stored resolved against `created_at` in
        the user's `timezone` (when None: the UTC offset `created_at` carries, else UTC)."""
        turn = Turn(
            user_id=user_id,
            session_id=session_id,
            role=role,
            content=content,
            created_at=created_at or utcnow(),
            speaker=speaker,
            external_id=external_id,
        )
        return self.add_many([turn], index=index, timezone=timezone or sent_offset(created_at))[0]

    def add_many(
        self, turns: Sequence[Turn], *, index: bool = True, timezone: str | None = None
    ) -> list[Turn]:
        """Record turns in one transaction; embeds what is new when `index` is true. Relative time in
        them is resolved to dates in the user's `timezone` (`memsched.text.timeexpr.stamp`)."""
        stamp(turns, timezone)
        stored = self.store.add_turns(turns)
        if index:
            for user_id in {t.user_id for t in stored}:
                self.retriever.index_user(user_id)
        return stored

    def index(
        self,
        user_id: str | None = None,
        progress: Callable[[int], None] | None = None,
        *,
        chunk: int | None = None,
        pause: Callable[[], object] | None = None,
    ) -> int:
        """Embed every turn that has no vector yet for the configured embedders (`chunk` texts at a
        time, calling `pause()` before each chunk); then build or extend the on-disk vector graphs
        of users past the exact-search threshold (`Retriever.update_graphs`)."""
        users = [user_id] if user_id is not None else self.store.users()
        done = 0
        for u in users:
            done += self.retriever.index_user(u, progress=progress, chunk=chunk, pause=pause)
            if pause is not None:
                pause()
            self.retriever.update_graphs(u)
        return done

    def delete_turns(self, user_id: str, turn_ids: Iterable[int]) -> int:
        ids = list(turn_ids)
        n = self.store.delete_turns(user_id, ids)
        self.retriever.forget(user_id, ids)
        self.forget_caches(user_id)
        return n

    def delete_user(self, user_id: str) -> int:
        n = self.store.delete_user(user_id)
        self.retriever.forget(user_id)
        self.forget_caches(user_id)
        return n

    def warm_terms(self, user_id: str) -> bool:
        """Build what the soft-term layer holds of the user in memory (`Pager.warm_terms`) before
        their next query; background work. Only in a process that serves queries (its pager exists:
        a retrieval ran here): a process that only runs jobs, e.g. `memsched worker`, never reads
        them. Returns whether it built them."""
        if self._pager is None or self.config.paging_mode not in ("retrieve", "both"):
            return False
        return self._pager.warm_terms(user_id)

    def refresh(self, user_id: str) -> None:
        """Bring what this process holds of the user in memory up to the store: the dense layers'
        indexes (`Retriever.refresh`) and the soft-term layer's postings (`Pager.refresh`). After a
        reply, on the thread that stored its vectors, so the next turn's search reads nothing in
        (BENCHMARKS.md, "P0 in session 30")."""
        self.retriever.refresh(user_id)
        if self._pager is not None:
            self._pager.refresh(user_id)

    def forget_caches(self, user_id: str) -> None:
        """Drop what in-process caches hold of the user's text (after a hard delete): the pager's
        per-user caches and the text-keyed token-count, segmentation and word-vector caches."""
        from memsched import vocab
        from memsched.text import gloss, postag
        from memsched.text.segment import clear_caches

        if self._pager is not None:
            self._pager.forget(user_id)
        if self._counter is not None:
            self._counter.count.cache_clear()
        clear_caches()
        gloss.clear_caches()
        postag.clear_caches()
        vocab.clear_caches()

    # -- reading -------------------------------------------------------------------------------------

    def ranked_turns(self, user_id: str, candidates: Sequence[Candidate], limit: int = 200) -> list[Turn]:
        """The turns of the first `limit` candidates, in rank order (deleted ones left out)."""
        top = candidates[:limit]
        by_id = {t.id: t for t in self.store.get_turns(user_id, [c.turn_id for c in top])}
        return [by_id[c.turn_id] for c in top if c.turn_id in by_id]

    def query_vectors(self, message: str) -> PendingVectors:
        """Start embedding `message` for the layers that count for its script and the first embedder
        (`Retriever.query_names`) and return at once; vectors are read when needed."""
        return embed_soon(self.embedders, self.retriever.query_names(message), message)

    def recent_turns(
        self,
        user_id: str,
        session_id: str | None,
        after_seq: int | None = None,
        tail: Sequence[Turn] | None = None,
    ) -> list[Turn]:
        """The session's recent window as `context` takes it (after `after_seq`, when given). `tail`:
        the session's last turns, in order, at least `recent_max_turns` of them unless the session
        has fewer, when the caller read them already (the window is cut from it, not read again)."""
        if not session_id:
            return []
        n = self.config.recent_max_turns
        if tail is not None:
            recent = list(tail[max(0, len(tail) - n) :])
        else:
            recent = self.store.session_turns(user_id, session_id, last=n)
        if after_seq is not None:  # the turns up to there are covered by summaries
            recent = [t for t in recent if t.seq is not None and t.seq > after_seq]
        return recent

    def retrieval(
        self,
        user_id: str,
        message: str,
        *,
        session_id: str | None = None,
        recent_after_seq: int | None = None,
        query_vectors: Mapping[str, Any] | None = None,
        exclude_turn_ids: Iterable[int] = (),
        recent: Sequence[Turn] | None = None,
        now: datetime | None = None,
        timezone: str | None = None,
    ) -> Retrieval | Paging:
        """The ranked candidates `context` computes for the same arguments. The scheduler runs it on
        another thread while it routes the message, and hands the result to `context(retrieval=)`.
        `recent`: the recent window as `recent_turns` returns it, when the caller has read it;
        `now` and `timezone`: when and where the message is asked (what "yesterday" in it means)."""
        if recent is None:
            recent = self.recent_turns(user_id, session_id, recent_after_seq)
        exclude = {t.id for t in recent if t.id is not None} | set(exclude_turn_ids)
        qvecs = query_vectors if query_vectors else self.query_vectors(message)
        at = as_utc(now) if now is not None else utcnow()
        return self._retrieve(user_id, message, session_id, exclude, qvecs, at, timezone)

    def _retrieve(
        self,
        user_id: str,
        message: str,
        session_id: str | None,
        exclude: set[int],
        qvecs: Mapping[str, Any],
        now: datetime | None = None,
        timezone: str | None = None,
    ) -> Retrieval | Paging:
        if self.config.paging_mode in ("retrieve", "both"):
            # The paging scheduler (bookmarks, page priors, multi-hop, LLM rerank) over the retriever.
            return self.pager.retrieve(
                user_id,
                message,
                session_id=session_id,
                exclude=exclude,
                query_vectors=qvecs,
                now=now,
                timezone=timezone,
            )
        return self.retriever.retrieve(user_id, message, exclude=exclude, query_vectors=qvecs)

    def require_user(self, user_id: str) -> None:
        if not self.store.has_user(user_id):
            raise UnknownUserError(user_id)

    def search(self, user_id: str, query: str, limit: int = 10) -> list[SearchHit]:
        """The user's turns most relevant to `query`, best first, with per-layer scores."""
        self.retriever.index_user(user_id)
        result = self.retriever.retrieve(user_id, query, expand=False)
        by_id = {c.turn_id: c for c in result.candidates[:limit]}
        return [
            SearchHit(turn=t, score=by_id[t.id].fused, candidate=by_id[t.id])
            for t in self.ranked_turns(user_id, result.candidates, limit)
            if t.id is not None
        ]

    def context(
        self,
        user_id: str,
        message: str,
        *,
        session_id: str | None = None,
        now: datetime | None = None,
        budget: int = UNSET,
        system_prompt: str = UNSET,
        system_sections: Sequence[str] = (),
        summaries: Sequence[str] = (),
        record: bool = False,
        backfill: bool = True,
        recent_after_seq: int | None = None,
        query_vectors: Mapping[str, Any] | None = None,
        shares: Mapping[str, float] | None = None,
        recall_hint: str = "",
        min_similarity: float = 0.0,
        exclude_turn_ids: Iterable[int] = (),
        lexical_only_turn_ids: Iterable[int] = (),
        retrieval: Future[Retrieval | Paging] | None = None,
        recent: Sequence[Turn] | None = None,
        timezone: str | None = None,
    ) -> ContextResult:
        """Build the messages for the next LLM call: system, recalled memory, recent turns, `message`.

        Read-only unless `record` is true, in which case `message` is stored as a user turn of
        `session_id` after the context is built. `recent_after_seq` starts the recent window after
        that position of the session (the turns before it are covered by `summaries`);
        `query_vectors` reuses embeddings of `message` the caller already computed. `shares` (a
        strategy's budget shares per memory source) caps each source; `recall_hint` is searched with
        BM25 besides the message and its hits are interleaved after the best few candidates;
        `min_similarity` (a strategy's; no shipped one sets it) recalls only what the message itself
        found (`found_by_message`); 0 recalls whatever ranks;
        `exclude_turn_ids` are never recalled; `lexical_only_turn_ids` only when a keyword layer
        (BM25) found them — e.g. a finished topic that its summary stands for, which comes back when
        the message names it but not by mere embedding similarity. `retrieval` is the result of
        `self.retrieval(...)` started earlier with the same arguments (used instead of searching again);
        `recent` the recent window as `recent_turns` returns it, when the caller has read it;
        `timezone` (IANA) dates the recalled memories on the user's clock.
        """
        t_start = time.perf_counter()
        cfg = self.config
        grow = budget is UNSET  # the configured budget gives way to a long message; an asked one does not
        budget = cfg.budget if budget is UNSET else budget
        system_prompt = cfg.system_prompt if system_prompt is UNSET else system_prompt
        now = as_utc(now) if now is not None else utcnow()
        timings: dict[str, float] = {}

        t0 = time.perf_counter()
        if recent is None:
            recent = self.recent_turns(user_id, session_id, recent_after_seq)
        recent = list(recent)
        timings["recent"] = _ms(t0)
        if backfill:
            t0 = time.perf_counter()
            self.retriever.index_user(user_id)
            timings["backfill"] = _ms(t0)
        t0 = time.perf_counter()
        # Started now, read where the dense layers need it: the model runs while the SQL stages do.
        qvecs = query_vectors if query_vectors else self.query_vectors(message)
        timings["embed_query"] = _ms(t0)

        exclude = {t.id for t in recent if t.id is not None} | set(exclude_turn_ids)
        # The hint's search needs no candidates: it runs before waiting for the retrieval thread.
        if recall_hint:
            t0 = time.perf_counter()
            hint_hits = self._hint_hits(user_id, recall_hint)
            timings["hint"] = _ms(t0)
        else:
            hint_hits = []
        if retrieval is not None:
            t0 = time.perf_counter()
            found = retrieval.result()
            timings["retrieval_wait"] = _ms(t0)  # what was left of it when the context needed it
        else:
            found = self._retrieve(user_id, message, session_id, exclude, qvecs, now, timezone)
        timings.update(found.timings_ms)
        # With tools, part of the budget holds the bookmark index the model pages from.
        index_share = DEFAULT_INDEX_SHARE if shares is None else float(shares.get("bookmarks", 0.0))
        index_room = int(budget * index_share) if cfg.paging_mode in ("tools", "both") else 0
        if shares is not None and cfg.paging_mode not in ("tools", "both"):
            # Without the tool, bookmarks work inside retrieval: their share goes to recalled turns.
            shares = {**shares, "recalled": float(shares.get("recalled", 0.0)) + index_share}

        t0 = time.perf_counter()
        top = found.candidates[:200]
        if recall_hint:
            top = self._with_hint(top, hint_hits, exclude)
        gated = set(lexical_only_turn_ids)
        if gated:
            top = [c for c in top if c.turn_id not in gated or any("bm25" in k for k in c.scores)]
        if top:  # a statement a later one replaced ("I live in Paris") brings the later one first
            top = newer_first(top, Profile(self.store).newer_sources(user_id), exclude)
        ranked_turns = self.ranked_turns(user_id, top)
        if min_similarity > 0:
            kept = found_by_message(
                message, top, ranked_turns, min_similarity, self._sentence_layers & set(found.layers)
            )
            ranked_turns = [t for t in ranked_turns if t.id in kept]
        timings["load"] = _ms(t0)

        t0 = time.perf_counter()
        result = assemble(
            counter=self.counter,
            budget=budget - index_room,
            system_prompt=system_prompt,
            new_message=message,
            recalled=ranked_turns,
            recent=recent,
            recent_share=cfg.recent_share,
            recent_max_turns=cfg.recent_max_turns,
            system_sections=system_sections,
            summaries=summaries,
            shares=shares,
            timezone=timezone,
            grow=grow,
        )
        timings["assemble"] = _ms(t0)
        paging_tools: dict[str, Any] | None = None
        if index_room:
            paging_tools = attach_index(
                self,
                user_id,
                result.messages,
                budget=budget,
                room=index_room,
                in_context=[*result.recalled, *result.recent],
                # Pages of the retrieval candidates that did not fit: listed first in the index.
                prefer=[t.page_id for t in ranked_turns if t.page_id is not None],
            )
            result.tokens["total"] = self.counter.messages_tokens(result.messages)
            result.tokens["budget"] = budget

        if record and session_id:
            t0 = time.perf_counter()
            turn = Turn(user_id=user_id, session_id=session_id, role="user", content=message, created_at=now)
            stamp([turn])
            self.store.add_turns([turn])
            for name, vec in qvecs.items():
                if keeps_vector(self.embedders[name], turn.text):
                    self.retriever.put_vector(user_id, name, turn.text, vec)
            timings["record"] = _ms(t0)
        timings["total"] = _ms(t_start)

        reasons = {c.turn_id: c for c in top}
        trace = {
            "id": uuid.uuid4().hex,
            "user_id": user_id,
            "session_id": session_id,
            "at": now.isoformat(),
            "query": message,
            "budget": budget,
            "retrieval": found.trace(),
            "selected": [
                {
                    "turn_id": t.id,
                    "session_id": t.session_id,
                    "external_id": t.external_id,
                    "reason": reasons[t.id].reason if t.id in reasons else "",
                    "fused": round(reasons[t.id].fused, 6) if t.id in reasons else None,
                }
                for t in sorted(result.recalled, key=lambda t: (t.created_at, t.id or 0))
            ],
            "recent": [t.id for t in result.recent],
            "dropped": result.dropped,
            "tokens": result.tokens,
            "timings_ms": timings,
        }
        if paging_tools is not None:
            trace["paging_tools"] = paging_tools
        return ContextResult(messages=result.messages, trace=trace, assembly=result)

    def _hint_hits(self, user_id: str, hint: str) -> list[Hit]:
        """The BM25 hits of a strategy's `hint` that `_with_hint` chooses from: the same words on
        every turn of the strategy, so they are kept between turns (`memsched.kept`)."""
        return self.retriever.kept.bm25(user_id, hint, k=HINT_EXTRA * 3)

    def _with_hint(
        self,
        top: list[Candidate],
        hits: Sequence[Hit],
        exclude: set[int],
        head: int = 3,
        extra: int = HINT_EXTRA,
    ) -> list[Candidate]:
        """`top` with the best of a strategy's hint's BM25 `hits` placed right after its first `head`."""
        seen = {c.turn_id for c in top[:head]} | exclude
        hinted: list[Candidate] = []
        for hit in hits:
            if hit.turn_id in seen:
                continue
            seen.add(hit.turn_id)
            hinted.append(
                Candidate(hit.turn_id, {"hint": hit.score}, {"hint": hit.rank}, 0.0, "strategy hint")
            )
            if len(hinted) >= extra:
                break
        hinted_ids = {c.turn_id for c in hinted}
        return [*top[:head], *hinted, *(c for c in top[head:] if c.turn_id not in hinted_ids)]


# Layers that found a turn by what the message says, not by resemblance: its words (BM25), a time it
# names ("last weekend": the `when` layer, and the turns said on a day it asks about).
_WORD_LAYERS = frozenset({"bm25", "when", "said_then"})


def found_by_message(
    message: str,
    top: Sequence[Candidate],
    turns: Sequence[Turn],
    floor: float,
    sentence_layers: Iterable[str],
) -> set[int]:
    """The ids of `turns` (the loaded `top`) the message itself found, for a strategy's
    `min_similarity` (none of the shipped ones sets it: associations a companion needs, "should I get
    a pet?" and the user's cat, sit at MiniLM cosines as low as unrelated lines; BENCHMARKS.md
    "Everyday chat: a similarity floor, measured"). All of them when a word layer found any turn
    (`_WORD_LAYERS`: the message names something said before: ranked as any message is), or when
    no sentence encoder searched for the message (`sentence_layers`: the layers that ran of the
    embedders marked `sentence`, i.e. MiniLM, which does not read Chinese). Else the turns in the
    message's language at least `floor` similar to it in a sentence encoder's space, every turn in
    the other language (a translation's cosine is low: it says nothing about relevance across
    languages), and the turns next to a kept one. Left out then: same-language turns that only
    resemble the message as word vectors do (WordLlama: "lunch" and a chess opening share common
    words' directions), or that only sub-queries, page priors or the soft-term layer lifted. The
    gloss layer (Chinese turns as bags of English dictionary senses) is not a sentence space: its
    cosines of related lines run as low as 0.2."""
    ids = {t.id for t in turns if t.id is not None}
    layers = tuple(sentence_layers)
    if not layers or any(not _WORD_LAYERS.isdisjoint(c.scores) for c in top):
        return ids
    chinese = cjk_ratio(message) >= 0.5
    other = {t.id for t in turns if (cjk_ratio(t.content) >= 0.5) != chinese}
    kept = {
        c.turn_id for c in top if c.turn_id in other or any(c.scores.get(n, 0.0) >= floor for n in layers)
    }
    for c in top:
        seed = c.reason.removeprefix("neighbour of ")
        if seed != c.reason and seed.isdigit() and int(seed) in kept:
            kept.add(c.turn_id)
    return kept & ids


def newer_first(
    top: Sequence[Candidate], newer: Mapping[int, Sequence[int]], exclude: set[int]
) -> list[Candidate]:
    """`top` with each turn that stated a profile value placed right before the turn that stated the
    value it replaced (`Profile.newer_sources`): "we moved to Berlin" before "I live in Paris",
    brought in when no layer found it, so a budget that keeps the old state keeps the new one. Turns
    in `exclude` (the recent window: already in the context) are not brought in."""
    out = list(top)
    for _ in range(len(out) + sum(len(v) for v in newer.values())):
        pos = {c.turn_id: i for i, c in enumerate(out)}
        move = next(
            (
                (n, pos[o])
                for o in newer
                if o in pos
                for n in newer[o]
                if n not in exclude and (n not in pos or pos[n] > pos[o])
            ),
            None,
        )
        if move is None:
            break
        turn_id, at = move
        old = out[at]
        note = f"states what replaced turn {old.turn_id}"
        if turn_id in pos:
            moved = out.pop(pos[turn_id])
            moved = replace(moved, reason=f"{moved.reason}; {note}" if moved.reason else note)
        else:
            moved = Candidate(turn_id, {}, {}, old.fused, note)
        out.insert(at, moved)
    return out


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000.0, 3)
