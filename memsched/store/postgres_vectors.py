"""Dense search served by PostgreSQL: no user's matrix is loaded into the API process.

A user with fewer than `HNSW_MIN_VECTORS` vectors for a model is searched exactly: the btree on
(user, model) finds their rows and PostgreSQL computes the cosine distance of each (a 1,000-turn
user costs the same whether the table holds 10k or 10M rows). A larger user is searched through the
model's HNSW index (`PostgresStore._ensure_vector_index`), filtered by user. pgvector (0.6 in the
`pgserver` wheel) filters *after* the graph walk: a walk keeps `hnsw.ef_search` candidates and the
user's share of them is roughly the user's share of the model's index, so `ef_search` is raised
until the walk should find the rows asked for with three standard deviations to spare (pgvector
allows at most 1,000; a user who owns the index walks with ef = k, at least 100); a user whose
share is too small for that is searched exactly without a walk, and a walk that still comes back
short is answered by the exact search. A user who owns most of the index (one big user per
database or shard) is served from the graph; a big user on a shared index costs up to one exact
scan of their own rows, never of anyone else's.

Both plans rank vectors first and map them to turns afterwards, nearest first, and stop as soon as
`k` turns are found (an incremental sort over the vectors' distances): a text said many times is one
vector standing for many turns, and joining every vector of a user to its turns before ranking cost
more than the ranking (BENCHMARKS.md, "One user on PostgreSQL at 100k, session 15").

Hits are turns: a vector is keyed by its text's hash, so one vector can stand for several turns
with the same text, and a vector with no turn (a bookmark's, a query's not yet recorded) is skipped.
"""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memsched.model import Hit
from memsched.store.postgres_base import PgMixin, hnsw_index_name

HNSW_MIN_VECTORS = 5_000  # below this a user's exact search costs about what a walk costs (~5 ms)
EF_MAX = 1000  # pgvector's upper bound for hnsw.ef_search
EF_MIN = 100  # pgvector's default (40) loses a little recall at k = 50; 100 costs little more
_COUNT_TTL_S = 300.0  # how long a user's vector count (which only picks the plan) is trusted

# Exact: the user's nearest vectors (their btree finds them; PostgreSQL computes every distance),
# then their turns, nearest first. `lim` vectors are ranked; when they stand for fewer than `k`
# turns (vectors with no turn: a bookmark's, a forgotten turn's text kept by a bookmark), the
# unlimited form answers.
_EXACT = (
    "SELECT t.id, 1 - n.dist AS s FROM ("
    " SELECT content_hash, vector <=> %(q)s AS dist FROM embeddings"
    " WHERE user_id = %(u)s AND model = %(m)s AND dim = %(d)s ORDER BY vector <=> %(q)s LIMIT %(lim)s) n"
    " JOIN turns t ON t.user_id = %(u)s AND t.content_hash = n.content_hash ORDER BY n.dist, t.id LIMIT %(k)s"
)
_EXACT_ALL = (
    "SELECT t.id, 1 - (e.vector <=> %(q)s) AS s FROM embeddings e JOIN turns t"
    " ON t.user_id = e.user_id AND t.content_hash = e.content_hash"
    " WHERE e.user_id = %(u)s AND e.model = %(m)s AND e.dim = %(d)s"
    " ORDER BY e.vector <=> %(q)s, t.id LIMIT %(k)s"
)

# The inner query matches the partial HNSW index (its expression and predicate) so the planner can
# walk the graph; it is a subquery, not a materialized CTE, so the planner knows its rows come
# ordered by distance and the join to turns stops at the k-th turn (an incremental sort).
_GRAPH = (
    "SELECT t.id, 1 - n.dist AS s FROM ("
    " SELECT content_hash, (vector::vector({d}) <=> %(q)s::vector({d})) AS dist FROM embeddings"
    " WHERE model = %(m)s AND dim = {d} AND user_id = %(u)s"
    " ORDER BY vector::vector({d}) <=> %(q)s::vector({d}) LIMIT %(lim)s) n"
    " JOIN turns t ON t.user_id = %(u)s AND t.content_hash = n.content_hash ORDER BY n.dist, t.id LIMIT %(k)s"
)


