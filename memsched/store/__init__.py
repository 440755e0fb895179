"""Storage: the `Store` protocol and its backends. Nothing outside this package writes SQL."""

from memsched.store.base import Store
from memsched.store.sqlite import SQLiteStore

__all__ = ["SQLiteStore", "Store", "open_store"]


def open_store(path: str, page_size: int | None = None) -> Store:
    """Open (creating and migrating if needed) the store at `path`; `:memory:` works too."""
    return SQLiteStore(path, page_size=page_size)
