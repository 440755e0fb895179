"""Layered retrieval: BM25 and dense layers, fused, with neighbour expansion.

Every candidate carries its per-layer scores and ranks so the trace can show why it was chosen.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memsched.cache import LRUCache
from memsched.contextual import ContextIndex
from memsched.embed.base import Embedder, background_pause
from memsched.embed.batch import PendingVectors, Submits, stand_ins
from memsched.kept import KeptSearches
from memsched.model import Candidate, Hit, content_hash
from memsched.store.base import Store
from memsched.text.segment import cjk_ratio
from memsched.vectors import (
    ANN_UPDATE_EVERY,
    DEFAULT_ANN_THRESHOLD,
    VectorIndex,
    graph_generation,
    open_graph,
    search_as_one,
    top_hits,
    update_graph,
)

RRF_K = 60  # the constant of plain reciprocal-rank fusion (Cormack et al.)
# Turn ids past this process's own look after which `index_user` asks the store how far another
# process (or an earlier run) found every turn to have vectors (`Store.vectors_checked`).
CHECKED_READ_GAP = 1000
# The gloss layer's weight for Chinese queries: chosen on half the bilingual test's questions and
# checked on the other half (BENCHMARKS.md, "Chinese recall").
GLOSS_WEIGHT = 2.0


@dataclass(slots=True)
class FusionWeights:
    """How much each layer counts in the fused score. Tuned on the LoCoMo dev set (BENCHMARKS.md)."""

    # A small k lets the first few ranks of each layer dominate; on the dev set k in 6..15 forms a
    # plateau (BENCHMARKS.md), 60 (the textbook value) loses 4 points of recall at 1,000 tokens.
    rrf_k: float = 10.0
    bm25: float = 1.4
    # On English (LoCoMo) WordLlama only adds noise next to MiniLM, so it gets no weight there; a
    # layer with weight 0 is not searched, and its query vector not computed unless it is the first
    # embedder's (`Retriever.query_names`).
    # The gloss layer is MiniLM's space over the Chinese turns' English glosses: an English query
    # reaches those turns through MiniLM's own layer, which holds the gloss rows too (`space_model`
    # below; BENCHMARKS.md, "Across languages"), so the gloss layer is not searched on its own for
    # English (a weight > 0 would search it with the query's MiniLM vector as well,
    # `embed.gloss.GlossEmbedder.query_stand_in`: session 26's way, one more layer to fuse).
    dense: dict[str, float] = field(default_factory=lambda: {"minilm": 1.0, "wordllama": 0.0, "gloss": 0.0})
    # For Chinese queries WordLlama counts fully and MiniLM over the CC-CEDICT English glosses
    # (embed.gloss) most: on the bilingual memory test it finds twice the paraphrased facts either
    # model finds (BENCHMARKS.md, "Chinese recall"). The English-only MiniLM over the raw Chinese is
    # not searched (weight 0): without it the test's Chinese recall is the same or higher at every
    # budget, on both halves of the questions and on a second haystack, and a Chinese query searches
    # two dense layers instead of three (BENCHMARKS.md, "Chinese query cost"). The message is still
    # embedded with MiniLM (`Memory.query_vectors`): the router reads that vector and the turn stores it.
    dense_cjk: dict[str, float] = field(
        default_factory=lambda: {"minilm": 0.0, "wordllama": 1.0, "gloss": GLOSS_WEIGHT}
    )
    # Contextual vectors (memsched.contextual): each dense layer gets a twin over turn vectors
    # averaged with their session neighbours', counting this much of the plain layer. Off: alone it
    # ranks evidence far better than plain vectors, but next to neighbour and page expansion it
    # did not hold up out of sample on the dev conversations (BENCHMARKS.md "Leave-one-out").
    context: float = 0.0
    # MiniLM's layer and the gloss layer (MiniLM's vectors of the Chinese turns' English glosses)
    # searched as one space (`Retriever.space_of`, `vectors.search_as_one`): with `space_model`
    # MiniLM's layer holds the gloss rows too, so an English question reaches what was said in
    # Chinese (the gloss layer itself then counts nothing for English: `dense["gloss"]` 0); with
    # `space_gloss` the gloss layer holds MiniLM's rows too, so a Chinese question reaches what was
    # said in English (measured, off: BENCHMARKS.md "Across languages").
    space_model: bool = True
    space_gloss: bool = False
    # The soft-term layer of the pager (memsched.vocab, PagingOptions.terms), relative to a dense
    # layer's 1.0: chosen leave-one-out on the dev conversations (0.25 .. 2 tried; BENCHMARKS.md).
    terms: float = 0.75
    # The pager's `when` layer: the turns said in the time a question asks about ("what did we talk
    # about yesterday?"), counted as one dense layer. Not tuned: LoCoMo asks no question about a day
    # of its conversations (its questions carry no time of asking); BENCHMARKS.md "Said then".
    when: float = 1.0
    neighbour_decay: float = 0.5  # a neighbour's priority relative to the hit that pulled it in
    neighbour_distance_decay: float = 0.8  # extra factor per step beyond the first
    neighbour_radius: int = 2

    def dense_weight(self, name: str, cjk: float) -> float:
        latin = self.dense.get(name, 1.0)
        chinese = self.dense_cjk.get(name, latin)
        return (1.0 - cjk) * latin + cjk * chinese


@dataclass(slots=True)
class Retrieval:
    """The outcome of one retrieval: ranked candidates plus what each layer returned."""

    candidates: list[Candidate]
    layers: dict[str, list[Hit]]
    timings_ms: dict[str, float]

    def trace(self, top: int = 30) -> dict[str, Any]:
        return {
            "layers": {name: len(hits) for name, hits in self.layers.items()},
            "candidates": [c.as_dict() for c in self.candidates[:top]],
        }


class Retriever:
    """Finds a user's turns relevant to a query. Keeps per-user vector indexes warm in memory."""

    def __init__(
        self,
        store: Store,
        embedders: dict[str, Embedder],
        weights: FusionWeights | None = None,
        ann_threshold: int | None = None,
        cache_mb: int = 512,
        cache_users: int = 2000,
    ) -> None:
        self.store = store
        self.embedders = embedders
        self.weights = weights or FusionWeights()
        # Bounded: memory follows the active users (half the cap for base vectors, half for the
        # contextual ones); an evicted index is reloaded from the store on the user's next query.
        self.cache_users = cache_users
        self.cache_bytes = cache_mb * 1024 * 1024
        cap = self.cache_bytes / 2
        self._indexes: LRUCache[tuple[str, str], VectorIndex] = LRUCache(
            cache_users, max_weight=cap, weigh=lambda i: i.nbytes
        )
        self._contexts: LRUCache[tuple[str, str], ContextIndex] = LRUCache(
            cache_users, max_weight=cap, weigh=lambda c: c.nbytes
        )
        # (user, model) -> turns up to here have vectors
        self._checked: LRUCache[tuple[str, str], int] = LRUCache(cache_users * 4)
        self._lock = threading.Lock()
        self.ann_threshold = DEFAULT_ANN_THRESHOLD if ann_threshold is None else ann_threshold
        # (user, model) -> the user's turn count when the worker last looked at their graph
        self._graphed: LRUCache[tuple[str, str], int] = LRUCache(cache_users * 4)
        # Fixed queries asked on many turns (a strategy's recall hint), kept between them.
        self.kept = KeptSearches(store, cache_users * 2)

    # -- indexing -----------------------------------------------------------------------------------

    def index_user(
        self, user_id: str, progress: Any = None, chunk: int | None = None, pause: Any = None
    ) -> int:
        """Embed every turn of the user that has no vector yet for each embedder. Returns how many.

        Cheap when nothing is new: a per-(user, model) watermark skips turns already checked.
        `chunk` texts are embedded at a time (default: eight model batches); `pause()` is called
        before each chunk, which lets background work step aside for a turn in flight.

        Each round takes one chunk per embedder and stores all of them in one transaction; the
        batched models (`Submits`: MiniLM, the gloss layer) run in their dispatcher while the others
        embed here. A turn's reply (the proxy's post-reply work) thus costs one commit for all its
        vectors, not one per embedder, and one query per embedder to find it.
        """
        done = 0
        top = self.store.max_turn_id(user_id)
        todo: list[tuple[Embedder, tuple[str, str], int, bool]] = []
        for embedder in self.embedders.values():
            key = (user_id, embedder.model_id)
            known = self._checked.get(key)
            after = known or 0
            if after < top and (known is None or top - after >= CHECKED_READ_GAP):
                # Not looked at by this process yet, or many turns since: another process (or an
                # earlier run) may have checked them, as the store records (SQLite; never PostgreSQL).
                after = max(after, self.store.vectors_checked(user_id, embedder.model_id))
                if after >= top:
                    with self._lock:
                        self._checked.put(key, max(self._checked.get(key) or 0, top))
            if after < top:
                todo.append((embedder, key, after, known is None))
        while todo:
            if pause is not None:
                pause()
            found: list[tuple[Embedder, tuple[str, str], int, bool, list[tuple[int, str]], int]] = []
            for embedder, key, after, record in todo:
                limit = chunk or embedder.batch_size * 8
                missing = self.store.turns_missing_vectors(
                    user_id,
                    embedder.model_id,
                    limit=limit,
                    after_id=after,
                    han_only=bool(getattr(embedder, "han_only", False)),  # embed.gloss: Chinese turns only
                )
                found.append((embedder, key, after, record, missing, limit))
            started: list[tuple[Embedder, list[str], Future[np.ndarray] | np.ndarray]] = []
            for embedder, _, _, _, missing, _ in found:
                if texts := [text for _, text in missing]:
                    if pause is not None and started:
                        pause()  # between the embedders too: WordLlama's chunk is ~2-4 ms of CPU
                    started.append((embedder, texts, _embed_soon(embedder, texts)))
            batches = []
            for embedder, texts, vectors in started:
                matrix = vectors.result() if isinstance(vectors, Future) else vectors
                batches.append(
                    (embedder.model_id, [(content_hash(t), v) for t, v in zip(texts, matrix, strict=True)])
                )
            todo = []
            finished: list[tuple[str, str]] = []
            checked: list[tuple[str, int]] = []
            for embedder, key, after, record, missing, limit in found:
                record = record or bool(missing)
                if len(missing) >= limit:  # more may be missing: another round
                    todo.append((embedder, key, after, record))
                    continue
                finished.append(key)
                if record:
                    # A process's first look, or turns stored without vectors (an import, a
                    # proxied reply): record how far every turn has one, so the next process's
                    # first look starts here instead of at the user's first turn. Written with
                    # the round's vectors, in their transaction. (A turn stored with its vectors,
                    # the scheduler's way, writes nothing here.)
                    checked.append((embedder.model_id, top))
            if batches or checked:
                self.store.put_vector_batches(user_id, batches, checked=checked)
            with self._lock:
                for key in finished:
                    self._checked.put(key, max(self._checked.get(key) or 0, top))
            for _, _, _, _, missing, _ in found:
                done += len(missing)
                if missing and progress is not None:
                    progress(len(missing))
        return done

    def refresh(self, user_id: str) -> int:
        """Bring the user's in-memory indexes up to the store (the vectors of turns just stored), so
        the next query finds nothing to read in: after a reply (`Scheduler`'s post-reply thread), this
        moves ~1.4 ms per index (the store's new rows, the index's append) off the next turn's path.
        Only indexes already in memory are refreshed; returns how many."""
        names = [name for name, e in self.embedders.items() if (user_id, e.model_id) in self._indexes]
        self._indexes_of(user_id, names)
        return len(names)

    def put_vector(self, user_id: str, name: str, text: str, vector: np.ndarray) -> None:
        """Store a vector computed elsewhere (the query embedding of a message that is then recorded)."""
        self.store.put_vectors(user_id, self.embedders[name].model_id, [(content_hash(text), vector)])

    def update_graphs(self, user_id: str) -> int:
        """Build or extend the user's on-disk vector graphs (`memsched.vectors.update_graph`): the
        worker's part, run after embedding; cheap (one count) until ANN_UPDATE_EVERY turns arrived
        since it last looked. Returns how many vectors went into graphs."""
        added = 0
        count: int | None = None
        for embedder in self.embedders.values():
            path = self.store.vector_graph_path(user_id, embedder.model_id)
            if path is None:
                continue
            if count is None:
                count = self.store.turn_count(user_id)
            key = (user_id, embedder.model_id)
            last = self._graphed.get(key)
            exists = path.exists()
            if count < self.ann_threshold and not exists:
                continue
            if exists and last is not None and count - last < ANN_UPDATE_EVERY:
                continue
            self._graphed.put(key, count)
            generation = graph_generation(path)
            ids, matrix, version = self.store.load_vectors(user_id, embedder.model_id)
            added += update_graph(path, ids, matrix, version, generation, self.ann_threshold)
        return added

    def _graph_changed(self, user_id: str, model_id: str, index: VectorIndex) -> bool:
        """Whether the user's graph file is not the one `index` holds (written, replaced or gone)."""
        path = self.store.vector_graph_path(user_id, model_id)
        if path is None:
            return False
        try:
            return path.stat().st_mtime_ns != index.graph_stamp
        except FileNotFoundError:
            return index.uses_ann

    def _indexes_of(self, user_id: str, names: Sequence[str]) -> list[VectorIndex]:
        """`_index` of each of `names`, whether each is up to date read in one statement."""
        if not names:
            return []
        versions = self.store.vector_versions(user_id, [self.embedders[n].model_id for n in names])
        return [self._index(user_id, n, v) for n, v in zip(names, versions, strict=True)]

    def _index(self, user_id: str, name: str, version: tuple[int, int] | None = None) -> VectorIndex:
        """The user's in-memory index of layer `name`, brought up to the store: to its
        `vector_version` (`version`: read by the caller just now), which moves whenever any process
        stores a turn or a vector of the user."""
        embedder = self.embedders[name]
        model = embedder.model_id
        key = (user_id, model)
        index = self._indexes.get(key)
        big = index is not None and (index.uses_ann or len(index) >= self.ann_threshold)
        if index is not None and big and self._graph_changed(user_id, model, index):
            path = self.store.vector_graph_path(user_id, model)
            opened = open_graph(path) if path is not None else None
            if opened is not None and index.uses_ann:
                # the worker extended (or rebuilt) the graph: what it now holds leaves the tail
                index.attach_graph(opened[0], opened[1], opened[3])
                self._indexes.trim(key)  # the tail shrank: weigh it again
            else:  # first graph for a big user, or forgotten: load afresh
                self._indexes.pop(key)
                index = None
        if index is None:
            index = self._indexes.setdefault(key, lambda: VectorIndex(self.ann_threshold))
        if not len(index) and index.version == (0, 0):
            # A user not in memory (first query, or evicted): their graph and the vectors it lacks,
            # or one read of their packed vectors.
            path = self.store.vector_graph_path(user_id, model)
            opened = open_graph(path) if path is not None and path.exists() else None
            if opened is not None:
                graph, stamp, covered, members = opened
                index.attach_graph(graph, stamp, members)
                ids, matrix = self.store.vectors_since(user_id, model, *covered)
                index.add(ids, matrix)
                index.version = covered
            else:
                ids, matrix, loaded = self.store.load_vectors(user_id, model)
                index.add(ids, matrix)
                index.version = loaded
            self._indexes.trim(key)
            version = None  # read before the load: what came since is read below
        if version is None:
            version = self.store.vector_version(user_id, model)
        if version != index.version:
            ids, matrix = self.store.vectors_since(user_id, model, *index.version)
            index.add(ids, matrix)
            index.version = version
            self._indexes.trim(key)
        return index

    def context_dense(self, user_id: str, name: str, query_vector: np.ndarray, k: int = 50) -> list[Hit]:
        """Dense search over the contextual vectors (a turn with its session neighbours). Not for a
        user searched through a graph (the layer is off by default; it would need every vector in
        memory): nothing."""
        base = self._index(user_id, name)
        if base.uses_ann:
            return []
        key = (user_id, self.embedders[name].model_id)
        ctx = self._contexts.setdefault(key, ContextIndex)
        before = ctx.nbytes
        ctx.refresh(self.store, user_id, base)
        if ctx.nbytes != before:
            self._contexts.trim(key)
        return ctx.search(query_vector, k)

    def forget(self, user_id: str, turn_ids: Iterable[int] | None = None) -> None:
        """Drop deleted turns (or the whole user) from the in-memory indexes."""
        with self._lock:
            self.kept.forget(user_id)
            for key in [k for k in self._contexts if k[0] == user_id]:
                self._contexts.pop(key)  # rebuilt from the base index on next use
            for key in [k for k in self._checked if k[0] == user_id and turn_ids is None]:
                self._checked.pop(key)
            for key in [k for k in self._graphed if k[0] == user_id]:
                self._graphed.pop(key)
            for (uid, model), index in self._indexes.items():
                if uid != user_id:
                    continue
                if turn_ids is None or index.uses_ann:
                    # a graph cannot be patched (the store unlinked it): reload on the next query
                    self._indexes.pop((uid, model))
                else:
                    index.remove(set(turn_ids))
                    self._indexes.trim((uid, model))

    # -- layers -------------------------------------------------------------------------------------

    def query_names(self, query: str) -> list[str]:
        """The embedders a message is embedded with: those whose layer counts for its script, and the
        first (MiniLM) always, searched or not. The router and the topic judge read its vector (a
        Chinese message's too), the turn stores it (English queries search it), and the pager's
        novelty ranking and session cache compare with it."""
        cjk = cjk_ratio(query)
        first = next(iter(self.embedders), None)
        return [n for n in self.embedders if n == first or self.weights.dense_weight(n, cjk) > 0]

    def embed_query(self, query: str, only_weighted: bool = True) -> dict[str, np.ndarray]:
        """The query's vector for each embedder (`query_names`, or every embedder)."""
        names = self.query_names(query) if only_weighted else list(self.embedders)
        same = stand_ins(self.embedders, names, query)  # the gloss layer of an English query: MiniLM's
        own = {name: self.embedders[name].embed([query])[0] for name in names if name not in same}
        return {name: own[same.get(name, name)] for name in names}

    def bm25(self, user_id: str, query: str, k: int = 50) -> list[Hit]:
        return self.store.search_bm25(user_id, query, limit=k)

    def dense(self, user_id: str, name: str, query_vector: np.ndarray, k: int = 50) -> list[Hit]:
        pair = self.space_of(name)
        if self.store.serves_vector_search:  # PostgreSQL: the database's index, no matrix here
            if pair is not None:
                return self._store_search_as_one(user_id, pair, query_vector, k)
            return self.store.search_vectors(user_id, self.embedders[name].model_id, query_vector, k)
        if pair is not None:
            first, second = self._indexes_of(user_id, pair)
            return search_as_one(first, second, query_vector, k)
        return self._index(user_id, name).search(query_vector, k)

    def space_of(self, name: str) -> tuple[str, str] | None:
        """(MiniLM's layer, the gloss layer) when layer `name` searches them as one space
        (`FusionWeights.space_model`, `space_gloss`): the gloss layer's rows are MiniLM's vectors
        of the Chinese turns' English glosses, so a Chinese turn has two rows in MiniLM's space and
        counts once, by the nearer (its raw row is weak, MiniLM reading English only, but not
        noise), every other turn by its MiniLM row (`vectors.search_as_one`). None for any other
        layer, or without a layer over another's model (`embed.gloss`: `over`, `han_only`)."""
        w = self.weights
        if not (w.space_model or w.space_gloss):
            return None
        for gloss_name, embedder in self.embedders.items():
            model = getattr(getattr(embedder, "over", None), "model_id", None)
            if model is None or not getattr(embedder, "han_only", False):
                continue
            base = next(
                (n for n, e in self.embedders.items() if e.model_id == model and n != gloss_name), None
            )
            if base is not None and (
                (name == base and w.space_model) or (name == gloss_name and w.space_gloss)
            ):
                return base, gloss_name
        return None

    def _store_search_as_one(
        self, user_id: str, pair: tuple[str, str], query_vector: np.ndarray, k: int
    ) -> list[Hit]:
        """`search_as_one` through the store's own search (PostgreSQL); one layer's hits as they
        are when the other has none (a user without Chinese turns)."""
        found = [
            self.store.search_vectors(user_id, self.embedders[name].model_id, query_vector, k)
            for name in pair
        ]
        if not found[0] or not found[1]:
            return found[0] or found[1]
        hits = [h for layer in found for h in layer]
        ids = np.array([h.turn_id for h in hits], dtype=np.int64)
        return top_hits(ids, np.array([h.score for h in hits], dtype=np.float64), k, once=True)

    def vectors_for(self, user_id: str, name: str, turn_ids: Sequence[int]) -> np.ndarray:
        """The stored vectors of these turns for one embedder (rows in index order; missing ones left out)."""
        if self.store.serves_vector_search:
            found = self.store.turn_vectors(user_id, self.embedders[name].model_id, turn_ids)
            rows = [found[i] for i in sorted(found)]
            return np.vstack(rows).astype(np.float32) if rows else np.zeros((0, 0), dtype=np.float32)
        return self._index(user_id, name).vectors(turn_ids)

    def vectors_by_id(self, user_id: str, name: str, turn_ids: Sequence[int]) -> dict[int, np.ndarray]:
        """turn id -> stored vector for one embedder, for those of `turn_ids` that have one."""
        if self.store.serves_vector_search:
            found = self.store.turn_vectors(user_id, self.embedders[name].model_id, turn_ids)
            return {int(t): np.asarray(v, dtype=np.float32) for t, v in found.items()}
        ids, rows = self._index(user_id, name).vectors_by_id(turn_ids)
        return {int(t): rows[i] for i, t in enumerate(ids.tolist())}

    # -- fusion -------------------------------------------------------------------------------------

    def retrieve(
        self,
        user_id: str,
        query: str,
        *,
        k: int = 50,
        layers: Sequence[str] | None = None,
        exclude: set[int] | None = None,
        query_vectors: Mapping[str, np.ndarray] | None = None,
        expand: bool = True,
        plain_rrf: bool = False,
        hits: dict[str, list[Hit]] | None = None,
        lexical_query: str | None = None,
        fuse: bool = True,
        reasons: bool = True,
    ) -> Retrieval:
        """Ranked candidates for `query`.

        `layers` picks among "bm25" and the embedder names (default: all). `plain_rrf` gives equal
        weights and k=60 with no expansion: the textbook baseline the eval compares against. `hits`
        fuses layer results the caller already has (e.g. a deeper search cut to rank <= k) instead
        of searching again. With `fuse=False` only the layers are searched (no candidates): for a
        caller that adds a layer of its own and fuses them all with `hits`. With `reasons=False`
        the candidates carry no reason (for a caller that reads only their scores).
        """
        timings: dict[str, float] = {}
        cjk = cjk_ratio(query)
        w = self.weights
        if hits is not None:
            wanted = []
            hits = {layer: [h for h in layer_hits if h.rank <= k] for layer, layer_hits in hits.items()}
        elif layers is not None:
            wanted = list(layers)
        else:
            wanted = ["bm25", *(n for n in self.embedders if w.dense_weight(n, cjk) > 0)]
        hits = hits if hits is not None else {}

        if "bm25" in wanted:
            t0 = time.perf_counter()
            hits["bm25"] = self.bm25(user_id, query if lexical_query is None else lexical_query, k)
            timings["bm25"] = _ms(t0)
        dense_names = [n for n in wanted if n in self.embedders]
        if dense_names:
            given: Mapping[str, np.ndarray] = query_vectors or {}
            ready = given.ready if isinstance(given, PendingVectors) else None
            # The layers whose query vector is in (or computed here) search first, while the model
            # still computes the others; their hits are fused in the usual order all the same.
            order = sorted(dense_names, key=lambda n: not (ready is None or n not in given or ready(n)))
            found: dict[str, dict[str, list[Hit]]] = {}
            same = stand_ins(self.embedders, dense_names, query)  # the gloss layer of an English query
            computed: dict[str, np.ndarray] = {}
            for name in order:
                found[name] = {}
                source = same.get(name, name)
                if source in given:
                    vector = given[source]
                elif source in computed:
                    vector = computed[source]
                else:
                    t0 = time.perf_counter()
                    vector = computed[source] = self.embedders[source].embed([query])[0]
                    timings[f"embed:{source}"] = _ms(t0)
                if not np.any(vector):
                    continue  # a zero vector matches nothing (embed.gloss on a text with no Chinese)
                t0 = time.perf_counter()
                found[name][name] = self.dense(user_id, name, vector, k)
                timings[f"dense:{name}"] = _ms(t0)
                if not plain_rrf and w.context > 0 and (layers is None or f"context:{name}" in layers):
                    t0 = time.perf_counter()
                    found[name][f"context:{name}"] = self.context_dense(user_id, name, vector, k)
                    timings[f"context:{name}"] = _ms(t0)
            for name in dense_names:
                hits.update(found[name])

        if not fuse:
            return Retrieval(candidates=[], layers=hits, timings_ms=timings)
        t0 = time.perf_counter()
        rrf_k = RRF_K if plain_rrf else w.rrf_k
        by_id: dict[int, Candidate] = {}
        for layer, layer_hits in hits.items():
            weight = 1.0 if plain_rrf else self.layer_weight(layer, cjk)
            for hit in layer_hits:
                if exclude and hit.turn_id in exclude:
                    continue
                cand = by_id.get(hit.turn_id)
                if cand is None:
                    cand = by_id[hit.turn_id] = Candidate(turn_id=hit.turn_id)
                cand.scores[layer] = hit.score
                cand.ranks[layer] = hit.rank
                cand.fused += weight / (rrf_k + hit.rank)
        ranked = sorted(by_id.values(), key=lambda c: (-c.fused, c.turn_id))
        for c in ranked[:200] if reasons else ():  # past 200 one never reaches a context or a trace
            c.reason = "fused: " + ", ".join(f"{layer}#{rank}" for layer, rank in sorted(c.ranks.items()))
        timings["fuse"] = _ms(t0)

        if expand and not plain_rrf and w.neighbour_decay > 0 and ranked:
            t0 = time.perf_counter()
            ranked = self._expand(user_id, ranked, exclude or set())
            timings["expand"] = _ms(t0)
        return Retrieval(candidates=ranked, layers=hits, timings_ms=timings)

    def layer_weight(self, layer: str, cjk: float) -> float:
        """A layer's weight in the fusion, for a query whose share of CJK characters is `cjk`."""
        w = self.weights
        if layer == "bm25":
            return w.bm25
        if layer == "terms":
            return w.terms
        if layer == "when":
            return w.when
        if layer.startswith("context:"):
            return w.context * w.dense_weight(layer.split(":", 1)[1], cjk)
        return w.dense_weight(layer, cjk)

    def fused_scores(
        self, query: str, hits: Mapping[str, Sequence[Hit]], *, k: int, exclude: set[int] | None = None
    ) -> dict[int, float]:
        """turn id -> fused score, best first (ties: the lower id first): the candidates'
        `fused` of `retrieve(user_id, query, k=k, hits=hits, exclude=exclude, expand=False)`, the
        same sums in the same order, without building the candidates (a caller that reads only the
        scores: the pager's deep ranking, ~500 candidates a query)."""
        cjk = cjk_ratio(query)
        rrf_k = self.weights.rrf_k
        fused: dict[int, float] = {}
        for layer, layer_hits in hits.items():
            weight = self.layer_weight(layer, cjk)
            for hit in layer_hits:
                if hit.rank > k or (exclude and hit.turn_id in exclude):
                    continue
                fused[hit.turn_id] = fused.get(hit.turn_id, 0.0) + weight / (rrf_k + hit.rank)
        return dict(sorted(fused.items(), key=lambda kv: (-kv[1], kv[0])))

    def _expand(self, user_id: str, ranked: list[Candidate], exclude: set[int]) -> list[Candidate]:
        """Add each hit's neighbours with a decayed share of its score (the answer often sits next door)."""
        w = self.weights
        head = ranked[:40]
        present = {c.turn_id: c for c in ranked}
        near = self.store.neighbours(user_id, [c.turn_id for c in head], radius=w.neighbour_radius)
        for cand in head:
            for nid, distance in near.get(cand.turn_id, []):
                if nid in exclude:
                    continue
                score = cand.fused * w.neighbour_decay * w.neighbour_distance_decay ** (distance - 1)
                existing = present.get(nid)
                if existing is None:
                    present[nid] = Candidate(turn_id=nid, fused=score, reason=f"neighbour of {cand.turn_id}")
                elif score > existing.fused:
                    existing.scores["neighbour"] = score
                    existing.fused = max(existing.fused, score)
        return sorted(present.values(), key=lambda c: (-c.fused, c.turn_id))


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000.0, 3)


# Texts a post-reply call hands to a model's batcher at most (a reply, a message, a few glosses);
# bigger chunks (an import's backlog) run in the calling thread as before.
SUBMIT_MAX_TEXTS = 16


def _embed_soon(embedder: Embedder, texts: Sequence[str]) -> Future[np.ndarray] | np.ndarray:
    """Start `texts`' embedding in the model's batcher and return at once, or embed them now (an
    embedder without one, background work, a big chunk)."""
    if isinstance(embedder, Submits) and background_pause() is None and len(texts) <= SUBMIT_MAX_TEXTS:
        return embedder.submit(texts)
    return embedder.embed(texts)
