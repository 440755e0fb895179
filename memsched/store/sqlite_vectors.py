"""Each user's turn vectors packed contiguously, so loading them is a few sequential reads.

Vectors are stored once per (user, model, content hash) in `embeddings`; a turn finds its vector by
its text's hash. Loading a user's vectors that way is one indexed join per turn (~15 ms per 1,000
turns, BENCHMARKS.md "Scale"), paid every time a user's in-memory index was evicted. A *pack* is a
copy of the result of that join, kept in `vector_packs` as chunks of up to `CHUNK_ROWS` rows (turn
ids and a float32 matrix, each one BLOB): a load reads the user's chunks in key order and joins only
the vectors added since the pack was written (its `vector_version`).

The pack is derived data, rebuilt on demand, and never the only copy:
* `put_vectors` (the embedding worker; the turn path's `put_vectors_tx` does not) brings the pack
  up to date once `REPACK_MIN` rows are missing from it: it rewrites the last, partial chunk and
  appends new ones, so each row is rewritten a few times at most while its chunk fills.
* Deleting a turn, or a vector a turn uses, drops the user's packs (triggers), so forgotten vectors never
  survive in a pack; `secure_delete` zeroes the freed pages as it does for every other row, and
  forgetting a user empties the table like any other with a `user_id` column. The next load joins
  (as before packs existed) and the next `put_vectors` packs again.
* A vector rewritten in place (same text, same model) keeps its old copy in the pack until the next
  delete, as the in-memory index keeps it: both key vectors by turn and never replace one.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memsched.model import Hit
from memsched.store.sqlite_base import SQLiteMixin, run_script

CHUNK_ROWS = 1024  # rows per chunk: 1.5 MB of MiniLM vectors, one chunk for a 1,000-turn user
REPACK_MIN = 64  # rows missing from the pack before put_vectors rewrites its tail

EMPTY_IDS = np.zeros(0, dtype=np.int64)


def _graph_prefix(user_id: str) -> str:
    return hashlib.blake2b(user_id.encode("utf-8"), digest_size=12).hexdigest() + "-"


def m011_vector_packs(db: sqlite3.Connection) -> None:
    run_script(
        db,
        """
        CREATE TABLE vector_packs (
            user_id TEXT NOT NULL,
            model TEXT NOT NULL,
            chunk INTEGER NOT NULL,
            dim INTEGER NOT NULL,
            n INTEGER NOT NULL,
            ids BLOB NOT NULL,
            vectors BLOB NOT NULL,
            version_vector INTEGER NOT NULL,
            version_turn INTEGER NOT NULL,
            PRIMARY KEY (user_id, model, chunk)
        );
        CREATE TRIGGER vector_packs_turn_deleted AFTER DELETE ON turns BEGIN
            DELETE FROM vector_packs WHERE user_id = OLD.user_id;
        END;
        -- Only a vector some turn still uses can be in a pack (a bookmark's vector, dropped with
        -- its bookmark, is not, and must not cost the user their packs).
        CREATE TRIGGER vector_packs_vector_deleted AFTER DELETE ON embeddings
        WHEN EXISTS (SELECT 1 FROM turns WHERE user_id = OLD.user_id AND content_hash = OLD.content_hash)
        BEGIN
            DELETE FROM vector_packs WHERE user_id = OLD.user_id AND model = OLD.model;
        END;
        """,
    )


def m012_vectors_checked(db: sqlite3.Connection) -> None:
    run_script(
        db,
        """
        -- How far each user's turns are known to have vectors, per model (Retriever.index_user):
        -- derived, a cache of a scan; forgetting the user deletes it with every user_id table.
        CREATE TABLE vectors_checked (
            user_id TEXT NOT NULL,
            model TEXT NOT NULL,
            turn_id INTEGER NOT NULL,
            PRIMARY KEY (user_id, model)
        ) WITHOUT ROWID;
        -- speakers(): one seek per distinct speaker instead of a scan of the user's turns
        CREATE INDEX turns_user_speaker ON turns(user_id, speaker);
        """,
    )


def join_rows(rows: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """(ids, matrix) from (turn id, dim, vector bytes) rows."""
    if not rows:
        return EMPTY_IDS, np.zeros((0, 0), dtype=np.float32)
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(len(rows), rows[0][1])
    return ids, matrix


def _concat(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    parts = [p for p in parts if len(p[0])]
    if not parts:
        return EMPTY_IDS, np.zeros((0, 0), dtype=np.float32)
    if len(parts) == 1:
        return parts[0]
    dim = parts[-1][1].shape[1]
    parts = [p for p in parts if p[1].shape[1] == dim]  # a model never changes width; be safe
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


class VectorPackMixin(SQLiteMixin):
    """Pack reads and writes, and dense search, for `SQLiteStore`."""

    # Dense search is the retriever's, over vectors it keeps in memory (loaded with `load_vectors`).
    serves_vector_search = False
    path: str

    # -- per-user graphs (memsched.vectors) -------------------------------------------------------------

    def vectors_checked(self, user_id: str, model_id: str) -> int:
        row = self.db.execute(
            "SELECT turn_id FROM vectors_checked WHERE user_id = ? AND model = ?", (user_id, model_id)
        ).fetchone()
        return int(row[0]) if row else 0

    def set_vectors_checked(self, user_id: str, model_id: str, turn_id: int) -> None:
        with self.transaction() as tx:
            self._set_vectors_checked_tx(tx, user_id, [(model_id, turn_id)])

    def _set_vectors_checked_tx(self, tx: Any, user_id: str, checked: Sequence[tuple[str, int]]) -> None:
        """`set_vectors_checked` of several models in the caller's transaction, as one statement."""
        # One writer at a time: every turn id below `turn_id` was committed before it.
        tx.execute(
            "INSERT INTO vectors_checked (user_id, model, turn_id) VALUES "
            + ", ".join(["(?, ?, ?)"] * len(checked))
            + " ON CONFLICT (user_id, model) DO UPDATE SET turn_id = max(turn_id, excluded.turn_id)",
            [x for model_id, turn_id in checked for x in (user_id, model_id, int(turn_id))],
        )

    def vector_graph_path(self, user_id: str, model_id: str) -> Path | None:
        """`<database>.graphs/<user hash>-<model hash>.usearch` (None for an in-memory database).
        The file holds turn ids and quantised vectors, no text; forgetting unlinks it."""
        if self.path == ":memory:":
            return None
        model = hashlib.blake2b(model_id.encode("utf-8"), digest_size=6).hexdigest()
        return Path(f"{self.path}.graphs") / f"{_graph_prefix(user_id)}{model}.usearch"

    def _drop_vector_graphs(self, user_id: str) -> None:
        """Unlink every graph of the user (after a forget): the worker builds them again from what
        is left, so no forgotten vector stays in a file."""
        if self.path == ":memory:":
            return
        directory = Path(f"{self.path}.graphs")
        if directory.is_dir():
            # First a new generation (a graph the worker was writing meanwhile, from vectors read
            # before this forget, is dropped by `update_graph` when it sees the change), then unlink.
            (directory / "generation").write_text(str(time.time_ns()))
            for path in directory.glob(_graph_prefix(user_id) + "*"):
                path.unlink(missing_ok=True)

    if TYPE_CHECKING:  # provided by SQLiteStore

        def vector_version(self, user_id: str, model_id: str) -> tuple[int, int]: ...
        def _vectors_since(
            self, db: Any, user_id: str, model_id: str, after_vector: int, after_turn: int
        ) -> tuple[np.ndarray, np.ndarray]: ...

    def _pack(self, db: Any, user_id: str, model_id: str) -> tuple[list[Any], tuple[int, int] | None]:
        """The user's chunk rows in order and the version the pack is complete up to (None: no pack)."""
        rows = db.execute(
            "SELECT chunk, dim, n, ids, vectors, version_vector, version_turn FROM vector_packs"
            " WHERE user_id = ? AND model = ? ORDER BY chunk",
            (user_id, model_id),
        ).fetchall()
        if not rows:
            return [], None
        return rows, (int(rows[-1][5]), int(rows[-1][6]))

    def load_vectors(self, user_id: str, model_id: str) -> tuple[np.ndarray, np.ndarray, tuple[int, int]]:
        """All of the user's turn vectors (the pack, plus what was added since it was written) and the
        `vector_version` they are complete up to. Ids may repeat (a turn embedded again)."""
        db = self.db
        own = not db.in_transaction
        if own:
            db.execute("BEGIN")  # one snapshot: the version, the pack and the rows added since agree
        try:
            version = self.vector_version(user_id, model_id)
            rows, packed = self._pack(db, user_id, model_id)
            parts = [
                (
                    np.frombuffer(r[3], dtype=np.int64),
                    np.frombuffer(r[4], dtype=np.float32).reshape(r[2], r[1]),
                )
                for r in rows
            ]
            parts.append(self._vectors_since(db, user_id, model_id, *(packed or (0, 0))))
        finally:
            if own:
                db.execute("COMMIT")
        ids, matrix = _concat(parts)
        return ids, matrix, version

    def search_vectors(
        self, user_id: str, model_id: str, query: np.ndarray, k: int, *, exact: bool = False
    ) -> list[Hit]:
        """The user's k nearest turns to `query` by cosine similarity, best first (always exact here)."""
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        ids, matrix, _ = self.load_vectors(user_id, model_id)
        if k <= 0 or not len(ids):
            return []
        ids, first = np.unique(ids, return_index=True)
        sims = matrix[first] @ q
        order = np.lexsort((ids, -sims))[:k]
        return [Hit(turn_id=int(ids[i]), score=float(sims[i]), rank=r + 1) for r, i in enumerate(order)]

    def _repack(self, tx: Any, user_id: str, model_id: str) -> None:
        """Inside a write transaction: bring the pack up to date when enough rows are missing.

        Most calls (a reply's vectors, a few rows) only find that too few rows are missing: that
        check reads the last chunk's version, not the chunks (a 10,000-turn user's MiniLM pack is
        15 MB); they are read only to be rewritten."""
        last = tx.execute(
            "SELECT version_vector, version_turn FROM vector_packs WHERE user_id = ? AND model = ?"
            " ORDER BY chunk DESC LIMIT 1",
            (user_id, model_id),
        ).fetchone()
        after_vector, after_turn = (int(last[0]), int(last[1])) if last else (0, 0)
        missing = tx.execute(
            "SELECT (SELECT count(*) FROM embeddings WHERE user_id = ? AND model = ? AND rowid > ?)"
            " + (SELECT count(*) FROM turns WHERE user_id = ? AND id > ?)",
            (user_id, model_id, after_vector, user_id, after_turn),
        ).fetchone()[0]
        if missing < REPACK_MIN:
            return
        rows, _ = self._pack(tx, user_id, model_id)
        version = self.vector_version(user_id, model_id)
        new_ids, new_matrix = self._vectors_since(tx, user_id, model_id, after_vector, after_turn)
        if rows and len(new_ids):
            held = np.concatenate([np.frombuffer(r[3], dtype=np.int64) for r in rows])
            fresh = ~np.isin(new_ids, held)
            new_ids, new_matrix = new_ids[fresh], new_matrix[fresh]
        if len(new_ids):
            new_ids, first = np.unique(new_ids, return_index=True)
            new_matrix = new_matrix[first]
        # Rewrite the last chunk with the new rows appended, spilling into new chunks when full.
        start = 0
        if rows and rows[-1][2] < CHUNK_ROWS and (not len(new_ids) or rows[-1][1] == new_matrix.shape[1]):
            last = rows[-1]
            start = int(last[0])
            ids = np.concatenate([np.frombuffer(last[3], dtype=np.int64), new_ids])
            matrix = np.concatenate(
                [np.frombuffer(last[4], dtype=np.float32).reshape(last[2], last[1]), new_matrix]
                if len(new_ids)
                else [np.frombuffer(last[4], dtype=np.float32).reshape(last[2], last[1])]
            )
        else:
            start = int(rows[-1][0]) + 1 if rows else 0
            ids, matrix = new_ids, new_matrix
        if not len(ids):
            if rows:  # nothing new for the pack: only its version moves on
                tx.execute(
                    "UPDATE vector_packs SET version_vector = ?, version_turn = ?"
                    " WHERE user_id = ? AND model = ? AND chunk = ?",
                    (*version, user_id, model_id, int(rows[-1][0])),
                )
            return
        matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        tx.executemany(
            "INSERT OR REPLACE INTO vector_packs"
            " (user_id, model, chunk, dim, n, ids, vectors, version_vector, version_turn)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    user_id,
                    model_id,
                    start + i // CHUNK_ROWS,
                    int(matrix.shape[1]),
                    len(ids[i : i + CHUNK_ROWS]),
                    ids[i : i + CHUNK_ROWS].tobytes(),
                    matrix[i : i + CHUNK_ROWS].tobytes(),
                    *version,
                )
                for i in range(0, len(ids), CHUNK_ROWS)
            ],
        )
