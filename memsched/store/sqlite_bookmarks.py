"""SQLite part of keyword bookmarks (issue: keyword bookmarks and cooperative paging)."""

from __future__ import annotations

import sqlite3

from memsched.store.migrations import run_script


def m003_bookmarks(db: sqlite3.Connection) -> None:
    run_script(db, "")


class BookmarksMixin:
    """Bookmark methods of SQLiteStore."""
