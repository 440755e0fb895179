"""PostgreSQL part of the embedded vocabulary (the SQLite twin, with the why, is `sqlite_vocab.py`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memsched.store.postgres_base import PgMixin

M010_TERM_VECTORS = """
CREATE TABLE term_vectors (
    id bigint GENERATED ALWAYS AS IDENTITY,
    user_id text NOT NULL,
    model text NOT NULL,
    term text NOT NULL,
    turn_id bigint NOT NULL,
    dim integer NOT NULL,
    vector bytea NOT NULL,
    PRIMARY KEY (user_id, model, term)
);
CREATE INDEX term_vectors_turn ON term_vectors(turn_id);
"""


class PgVocabMixin(PgMixin):
    """Term vectors of PostgresStore."""

    def put_term_vectors(
        self, user_id: str, model_id: str, items: Sequence[tuple[str, int, np.ndarray]]
    ) -> None:
        if not items:
            return
        with self.transaction() as tx:
            # A rewritten row gets a new id, so `term_vector_version` moves. A row whose source turn is
            # already gone (forgotten while the background pass ran) is not written.
            tx.executemany(
                "INSERT INTO term_vectors (user_id, model, term, turn_id, dim, vector)"
                " SELECT %s, %s, %s, %s, %s, %s WHERE EXISTS (SELECT 1 FROM turns WHERE user_id = %s AND id = %s)"
                " ON CONFLICT (user_id, model, term) DO UPDATE SET"
                " turn_id = excluded.turn_id, dim = excluded.dim, vector = excluded.vector, id = DEFAULT",
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
        rows = self._all(
            'SELECT term, dim, vector FROM term_vectors WHERE user_id = %s AND model = %s ORDER BY term COLLATE "C"',
            (user_id, model_id),
        )
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        matrix = np.frombuffer(b"".join(bytes(r[2]) for r in rows), dtype=np.float32).reshape(
            len(rows), rows[0][1]
        )
        return [r[0] for r in rows], matrix

    def term_vector_version(self, user_id: str, model_id: str) -> tuple[int, int]:
        row = self._one(
            "SELECT count(*), coalesce(max(id), 0) FROM term_vectors WHERE user_id = %s AND model = %s",
            (user_id, model_id),
        )
        assert row is not None
        return int(row[0]), int(row[1])

    def turn_contents(self, user_id: str, turn_ids: Sequence[int]) -> dict[int, str]:
        if not turn_ids:
            return {}
        rows = self._all(
            "SELECT id, content FROM turns WHERE user_id = %s AND id = ANY(%s)",
            (user_id, [int(i) for i in turn_ids]),
        )
        return {int(r[0]): str(r[1]) for r in rows}
