"""The `Store` protocol: everything the rest of memsched may ask of a storage backend.

Every method is scoped by user; there is no unscoped query. Backends hide their SQL dialect.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from memsched.model import Hit, Page, Session, Turn


@runtime_checkable
class Store(Protocol):
    page_size: int

    # users and sessions
    def has_user(self, user_id: str) -> bool: ...
    def users(self) -> list[str]: ...
    def sessions(self, user_id: str) -> list[Session]: ...

    # turns
    def add_turns(self, turns: Sequence[Turn]) -> list[Turn]:
        """Store turns in one transaction, in order; assigns id, seq and page. Returns them."""
        ...

    def get_turns(self, user_id: str, ids: Sequence[int]) -> list[Turn]: ...
    def session_turns(self, user_id: str, session_id: str, last: int | None = None) -> list[Turn]: ...
    def recent_turns(self, user_id: str, limit: int) -> list[Turn]: ...
    def iter_turns(self, user_id: str) -> Iterator[Turn]: ...
    def turn_count(self, user_id: str) -> int: ...
    def max_turn_id(self, user_id: str) -> int: ...
    def neighbours(
        self, user_id: str, turn_ids: Sequence[int], radius: int = 1
    ) -> dict[int, list[tuple[int, int]]]:
        """For each turn, (id, distance) of the turns up to `radius` positions away in its session."""
        ...

    def delete_turns(self, user_id: str, ids: Sequence[int]) -> int: ...
    def delete_user(self, user_id: str) -> int: ...

    # pages
    def pages(self, user_id: str, session_id: str | None = None) -> list[Page]: ...
    def page_turns(self, user_id: str, page_id: int) -> list[Turn]: ...

    # search
    def search_bm25(self, user_id: str, query: str, limit: int = 50) -> list[Hit]: ...

    # vectors
    def vectors(self, user_id: str, model_id: str, after_id: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """(turn ids, float32 matrix) of the user's turns with a stored vector for `model_id`."""
        ...

    def turns_missing_vectors(
        self, user_id: str, model_id: str, limit: int = 1000, after_id: int = 0
    ) -> list[tuple[int, str]]:
        """(turn id, text to embed) of turns after `after_id` with no vector for `model_id` yet."""
        ...

    def vector_version(self, user_id: str, model_id: str) -> tuple[int, int]:
        """A pair that changes whenever the user gains turns or vectors for `model_id`."""
        ...

    def vectors_since(
        self, user_id: str, model_id: str, after_vector: int, after_turn: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Vectors added since a `vector_version`; may repeat some the caller already has."""
        ...

    def put_vectors(self, user_id: str, model_id: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        """Store vectors keyed by (content hash of the embedded text, model id)."""
        ...

    def close(self) -> None: ...
