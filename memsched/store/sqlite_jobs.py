"""SQLite part of the durable job queue and session leases (issue: scheduler runtime)."""

from __future__ import annotations

import sqlite3

from memsched.store.migrations import run_script


def m002_jobs(db: sqlite3.Connection) -> None:
    run_script(db, "")


class JobsMixin:
    """Queue and lease methods of SQLiteStore."""
