"""A real PostgreSQL with pgvector for tests: a private server from the `pgserver` wheel (PostgreSQL 16
with pgvector, starts in about a second), or an existing server named by a URL.

A test gets an empty, migrated database: a new one copied from a migrated template (about 0.2 s),
or, once tests have given some back with `release`, one of those emptied with TRUNCATE (about 10 ms).
"""

from __future__ import annotations

import tempfile
import uuid
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

TEMPLATE = "memsched_template"


def with_database(url: str, name: str) -> str:
    """`url` pointing at database `name` (query parameters such as `host=` are kept)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + name))


class PostgresServer:
    """Start (or attach to) a PostgreSQL server and hand out throwaway databases.

    >>> with PostgresServer() as pg:          # doctest: +SKIP
    ...     url = pg.database()               # a fresh, migrated, empty database
    """

    def __init__(self, url: str | None = None, datadir: str | Path | None = None) -> None:
        self._external = url
        self._datadir = Path(datadir) if datadir is not None else None
        self._server: Any = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._made: list[str] = []
        self._free: list[str] = []
        self.url = ""
        self._template_ready = False

    def start(self) -> PostgresServer:
        if self._external:
            self.url = self._external
            return self
        if self._datadir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="memsched-pg-")
            self._datadir = Path(self._tmp.name)
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset (CI, containers); pgserver copes.
            warnings.simplefilter("ignore")
            import pgserver  # a dev dependency

            self._server = pgserver.get_server(self._datadir, cleanup_mode="stop")
        self.url = str(self._server.get_uri())
        with self._admin() as conn:
            # A throwaway server: durability buys nothing here, and syncing every commit, CREATE
            # DATABASE and TRUNCATE to disk would be most of the suite's time on it.
            for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                conn.execute(f"ALTER SYSTEM SET {setting} = off")
            conn.execute("SELECT pg_reload_conf()")
        return self

    def _admin(self) -> Any:
        import psycopg

        return psycopg.connect(self.url, autocommit=True)

    def _ensure_template(self) -> None:
        if self._template_ready:
            return
        from memsched.store.postgres import PostgresStore

        with self._admin() as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute(f"DROP DATABASE IF EXISTS {TEMPLATE} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {TEMPLATE}")
        store = PostgresStore(with_database(self.url, TEMPLATE))
        with store.transaction() as tx:
            tx.execute("DELETE FROM meta")  # each copy chooses its own page size
        store.close()
        self._template_ready = True

    def database(self, migrated: bool = True) -> str:
        """The URL of an empty database (with memsched's schema when `migrated`)."""
        self._ensure_template()
        if migrated and self._free:
            return with_database(self.url, self._free.pop())
        name = "t_" + uuid.uuid4().hex[:16]
        with self._admin() as conn:
            conn.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE if migrated else 'template0'}")
        self._made.append(name)
        return with_database(self.url, name)

    def release(self, url: str) -> None:
        """Take back a database from `database()`: disconnect its clients, empty it, reuse it."""
        import psycopg

        name = urlsplit(url).path.lstrip("/")
        if name not in self._made:
            return
        with self._admin() as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            )
        try:
            with psycopg.connect(with_database(self.url, name), autocommit=True) as conn, conn.transaction():
                tables = [
                    r[0]
                    for r in conn.execute(
                        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename != 'migrations'"
                    )
                ]
                conn.execute("SET LOCAL lock_timeout = '2s'")
                # DELETE, not TRUNCATE: a test's few rows go faster than new files for every table.
                # Replica mode skips foreign-key and lineage triggers (every table is emptied anyway).
                conn.execute("SET LOCAL session_replication_role = replica")
                for table in tables:
                    conn.execute(f"DELETE FROM {table}")
                # the vector indexes a store made for its models go too, as in a new database
                for (index,) in conn.execute(
                    "SELECT indexname FROM pg_indexes WHERE schemaname = 'public'"
                    " AND starts_with(indexname, 'embeddings_hnsw_')"
                ).fetchall():
                    conn.execute(f'DROP INDEX IF EXISTS "{index}"')
                # ids start at 1 again, as in a new database
                conn.execute(
                    "SELECT setval(s.seq, 1, false) FROM (SELECT pg_get_serial_sequence(c.table_name, c.column_name)"
                    " AS seq FROM information_schema.columns c WHERE c.table_schema = 'public'"
                    " AND c.is_identity = 'YES') s"
                )
        except psycopg.Error:
            return  # busy, broken or not ours to empty: left alone, dropped at the end
        self._free.append(name)

    def stop(self) -> None:
        if self._made:
            with self._admin() as conn:
                for name in [*self._made, TEMPLATE]:
                    conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        self._made.clear()
        self._free.clear()
        if self._server is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self._server.cleanup()
            self._server = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
