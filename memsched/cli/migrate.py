"""`memsched migrate`: copy the embedded SQLite database into PostgreSQL (docs/deploy.md)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from memsched.cli.common import (
    DbOption,
    HomeOption,
    app,
    console,
    err_console,
    fail,
    load_config,
    reports_errors,
)


@app.command()
@reports_errors
def migrate(
    to: str | None = typer.Option(
        None,
        "--to",
        help="The PostgreSQL database to copy into, postgresql://… \\[default: MEMSCHED_DATABASE_URL].",
    ),
    source: Path | None = typer.Option(
        None, "--from", help="The SQLite file to copy; default `<home>/memsched.db` (or --db)."
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Compare both sides and say what would be copied; write no rows."
    ),
    batch_size: int = typer.Option(1000, "--batch-size", min=1, help="Rows per committed batch."),
    build_memory: str = typer.Option(
        "1GB",
        "--build-memory",
        help="maintenance_work_mem for the index builds after a copy into an empty database"
        " (a PostgreSQL size; the vector indexes build far faster when their graph fits).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    home: Path | None = HomeOption,
    db: Path | None = DbOption,
) -> None:
    """Copy an embedded SQLite database into PostgreSQL with every id kept: turns, vectors of every
    model, bookmarks, sessions, state, profile, summaries, traces, jobs, API keys. Idempotent (a
    second run copies nothing) and resumable (an interrupted run continues where it stopped)."""
    from memsched.store.transfer import migrate_sqlite_to_postgres

    cfg = load_config(home=home, db=db)
    target = to or cfg.database_url
    if not target:
        fail("name the PostgreSQL database with --to postgresql://… (or MEMSCHED_DATABASE_URL)")
        return
    path = source if source is not None else cfg.db_path
    with Progress(
        TextColumn("{task.description:<15}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
        disable=as_json,
    ) as bar:
        tasks: dict[str, object] = {}

        def progress(table: str, done: int, total: int) -> None:
            if table not in tasks:
                tasks[table] = bar.add_task(table, total=max(total, 1))
            bar.update(tasks[table], completed=done if total else 1)  # type: ignore[arg-type]

        report = migrate_sqlite_to_postgres(
            path, target, batch_size=batch_size, dry_run=dry_run, progress=progress, build_memory=build_memory
        )
    if as_json:
        console.print_json(json.dumps(report.as_dict()))
        return
    verb = "would copy" if dry_run else "copied"
    console.print(f"{report.source} → {report.target}", soft_wrap=True, highlight=False)
    table = Table()
    for column in ("table", "in source", verb, "already there", "resumed"):
        table.add_column(column, justify="left" if column == "table" else "right")
    for name, t in report.tables.items():
        table.add_row(name, str(t.source), str(t.copied), str(t.present), str(t.resumed))
    console.print(table)
    total = sum(t.copied for t in report.tables.values())
    done = "dry run: nothing written" if dry_run else "complete"
    console.print(f"{verb} {total} rows in {report.seconds:.1f} s; {done}.")
