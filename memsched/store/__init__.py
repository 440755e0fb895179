"""Storage: the `Store` protocol and its backends. Nothing outside this package writes SQL, and
nothing outside it knows which backend it runs on: build a store with `open_store`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from memsched.config import DATABASE_URL_SCHEMES
from memsched.store.base import Store, Tx

if TYPE_CHECKING:
    from memsched.config import Config

__all__ = ["Store", "Tx", "is_database_url", "open_store"]

_URL_SCHEMES = DATABASE_URL_SCHEMES


def is_database_url(target: str | Path) -> bool:
    """True when `target` names a server database (PostgreSQL) rather than a SQLite file."""
    return str(target).startswith(_URL_SCHEMES)


def open_store(target: Config | str | Path, page_size: int | None = None) -> Store:
    """Open (creating and migrating if needed) the store a config or location names.

    A `Config` picks `database_url` (MEMSCHED_DATABASE_URL) when set, else its SQLite file; a string
    starting with `postgresql://` opens PostgreSQL; anything else is a SQLite path (`:memory:` too).
    """
    lock_connections: int | None = None
    if not isinstance(target, str | Path):
        page_size = page_size or target.page_size
        lock_connections = target.pg_lock_connections
        target = target.database_url or target.db_path
    if is_database_url(target):
        from memsched.store.postgres import PostgresStore

        return PostgresStore(str(target), page_size=page_size, lock_connections=lock_connections)
    from memsched.store.sqlite import SQLiteStore

    return SQLiteStore(target, page_size=page_size)
