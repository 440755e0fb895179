"""In-memory vector search over a user's stored embeddings, always scoped to one user and one model.

Exact cosine search (one matrix product) below `ann_threshold` vectors. Past that, an exact search
costs the size of the user's history (12 ms of CPU per query and layer at 100k x 384, and 150 MB of
memory per model), so the worker keeps an HNSW graph (usearch) of the user's vectors in a file next
to the store (`update_graph`, never on the query path). A query process memory-maps it
(`open_graph`), keeps in memory only the vectors the graph does not hold yet (the tail, searched
exactly) and merges the two. Until a graph exists, or after a forget (the store unlinks the user's
graphs and the worker builds them again), the search is exact. See docs/design.md, "Costs that
stay flat".
"""

from __future__ import annotations

import itertools
import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

from memsched.model import Hit

# Below this many vectors a user's search is exact (LoCoMo conversations, ~600 turns, never reach it).
# At 20k an exact search costs ~2.5 ms of CPU per layer; the same switch PostgresStore makes.
DEFAULT_ANN_THRESHOLD = 20_000
# The graph is asked for this many neighbours per wanted hit (a wider beam: recall@k, BENCHMARKS.md).
ANN_OVERSAMPLE = 2
# The worker extends a user's graph once this many of their vectors are outside it; until then the
# query searches those exactly next to the graph.
ANN_UPDATE_EVERY = 2_000
# float16 graph vectors: half the file of float32, scores within ~1e-3 of the exact ones.
ANN_DTYPE = "f16"
ANN_EXPANSION_ADD = 64
ANN_EXPANSION_SEARCH = 128  # the search beam (at least the number of neighbours asked for)


def usearch_index() -> Any:
    """usearch's `Index` class. ONNX Runtime (MiniLM's backend) is imported first when installed:
    importing it after usearch crashes the process (a segfault in onnxruntime's native module with
    usearch 2.26 and onnxruntime 1.32 here), and a worker or server loads both."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        pass
    from usearch.index import Index

    return Index


def _side(path: Path, what: str) -> Path:
    return path.with_name(f"{path.name}.{what}")


class Members:
    """Which turns a graph covers: one graph node per distinct vector (a text said again, one
    vector for many turns, would fill HNSW neighbour lists with copies at distance 0 and cut the
    graph apart), keyed by the oldest turn with it; `turns[i]` has the vector of node `reps[i]`.

    Kept in two orders (by turn for lookups, by node for expansion). The worker writes both to the
    members file (`rows()`), so a query process opens a big user's graph with the file memory-mapped
    (`from_rows`) instead of sorting every turn id of their history on the query path."""

    def __init__(self, turns: np.ndarray, reps: np.ndarray) -> None:
        order = np.argsort(turns, kind="stable")
        self.turns, self.reps = turns[order], reps[order]  # by turn id: lookups
        by_rep = np.lexsort((turns, reps))
        self._rep_sorted, self._turns_by_rep = reps[by_rep], turns[by_rep]  # by node: expansion

    @classmethod
    def from_rows(cls, rows: np.ndarray) -> Members:
        """From `rows()` as saved (4 rows, already in both orders: nothing is sorted), or from the
        2-row files of earlier versions (turns, reps: sorted here)."""
        if rows.shape[0] == 2:
            return cls(np.asarray(rows[0]), np.asarray(rows[1]))
        out = cls.__new__(cls)
        out.turns, out.reps, out._rep_sorted, out._turns_by_rep = rows[0], rows[1], rows[2], rows[3]
        return out

    def rows(self) -> np.ndarray:
        """Turns and nodes by turn, then nodes and turns by node: what `from_rows` reads back."""
        return np.vstack([self.turns, self.reps, self._rep_sorted, self._turns_by_rep])

    def __len__(self) -> int:
        return len(self.turns)

    def covers(self, ids: np.ndarray) -> np.ndarray:
        """Which of `ids` the graph holds (bool array)."""
        if not len(self.turns):
            return np.zeros(len(ids), dtype=bool)
        at = np.minimum(np.searchsorted(self.turns, ids), len(self.turns) - 1)
        return np.asarray(self.turns[at] == ids)

    def rep_of(self, ids: np.ndarray) -> np.ndarray:
        """The node of each of `ids` (all covered)."""
        return np.asarray(self.reps[np.searchsorted(self.turns, ids)])

    def expand(self, reps: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every turn of these nodes, each with its node's score (oldest turns first per node)."""
        lo = np.searchsorted(self._rep_sorted, reps, side="left")
        hi = np.searchsorted(self._rep_sorted, reps, side="right")
        counts = hi - lo
        if not counts.sum():
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        starts = np.repeat(lo - np.cumsum(counts) + counts, counts)
        rows = starts + np.arange(counts.sum())
        return self._turns_by_rep[rows], np.repeat(scores, counts)


