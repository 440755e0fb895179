"""SQLite part of the embedded vocabulary (`memsched.vocab`): one vector per distinct term of a user.

Each row records the turn the term was found in (`turn_id`), so the forget cascade (`store.lineage`:
a table with a `turn_id` column) deletes the row with that turn; a term still used by other turns
is embedded again by the next background pass, with one of those turns as its source.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import numpy as np

from memsched.store.sqlite_base import SQLiteMixin, run_script
from memsched.text.gloss import HAN_GLOB


def m010_term_vectors(db: sqlite3.Connection) -> None:
    run_script(
        db,
        """
        CREATE TABLE term_vectors (
            user_id TEXT NOT NULL,
            model TEXT NOT NULL,
            term TEXT NOT NULL,
            turn_id INTEGER NOT NULL,
            dim INTEGER NOT NULL,
            vector BLOB NOT NULL,
            PRIMARY KEY (user_id, model, term)
        );
        CREATE INDEX term_vectors_turn ON term_vectors(turn_id);
        """,
    )


def m013_han_terms_glossed(db: sqlite3.Connection) -> None:
    """Chinese terms were embedded as they are, and MiniLM gives most Han words one vector: their
    rows go, and the next background pass embeds them through their English senses
    (`vocab.word_text`). Until then they expand to nothing but themselves."""
    db.execute("DELETE FROM term_vectors WHERE term GLOB ?", (HAN_GLOB,))


def m014_han_terms_reglossed(db: sqlite3.Connection) -> None:
    """Chinese terms were embedded through glosses that kept CC-CEDICT's pronunciation notes and
    surname entries ("play Taiwan pr", "two-character surname Zhuge Taiwan pr"), so 玩 expanded to
    诸葛 at 0.58 on the notes alone. Their rows go again, and the next background pass embeds them
    through the cleaned senses."""
    db.execute("DELETE FROM term_vectors WHERE term GLOB ?", (HAN_GLOB,))


class VocabMixin(SQLiteMixin):
    """Term vectors of SQLiteStore."""

    def put_term_vectors(
        self, user_id: str, model_id: str, items: Sequence[tuple[str, int, np.ndarray]]
    ) -> None:
        if not items:
            return
        with self.transaction() as tx:
            # A row whose source turn is already gone (forgotten while the background pass ran) is
            # not written: it would outlive the forget.
            tx.executemany(
                "INSERT OR REPLACE INTO term_vectors (user_id, model, term, turn_id, dim, vector)"
                " SELECT ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM turns WHERE user_id = ? AND id = ?)",
                [
                    (
                        user_id,
                        model_id,
                        term,
                        int(tid),
                        int(v.shape[-1]),
                        np.asarray(v, np.float32).tobytes(),
                        user_id,
                        int(tid),
                    )
                    for term, tid, v in items
                ],
            )

    def term_vectors(self, user_id: str, model_id: str) -> tuple[list[str], np.ndarray]:
        rows = self.db.execute(
            "SELECT term, dim, vector FROM term_vectors WHERE user_id = ? AND model = ? ORDER BY term",
            (user_id, model_id),
        ).fetchall()
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(len(rows), rows[0][1])
        return [r[0] for r in rows], matrix

    def term_vector_version(self, user_id: str, model_id: str) -> tuple[int, int]:
        row = self.db.execute(
            "SELECT count(*), coalesce(max(rowid), 0) FROM term_vectors WHERE user_id = ? AND model = ?",
            (user_id, model_id),
        ).fetchone()
        return int(row[0]), int(row[1])

    def turn_contents(self, user_id: str, turn_ids: Sequence[int]) -> dict[int, str]:
        out: dict[int, str] = {}
        ids = [int(i) for i in turn_ids]
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            out.update(
                self.db.execute(
                    f"SELECT id, content FROM turns WHERE user_id = ? AND id IN ({marks})", (user_id, *chunk)
                ).fetchall()
            )
        return out
