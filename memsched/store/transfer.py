"""Copy an embedded SQLite database into PostgreSQL: `memsched migrate --to postgresql://…`.

Every table the stores keep is copied row for row with its ids, so the references between them
(turn ids in traces, jobs, bookmarks, profile facts and summaries; page ids in bookmarks) stay
valid, and each identity counter is then moved past the highest id the source ever gave (SQLite's
`sqlite_sequence`, so an id a forgotten row had is not reused either). What PostgreSQL keeps and
SQLite does not is rebuilt: the tsvector of each turn and bookmark (from the same text SQLite's
FTS5 indexes), the per-user BM25 statistics, and an HNSW index per embedder model.

Not copied: `migrations` (the target has its own), `session_locks` (leases of processes that are
gone), `vector_packs` (SQLite's packed copy of each user's vectors, derived from `embeddings`;
PostgreSQL searches the vectors in place), `vectors_checked` (how far SQLite found every turn to
have vectors: PostgreSQL keeps no such watermark) and the FTS5 shadow tables (rebuilt as above). A job that was running in the source is copied
as queued with no lease: its worker is gone, and a PostgreSQL worker runs it again.

* Idempotent: a row whose key the target already holds is compared with the source's and skipped
  when equal; when it differs, the copy stops with an error naming the table and the ids, and the
  target's row is left as it was. Running the copy twice leaves the target as the first run did.
* Resumable: rows go in batches, each committed with a progress marker (`meta` key
  `migrate.progress`: the source file and the last key copied per table); a run of the same source
  that finds an unfinished marker continues after it. A finished copy re-run checks every row.
* The source is read in one read transaction: a consistent snapshot even if a process writes to it.
* Bulk load into an empty database (what `pg_restore` does, and PostgreSQL's manual advises for
  populating a database): when every copied table of the target is empty, the secondary indexes
  (those backing no constraint: the GIN full-text indexes, the by-user B-trees) are dropped first and
  built once after the rows, with `maintenance_work_mem` raised to `build_memory` for those builds and
  the HNSW ones (pgvector builds a graph several times faster when it fits that memory); rows of a
  table that was empty are COPYed without looking for them in the target first, and the tables are
  vacuumed and analysed at the end. Primary keys and
  foreign keys stay, so the copy is checked as before. The dropped definitions are kept in the
  progress marker: an interrupted copy that raises rebuilds them before it returns, and one killed
  outright rebuilds them when it is resumed (`memsched migrate` again): until then the target
  answers correctly but without those indexes.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memsched.errors import InputError, StoreError
from memsched.store.postgres_base import as_vector, tsvector_literal, tsvector_of_index_text
from memsched.store.sqlite_base import TURN_COLUMNS, row_to_turn
from memsched.text.timeexpr import searchable_text

log = logging.getLogger(__name__)

PROGRESS_KEY = "migrate.progress"
DEFAULT_BATCH = 1000
# maintenance_work_mem for the index builds after a bulk load (a session setting; the server's own
# default, 64 MB, makes pgvector spill a graph of more than ~40k vectors and build it far slower).
DEFAULT_BUILD_MEMORY = "1GB"

# Column kinds: how a SQLite value becomes a PostgreSQL one and how both are compared.
PLAIN, JSONB, JSON, ARRAY, BOOL, VECTOR, BYTES = "plain", "jsonb", "json", "array", "bool", "vector", "bytes"


@dataclass(frozen=True, slots=True)
class Table:
    """One copied table: its columns (name -> kind), key columns with their PostgreSQL types."""

    name: str
    columns: dict[str, str]
    key: dict[str, str]
    identity: bool = False  # the target's `id` is GENERATED ALWAYS AS IDENTITY
    fts: bool = False  # the target keeps a tsvector (fts, fts_len) built from the row's text
    # PostgreSQL types of the columns, for a binary COPY (vectors go in as their float32 bytes:
    # formatting millions of floats as text was most of a copy's time)
    binary: tuple[str, ...] = ()

    def col_list(self) -> str:
        return ", ".join(self.columns)


def _cols(spec: str) -> dict[str, str]:
    """`"id, meta:jsonb, x"` -> {"id": plain, "meta": jsonb, "x": plain}."""
    out: dict[str, str] = {}
    for part in spec.split(","):
        name, _, kind = part.strip().partition(":")
        out[name] = kind or PLAIN
    return out


ID = {"id": "bigint"}

# In foreign-key order. A test checks that every table of a SQLite store is here or in SKIPPED.
TABLES: tuple[Table, ...] = (
    Table("meta", _cols("key, value"), {"key": "text"}),
    Table("users", _cols("id, created_at"), {"id": "text"}),
    Table("sessions", _cols("user_id, id, created_at, next_seq"), {"user_id": "text", "id": "text"}),
    Table("pages", _cols("id, user_id, session_id, page_no, created_at"), ID, identity=True),
    Table(
        "turns",
        _cols(
            "id, user_id, session_id, seq, page_id, role, speaker, content, created_at, external_id,"
            " meta:jsonb, content_hash"
        ),
        ID,
        identity=True,
        fts=True,
    ),
    Table(
        "embeddings",
        _cols("id, user_id, model, content_hash, dim, vector:vector"),
        ID,
        identity=True,
        binary=("int8", "text", "text", "text", "int4", "vector"),
    ),
    # The embedded vocabulary (memsched.vocab); the target numbers its rows itself (`id`, which only
    # `term_vector_version` reads).
    Table(
        "term_vectors",
        _cols("user_id, model, term, turn_id, dim, vector:bytes"),
        {"user_id": "text", "model": "text", "term": "text"},
    ),
    Table(
        "bookmarks",
        _cols(
            "id, user_id, session_id, kind, keywords:jsonb, aliases:jsonb, summary, importance, source,"
            " content_hash, first_at, last_at, created_at, updated_at"
        ),
        ID,
        identity=True,
        fts=True,
    ),
    Table("bookmark_pages", _cols("bookmark_id, page_id"), {"bookmark_id": "bigint", "page_id": "bigint"}),
    Table("bookmark_turns", _cols("bookmark_id, turn_id"), {"bookmark_id": "bigint", "turn_id": "bigint"}),
    Table("page_use", _cols("page_id, user_id, uses, last_used"), {"page_id": "bigint"}),
    Table(
        "profile_facts",
        _cols(
            "id, user_id, key, value, valid_from, superseded_at, source_turn_ids:array, meta:jsonb,"
            " created_at, superseded_by"
        ),
        ID,
        identity=True,
    ),
    Table(
        "summaries",
        _cols(
            "id, user_id, session_id, first_seq, last_seq, kind, method, content, tokens, source_tokens,"
            " source_turn_ids:array, created_at"
        ),
        ID,
        identity=True,
    ),
    Table(
        "session_state",
        _cols("user_id, session_id, data:jsonb, updated_at"),
        {"user_id": "text", "session_id": "text"},
    ),
    Table("traces", _cols("id, user_id, session_id, created_at, turn_ids:array, data:json"), {"id": "text"}),
    Table(
        "moods",
        _cols("user_id, label, intensity, cause_turn_ids:array, updated_at, meta:jsonb"),
        {"user_id": "text"},
    ),
    Table(
        "routines",
        _cols(
            "user_id, sleep_minute, wake_minute, confidence, timezone, days, source_turn_ids:array,"
            " updated_at, meta:jsonb"
        ),
        {"user_id": "text"},
    ),
    Table(
        "jobs",
        _cols(
            "id, kind, user_id, session_id, payload:jsonb, priority, status, attempts, max_attempts,"
            " run_after, last_error, ordered:bool, lease_owner, lease_until, created_at, finished_at,"
            " dedupe_key"
        ),
        ID,
        identity=True,
    ),
    Table(
        "api_keys",
        _cols("id, key_id, tenant, salt:bytes, hash:bytes, created_at, revoked_at"),
        ID,
        identity=True,
    ),
)

# SQLite tables deliberately not copied (see the module docstring), besides FTS5 tables and their shadows.
SKIPPED = frozenset({"migrations", "session_locks", "sqlite_sequence", "vector_packs", "vectors_checked"})


@dataclass(slots=True)
class TableReport:
    """What one run did to one table."""

    source: int = 0  # rows in the source
    copied: int = 0  # rows inserted by this run
    present: int = 0  # rows the target already held, equal to the source's
    resumed: int = 0  # rows skipped because an earlier, interrupted run had copied them


@dataclass(slots=True)
class MigrateReport:
    source: str
    target: str
    dry_run: bool = False
    tables: dict[str, TableReport] = field(default_factory=dict)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "dry_run": self.dry_run,
            "seconds": round(self.seconds, 2),
            "tables": {
                name: {"source": t.source, "copied": t.copied, "present": t.present, "resumed": t.resumed}
                for name, t in self.tables.items()
            },
        }


# (table, rows done in this table so far, rows in the table)
Progress = Callable[[str, int, int], None]


def migrate_sqlite_to_postgres(
    source: str | Path,
    target_url: str,
    *,
    batch_size: int = DEFAULT_BATCH,
    dry_run: bool = False,
    progress: Progress | None = None,
    after_batch: Callable[[str, int], None] | None = None,
    vector_indexes: bool = True,
    build_memory: str = DEFAULT_BUILD_MEMORY,
) -> MigrateReport:
    """Copy the SQLite database at `source` into the PostgreSQL database at `target_url`.

    Idempotent and resumable (module docstring). Raises `InputError` when the source is not a
    memsched database, `StoreError` when the target cannot be reached or already holds different
    data under a copied key (nothing of the target's is changed then). `dry_run` compares without
    writing rows (the target's schema is still created if it has none). `after_batch(table, n)` is
    called after each committed batch (tests use it to interrupt a copy). `vector_indexes=False`
    leaves the HNSW indexes unbuilt (a benchmark's bulk load whose users all stay on the exact
    path); a store made on the target builds each when its model's next vectors arrive.
    `build_memory` is the `maintenance_work_mem` of the index builds (a PostgreSQL size, "1GB").
    """
    from memsched.store import is_database_url
    from memsched.store.postgres import PostgresStore, redact
    from memsched.store.sqlite import SQLiteStore

    started = time.perf_counter()
    if not is_database_url(target_url):
        raise InputError(f"--to must be a postgresql:// URL, got {target_url!r}")
    if not re.fullmatch(r"[1-9][0-9]*\s*(kB|MB|GB|TB)", build_memory.strip()):
        raise InputError(
            f"--build-memory must be a PostgreSQL size such as 1GB or 512MB, got {build_memory!r}"
        )
    path = Path(source).expanduser()
    if not path.is_file():
        raise InputError(f"no SQLite database at {path}: name one with --from (or --home / --db)")
    path = path.resolve()
    try:
        probe = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            probe.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone()
            if probe.execute("SELECT 1 FROM sqlite_master WHERE name = 'turns'").fetchone() is None:
                raise InputError(f"{path} is not a memsched database (it has no turns table)")
        finally:
            probe.close()
    except sqlite3.DatabaseError as exc:
        raise InputError(f"{path} is not a SQLite database: {exc}") from exc
    # Opening the store applies any schema migrations the file lacks, so every source reads alike.
    src_store = SQLiteStore(path)
    page_size = src_store.page_size
    src_store.close()
    target = PostgresStore(target_url, page_size=page_size)
    report = MigrateReport(source=str(path), target=redact(target_url), dry_run=dry_run)
    src = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    try:
        src.execute("BEGIN")  # one snapshot for the whole copy
        full = _read_full_marker(target, str(path))
        marker = dict(full.get("tables") or {})
        # [name, definition] of the secondary indexes this copy (or the run it resumes) dropped
        dropped: list[list[str]] = [list(d) for d in full.get("dropped_indexes") or []]
        empty = set() if dry_run else _empty_tables(target)
        if not dry_run and not marker and len(empty) == len(TABLES) - 1:
            dropped = _drop_secondary_indexes(target, str(path))
        state = _CopyState(source=str(path), tables=marker, dropped=dropped)
        try:
            for table in TABLES:
                report.tables[table.name] = _copy_table(
                    src,
                    target,
                    table,
                    state,
                    batch_size,
                    dry_run,
                    progress,
                    after_batch,
                    fresh=table.name in empty,
                )
        except Exception:
            if dropped:  # leave the target indexed as before this run (its rows stay: resumable)
                try:
                    _build_indexes(target, dropped, build_memory)
                    state.dropped = []
                    _write_marker(target, state.marker(complete=False))
                except Exception:  # the target is gone too: the marker keeps them for the resumed run
                    log.warning("could not rebuild the indexes the copy dropped; resume it to rebuild them")
            raise
        if not dry_run:
            _build_indexes(target, dropped, build_memory)
            _finish(src, target, vector_indexes, build_memory)
            _write_marker(target, {"source": str(path), "complete": True, "tables": {}})
            if dropped:
                _vacuum_analyze(target_url)
    finally:
        src.close()
        target.close()
    report.seconds = time.perf_counter() - started
    return report


# -- the progress marker ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _CopyState:
    """What the progress marker records: the last key copied per table, the dropped indexes."""

    source: str
    tables: dict[str, Any]
    dropped: list[list[str]]

    def marker(self, complete: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source, "complete": complete, "tables": self.tables}
        if self.dropped:
            out["dropped_indexes"] = self.dropped
        return out


def _read_full_marker(target: Any, source: str) -> dict[str, Any]:
    """The marker of an unfinished run of this source ({} when there is none). An unfinished run of
    another source that dropped indexes is refused: they are rebuilt by finishing that copy."""
    row = target._one("SELECT value FROM meta WHERE key = %s", (PROGRESS_KEY,))
    if row is None:
        return {}
    marker = json.loads(row[0])
    if marker.get("complete"):
        return {}
    if marker.get("source") != source:
        if marker.get("dropped_indexes"):
            raise StoreError(
                f"an unfinished bulk copy of {marker.get('source')} into this database dropped its"
                " secondary indexes; finish it first (memsched migrate --from that file), which rebuilds them"
            )
        return {}
    return dict(marker)


# -- bulk load into an empty target --------------------------------------------------------------------


def _empty_tables(target: Any) -> set[str]:
    """The copied tables that hold no row in the target. Never `meta`: opening the target writes its
    page size there, which the copy then finds equal to the source's."""
    out: set[str] = set()
    with target._read() as conn:
        for table in TABLES:
            if (
                table.name != "meta"
                and conn.execute(f"SELECT 1 FROM {table.name} LIMIT 1").fetchone() is None
            ):
                out.add(table.name)
    return out


def _drop_secondary_indexes(target: Any, source: str) -> list[list[str]]:
    """Drop the indexes of the copied tables that back no constraint, recording their definitions in
    the progress marker in the same transaction. Returns [name, definition] of each."""
    names = [t.name for t in TABLES]
    with target.transaction() as tx:
        rows = tx.execute(
            "SELECT ci.relname, pg_get_indexdef(i.indexrelid) FROM pg_index i"
            " JOIN pg_class c ON c.oid = i.indrelid JOIN pg_class ci ON ci.oid = i.indexrelid"
            " WHERE c.relname = ANY(%s) AND c.relnamespace = current_schema()::regnamespace"
            " AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)"
            " ORDER BY ci.relname",
            (names,),
        ).fetchall()
        dropped = [[str(name), str(definition)] for name, definition in rows]
        for name, _ in dropped:
            tx.execute(f'DROP INDEX "{name}"')
        _write_marker(
            target, {"source": source, "complete": False, "tables": {}, "dropped_indexes": dropped}, tx
        )
    return dropped


def _vacuum_analyze(target_url: str) -> None:
    """VACUUM (ANALYZE) the copied tables after a bulk load: the planner gets statistics for the new
    rows, the visibility map is set (index-only scans), and autovacuum does not start on every
    table under the first requests (the PostgreSQL manual's advice after populating a database)."""
    import psycopg

    with psycopg.connect(target_url, autocommit=True) as conn:
        for table in TABLES:
            conn.execute(f"VACUUM (ANALYZE) {table.name}")


def _build_indexes(target: Any, dropped: list[list[str]], build_memory: str) -> None:
    """Build the dropped indexes again (each skipped if it exists: a resumed run may find some)."""
    from psycopg import sql

    for _name, definition in dropped:
        with target.transaction() as tx:
            tx.execute(sql.SQL("SET LOCAL maintenance_work_mem = {}").format(sql.Literal(build_memory)))
            tx.execute(definition.replace("CREATE INDEX ", "CREATE INDEX IF NOT EXISTS ", 1))


def _write_marker(target: Any, marker: dict[str, Any], tx: Any = None) -> None:
    sql = (
        "INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
    )
    if tx is not None:
        tx.execute(sql, (PROGRESS_KEY, json.dumps(marker)))
        return
    with target.transaction() as t:
        t.execute(sql, (PROGRESS_KEY, json.dumps(marker)))


# -- one table ---------------------------------------------------------------------------------------------


def _copy_table(
    src: sqlite3.Connection,
    target: Any,
    table: Table,
    state: _CopyState,
    batch_size: int,
    dry_run: bool,
    progress: Progress | None,
    after_batch: Callable[[str, int], None] | None,
    fresh: bool = False,
) -> TableReport:
    """Copy one table. `fresh`: the target's table was empty when this run began, so no batch needs
    looking for in it (a row someone else writes meanwhile makes the COPY fail on its key instead)."""
    marker = state.tables
    out = TableReport(source=int(src.execute(f"SELECT count(*) FROM {table.name}").fetchone()[0]))
    after = marker.get(table.name)
    if after is not None:
        (out.resumed,) = src.execute(
            f"SELECT count(*) FROM {table.name} WHERE ({', '.join(table.key)}) <= ({_marks(len(table.key))})",
            after,
        ).fetchone()
    done = out.resumed
    if progress:
        progress(table.name, done, out.source)
    for rows in _batches(src, table, after, batch_size):
        keys = [tuple(r[c] for c in table.key) for r in rows]
        existing = {} if fresh else _target_rows(target, table, keys)
        missing: list[dict[str, Any]] = []
        conflicts: list[str] = []
        for key, row in zip(keys, rows, strict=True):
            have = existing.get(key)
            if have is None:
                missing.append(row)
            elif _canonical(table, have) != _canonical(table, row):
                conflicts.append(_describe_key(table, key))
        if conflicts:
            shown = ", ".join(conflicts[:5]) + (
                f" and {len(conflicts) - 5} more" if len(conflicts) > 5 else ""
            )
            raise StoreError(
                f"the target already holds different data in {table.name} for {shown}; nothing of it was"
                " changed. Copy into an empty database (or one that earlier copies of this file filled),"
                " or stop whatever changed the source since it was last copied and copy again"
            )
        out.present += len(rows) - len(missing)
        if not dry_run:
            # A turn's text as SQLite's full-text index segmented it: PostgreSQL's tsvector is made
            # from it without segmenting every turn again (most of a copy's own CPU).
            bodies = _fts_bodies(src, [r["id"] for r in missing]) if table.name == "turns" else {}
            with target.transaction() as tx:
                _insert(tx, table, missing, bodies)
                marker[table.name] = list(keys[-1])
                _write_marker(target, state.marker(complete=False), tx)
        out.copied += len(missing)
        done += len(rows)
        if progress:
            progress(table.name, done, out.source)
        if after_batch and not dry_run:
            after_batch(table.name, done)
    return out


def _marks(n: int) -> str:
    return ", ".join("?" * n)


def _batches(
    src: sqlite3.Connection, table: Table, after: Sequence[Any] | None, size: int
) -> Iterator[list[dict[str, Any]]]:
    """The source's rows in key order, after the key `after`, `size` at a time."""
    names = list(table.columns)
    key = ", ".join(table.key)
    last = tuple(after) if after is not None else None
    while True:
        where = f"WHERE ({key}) > ({_marks(len(table.key))})" if last is not None else ""
        rows = src.execute(
            f"SELECT {table.col_list()} FROM {table.name} {where} ORDER BY {key} LIMIT ?",
            (*(last or ()), size),
        ).fetchall()
        if not rows:
            return
        batch = [_from_sqlite(table, dict(zip(names, r, strict=True))) for r in rows]
        yield batch
        last = tuple(rows[-1][names.index(k)] for k in table.key)


def _from_sqlite(table: Table, row: dict[str, Any]) -> dict[str, Any]:
    """A source row as the target should hold it (a running job's worker is gone: it is queued)."""
    if table.name == "jobs" and row["status"] == "running":
        row.update(status="queued", lease_owner=None, lease_until=None)
    return row


def _target_rows(
    target: Any, table: Table, keys: list[tuple[Any, ...]]
) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The target's rows under these keys, by key (fetched in binary: vectors parse 10x faster)."""
    names = list(table.columns)
    key_cols = list(table.key)
    first, first_type = next(iter(table.key.items()))
    # `first = ANY(…)` lets the planner walk the key's index; a join with unnest() alone seq-scans.
    sql = f"SELECT {', '.join('t.' + c for c in names)} FROM {table.name} t WHERE t.{first} = ANY(%s::{first_type}[])"
    args: list[Any] = [sorted({k[0] for k in keys})]
    if len(key_cols) > 1:
        unnest = ", ".join(f"%s::{t}[]" for t in table.key.values())
        sql += f" AND ({', '.join('t.' + c for c in key_cols)}) IN (SELECT * FROM unnest({unnest}))"
        args += [[k[i] for k in keys] for i in range(len(key_cols))]
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    with target._read() as conn, conn.cursor(binary=True) as cur:
        for r in cur.execute(sql, args).fetchall():
            row = dict(zip(names, r, strict=True))
            out[tuple(row[c] for c in key_cols)] = row
    return out


def _canonical(table: Table, row: dict[str, Any]) -> tuple[Any, ...]:
    """A row of either side in one comparable form."""
    out: list[Any] = []
    for name, kind in table.columns.items():
        v = row[name]
        if v is None:
            out.append(None)
        elif kind in (JSONB, JSON, ARRAY):
            out.append(json.dumps(json.loads(v) if isinstance(v, str) else v, sort_keys=True))
        elif kind == BOOL:
            out.append(bool(v))
        elif kind == VECTOR:
            out.append(
                (np.frombuffer(v, dtype=np.float32) if isinstance(v, bytes) else as_vector(v)).tobytes()
            )
        elif kind == BYTES:
            out.append(bytes(v))
        else:
            out.append(v)
    return tuple(out)


def _describe_key(table: Table, key: tuple[Any, ...]) -> str:
    return " ".join(f"{c} {v!r}" for c, v in zip(table.key, key, strict=True))


def _value(kind: str, v: Any) -> Any:
    if v is None:
        return None
    if kind in (JSONB, JSON):
        return v  # the source's JSON text, as it is (json keeps a trace's key order)
    if kind == ARRAY:
        return [int(i) for i in json.loads(v)]
    if kind == BOOL:
        return bool(v)
    if kind == VECTOR:
        return np.frombuffer(v, dtype=np.float32)  # binary COPY only (Table.binary)
    if kind == BYTES:
        return bytes(v)
    return v


def _fts_bodies(src: sqlite3.Connection, ids: list[int]) -> dict[int, str]:
    """turn id -> the text SQLite's full-text index holds for it (`index_text`)."""
    out: dict[int, str] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        out.update(
            src.execute(f"SELECT rowid, body FROM turns_fts WHERE rowid IN ({_marks(len(chunk))})", chunk)
        )
    return out


def _insert(tx: Any, table: Table, rows: list[dict[str, Any]], bodies: dict[int, str] | None = None) -> None:
    """COPY the rows in (several times faster than INSERTs; identity values are taken as given)."""
    if not rows:
        return
    import psycopg

    names = list(table.columns) + (["fts", "fts_len"] if table.fts else [])
    statement = f"COPY {table.name} ({', '.join(names)}) FROM STDIN" + (
        " WITH (FORMAT BINARY)" if table.binary else ""
    )
    try:
        with tx.conn.cursor() as cur, cur.copy(statement) as copy:
            if table.binary:
                copy.set_types(list(table.binary))
            for row in rows:
                values = [_value(kind, row[name]) for name, kind in table.columns.items()]
                if table.fts:
                    body = bodies.get(row["id"]) if bodies else None
                    values.extend(
                        tsvector_of_index_text(body, row["user_id"])
                        if body is not None
                        else tsvector_literal(_fts_text(table, row), row["user_id"])
                    )
                copy.write_row(values)
    except psycopg.errors.IntegrityError as exc:
        detail = exc.diag.message_detail or exc.diag.message_primary or str(exc)
        raise StoreError(
            f"cannot copy {table.name} into the target: {detail}. The target holds other data under"
            " the same keys; copy into an empty database. Nothing of this batch was written"
        ) from exc


def _fts_text(table: Table, row: dict[str, Any]) -> str:
    """The text SQLite's FTS5 indexes for a turn (with its resolved dates) or a bookmark."""
    if table.name == "turns":
        return searchable_text(row_to_turn(tuple(row[c] for c in _TURN_FIELDS)))
    from memsched.model import Bookmark
    from memsched.store.sqlite_base import dt

    b = Bookmark(
        user_id=row["user_id"],
        session_id=row["session_id"],
        keywords=json.loads(row["keywords"]),
        aliases=json.loads(row["aliases"]),
        summary=row["summary"],
        page_ids=[],
        turn_ids=[],
        first_at=dt(row["first_at"]),
        last_at=dt(row["last_at"]),
    )
    return b.text


_TURN_FIELDS = [c.strip() for c in TURN_COLUMNS.split(",")]


# -- after the rows ----------------------------------------------------------------------------------------


def _finish(
    src: sqlite3.Connection, target: Any, vector_indexes: bool = True, build_memory: str | None = None
) -> None:
    """What PostgreSQL keeps besides the rows: identity counters, BM25 statistics, vector indexes."""
    high = {r[0]: int(r[1]) for r in src.execute("SELECT name, seq FROM sqlite_sequence")}
    users = [r[0] for r in src.execute("SELECT id FROM users")]
    with target.transaction() as tx:
        for table in TABLES:
            if not table.identity:
                continue
            (top,) = src.execute(f"SELECT coalesce(max(id), 0) FROM {table.name}").fetchone()
            top = max(int(top), high.get(table.name, 0))
            if top == 0:
                continue
            (seq,) = tx.execute("SELECT pg_get_serial_sequence(%s, 'id')", (table.name,)).fetchone()
            # Never moved back: the target may hold rows of its own above the source's.
            tx.execute(
                f"SELECT setval(%s::regclass, greatest(%s, (SELECT last_value FROM {seq}),"
                f" (SELECT coalesce(max(id), 0) FROM {table.name})))",
                (seq, top),
            )
        for start in range(0, len(users), 1000):
            tx.execute(
                "UPDATE users u SET fts_docs = s.n, fts_len = s.len FROM (SELECT user_id, count(*) AS n,"
                " coalesce(sum(fts_len), 0) AS len FROM turns WHERE user_id = ANY(%s) GROUP BY user_id) s"
                " WHERE u.id = s.user_id",
                (users[start : start + 1000],),
            )
    if not vector_indexes:
        return
    for model, dim in src.execute("SELECT DISTINCT model, dim FROM embeddings ORDER BY model, dim"):
        target._ensure_vector_index(model, int(dim), build_memory=build_memory)


__all__ = ["TABLES", "MigrateReport", "TableReport", "migrate_sqlite_to_postgres"]