def open_graph(path: Path) -> tuple[Any, int, tuple[int, int], Members] | None:
    """The graph at `path` memory-mapped read-only, its file's mtime stamp, the store's
    `vector_version` it covers and its members (None: no complete graph). The version file, written
    last, names the sizes of the graph and members it was written with; a reader that meets a
    graph being replaced sees them differ and reads again (or goes exact)."""
    index_class = usearch_index()
    for _ in range(3):
        try:
            meta = json.loads(_side(path, "version").read_text())
            stamp = path.stat().st_mtime_ns
            graph = index_class.restore(str(path), view=True)
            # memory-mapped: pages of it are read when a search touches them
            pairs = np.load(_side(path, "members.npy"), mmap_mode="r")
        except (FileNotFoundError, RuntimeError, ValueError, OSError):
            return None
        if graph is not None and len(graph) == meta["nodes"] and pairs.shape[1] == meta["turns"]:
            version = (int(meta["version"][0]), int(meta["version"][1]))
            return graph, stamp, version, Members.from_rows(pairs)
    return None


def drop_graph(path: Path) -> None:
    for p in (path, _side(path, "members.npy"), _side(path, "version")):
        p.unlink(missing_ok=True)


def update_graph(
    path: Path,
    ids: np.ndarray,
    matrix: np.ndarray,
    version: tuple[int, int],
    generation: str,
    threshold: int = DEFAULT_ANN_THRESHOLD,
) -> int:
    """Bring the graph file at `path` (the store's `vector_graph_path`) up to these vectors: all of
    one user's, for one model, as `store.load_vectors` returned them with their `version`.

    The worker's job (`Memory.index`): adds the vectors the graph lacks once there are
    ANN_UPDATE_EVERY of them, or builds the graph when the user passes `threshold`; one node per
    distinct vector (`Members`). A graph that covers a turn no longer in `ids` (a forgotten turn)
    is rebuilt from `ids`, never patched, so no deleted vector stays in the file. Files are
    written aside and renamed over the old ones (readers keep their mapping of the old file). Pass
    the `generation` read (`graph_generation`) before the vectors were: when a forget has changed
    it by the time the files are in place, the vectors may hold forgotten turns and the files are
    removed. Returns how many turns were added.
    """
    Index = usearch_index()
    ids = np.asarray(ids, dtype=np.int64)
    if len(ids) < threshold:
        drop_graph(path)  # the user shrank below the threshold (forgetting)
        return 0
    index, members = None, None
    old = open_graph(path) if path.exists() else None
    if old is not None:
        members = old[3]
        if old[0].ndim != matrix.shape[1] or members.covers(ids).sum() != len(members):
            members = None  # covers turns that are gone (or another width): rebuild
        else:
            index = Index.restore(str(path))  # a copy in memory, to extend
    fresh = (
        ~members.covers(ids) if members is not None and index is not None else np.ones(len(ids), dtype=bool)
    )
    if index is not None and int(fresh.sum()) < ANN_UPDATE_EVERY:
        if members is not None and not isinstance(members.turns, np.memmap):
            _save_members(path, members)  # an earlier version's file: in both orders from now on
        return 0
    if index is None:
        index = Index(ndim=matrix.shape[1], metric="cos", dtype=ANN_DTYPE, expansion_add=ANN_EXPANSION_ADD)
        members = None
    new_ids = ids[fresh]
    new_rows = np.ascontiguousarray(matrix[fresh], dtype=np.float32)
    order = np.argsort(new_ids, kind="stable")
    new_ids, new_rows = new_ids[order], new_rows[order]
    # identical vectors among the new rows share one node, keyed by the oldest turn with it
    _, first, inverse = np.unique(
        new_rows.view(np.dtype((np.void, new_rows.dtype.itemsize * new_rows.shape[1]))).ravel(),
        return_index=True,
        return_inverse=True,
    )
    reps = new_ids[first][inverse.ravel()]
    index.add(new_ids[first].astype(np.uint64), new_rows[first], threads=1)
    turns = np.concatenate([members.turns, new_ids]) if members is not None else new_ids
    all_reps = np.concatenate([members.reps, reps]) if members is not None else reps
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _save_members(path, Members(turns, all_reps))
    index.save(str(tmp))
    os.replace(tmp, path)
    meta = {"version": list(version), "nodes": len(index), "turns": len(turns)}
    tmp.write_text(json.dumps(meta))
    os.replace(tmp, _side(path, "version"))
    if graph_generation(path) != generation:
        drop_graph(path)
        return 0
    return len(new_ids)


