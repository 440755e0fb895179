"""`memsched bookmarks`: list (and optionally generate or maintain) a user's keyword bookmarks."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from memsched.cli.common import (
    EmbeddersOption,
    HomeOption,
    StoreOption,
    app,
    console,
    load_config,
    no_blank_id,
    reports_errors,
)
from memsched.memory import Memory


@app.command("bookmarks")
@reports_errors
def bookmarks(
    user: str = typer.Option(..., "--user", "-u", callback=no_blank_id, help="User id."),
    as_json: bool = typer.Option(False, "--json", help="Print the bookmarks as JSON."),
    generate: bool = typer.Option(
        False,
        "--generate",
        help="First bookmark pages that have none (the helper LLM if configured, else rules).",
    ),
    maintain: bool = typer.Option(
        False,
        "--maintain",
        help="First run maintenance: bookmark missing pages, follow renames, merge duplicates.",
    ),
    home: Path | None = HomeOption,
    db: str | None = StoreOption,
    embedders: str | None = EmbeddersOption,
) -> None:
    """List a user's bookmarks: pages, keywords, aliases and one-sentence summaries."""
    from memsched.bookmarks import generate_bookmarks, maintain_bookmarks
    from memsched.llm.client import client_from_config

    cfg = load_config(home=home, db=db, embedders=embedders)
    with Memory(cfg) as mem:
        mem.require_user(user)
        if generate or maintain:
            llm = client_from_config(cfg, "helper")
            if maintain:
                report = maintain_bookmarks(mem, user, llm=llm)
                if not as_json:
                    console.print(
                        f"maintenance: {report['generated']} new, {len(report['aliases'])} aliases,"
                        f" {len(report['merges'])} merges"
                    )
            else:
                run = generate_bookmarks(mem, user, llm=llm)
                if not as_json:
                    console.print(
                        f"generated {len(run.bookmarks)} bookmarks ({run.trace.get('source', 'rule')})"
                    )
        marks = mem.store.bookmarks(user)
    if as_json:
        print(json.dumps([b.as_dict() for b in marks], ensure_ascii=False))
        return
    if not marks:
        console.print(f"no bookmarks for {user} (use --generate)")
        return
    table = Table(title=f"bookmarks of {user} — {len(marks)}")
    table.add_column("id", justify="right")
    table.add_column("pages")
    table.add_column("date")
    table.add_column("kind")
    table.add_column("keywords")
    table.add_column("summary")
    table.add_column("imp.", justify="right")
    for b in marks:
        keys = ", ".join(f"{k} ({'/'.join(b.aliases[k])})" if b.aliases.get(k) else k for k in b.keywords)
        table.add_row(
            str(b.id),
            " ".join(f"p{p}" for p in b.page_ids),
            b.first_at.strftime("%Y-%m-%d"),
            b.kind,
            keys,
            b.summary,
            f"{b.importance:.2f}",
        )
    console.print(table)