class PgVectorSearchMixin(PgMixin):
    """`search_vectors` and `load_vectors` for `PostgresStore`."""

    serves_vector_search = True

    def vector_graph_path(self, user_id: str, model_id: str) -> Path | None:
        """None: the database's HNSW index serves dense search; no graph files."""
        return None

    _count_cache: dict[tuple[str, str], tuple[float, int]]
    _count_lock: threading.Lock

    if TYPE_CHECKING:  # provided by PostgresStore

        def vector_version(self, user_id: str, model_id: str) -> tuple[int, int]: ...
        def vectors(
            self, user_id: str, model_id: str, after_id: int = 0
        ) -> tuple[np.ndarray, np.ndarray]: ...
        def vector_count(self, user_id: str, model_id: str) -> int: ...

    def load_vectors(self, user_id: str, model_id: str) -> tuple[np.ndarray, np.ndarray, tuple[int, int]]:
        version = self.vector_version(user_id, model_id)
        ids, matrix = self.vectors(user_id, model_id)
        return ids, matrix, version

    def _user_vectors(self, user_id: str, model_id: str) -> int:
        """The user's vector count for the model, re-counted every few minutes (it only picks a plan)."""
        if not hasattr(self, "_count_lock"):
            self._count_lock = threading.Lock()
            self._count_cache = {}
        key = (user_id, model_id)
        now = time.monotonic()
        with self._count_lock:
            hit = self._count_cache.get(key)
        if hit is not None and now - hit[0] < _COUNT_TTL_S:
            return hit[1]
        n = self.vector_count(user_id, model_id)
        with self._count_lock:
            if len(self._count_cache) > 100_000:
                self._count_cache.clear()
            self._count_cache[key] = (now, n)
        return n

    def _index_rows(self, model_id: str, dim: int) -> int:
        """The planner's estimate of the rows in the model's HNSW index (every user's vectors of
        that model; the table's count, every model's, when the index is not made yet)."""
        row = self._one(
            "SELECT coalesce(max(c.reltuples) FILTER (WHERE c.relname = %s), max(c.reltuples))::bigint"
            " FROM pg_class c WHERE c.relname IN (%s, 'embeddings')",
            (hnsw_index_name(model_id, dim), hnsw_index_name(model_id, dim)),
        )
        return int(row[0]) if row and row[0] is not None else 0

    def search_vectors(
        self, user_id: str, model_id: str, query: np.ndarray, k: int, *, exact: bool = False
    ) -> list[Hit]:
        """The user's k nearest turns to `query` by cosine similarity, best first (`exact`: never
        through the graph)."""
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if k <= 0 or not q.size:
            return []
        args = {"q": q, "u": user_id, "m": model_id, "d": int(q.size), "k": int(k), "lim": 2 * int(k)}
        mine = self._user_vectors(user_id, model_id)
        if not exact and mine >= HNSW_MIN_VECTORS:
            share = mine / max(self._index_rows(model_id, int(q.size)), mine)
            # The user's rows among `ef` walked are about ef x share (binomial): enough for k, with
            # three standard deviations to spare. A user who owns the index needs ef = k.
            ef = max(EF_MIN, math.ceil((k + 3 * math.sqrt(k * (1 - share))) / share))
            if ef <= EF_MAX:
                hits = self._graph(args, ef)
                if len(hits) >= k:
                    return hits
        rows = self._all(_EXACT, args)
        if len(rows) < k:
            rows = self._all(_EXACT_ALL, args)
        return [Hit(turn_id=int(r[0]), score=float(r[1]), rank=i + 1) for i, r in enumerate(rows)]

    def _graph(self, args: dict[str, Any], ef: int) -> list[Hit]:
        from psycopg import sql

        query = sql.SQL(_GRAPH.replace("{d}", str(int(args["d"]))))  # an int we made: safe to inline
        with self._read() as conn, conn.transaction():
            conn.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(ef)))
            # The planner would rather sort a big user's rows found by the btree than trust a walk
            # whose filter it cannot cost; without sorts the ordered index scan is its only plan.
            conn.execute("SET LOCAL enable_sort = off")
            rows = conn.execute(query, {**args, "lim": ef}).fetchall()
        return [Hit(turn_id=int(r[0]), score=float(r[1]), rank=i + 1) for i, r in enumerate(rows)]