def _save_members(path: Path, members: Members) -> Path:
    """Write the members file of the graph at `path` aside and rename it over the old one (a reader
    keeps its mapping of the old file). Returns the scratch path, free again."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with open(tmp, "wb") as f:
        np.save(f, members.rows())
    os.replace(tmp, _side(path, "members.npy"))
    return tmp


def graph_generation(path: Path) -> str:
    """The forget generation of the graphs' directory (the store rewrites it on every forget)."""
    try:
        return (path.parent / "generation").read_text()
    except FileNotFoundError:
        return ""


def top_hits(ids: np.ndarray, sims: np.ndarray, k: int, *, once: bool = False) -> list[Hit]:
    """The `k` best (turn id, similarity) pairs as hits, best first. `once`: an id may come twice
    (a turn with a row in each of two layers searched as one, `search_as_one`) and counts once, at
    its better similarity."""
    if len(sims) == 0 or k <= 0:
        return []
    want = min(2 * k if once else k, len(sims))  # each id at most twice: k distinct ones among 2k
    top = np.argpartition(-sims, want - 1)[:want]
    # Ties (one text stored for several turns, a coarse embedder) go to the older turn, as in
    # the stores' own search (`ORDER BY distance, turn id`), whichever tied rows argpartition took.
    near = np.flatnonzero(sims >= sims[top].min())
    top = near[np.lexsort((ids[near], -sims[near]))]
    if once:
        top = top[np.sort(np.unique(ids[top], return_index=True)[1])]  # each id's first: its best
    top = top[:k]
    # tolist(): the same Python ints and floats as int()/float() of each element, in one call;
    # the hits made positionally in C (starmap): a third of a comprehension's time for 200.
    found_ids, found_sims = ids[top].tolist(), sims[top].tolist()
    return list(itertools.starmap(Hit, zip(found_ids, found_sims, range(1, len(top) + 1), strict=True)))


def search_as_one(base: VectorIndex, other: VectorIndex, query: np.ndarray, k: int) -> list[Hit]:
    """The k nearest turns of two indexes in one vector space, searched as one: a turn with a row
    in both counts once, by the row nearer to `query` (MiniLM's layer and the gloss layer, whose
    rows are MiniLM's vectors of the Chinese turns' glosses: `Retriever.space_of`). One list of
    hits for a query that would otherwise search, fuse and rank two."""
    if not len(other):
        return base.search(query, k)
    if not len(base):
        return other.search(query, k)
    ids, sims = base.similarities(query, k)
    more_ids, more_sims = other.similarities(query, k)
    return top_hits(np.concatenate([ids, more_ids]), np.concatenate([sims, more_sims]), k, once=True)


# One BLAS thread per search: a 10k x 384 product takes ~0.2 ms on one core, while OpenBLAS's two
# threads, when the other core is busy (a worker, another turn), wait on it: p90 16 ms (BENCHMARKS.md).
_blas = ThreadpoolController()


def blas_single_thread() -> Any:
    """A context in which BLAS runs on the calling thread alone: a small product on a busy machine
    otherwise waits for BLAS's worker threads (see `VectorIndex.search`)."""
    return _blas.limit(limits=1, user_api="blas")


class VectorIndex:
    """The vectors of one (user, model), refreshed from the store by turn id.

    Exact mode: every vector in one in-memory matrix. Graph mode (`attach_graph`): the user's
    memory-mapped graph holds most vectors and the matrix only the tail the graph lacks, so a big
    user costs the tail's memory and a graph search, not their whole history.
    """

    def __init__(self, ann_threshold: int = DEFAULT_ANN_THRESHOLD) -> None:
        self.ann_threshold = ann_threshold
        # Rows live in over-allocated buffers that double when full, so appending one turn's vector
        # does not copy the whole matrix; `ids`/`matrix` are views of the filled part.
        self._ids = np.zeros(0, dtype=np.int64)
        self._buf = np.zeros((0, 0), dtype=np.float32)
        self._n = 0
        self.version: tuple[int, int] = (0, 0)  # the store's vector_version this index reflects
        self._ann: Any = None  # the memory-mapped graph (attach_graph)
        self._members: Members | None = None  # the turns it covers
        self.graph_stamp = 0  # the graph file's mtime when it was opened
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._n + (len(self._members) if self._members is not None else 0)

    @property
    def nbytes(self) -> int:
        """Memory held, buffers included (what the retriever's cache weighs; a graph is mapped
        from its file, paged by the OS, and not counted)."""
        return int(self._buf.nbytes + self._ids.nbytes)

    @property
    def ids(self) -> np.ndarray:
        """The turn ids held in memory (in graph mode: the tail only)."""
        return self._ids[: self._n]

    @property
    def matrix(self) -> np.ndarray:
        return self._buf[: self._n]

    def add(self, ids: np.ndarray, matrix: np.ndarray) -> None:
        """Add vectors; ids already present (in memory or in the graph) are skipped, so a refresh
        may safely overlap."""
        if len(ids) == 0:
            return
        with self._lock:
            if self._members is not None:
                fresh = ~self._members.covers(np.asarray(ids, dtype=np.int64))
                ids, matrix = ids[fresh], matrix[fresh]
            if self._n and len(ids):
                fresh = ~np.isin(ids, self.ids)
                ids, matrix = ids[fresh], matrix[fresh]
            if len(ids) == 0:
                return
            # the same turn may come twice in one batch (two rows for one hash); keep the first
            ids, first = np.unique(ids, return_index=True)
            matrix = np.asarray(matrix, dtype=np.float32)[first]
            need = self._n + len(ids)
            if self._buf.shape[0] < need or self._buf.shape[1] != matrix.shape[1]:
                cap = max(need, 2 * self._buf.shape[0], 64)
                buf = np.zeros((cap, matrix.shape[1]), dtype=np.float32)
                if self._n:
                    buf[: self._n] = self._buf[: self._n]
                new_ids = np.zeros(cap, dtype=np.int64)
                new_ids[: self._n] = self._ids[: self._n]
                self._buf, self._ids = buf, new_ids
            self._buf[self._n : need] = matrix
            self._ids[self._n : need] = ids
            self._n = need

    def remove(self, ids: set[int]) -> None:
        """Drop turns from memory. In graph mode the caller drops the whole index instead (the
        graph cannot be patched; the store unlinked its file), see `Retriever.forget`."""
        with self._lock:
            keep = ~np.isin(self.ids, list(ids))
            kept_ids, kept = self.ids[keep].copy(), self.matrix[keep].copy()
            self._ids, self._buf, self._n = kept_ids, kept, len(kept_ids)

    def attach_graph(self, graph: Any, stamp: int, members: Members) -> None:
        """Search through `graph` (open_graph) from now on; the rows it covers leave memory."""
        graph.expansion_search = max(graph.expansion_search, ANN_EXPANSION_SEARCH)
        with self._lock:
            if self._n:
                keep = ~members.covers(self.ids)
                self._ids, self._buf = self.ids[keep].copy(), self.matrix[keep].copy()
                self._n = len(self._ids)
            self._ann, self._members, self.graph_stamp = graph, members, stamp

    @property
    def uses_ann(self) -> bool:
        return self._ann is not None

    def search(self, query: np.ndarray, k: int) -> list[Hit]:
        """The k nearest turns by cosine similarity (vectors are unit length), best first."""
        if len(self) == 0 or k <= 0:
            return []
        return top_hits(*self.similarities(query, k), k)

    def similarities(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(turn ids, cosine similarities to `query`) of every vector in memory and, in graph mode,
        of the graph's nearest to it (enough for the best `k`)."""
        query = np.asarray(query, dtype=np.float32).reshape(-1)
        with self._lock:
            ann, members, ids, matrix = self._ann, self._members, self.ids, self.matrix
        with _blas.limit(limits=1, user_api="blas"):
            sims = matrix @ query if len(ids) else np.zeros(0, dtype=np.float32)
        if ann is not None and members is not None and k > 0:
            # the graph's own cosine distances (float16 vectors: scores within ~1e-3 of exact),
            # each node standing for every turn with its vector
            found = ann.search(query, min(k * ANN_OVERSAMPLE, len(ann)), threads=1)
            turns, scores = members.expand(
                np.asarray(found.keys, dtype=np.int64), 1.0 - np.asarray(found.distances, dtype=np.float32)
            )
            ids = np.concatenate([ids, turns])
            sims = np.concatenate([sims, scores])
        return ids, sims

    def vectors(self, turn_ids: Sequence[int]) -> np.ndarray:
        """The vectors of these turns (rows in index order; in graph mode the graph's copies)."""
        return self.vectors_by_id(turn_ids)[1]

    def vectors_by_id(self, turn_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """(ids, rows) of those of these turns the index holds: `rows[i]` is turn `ids[i]`'s vector
        (in memory first, in index order, then the graph's copies)."""
        with self._lock:
            mask = np.isin(self.ids, list(turn_ids))
            ids, rows = self.ids[mask], self.matrix[mask]
            if self._ann is None or self._members is None:
                return ids, rows
            wanted = np.array(sorted(set(turn_ids) - set(self.ids.tolist())), dtype=np.int64)
            held = wanted[self._members.covers(wanted)] if len(wanted) else wanted
            if not len(held):
                return ids, rows
            nodes = self._members.rep_of(held).astype(np.uint64)
            more = np.asarray(self._ann.get(nodes), dtype=np.float32).reshape(len(held), -1)
            return np.concatenate([ids, held]), (np.vstack([rows, more]) if len(rows) else more)
